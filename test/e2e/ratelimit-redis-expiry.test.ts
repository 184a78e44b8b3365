// How long the Redis store (src/ratelimit/redis-store.ts) keeps a bucket: until it would be full
// again given what it holds after each take, never for the time to fill from empty; a bucket
// left full is not kept at all (forgetting a full bucket changes no verdict).
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import type { BucketLimit } from '../../src/ratelimit/bucket.js';
import { RedisBucketStore } from '../../src/ratelimit/redis-store.js';
import { silentLogger } from '../../src/util/log.js';
import { poll } from '../helpers/cli.js';
import { startRedis } from '../helpers/redis.js';

/** 10 per 3 minutes, burst 10: one token every 18 s, full from empty in 180 s. */
const TEN_PER_THREE_MINUTES: BucketLimit = { rate: 10, perMs: 180_000, burst: 10 };

const cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const stop of cleanup.splice(0).reverse()) await stop().catch(() => undefined);
});

async function connectedStore(): Promise<{ store: RedisBucketStore; redis: Redis; prefix: string }> {
  const server = await startRedis();
  cleanup.push(() => server.close());
  const store = new RedisBucketStore({ url: server.url, prefix: server.prefix, maxBuckets: 100, logger: silentLogger });
  cleanup.push(() => store.close());
  const redis = new Redis(server.url, { lazyConnect: false, maxRetriesPerRequest: 1 });
  cleanup.push(async () => redis.disconnect());
  await poll(() => (store.health.state === 'connected' ? true : undefined), 'the store to reach Redis', 10_000, 20);
  return { store, redis, prefix: server.prefix };
}

describe('the Redis store keeps a bucket', () => {
  // BUG (src/ratelimit/redis-store.ts take): every key was given the time to fill from EMPTY plus
  // 1 s (here 181 s) whatever the bucket still held.
  it('until it would be full again by what it holds, renewed by each take', async () => {
    const { store, redis, prefix } = await connectedStore();
    expect(await store.take('one', TEN_PER_THREE_MINUTES)).toMatchObject({ allowed: true, remaining: 9, resetMs: 18_000 });
    const once = await redis.pttl(`${prefix}one`);
    expect(once).toBeGreaterThan(17_000);
    expect(once).toBeLessThanOrEqual(18_000);

    // Emptied, it is kept for the whole refill; a take refused changes nothing it holds.
    for (let i = 0; i < 9; i++) await store.take('one', TEN_PER_THREE_MINUTES);
    expect(await store.take('one', TEN_PER_THREE_MINUTES)).toMatchObject({ allowed: false });
    const empty = await redis.pttl(`${prefix}one`);
    expect(empty).toBeGreaterThan(179_000);
    expect(empty).toBeLessThanOrEqual(180_000);
  });

  it('not at all when it is left full', async () => {
    const { store, redis, prefix } = await connectedStore();
    // A batch over the burst is refused and takes nothing.
    expect(await store.take('full', TEN_PER_THREE_MINUTES, 11)).toMatchObject({ allowed: false, remaining: 10, resetMs: 0 });
    expect(await redis.exists(`${prefix}full`)).toBe(0);
    // One that takes a token is kept, for as long as the token takes to come back.
    expect(await store.take('full', TEN_PER_THREE_MINUTES)).toMatchObject({ allowed: true, remaining: 9 });
    expect(await redis.pttl(`${prefix}full`)).toBeGreaterThan(17_000);
  });
});
