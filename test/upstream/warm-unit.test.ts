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
  vi.useFakeTimers({ toFake: ['setTimeout'] });
});

afterEach(() => {
  vi.useRealTimers();
});

function setup(want: number, room = 10) {
  const transports: { closed: boolean; started: boolean; start(): Promise<void>; close(): Promise<void> }[] = [];
  const primed: { params: JsonObject; client: { closed: boolean; close(): Promise<void> } }[] = [];
  const warm = new WarmChildren(want, {
    spawn: () => {
      const transport = { closed: false, started: false, start: async () => void (transport.started = true), close: async () => void (transport.closed = true) };
      transports.push(transport);
      return transport as unknown as Transport;
    },
    prime: (_transport, params) => {
      const client = { closed: false, close: async () => void (client.closed = true) };
      primed.push({ params, client });
      return { client: client as unknown as UpstreamClient, ready: Promise.resolve() };
    },
    room: (ahead) => primed.filter((p) => !p.client.closed).length + ahead < room,
    logger: silentLogger,
  });
  return { warm, transports, primed };
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
});
