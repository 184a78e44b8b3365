// A session taken over on another replica (self-describing ids, `sessions.keys`): requests that
// reach that replica while it is still opening the session's upstreams wait for them, instead
// of finding the session there with nothing attached (an unavailable upstream, an empty list).
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { startGateway, upstream, type TestGateway } from '../helpers/gateway.js';
import { exchange, initializeRaw, postRpc } from '../helpers/raw-http.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';

/** Keeps Redis busy for ARGV[1] ms: every other client's command waits that long. */
const BUSY_SCRIPT = `
local t = redis.call('TIME')
local deadline = t[1] * 1000000 + t[2] + tonumber(ARGV[1]) * 1000
repeat t = redis.call('TIME') until t[1] * 1000000 + t[2] >= deadline
return 1`;

const gateways: TestGateway[] = [];
let redis: TestRedis | undefined;
afterEach(async () => {
  await Promise.all(gateways.splice(0).map((gw) => gw.close()));
  await redis?.close();
  redis = undefined;
});

async function replica(keys: string[], sessions: Record<string, unknown> = {}): Promise<TestGateway> {
  const gw = await startGateway({ sessions: { keys, ...sessions }, upstreams: { everything: upstream.everything() } });
  gateways.push(gw);
  return gw;
}

describe('a session taken over by another replica', () => {
  it('answers every request that arrives while its upstreams open as the first one is answered', async () => {
    const keys = [randomBytes(32).toString('hex')];
    const [a, b] = [await replica(keys), await replica(keys)];
    const session = await initializeRaw(a.url);
    // The first request starts the takeover on b (a stdio child to spawn); the others arrive meanwhile.
    const call = (id: number) => postRpc(b.url, { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'everything__echo', arguments: { message: `m${id}` } } }, { headers: session.headers });
    const list = postRpc(b.url, { jsonrpc: '2.0', id: 9, method: 'tools/list', params: {} }, { headers: session.headers });
    const answers = await Promise.all([call(1), call(2), call(3), list]);
    for (const [i, reply] of answers.slice(0, 3).entries()) {
      expect(reply.status, reply.text).toBe(200);
      expect(reply.messages[0]?.result, reply.text).toBeDefined();
      expect(JSON.stringify(reply.messages[0]?.result)).toContain(`m${i + 1}`);
    }
    const tools = (answers[3]!.messages[0]?.result as { tools?: unknown[] } | undefined)?.tools ?? [];
    expect(tools.length).toBeGreaterThan(0);
  });

  it("is held to the replica's session caps, as initialize is: per principal (429) and in all (503)", async () => {
    const keys = [randomBytes(32).toString('hex')];
    const a = await replica(keys);
    const perPrincipal = await replica(keys, { maxPerPrincipal: 1 });
    const inAll = await replica(keys, { max: 1 });
    const [one, two] = [await initializeRaw(a.url), await initializeRaw(a.url)];
    const ping = (gw: TestGateway, headers: Record<string, string>) => postRpc(gw.url, { jsonrpc: '2.0', id: 1, method: 'ping' }, { headers });
    expect((await ping(perPrincipal, one.headers)).status).toBe(200);
    expect((await ping(perPrincipal, two.headers)).status).toBe(429);
    expect((await ping(inAll, one.headers)).status).toBe(200);
    expect((await ping(inAll, two.headers)).status).toBe(503);
    // A session already taken over is not counted twice.
    expect((await ping(perPrincipal, one.headers)).status).toBe(200);
  });

  it('admits no more concurrent takeovers than the caps allow, however they race (the slot is taken as the caps are checked)', async () => {
    redis = await startRedis();
    const keys = [randomBytes(32).toString('hex')];
    const store = { redis: { url: redis.url, prefix: redis.prefix } };
    const a = await replica(keys, { store });
    const b = await replica(keys, { store, maxPerPrincipal: 2 });
    const opened = await Promise.all(Array.from({ length: 8 }, () => initializeRaw(a.url)));
    // Each takeover asks Redis whether its session was ended elsewhere; Redis busy for a moment
    // holds every answer, so all eight are under way at once.
    const blocker = new Redis(redis.url);
    try {
      await blocker.ping();
      const busy = blocker.eval(BUSY_SCRIPT, 0, 300);
      const answers = await Promise.all(opened.map((session) => postRpc(b.url, { jsonrpc: '2.0', id: 1, method: 'ping' }, { headers: session.headers })));
      await busy;
      expect(answers.map((reply) => reply.status).sort()).toEqual([200, 200, 429, 429, 429, 429, 429, 429]);
    } finally {
      blocker.disconnect();
    }
    const health = (await (await fetch(new URL('/healthz', b.url))).json()) as { sessions: number };
    expect(health.sessions).toBe(2);
  });

  it('opens on no replica once it is sessions.maxAge old, and the replicas holding it end it', async () => {
    redis = await startRedis();
    const keys = [randomBytes(32).toString('hex')];
    const sessions = { store: { redis: { url: redis.url, prefix: redis.prefix } }, maxAge: '2s' };
    const [a, b, c] = [await replica(keys, sessions), await replica(keys, sessions), await replica(keys, sessions)];
    const session = await initializeRaw(a.url);
    const ping = (gw: TestGateway) => postRpc(gw.url, { jsonrpc: '2.0', id: 1, method: 'ping' }, { headers: session.headers });
    expect((await ping(b)).status).toBe(200);
    const held = async (gw: TestGateway) => ((await (await fetch(new URL('/healthz', gw.url))).json()) as { sessions: number }).sessions;
    // Busy or idle, a and b end it at its age (their sweep runs every second here).
    await expect.poll(async () => (await held(a)) + (await held(b)), { timeout: 10_000, interval: 100 }).toBe(0);
    // c never saw it: its id is too old to be taken over there; a and b do not take it back either.
    expect((await ping(c)).status).toBe(404);
    expect((await ping(a)).status).toBe(404);
    expect((await ping(b)).status).toBe(404);
    expect(await held(c)).toBe(0);
  });

  it("is over on every replica once its client ended it on one (sessions.store: redis): 404, as the spec asks", async () => {
    redis = await startRedis();
    const keys = [randomBytes(32).toString('hex')];
    const store = { redis: { url: redis.url, prefix: redis.prefix } };
    const [a, b, c] = [await replica(keys, { store }), await replica(keys, { store }), await replica(keys, { store })];
    const session = await initializeRaw(a.url);
    const call = (gw: TestGateway) => postRpc(gw.url, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'everything__echo', arguments: { message: 'x' } } }, { headers: session.headers });
    expect((await call(b)).status).toBe(200);
    expect((await exchange(a.url, { method: 'DELETE', headers: session.headers })).status).toBe(200);
    // b held it: it hears of the end; c never saw it: the id no longer opens there.
    await expect.poll(async () => (await call(b)).status, { timeout: 10_000 }).toBe(404);
    expect((await call(c)).status).toBe(404);
    expect((await call(a)).status).toBe(404);
  });
});
