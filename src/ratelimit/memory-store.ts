// Buckets in this process, at most maxBuckets of them. A bucket is kept only until it would be
// full again given what it holds (renewed by every take); a full bucket is the same as none, so
// dropping it changes no verdict and it never stands in a newcomer's way. When every slot holds
// a bucket still refilling, evicting one would hand its owner a fresh burst: the newcomer is
// refused instead, told so (Decision.tableFull) and when the soonest bucket is full again.
import { take, type BucketLimit, type BucketState, type Decision } from './bucket.js';

export interface BucketStore {
  take(key: string, limit: BucketLimit, cost?: number): Promise<Decision>;
  close(): Promise<void>;
}

interface HeldBucket extends BucketState {
  /** When it would be full again, untouched: from then on it may be dropped. */
  fullAt: number;
}

/**
 * The longest wait a newcomer refused for want of room is told. The soonest bucket's time only
 * moves later with each take, but a reload of the limits can bring it closer, and a client told
 * to come back in an hour may give up for good: past this, it asks again and is told afresh.
 */
export const MAX_TABLE_FULL_WAIT_MS = 300_000;

export class MemoryBucketStore implements BucketStore {
  readonly #buckets = new Map<string, HeldBucket>();
  readonly #max: number;
  readonly #now: () => number;
  /**
   * No bucket held is full before this, so until then a newcomer meeting a full table is refused
   * without a look through all of them. Exact after each look, and while #soonestExact: a
   * bucket that had this time taking again (later) or dropped may leave it early.
   */
  #soonestFullAt = Infinity;
  #soonestExact = true;

  constructor(maxBuckets: number, now: () => number = Date.now) {
    this.#max = maxBuckets;
    this.#now = now;
  }

  async take(key: string, limit: BucketLimit, cost = 1): Promise<Decision> {
    return this.takeNow(key, limit, cost);
  }

  takeNow(key: string, limit: BucketLimit, cost = 1): Decision {
    const now = this.#now();
    const current = this.#buckets.get(key);
    const { state, decision } = take(current, limit, now, cost);
    const fullAt = now + decision.resetMs;
    const full = decision.resetMs <= 0;
    if (current?.fullAt === this.#soonestFullAt && (full || fullAt !== current.fullAt)) this.#soonestExact = false;
    if (full) {
      // Left full (a batch over the burst, refused): the same as no bucket.
      this.#buckets.delete(key);
      return decision;
    }
    if (current === undefined && this.#buckets.size >= this.#max && !this.#makeRoom(now)) {
      const wait = Math.min(MAX_TABLE_FULL_WAIT_MS, Math.max(1, this.#soonestFullAt - now));
      return { allowed: false, remaining: 0, retryAfterMs: wait, resetMs: wait, tableFull: true };
    }
    this.#buckets.set(key, { ...state, fullAt });
    if (fullAt <= this.#soonestFullAt) {
      this.#soonestFullAt = fullAt;
      this.#soonestExact = true;
    }
    return decision;
  }

  /**
   * Drops every bucket full by now; whether that freed a slot. Looks through them only when one
   * may be full, or to learn exactly when the soonest will be.
   */
  #makeRoom(now: number): boolean {
    if (now < this.#soonestFullAt && this.#soonestExact) return false;
    let soonest = Infinity;
    for (const [key, bucket] of this.#buckets) {
      if (bucket.fullAt <= now) this.#buckets.delete(key);
      else if (bucket.fullAt < soonest) soonest = bucket.fullAt;
    }
    this.#soonestFullAt = soonest;
    this.#soonestExact = true;
    return this.#buckets.size < this.#max;
  }

  async close(): Promise<void> {
    this.#buckets.clear();
    this.#soonestFullAt = Infinity;
    this.#soonestExact = true;
  }
}
