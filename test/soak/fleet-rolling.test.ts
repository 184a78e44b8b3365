// The fleet's rolling restart under load (SIGTERM, drain, a new replica in its place, one at a
// time: what the Helm chart's rolling update and PodDisruptionBudget do) must fail no call. It
// runs with `npm run test:soak`, not in `npm test`: on a loaded 2-core machine it still fails
// about one run in three (an nginx 502 on a POST the draining replica's listener reset, or an
// upstream client closed under a call; README and docs/deploy.md say what is known), and a test
// that fails by chance must not stand in the suite. The fleet itself is test/helpers/fleet.ts.
import { describe, expect, it, beforeAll, afterAll } from 'vitest';
import { CALLS_PER_SECOND, LOAD_SESSIONS, Load, startFleet, type Fleet } from '../helpers/fleet.js';
import { terminateSession, textOf } from '../helpers/gateway.js';

describe('three replicas behind nginx on one redis-server', () => {
  let fleet: Fleet;

  beforeAll(async () => {
    fleet = await startFleet();
  }, 240_000);

  afterAll(async () => {
    await fleet?.close();
  }, 60_000);

  it('a rolling restart under load (SIGTERM, drain, a new replica in its place, one at a time) fails no call', async () => {
    const sessions = await Promise.all(Array.from({ length: LOAD_SESSIONS }, () => fleet.connect()));
    const load = new Load(sessions, CALLS_PER_SECOND);
    for (let slot = 0; slot < 3; slot++) {
      // A draining replica refuses new connections at once (nginx tries the next one) and
      // finishes what it holds; the new one starts on its port once it has exited.
      const leaving = fleet.replicas[slot]!;
      const code = await leaving.stop(30_000);
      expect(code, `exit of a draining replica; its last log lines: ${leaving.logs().slice(-5).map((l) => l.msg).join(' | ')}`).toBe(0);
      await fleet.startSlot(slot);
      await load.ended(CALLS_PER_SECOND / 2);
    }
    const outcomes = await load.stop();
    const failed = outcomes.filter((o) => o.error !== undefined);
    expect(failed.map((o) => o.error)).toEqual([]);
    expect(outcomes.length).toBeGreaterThan(CALLS_PER_SECOND);
    for (const [i, client] of sessions.entries()) expect(textOf(await client.callTool({ name: 'remote__echo', arguments: { message: `after ${i}` } }))).toBe(`Echo: after ${i}`);
    await Promise.allSettled(sessions.map(async (c) => (await terminateSession(c), await c.close())));
  }, 240_000);
});
