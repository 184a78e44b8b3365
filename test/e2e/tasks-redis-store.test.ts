// The task store in a real redis-server, as two replicas see it (two stores on one prefix): the
// bound per principal holds across them (for as long as a task is renewed or kept), a lease that
// ran out lets the other end the task once and that end stands, what one asks of a task the
// other takes once, and a task expires after its TTL.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisTaskStore } from '../../src/tasks/redis.js';
import type { StoredTask } from '../../src/tasks/store.js';
import { poll } from '../helpers/cli.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';

let redis: TestRedis;
let one: RedisTaskStore;
let two: RedisTaskStore;
/** A plain client, for the Redis clock and to lose keys on purpose. */
let raw: Redis;

beforeAll(async () => {
  redis = await startRedis();
  one = new RedisTaskStore({ url: redis.url, prefix: redis.prefix });
  two = new RedisTaskStore({ url: redis.url, prefix: redis.prefix });
  raw = new Redis(redis.url);
});

afterAll(async () => {
  await one?.close();
  await two?.close();
  raw?.disconnect();
  await redis?.close();
});

/** Milliseconds on the Redis clock, the one the store's scripts use. */
async function redisNow(): Promise<number> {
  const [seconds, micros] = await raw.time();
  return Number(seconds) * 1_000 + Math.floor(Number(micros) / 1_000);
}

function task(id: string, principal: string, ttlMs = 60_000): StoredTask {
  const at = new Date().toISOString();
  return { id, principal, upstream: 'u', tool: 'u__t', status: 'working', createdAt: at, lastUpdatedAt: at, ttlMs, pollIntervalMs: 1_000 };
}

describe('the Redis task store', () => {
  it('bounds the tasks a principal holds across replicas', async () => {
    expect(await one.create(task('b1', 'bounded'), 10_000, 2)).toBe(true);
    expect(await two.create(task('b2', 'bounded'), 10_000, 2)).toBe(true);
    expect(await one.create(task('b3', 'bounded'), 10_000, 2)).toBe(false);
    expect(await two.get('b3')).toBeUndefined();
    expect(await two.create(task('b4', 'someone else'), 10_000, 2)).toBe(true);
  });

  it("a lease that ran out lets another replica end the task, once; a renewed one does not", async () => {
    await one.create(task('l1', 'p'), 150, 10);
    const failed = { ...task('l1', 'p'), status: 'failed' as const };
    expect(await two.failIfAbandoned(failed)).toBe(false);
    await one.renew(['l1'], 150, 60_000);
    const expired = await poll(async () => ((await two.get('l1'))?.leaseExpired ? true : undefined), 'the lease to run out', 5_000, 50);
    expect(expired).toBe(true);
    expect(await two.failIfAbandoned(failed)).toBe(true);
    expect(await one.failIfAbandoned(failed)).toBe(false);
    expect((await one.get('l1'))?.task.status).toBe('failed');
  });

  it('a task renewed past its first TTL still counts against its principal, and so does its result', async () => {
    expect(await one.create(task('long1', 'long runner', 1_000), 1_000, 1)).toBe(true);
    const started = await redisNow();
    // The owner's heartbeat: renewals every 300 ms until the task has run 1.8 s, past its first TTL.
    await poll(async () => {
      await one.renew(['long1'], 1_000, 1_000);
      return (await redisNow()) - started >= 1_800 ? true : undefined;
    }, 'the task to run past its first TTL', 10_000, 300);
    expect(await two.get('long1')).toBeDefined();
    expect(await two.create(task('long2', 'long runner', 1_000), 1_000, 1)).toBe(false);
    expect(await one.put({ ...task('long1', 'long runner', 1_000), status: 'completed', result: { content: [] } }, 1_000)).toBe(true);
    expect(await two.create(task('long3', 'long runner', 1_000), 1_000, 1)).toBe(false);
  });

  it("the owner's write counts a live task its principal's set lost", async () => {
    const prefix = `${redis.prefix}lost:`;
    const store = new RedisTaskStore({ url: redis.url, prefix });
    try {
      expect(await store.create(task('lost1', 'p'), 10_000, 1)).toBe(true);
      const sets = await raw.keys(`${prefix}tasks:*`);
      expect(sets).toHaveLength(1);
      await raw.del(...sets);
      const written = await store.put({ ...task('lost1', 'p'), statusMessage: 'half way' }, 10_000);
      expect(await store.create(task('lost2', 'p'), 10_000, 1)).toBe(false);
      expect(written).toBe(true);
    } finally {
      await store.close();
    }
  });

  it("a task another replica ended failed stays failed: its owner's later write is refused", async () => {
    await one.create(task('e1', 'p'), 100, 10);
    await poll(async () => ((await two.get('e1'))?.leaseExpired ? true : undefined), 'the lease to run out', 5_000, 50);
    expect(await two.failIfAbandoned({ ...task('e1', 'p'), status: 'failed' })).toBe(true);
    const written = await one.put({ ...task('e1', 'p'), status: 'completed', result: { content: [] } }, 10_000);
    expect((await two.get('e1'))?.task).toMatchObject({ status: 'failed' });
    expect((await two.get('e1'))?.task.result).toBeUndefined();
    expect(written).toBe(false);
  });

  it('hands what one replica asks of a task to its owner, once', async () => {
    await one.create(task('r1', 'p'), 10_000, 10);
    await two.request('r1', { update: { confirm: { action: 'accept' } } });
    await two.request('r1', { cancel: true });
    expect([...(await one.take(['r1', 'r-unknown']))]).toEqual([['r1', { cancel: true, updates: [{ confirm: { action: 'accept' } }] }]]);
    expect((await one.take(['r1'])).size).toBe(0);
  });

  it('keeps a task ttlMs after its last write', async () => {
    await one.create(task('t1', 'p', 200), 100, 10);
    expect(await two.get('t1')).toBeDefined();
    await poll(async () => ((await two.get('t1')) === undefined ? true : undefined), 'the task to expire', 5_000, 50);
  });
});
