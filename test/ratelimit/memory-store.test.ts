// The in-process bucket store (src/ratelimit/memory-store.ts): buckets per key on an injected
// clock, and its bound, which never hands an active principal a fresh burst: a bucket is kept
// until it would be full again by what it holds, and while every slot holds a bucket still
// refilling, a newcomer is refused as such, told when the soonest is full again.
import { afterEach, describe, expect, it } from 'vitest';
import { fullAfterMs, type BucketLimit } from '../../src/ratelimit/bucket.js';
import { MAX_TABLE_FULL_WAIT_MS, MemoryBucketStore } from '../../src/ratelimit/memory-store.js';

/** 1 per 10 s, burst 1: a used bucket is full again after 10 s. */
const ONE_PER_TEN_SECONDS: BucketLimit = { rate: 1, perMs: 10_000, burst: 1 };
/** 2 per minute, burst 2. */
const TWO_PER_MINUTE: BucketLimit = { rate: 2, perMs: 60_000, burst: 2 };
/** 10 per 3 minutes, burst 10: one token every 18 s, full from empty in 180 s. */
const TEN_PER_THREE_MINUTES: BucketLimit = { rate: 10, perMs: 180_000, burst: 10 };

/** A clock the test moves by hand. */
function manualClock(start = 1_000_000): { now: () => number; advance: (ms: number) => void } {
  let now = start;
  return { now: () => now, advance: (ms) => (now += ms) };
}

const stores: MemoryBucketStore[] = [];
function storeOf(maxBuckets: number, now?: () => number): MemoryBucketStore {
  const store = new MemoryBucketStore(maxBuckets, now);
  stores.push(store);
  return store;
}

afterEach(async () => {
  await Promise.all(stores.splice(0).map((s) => s.close()));
});

/** Empties the buckets of `keys`, one request each under ONE_PER_TEN_SECONDS. */
async function useUp(store: MemoryBucketStore, keys: string[]): Promise<void> {
  for (const key of keys) expect((await store.take(key, ONE_PER_TEN_SECONDS)).allowed, key).toBe(true);
}

/** Empties a bucket under TWO_PER_MINUTE (two requests). */
async function useUpTwoPerMinute(store: MemoryBucketStore, key: string): Promise<void> {
  for (let i = 0; i < 2; i++) expect((await store.take(key, TWO_PER_MINUTE)).allowed, key).toBe(true);
}

describe('memory bucket store', () => {
  it('keeps one bucket per key, refilled on the injected clock', async () => {
    const clock = manualClock();
    const store = storeOf(10, clock.now);
    expect(await store.take('a', TWO_PER_MINUTE)).toEqual({ allowed: true, remaining: 1, retryAfterMs: 0, resetMs: 30_000 });
    expect(await store.take('a', TWO_PER_MINUTE)).toEqual({ allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 60_000 });
    expect(await store.take('a', TWO_PER_MINUTE)).toEqual({ allowed: false, remaining: 0, retryAfterMs: 30_000, resetMs: 60_000 });
    // Another key has a bucket of its own.
    expect(await store.take('b', TWO_PER_MINUTE)).toMatchObject({ allowed: true, remaining: 1 });

    clock.advance(29_999);
    expect(await store.take('a', TWO_PER_MINUTE)).toEqual({ allowed: false, remaining: 0, retryAfterMs: 1, resetMs: 30_001 });
    clock.advance(1);
    expect(await store.take('a', TWO_PER_MINUTE)).toEqual({ allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 60_000 });
  });

  it('takes a cost of several tokens at once', async () => {
    const clock = manualClock();
    const store = storeOf(10, clock.now);
    const limit: BucketLimit = { rate: 10, perMs: 1_000, burst: 10 };
    expect(store.takeNow('k', limit, 4)).toEqual({ allowed: true, remaining: 6, retryAfterMs: 0, resetMs: 400 });
    expect(store.takeNow('k', limit, 7)).toEqual({ allowed: false, remaining: 6, retryAfterMs: 100, resetMs: 400 });
    expect(store.takeNow('k', limit, 6)).toEqual({ allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 1_000 });
  });

  it('a known key is still served when every slot is taken', async () => {
    const clock = manualClock();
    const store = storeOf(3, clock.now);
    await useUp(store, ['p1', 'p2', 'p3']);
    expect(await store.take('p1', ONE_PER_TEN_SECONDS)).toEqual({ allowed: false, remaining: 0, retryAfterMs: 10_000, resetMs: 10_000 });
    clock.advance(10_000);
    expect(await store.take('p2', ONE_PER_TEN_SECONDS)).toMatchObject({ allowed: true });
  });

  it('refuses a newcomer, with a retry hint, rather than evict a bucket still refilling', async () => {
    const clock = manualClock();
    const store = storeOf(3, clock.now);
    await useUp(store, ['p1', 'p2', 'p3']);

    // Until the soonest bucket is full again, and said to be for want of room.
    expect(await store.take('newcomer', ONE_PER_TEN_SECONDS)).toEqual({ allowed: false, remaining: 0, retryAfterMs: 10_000, resetMs: 10_000, tableFull: true });

    // Nobody got a fresh burst: every active principal is still empty.
    for (const key of ['p1', 'p2', 'p3']) expect((await store.take(key, ONE_PER_TEN_SECONDS)).allowed, key).toBe(false);
    // The refused newcomer took no slot either.
    expect((await store.take('newcomer', ONE_PER_TEN_SECONDS)).allowed).toBe(false);
  });

  it('caps the retry hint of a refused newcomer', async () => {
    const store = storeOf(1);
    const hourly: BucketLimit = { rate: 1, perMs: 3_600_000, burst: 1 };
    expect((await store.take('p1', hourly)).allowed).toBe(true);
    expect(MAX_TABLE_FULL_WAIT_MS).toBe(300_000);
    expect(await store.take('newcomer', hourly)).toEqual({ allowed: false, remaining: 0, retryAfterMs: 300_000, resetMs: 300_000, tableFull: true });
  });

  // BUG (src/ratelimit/memory-store.ts, when it was an lru-cache): the injected clock drove the
  // bucket arithmetic but not the LRU's TTLs (performance.now()), so on the injected clock a
  // bucket that would be full again was never forgotten and a newcomer stayed refused.
  it('admits a newcomer once a bucket would be full again (by the injected clock)', async () => {
    const clock = manualClock();
    const store = storeOf(3, clock.now);
    await useUp(store, ['p1', 'p2', 'p3']);
    expect((await store.take('newcomer', ONE_PER_TEN_SECONDS)).allowed).toBe(false);

    clock.advance(fullAfterMs(ONE_PER_TEN_SECONDS));
    expect((await store.take('newcomer', ONE_PER_TEN_SECONDS)).allowed).toBe(true);
  });

  it('admits a newcomer once a bucket would be full again (real clock)', async () => {
    // Full 300 ms after use, so kept that long only.
    const quick: BucketLimit = { rate: 1, perMs: 300, burst: 1 };
    const store = storeOf(2);
    expect((await store.take('p1', quick)).allowed).toBe(true);
    expect((await store.take('p2', quick)).allowed).toBe(true);
    const started = Date.now();
    const first = await store.take('newcomer', quick);
    expect(first.allowed).toBe(false);
    expect(first.retryAfterMs).toBeGreaterThan(0);
    expect(first.retryAfterMs).toBeLessThanOrEqual(fullAfterMs(quick));

    let admitted = false;
    while (!admitted) {
      expect(Date.now() - started, 'a newcomer admitted within 3 s').toBeLessThan(3_000);
      await new Promise((resolve) => setTimeout(resolve, 25));
      admitted = (await store.take('newcomer', quick)).allowed;
    }
    // Never before its hint.
    expect(Date.now() - started).toBeGreaterThanOrEqual(first.retryAfterMs - 50);
  });

  // BUG (src/ratelimit/memory-store.ts takeNow): every bucket was kept for its time to fill from
  // EMPTY (plus 1 s), whatever it held, so a table of buckets each used once (full again in 18 s)
  // turned newcomers away for 181 s. A bucket's time in the table is its own time to be full again.
  it('drops a bucket once it is full again by what it holds, so a newcomer is admitted then', async () => {
    const clock = manualClock();
    const store = storeOf(100, clock.now);
    for (let i = 0; i < 100; i++) expect(store.takeNow(`p${i}`, TEN_PER_THREE_MINUTES), `p${i}`).toMatchObject({ allowed: true, remaining: 9, resetMs: 18_000 });
    expect(store.takeNow('newcomer', TEN_PER_THREE_MINUTES).allowed).toBe(false);

    // Past each bucket's own refill (18 s), long before the time to fill from empty (180 s).
    clock.advance(18_000);
    expect(store.takeNow('newcomer', TEN_PER_THREE_MINUTES)).toEqual({ allowed: true, remaining: 9, retryAfterMs: 0, resetMs: 18_000 });
    // Dropping full buckets changed no verdict: each of them still holds its whole burst (until
    // the table is full again, of buckets refilling for another 18 s).
    for (let i = 0; i < 99; i++) expect(store.takeNow(`p${i}`, TEN_PER_THREE_MINUTES), `p${i}`).toMatchObject({ allowed: true, remaining: 9 });
    expect(store.takeNow('p99', TEN_PER_THREE_MINUTES)).toMatchObject({ allowed: false, retryAfterMs: 18_000, tableFull: true });
  });

  it('keeps no bucket that is full, so it never stands in a newcomer\'s way', async () => {
    const clock = manualClock();
    const store = storeOf(100, clock.now);
    // A batch over the burst is refused and takes nothing: the bucket stays full.
    for (let i = 0; i < 100; i++) expect(store.takeNow(`p${i}`, TEN_PER_THREE_MINUTES, 11), `p${i}`).toMatchObject({ allowed: false, remaining: 10, resetMs: 0 });
    expect(store.takeNow('newcomer', TEN_PER_THREE_MINUTES)).toEqual({ allowed: true, remaining: 9, retryAfterMs: 0, resetMs: 18_000 });
  });

  // BUG (src/ratelimit/memory-store.ts takeNow): a newcomer refused for want of room was told the
  // remaining TTL of the least recently used bucket, capped at 60 s, however soon another bucket
  // would be full again; and the refusal looked like the newcomer's own limit.
  it('refuses a newcomer while every bucket is still refilling, as such, until the soonest is full again', async () => {
    const clock = manualClock();
    const store = storeOf(3, clock.now);
    const hourly: BucketLimit = { rate: 1, perMs: 3_600_000, burst: 1 };
    expect(store.takeNow('p1', hourly).allowed).toBe(true); // full again in 1 h, and the least recently used
    clock.advance(1_000);
    await useUpTwoPerMinute(store, 'p2'); // full again in 60 s
    clock.advance(1_000);
    await useUp(store, ['p3']); // full again in 10 s: the soonest

    expect(store.takeNow('newcomer', ONE_PER_TEN_SECONDS)).toEqual({ allowed: false, remaining: 0, retryAfterMs: 10_000, resetMs: 10_000, tableFull: true });
    clock.advance(9_999);
    expect(store.takeNow('newcomer', ONE_PER_TEN_SECONDS)).toEqual({ allowed: false, remaining: 0, retryAfterMs: 1, resetMs: 1, tableFull: true });
    clock.advance(1);
    expect(store.takeNow('newcomer', ONE_PER_TEN_SECONDS)).toEqual({ allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 10_000 });
    // Nobody got a fresh burst: the buckets still refilling are still empty.
    expect(store.takeNow('p1', hourly).allowed).toBe(false);
    expect(store.takeNow('p2', TWO_PER_MINUTE).allowed).toBe(false);
  });

  it('counts a take that renews a bucket: its time in the table is from what it holds now', async () => {
    const clock = manualClock();
    const store = storeOf(2, clock.now);
    await useUp(store, ['p1']); // full again at +10 s
    expect(store.takeNow('p2', TEN_PER_THREE_MINUTES).allowed).toBe(true); // full again at +18 s
    clock.advance(9_000);
    // p1 has 0.9 token; refused, it stays due at +10 s. p2 takes another: due at +36 s now.
    expect(store.takeNow('p1', ONE_PER_TEN_SECONDS)).toMatchObject({ allowed: false, retryAfterMs: 1_000 });
    expect(store.takeNow('p2', TEN_PER_THREE_MINUTES)).toMatchObject({ allowed: true, resetMs: 27_000 });
    expect(store.takeNow('newcomer', ONE_PER_TEN_SECONDS)).toMatchObject({ allowed: false, retryAfterMs: 1_000, tableFull: true });
    clock.advance(1_000);
    expect(store.takeNow('newcomer', ONE_PER_TEN_SECONDS).allowed).toBe(true);
    expect(store.takeNow('late', ONE_PER_TEN_SECONDS)).toMatchObject({ allowed: false, retryAfterMs: 10_000, tableFull: true });
  });

  it('forgets every bucket on close', async () => {
    const clock = manualClock();
    const store = storeOf(3, clock.now);
    await useUp(store, ['p1']);
    await store.close();
    expect((await store.take('p1', ONE_PER_TEN_SECONDS)).allowed).toBe(true);
  });
});
