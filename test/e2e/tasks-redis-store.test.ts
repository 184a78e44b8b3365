// The task store in a real redis-server, as two replicas see it (two stores on one prefix): the
// bound per principal holds across them, a lease that ran out lets the other end the task once,
// what one asks of a task the other takes once, and a task expires after its TTL.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisTaskStore } from '../../src/tasks/redis.js';
import type { StoredTask } from '../../src/tasks/store.js';
import { poll } from '../helpers/cli.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';

let redis: TestRedis;
let one: RedisTaskStore;
let two: RedisTaskStore;

beforeAll(async () => {
  redis = await startRedis();
  one = new RedisTaskStore({ url: redis.url, prefix: redis.prefix });
  two = new RedisTaskStore({ url: redis.url, prefix: redis.prefix });
});

afterAll(async () => {
  await one?.close();
  await two?.close();
  await redis?.close();
});

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
