// The replay log in Redis (session/redis-log.ts) keeps a session's events within the bounds the
// replica's own log keeps (streams.ts, EventLog: sessions.replayEvents and replayBytes per
// session, oldest first across its streams), so a resumption is answered alike wherever it lands.
// It bounded only the events of each stream: an upstream sending large notifications grew Redis
// by events × size per stream, and a resumption from an event the replica's log had dropped was
// replayed the rest there (incomplete) where the replica itself refused it. Every key expires.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisStreamLog } from '../../src/session/redis-log.js';
import { fingerprint } from '../../src/session/shared-log.js';
import { EventLog, type LoggedStream } from '../../src/session/streams.js';
import { silentLogger } from '../../src/util/log.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';

const TTL_MS = 60_000;
let redis: TestRedis;
let client: Redis;
const logs: RedisStreamLog[] = [];

async function replica(limits: { events: number; bytes: number }, ttlMs = TTL_MS): Promise<RedisStreamLog> {
  const log = new RedisStreamLog({ url: redis.url, prefix: redis.prefix, ...limits, ttlMs, logger: silentLogger });
  logs.push(log);
  // Ready once a read is answered (offline, it is refused at once); bounded.
  for (let tries = 0; !(await log.read('s', 'none', 0).then(() => true, () => false)); tries++) {
    if (tries > 100) throw new Error('Redis never became ready');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return log;
}

beforeAll(async () => {
  redis = await startRedis();
  client = new Redis(redis.url, { maxRetriesPerRequest: 1 });
});

afterAll(async () => {
  try {
    await Promise.all(logs.map((log) => log.close()));
    client?.disconnect();
  } finally {
    await redis?.close();
  }
});

/** Data of `bytes` bytes in UTF-8, some of them two-byte characters, as JSON-RPC text is. */
function dataOf(i: number, bytes: number): string {
  const head = `{"i":${i},"pad":"`;
  const room = bytes - head.length - 2;
  return `${head}${'é'.repeat(Math.floor(room / 4))}${'x'.repeat(room - 2 * Math.floor(room / 4))}"}`;
}

/** A session's keys in Redis, and what their events hold. */
async function sessionState(session: string): Promise<{ keys: string[]; listed: number; dataBytes: number; memory: number; counted: number; order: number }> {
  const base = `${redis.prefix}log:${fingerprint(session)}:`;
  const keys = (await client.keys(`${base}*`)).sort();
  let listed = 0;
  let dataBytes = 0;
  let memory = 0;
  for (const key of keys) {
    memory += Number(await client.memory('USAGE', key));
    if (!key.endsWith(':e')) continue;
    for (const entry of await client.lrange(key, 0, -1)) {
      listed++;
      dataBytes += Buffer.byteLength(entry.slice(entry.indexOf(' ') + 1));
    }
  }
  return { keys, listed, dataBytes, memory, counted: Number((await client.get(`${base}bytes`)) ?? 0), order: await client.llen(`${base}order`) };
}

/** Every key under this test's prefix has an expiry. */
async function expectAllExpire(): Promise<void> {
  const keys = await client.keys(`${redis.prefix}*`);
  expect(keys.length).toBeGreaterThan(0);
  const ttls = await Promise.all(keys.map(async (key) => [key, await client.pttl(key)] as const));
  expect(ttls.filter(([, ttl]) => ttl < 0)).toEqual([]);
}

/**
 * Writes `count` events over three streams of one session to both logs (as a replica does), then
 * compares what a resumption after every sequence number gets from each.
 */
async function writeAndCompare(limits: { events: number; bytes: number }, count: number, sizeOf: (i: number) => number): Promise<string> {
  const log = await replica(limits);
  const memory = new EventLog(limits);
  const session = `session-${Math.random()}`;
  const streams: (LoggedStream & { next: number })[] = Array.from({ length: 3 }, () => ({ key: memory.newKey(), droppedUpTo: 0, next: 1 }));
  for (const stream of streams) log.begin(session, stream.key, 'standalone', []);
  let last = streams[0]!;
  for (let i = 0; i < count; i++) {
    // Not round-robin: the first stream has half the events.
    last = streams[i % 4 === 3 ? 2 : i % 2]!;
    const data = dataOf(i, sizeOf(i));
    const seq = last.next++;
    memory.append(last, seq, data);
    log.append(session, last.key, seq, data);
  }
  // Writes are not waited for; one connection's are applied in order: the last one seen, all are.
  await expect.poll(async () => (await log.read(session, last.key, last.next - 2))?.events.at(-1)?.seq, { timeout: 10_000 }).toBe(last.next - 1);
  for (const stream of streams) {
    for (let after = 0; after < stream.next; after++) {
      const kept = memory.after(stream, after);
      const shared = await log.read(session, stream.key, after);
      expect(shared?.dropped, `${stream.key} after ${after}`).toBe(kept === undefined);
      if (kept) expect(shared?.events).toEqual(kept.map(({ seq, data }) => ({ seq, data })));
    }
  }
  return session;
}

describe('the replay log in Redis, bounded as a replica’s own', () => {
  it('holds a session’s bytes to sessions.replayBytes: 1,200 events of 2–4 KB (3.5 MB) leave 32 KB, the same events the replica’s log keeps', async () => {
    const limits = { events: 1_000, bytes: 32 * 1024 };
    const session = await writeAndCompare(limits, 1_200, (i) => 2_048 + ((i * 7919) % 2_048));
    const state = await sessionState(session);
    expect(state.dataBytes).toBeLessThanOrEqual(limits.bytes);
    expect(state.dataBytes).toBeGreaterThan(limits.bytes - 4_096);
    expect(state.counted).toBe(state.dataBytes);
    expect(state.order).toBe(state.listed);
    // Three streams (events and what the stream is), the session's order and count: no more.
    expect(state.keys.length).toBeLessThanOrEqual(8);
    // What Redis spends on it stays near the bound (3.5 MB had every event been kept).
    expect(state.memory).toBeLessThan(4 * limits.bytes);
    await expectAllExpire();
  });

  it('holds a session’s events to sessions.replayEvents across its streams, as the replica’s log does', async () => {
    const session = await writeAndCompare({ events: 40, bytes: 4 * 1024 * 1024 }, 500, (i) => 40 + (i % 50));
    const state = await sessionState(session);
    expect(state.listed).toBe(40);
    expect(state.order).toBe(40);
  });

  it('keeps one event larger than the bound, as the replica’s log does, until the next comes', async () => {
    await writeAndCompare({ events: 100, bytes: 2_048 }, 12, (i) => (i % 5 === 0 ? 6_000 : 300));
  });

  it('stays bounded while two replicas write one session at once', async () => {
    const limits = { events: 1_000, bytes: 24 * 1024 };
    const [one, two] = [await replica(limits), await replica(limits)];
    const session = `session-${Math.random()}`;
    const [a, b] = ['0000000000aa', '0000000000bb'];
    one.begin(session, a, 'standalone', []);
    two.begin(session, b, 'request', [1]);
    for (let seq = 1; seq <= 600; seq++) {
      one.append(session, a, seq, dataOf(seq, 1_000 + (seq % 3) * 1_000));
      two.append(session, b, seq, dataOf(seq, 3_000 - (seq % 3) * 1_000));
    }
    two.end(session, b);
    // Each replica's last write applied: its event is there, or already dropped for the other's.
    for (const [log, stream] of [[one, a], [two, b]] as const) {
      const applied = async (): Promise<boolean> => {
        const written = await log.read(session, stream, 599);
        return written?.dropped === true || written?.events.at(-1)?.seq === 600;
      };
      await expect.poll(applied, { timeout: 10_000 }).toBe(true);
    }
    const state = await sessionState(session);
    expect(state.dataBytes).toBeLessThanOrEqual(limits.bytes);
    expect(state.counted).toBe(state.dataBytes);
    expect(state.order).toBe(state.listed);
    // Each stream knows what it lost: a resumption from its first event is refused.
    for (const stream of [a, b]) expect((await one.read(session, stream, 1))?.dropped).toBe(true);
    await expectAllExpire();
  });

  it('sets an expiry on every key it writes, a held stream’s too, whatever idleTimeout', async () => {
    // A duration given as a number is taken as it is: Redis refuses an expiry that is not whole.
    const log = await replica({ events: 10, bytes: 4_096 }, 30_000.5);
    const session = `session-${Math.random()}`;
    log.begin(session, '0000000000cc', 'request', [1]);
    for (let seq = 1; seq <= 20; seq++) log.append(session, '0000000000cc', seq, dataOf(seq, 500));
    log.hold(session, '0000000000cc', true);
    log.end(session, '0000000000cc');
    await expect.poll(async () => (await log.read(session, '0000000000cc', 19))?.done, { timeout: 10_000 }).toBe(true);
    expect((await log.read(session, '0000000000cc', 19))?.events.map((e) => e.seq)).toEqual([20]);
    await expectAllExpire();
    log.hold(session, '0000000000cc', false);
  });

  it('keeps a held stream’s session order and count with it past their TTL, so its next events are bounded too', async () => {
    // Longer than the log's heartbeat (1 s), which renews what is held.
    const log = await replica({ events: 100, bytes: 2_048 }, 2_000);
    const session = `session-${Math.random()}`;
    const stream = '0000000000dd';
    log.begin(session, stream, 'standalone', []);
    log.append(session, stream, 1, dataOf(1, 1_500));
    log.hold(session, stream, true);
    const started = Date.now();
    await expect.poll(async () => (await log.read(session, stream, 0))?.events.length, { timeout: 5_000 }).toBe(1);
    // TTLs run on Redis's clock: waited for, bounded.
    await expect.poll(() => Date.now() - started, { timeout: 10_000, interval: 100 }).toBeGreaterThan(5_000);
    log.append(session, stream, 2, dataOf(2, 1_500));
    await expect.poll(async () => (await log.read(session, stream, 0))?.events.map((e) => e.seq), { timeout: 5_000 }).toEqual([2]);
    expect((await log.read(session, stream, 0))?.dropped).toBe(true);
    log.hold(session, stream, false);
  }, 20_000);
});
