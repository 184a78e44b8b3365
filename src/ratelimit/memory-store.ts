// Buckets in this process, bounded by an LRU. A bucket is only ever dropped once it would be
// full anyway (its TTL is its time to refill), so eviction never hands an active principal a
// fresh burst: when every slot holds a bucket still refilling, a new principal is refused
// (and told when to retry) instead.
import { LRUCache } from 'lru-cache';
import { fullAfterMs, take, type BucketLimit, type BucketState, type Decision } from './bucket.js';

export interface BucketStore {
  take(key: string, limit: BucketLimit, cost?: number): Promise<Decision>;
  close(): Promise<void>;
}

export class MemoryBucketStore implements BucketStore {
  readonly #buckets: LRUCache<string, BucketState>;
  readonly #now: () => number;

  constructor(maxBuckets: number, now: () => number = Date.now) {
    this.#now = now;
    // The store's clock drives expiry too (lru-cache would otherwise read performance.now()).
    this.#buckets = new LRUCache<string, BucketState>({ max: maxBuckets, ttlAutopurge: false, allowStale: false, perf: { now }, ttlResolution: 0 });
  }

  async take(key: string, limit: BucketLimit, cost = 1): Promise<Decision> {
    return this.takeNow(key, limit, cost);
  }

  takeNow(key: string, limit: BucketLimit, cost = 1): Decision {
    const now = this.#now();
    const current = this.#buckets.get(key);
    if (current === undefined && this.#buckets.size >= this.#buckets.max) {
      this.#buckets.purgeStale();
      if (this.#buckets.size >= this.#buckets.max) {
        // Full of buckets still refilling: evicting one would reset it. Refuse the newcomer.
        const oldest = this.#buckets.rkeys().next().value;
        const wait = oldest === undefined ? 1_000 : Math.max(1, this.#buckets.getRemainingTTL(oldest));
        return { allowed: false, remaining: 0, retryAfterMs: Math.min(wait, 60_000), resetMs: Math.min(wait, 60_000) };
      }
    }
    const { state, decision } = take(current, limit, now, cost);
    this.#buckets.set(key, state, { ttl: fullAfterMs(limit) + 1_000 });
    return decision;
  }

  async close(): Promise<void> {
    this.#buckets.clear();
  }
}
