// subscriptions/listen streams (2026-07-28) are bounded per principal, as the sessions era
// bounds its standalone streams (one GET stream per session, sessions.maxPerPrincipal sessions):
// past sessions.maxPerPrincipal open listens, one more is refused 429 (-32600, Retry-After),
// also when they all arrive at once; closing one makes room again; another principal is not
// counted with it.
import { afterEach, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/auth/api-keys.js';
import { poll } from '../helpers/cli.js';
import { startGateway, upstream, type TestGateway } from '../helpers/gateway.js';
import { postRaw } from '../helpers/raw-http.js';
import { SseReader } from '../helpers/sse-reader.js';
import { statelessRequest, V } from '../helpers/stateless-wire.js';

const KEYS = { alice: 'k-listen-alice-0123456789', bob: 'k-listen-bob-0123456789' };
const MAX = 3;

let gw: TestGateway | undefined;
const controllers: AbortController[] = [];

afterEach(async () => {
  for (const controller of controllers.splice(0)) controller.abort();
  await gw?.close();
  gw = undefined;
});

interface Listen {
  res: Response;
  controller: AbortController;
}

/** Opens a listen stream as `key`'s principal, its body unread. */
async function listen(url: URL, key: string, id: number | string): Promise<Listen> {
  const controller = new AbortController();
  controllers.push(controller);
  const message = statelessRequest(id, 'subscriptions/listen', { notifications: { toolsListChanged: true } });
  const res = await postRaw(url, message, { protocolVersion: V, headers: { 'x-api-key': key, 'mcp-method': 'subscriptions/listen' }, signal: controller.signal });
  return { res, controller };
}

/** The acknowledgement a listen stream opens with. */
async function acknowledged(res: Response): Promise<unknown> {
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
  return new SseReader(res).nextMessage(10_000, 'the acknowledgement');
}

describe('subscriptions/listen streams of one principal', () => {
  it(`are at most sessions.maxPerPrincipal (${MAX}) open at once: one more is refused 429, closing one makes room, another principal is not counted`, async () => {
    gw = await startGateway({
      auth: { apiKeys: [{ id: 'alice', hash: hashApiKey(KEYS.alice) }, { id: 'bob', hash: hashApiKey(KEYS.bob) }] },
      sessions: { maxPerPrincipal: MAX },
      upstreams: { rogue: upstream.rogue() },
    });
    const url = gw.url;
    // All at once: the cap holds for listens that arrive together.
    const all = await Promise.all(Array.from({ length: MAX + 3 }, (_, i) => listen(url, KEYS.alice, i)));
    const open = all.filter((l) => l.res.status === 200);
    const refused = all.filter((l) => l.res.status !== 200);
    expect(all.map((l) => l.res.status).sort()).toEqual([...Array<number>(MAX).fill(200), ...Array<number>(3).fill(429)]);
    for (const l of open) expect(await acknowledged(l.res)).toMatchObject({ method: 'notifications/subscriptions/acknowledged', params: { notifications: { toolsListChanged: true } } });
    for (const l of refused) {
      expect(l.res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(l.res.headers.get('retry-after')).toBe('30');
      const body = (await l.res.json()) as { id: unknown; error: { code: number; message: string } };
      expect(body.error).toEqual({ code: -32600, message: `Too Many Requests: at most ${MAX} subscriptions/listen streams open per principal; close one first` });
      expect(all.indexOf(l)).toBe(body.id);
    }

    // Another principal has its own count.
    expect(await acknowledged((await listen(url, KEYS.bob, 'bob-1')).res)).toMatchObject({ method: 'notifications/subscriptions/acknowledged' });

    // Closing one makes room for one more (once the gateway has seen it close).
    open[0]!.controller.abort();
    const again = await poll(async () => {
      const l = await listen(url, KEYS.alice, 'again');
      if (l.res.status === 200) return l;
      expect(l.res.status).toBe(429);
      l.controller.abort();
      return undefined;
    }, 'room for a listen once one closed');
    expect(await acknowledged(again.res)).toMatchObject({ method: 'notifications/subscriptions/acknowledged' });
    expect((await listen(url, KEYS.alice, 'over')).res.status).toBe(429);
  }, 30_000);
});
