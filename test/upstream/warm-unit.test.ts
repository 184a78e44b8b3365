// Children spawned ahead on their own, over fake transports and clients: up to `warm` are
// spawned within the room given; the first session gets one to initialize itself; later ones
// are initialized ahead with the latest session's parameters and handed ready to a session
// with exactly those; parameters that change replace the children primed for the old ones.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { JsonObject } from '../../src/mcp/jsonrpc.js';
import type { Transport } from '../../src/transport/types.js';
import type { UpstreamClient } from '../../src/upstream/client.js';
import { WarmChildren } from '../../src/upstream/warm.js';
import { silentLogger } from '../../src/util/log.js';

const settle = () => new Promise((resolve) => setImmediate(resolve));
/** A handed-over child is replaced a little later (off the call's path): that moment, now. */
const refill = async (): Promise<void> => {
  vi.advanceTimersByTime(100);
  await settle();
};

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'Date'] });
  // No jitter: each delay is exactly the nominal backoff.
  vi.spyOn(Math, 'random').mockReturnValue(1);
});

afterEach(() => {
  vi.restoreAllMocks();
  vi.useRealTimers();
});

const POLICY = { initialDelayMs: 100, maxDelayMs: 400, maxCrashes: 4, windowMs: 60_000, resetAfterMs: 60_000 };

function setup(want: number, room = 10, options: { spawnFails?: () => boolean; primeFails?: () => boolean } = {}) {
  const transports: { closed: boolean; started: boolean; start(): Promise<void>; close(): Promise<void> }[] = [];
  const primed: { params: JsonObject; client: { closed: boolean; close(): Promise<void> } }[] = [];
  const failures: { reason: string; crashLoop: boolean }[] = [];
  const warm = new WarmChildren(want, {
    spawn: () => {
      const fails = options.spawnFails?.() === true;
      const transport = {
        closed: false,
        started: false,
        // As spawn's ENOENT: the failure comes before any I/O could run.
        start: async () => {
          if (fails) throw new Error('cannot start the upstream command (ENOENT)');
          transport.started = true;
        },
        close: async () => void (transport.closed = true),
      };
      transports.push(transport);
      return transport as unknown as Transport;
    },
    prime: (_transport, params) => {
      const client = { closed: false, close: async () => void (client.closed = true) };
      primed.push({ params, client });
      const ready = options.primeFails?.() === true ? Promise.reject(new Error('process exited (code 4)')) : Promise.resolve();
      return { client: client as unknown as UpstreamClient, ready };
    },
    room: (ahead) => primed.filter((p) => !p.client.closed).length + ahead < room,
    policy: POLICY,
    failed: (reason, crashLoop) => failures.push({ reason, crashLoop }),
    logger: silentLogger,
  });
  return { warm, transports, primed, failures };
}

const P = { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'host', version: '1' } };

describe('WarmChildren', () => {
  it('spawns up to warm, within the room it is given', async () => {
    expect(setup(3).warm).toBeDefined();
    const { warm, transports } = setup(3, 2);
    warm.fill();
    await settle();
    expect(transports).toHaveLength(2);
    expect(warm.unprimed).toBe(2);
  });

  it("hands the first session a spawned child to initialize, and primes the rest with its parameters", async () => {
    const { warm, transports, primed } = setup(2);
    warm.fill();
    await settle();
    const first = warm.take(P);
    expect(first).toEqual({ transport: transports[0] });
    await refill();
    // The other one is initialized ahead with P, and one more spawned (and primed) to replace the first.
    expect(primed.map((p) => p.params)).toEqual([P, P]);
    const second = warm.take({ ...P, clientInfo: { version: '1', name: 'host' } });
    expect(second && 'client' in second && second.client).toBe(primed[0]!.client);
  });

  it('replaces children primed for parameters that are no longer the latest', async () => {
    const { warm, primed } = setup(1);
    warm.fill();
    await settle();
    warm.take(P);
    await refill();
    expect(primed).toHaveLength(1);
    const other = { ...P, capabilities: { sampling: {} } };
    const handed = warm.take(other);
    // Nothing ready for `other`: the one primed for P is closed, a new one spawned and primed for `other`.
    expect(handed).toBeUndefined();
    await refill();
    expect(primed[0]!.client.closed).toBe(true);
    expect(primed.at(-1)!.params).toEqual(other);
    expect(warm.take(other)).toMatchObject({ client: primed.at(-1)!.client });
  });

  it('closes what it holds', async () => {
    const { warm, transports, primed } = setup(2);
    warm.fill();
    await settle();
    warm.take(P);
    await refill();
    await Promise.all(warm.close());
    expect(primed.length).toBeGreaterThan(0);
    expect(primed.every((p) => p.client.closed)).toBe(true);
    expect(warm.unprimed).toBe(0);
    // Closed: nothing is spawned any more.
    const spawned = transports.length;
    warm.fill();
    await settle();
    expect(transports).toHaveLength(spawned);
  });

  it('spawns again after the restart backoff, doubling per failure, and a crash loop gives the children up', async () => {
    const { warm, transports, failures } = setup(1, 10, { spawnFails: () => true });
    warm.fill();
    await settle();
    // A spawn that fails at once is not retried from a microtask: only the backoff's timer spawns.
    expect(transports).toHaveLength(1);
    for (const delay of [100, 200, 400]) {
      const before = transports.length;
      await vi.advanceTimersByTimeAsync(delay - 1);
      expect(transports, `no spawn before ${delay} ms`).toHaveLength(before);
      await vi.advanceTimersByTimeAsync(1);
      expect(transports, `a spawn at ${delay} ms`).toHaveLength(before + 1);
    }
    expect(failures.map((f) => f.crashLoop)).toEqual([false, false, false, true]);
    expect(failures.at(-1)!.reason).toBe('crash loop: 4 failed starts of children spawned ahead within 60000 ms (last: cannot start the upstream command (ENOENT))');
    expect(warm.givenUp).toBe(true);
    await vi.advanceTimersByTimeAsync(120_000);
    warm.fill();
    warm.take(P);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(transports).toHaveLength(POLICY.maxCrashes);
  });

  it('counts a child that fails its handshake ahead as a crash, and comes back once a session of the upstream started', async () => {
    let failing = true;
    const { warm, transports, primed, failures } = setup(1, 10, { primeFails: () => failing });
    warm.fill();
    await settle();
    expect(warm.take(P)).toEqual({ transport: transports[0] });
    await refill(); // the replacement, primed with P: it fails
    expect(primed).toHaveLength(1);
    expect(failures).toEqual([{ reason: 'process exited (code 4)', crashLoop: false }]);
    for (const delay of [100, 200, 400]) await vi.advanceTimersByTimeAsync(delay);
    expect(primed).toHaveLength(POLICY.maxCrashes);
    expect(warm.givenUp).toBe(true);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(transports).toHaveLength(POLICY.maxCrashes + 1);
    // The upstream works again: a session started, and the children are spawned again at once (no backoff left).
    failing = false;
    warm.started();
    expect(warm.givenUp).toBe(false);
    await refill();
    expect(transports).toHaveLength(POLICY.maxCrashes + 2);
    expect(warm.take(P)).toMatchObject({ client: primed.at(-1)!.client });
  });

  it('a handed-over refill never cuts a backoff short', async () => {
    let failing = true;
    const { warm, transports } = setup(1, 10, { spawnFails: () => failing });
    warm.fill();
    await settle();
    await vi.advanceTimersByTimeAsync(100); // the second spawn fails: the next waits 200 ms
    expect(transports).toHaveLength(2);
    failing = false;
    warm.take(P); // would refill 100 ms from now
    await vi.advanceTimersByTimeAsync(199);
    expect(transports).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(1);
    expect(transports).toHaveLength(3);
  });
});
