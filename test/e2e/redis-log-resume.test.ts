// A resumption lands on any replica of a fleet (sessions.keys, sessions.store: redis) and is
// answered alike: the replay log in Redis drops what the replica's own log drops (the session's
// sessions.replayBytes), so a Last-Event-ID whose later events were dropped is refused on either
// (400, as transports "Resumability and Redelivery" leaves to the server), and one still held is
// replayed the same events. Redis replayed the rest on another replica (incomplete, silently), and
// held the upstream's large notifications unbounded in bytes.
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fingerprint } from '../../src/session/shared-log.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { FIXTURES, NODE } from '../helpers/paths.js';
import { exchange, initializeRaw, sendIn, type RawReply, type RawSession } from '../helpers/raw-http.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { SseTextParser } from '../helpers/sse-reader.js';

const REPLAY_BYTES = 16 * 1024;
let redis: TestRedis;
let client: Redis;
const gateways: TestGateway[] = [];

beforeAll(async () => {
  redis = await startRedis();
  client = new Redis(redis.url, { maxRetriesPerRequest: 1 });
});

afterAll(async () => {
  try {
    await Promise.all(gateways.map((gw) => gw.close()));
    client?.disconnect();
  } finally {
    await redis?.close();
  }
});

async function replica(keys: string[]): Promise<TestGateway> {
  const gw = await startGateway(
    {
      sessions: { keys, store: { redis: { url: redis.url, prefix: redis.prefix } }, replayBytes: REPLAY_BYTES },
      upstreams: { flood: { stdio: { command: NODE, args: [join(FIXTURES, 'notify-flood-server.mjs')] } } },
    },
    { logLevel: 'warn' },
  );
  gateways.push(gw);
  return gw;
}

/** A GET resuming after `lastEventId` on `gw`. */
function resume(gw: TestGateway, session: RawSession, lastEventId: string): Promise<RawReply> {
  return exchange(gw.url, { method: 'GET', headers: { ...session.headers, accept: 'text/event-stream', 'last-event-id': lastEventId } });
}

/** The events of a reply that carry a message, as `id data`. */
function messagesWithIds(reply: RawReply): string[] {
  return new SseTextParser()
    .push(reply.text)
    .filter((event) => event.data !== undefined && event.data !== '')
    .map((event) => `${event.id} ${event.data}`);
}

describe('a resumption on another replica of the fleet', () => {
  it('is answered as on the replica that wrote the stream, whose log dropped the oldest of 40 notifications of 2 KB', async () => {
    const keys = [randomBytes(32).toString('hex')];
    const [a, b] = [await replica(keys), await replica(keys)];
    const session = await initializeRaw(a.url);
    const call = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'flood__flood', arguments: { count: 40, size: 2_000, kind: 'progress' }, _meta: { progressToken: 'p' } } };
    const reply = await sendIn(session, call, { timeoutMs: 30_000 });
    const events = messagesWithIds(reply);
    expect(events).toHaveLength(41);
    const ids = events.map((event) => event.slice(0, event.indexOf(' ')));
    const [stream, lastSeq] = ids.at(-1)!.split('.') as [string, string];

    // Written to Redis without waiting: the answer there, all of it is.
    const base = `${redis.prefix}log:${fingerprint(session.id)}:`;
    await expect.poll(async () => (await client.lindex(`${base}${stream}:e`, -1))?.split(' ', 1)[0], { timeout: 10_000 }).toBe(lastSeq);

    // The first notification is gone from both logs: both refuse alike.
    const [here, there] = [await resume(a, session, ids[0]!), await resume(b, session, ids[0]!)];
    expect(here.status, here.text).toBe(400);
    expect({ status: there.status, body: there.json }).toEqual({ status: here.status, body: here.json });

    // One still held: both replay the same events after it.
    const recent = ids.at(-4)!;
    const [fromA, fromB] = [await resume(a, session, recent), await resume(b, session, recent)];
    expect(fromA.status).toBe(200);
    expect(messagesWithIds(fromB)).toEqual(messagesWithIds(fromA));
    expect(messagesWithIds(fromA)).toEqual(events.slice(-3));

    // What Redis holds of the session's events stays within its bytes.
    const held = await client.lrange(`${base}${stream}:e`, 0, -1);
    expect(held.reduce((sum, entry) => sum + Buffer.byteLength(entry.slice(entry.indexOf(' ') + 1)), 0)).toBeLessThanOrEqual(REPLAY_BYTES);
    expect(Number(await client.get(`${base}bytes`))).toBeLessThanOrEqual(REPLAY_BYTES);
    for (const key of await client.keys(`${base}*`)) expect(await client.pttl(key), key).toBeGreaterThan(0);
  }, 60_000);
});
