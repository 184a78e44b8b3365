// Token bucket arithmetic (src/ratelimit/bucket.ts) on an explicit clock: the burst, refill at
// the configured rate, the cost of a batch, and the retry and reset delays clients are told.
import { describe, expect, it } from 'vitest';
import { fullAfterMs, refillPerMs, take, type BucketLimit, type BucketState, type Decision } from '../../src/ratelimit/bucket.js';

/** 2 per minute, burst 2: one token every 30 s. */
const TWO_PER_MINUTE: BucketLimit = { rate: 2, perMs: 60_000, burst: 2 };
/** 10 per second, burst 10: one token every 100 ms. */
const TEN_PER_SECOND: BucketLimit = { rate: 10, perMs: 1_000, burst: 10 };

/** Takes `cost` at each time in turn, threading the state through; the decisions, in order. */
function takeAt(limit: BucketLimit, steps: { at: number; cost?: number }[], start?: BucketState): { decisions: Decision[]; state: BucketState | undefined } {
  let state = start;
  const decisions: Decision[] = [];
  for (const step of steps) {
    const next = take(state, limit, step.at, step.cost ?? 1);
    state = next.state;
    decisions.push(next.decision);
  }
  return { decisions, state };
}

describe('token bucket', () => {
  it('derives the refill rate and the time to fill from the limit', () => {
    expect(refillPerMs(TEN_PER_SECOND)).toBe(0.01);
    expect(fullAfterMs(TWO_PER_MINUTE)).toBe(60_000);
    expect(fullAfterMs(TEN_PER_SECOND)).toBe(1_000);
    // A burst larger than the rate takes longer than one period to fill.
    expect(fullAfterMs({ rate: 3, perMs: 60_000, burst: 5 })).toBe(100_000);
  });

  it('a new bucket allows exactly `burst` requests at once, then refuses', () => {
    const { decisions } = takeAt(TWO_PER_MINUTE, [{ at: 0 }, { at: 0 }, { at: 0 }]);
    expect(decisions).toEqual([
      { allowed: true, remaining: 1, retryAfterMs: 0, resetMs: 30_000 },
      { allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 60_000 },
      { allowed: false, remaining: 0, retryAfterMs: 30_000, resetMs: 60_000 },
    ]);
  });

  it('refills one token per perMs/rate: refused 1 ms early, allowed on time', () => {
    const { state } = takeAt(TWO_PER_MINUTE, [{ at: 0 }, { at: 0 }]);
    const early = take(state, TWO_PER_MINUTE, 29_999);
    expect(early.decision).toEqual({ allowed: false, remaining: 0, retryAfterMs: 1, resetMs: 30_001 });
    const onTime = take(early.state, TWO_PER_MINUTE, 30_000);
    expect(onTime.decision).toEqual({ allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 60_000 });
    // That token is spent: the next one is a full interval away again.
    expect(take(onTime.state, TWO_PER_MINUTE, 30_000).decision).toMatchObject({ allowed: false, retryAfterMs: 30_000 });
  });

  it('a refused request costs nothing: the tokens it found are still there', () => {
    const { decisions } = takeAt(TWO_PER_MINUTE, [{ at: 0 }, { at: 0 }, { at: 0 }, { at: 0 }, { at: 30_000 }]);
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, false, false, true]);
  });

  it('never holds more than `burst`, however long it was idle', () => {
    const { decisions } = takeAt(TEN_PER_SECOND, [{ at: 0, cost: 10 }, { at: 10_000_000 }]);
    expect(decisions[1]).toEqual({ allowed: true, remaining: 9, retryAfterMs: 0, resetMs: 100 });
    const fresh = take(undefined, TEN_PER_SECOND, 5).decision;
    expect(fresh).toEqual(decisions[1]);
  });

  it('takes `cost` tokens at once, and refuses a cost above what is left without taking any', () => {
    const { decisions, state } = takeAt(TEN_PER_SECOND, [{ at: 0, cost: 4 }, { at: 0, cost: 7 }, { at: 0, cost: 6 }]);
    expect(decisions).toEqual([
      { allowed: true, remaining: 6, retryAfterMs: 0, resetMs: 400 },
      // One token short: 100 ms until it arrives; the 6 left are untouched.
      { allowed: false, remaining: 6, retryAfterMs: 100, resetMs: 400 },
      { allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 1_000 },
    ]);
    expect(state).toEqual({ tokens: 0, updatedAt: 0 });
  });

  it('counts fractional tokens: remaining is whole, the delays cover the missing fraction', () => {
    const { state } = takeAt(TEN_PER_SECOND, [{ at: 0, cost: 10 }]);
    const next = take(state, TEN_PER_SECOND, 250, 3);
    // 2.5 tokens after 250 ms: 3 are 50 ms away, a full bucket 750 ms.
    expect(next.decision).toEqual({ allowed: false, remaining: 2, retryAfterMs: 50, resetMs: 750 });
    expect(next.state).toEqual({ tokens: 2.5, updatedAt: 250 });
    expect(take(next.state, TEN_PER_SECOND, 300, 3).decision).toMatchObject({ allowed: true, remaining: 0 });
  });

  it('a clock that steps back adds no tokens', () => {
    const { decisions } = takeAt(TWO_PER_MINUTE, [{ at: 10_000 }, { at: 10_000 }, { at: 5_000 }]);
    expect(decisions[2]).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: 30_000 });
  });

  it('resetMs is when the bucket is full again', () => {
    const limit: BucketLimit = { rate: 3, perMs: 60_000, burst: 3 };
    const { decisions, state } = takeAt(limit, [{ at: 0 }, { at: 0 }]);
    expect(decisions[1]!.resetMs).toBe(40_000);
    const later = take(state, limit, 40_000, 3);
    expect(later.decision).toMatchObject({ allowed: true, remaining: 0 });
  });

  // BUG (src/ratelimit/bucket.ts take): retryAfterMs is computed in floating point and can fall
  // a hair short. With 1 per hour, a request refused 1 ms after the bucket emptied is told
  // 3_599_999 ms; at exactly that time the bucket holds 0.9999999999999999 tokens and the retry
  // is refused again (same with 4 per day: 21_599_999 ms).
  it('a refused request is allowed once its retryAfterMs has passed, for any limit and state', () => {
    const limits: BucketLimit[] = [
      TWO_PER_MINUTE,
      TEN_PER_SECOND,
      { rate: 3, perMs: 60_000, burst: 3 },
      { rate: 7, perMs: 60_000, burst: 7 },
      { rate: 3, perMs: 7_000, burst: 5 },
      { rate: 100, perMs: 60_000, burst: 20 },
      { rate: 1, perMs: 3_600_000, burst: 1 },
      { rate: 4, perMs: 86_400_000, burst: 1 },
    ];
    const broken: string[] = [];
    for (const limit of limits) {
      for (const elapsed of [0, 1, 17, 333, 999]) {
        const { state } = takeAt(limit, [{ at: 0, cost: limit.burst }]);
        const refused = take(state, limit, elapsed);
        if (refused.decision.allowed) continue;
        const retried = take(refused.state, limit, elapsed + refused.decision.retryAfterMs);
        if (!retried.decision.allowed) broken.push(`${limit.rate} per ${limit.perMs} ms, refused ${elapsed} ms after emptying, told ${refused.decision.retryAfterMs} ms`);
      }
    }
    expect(broken).toEqual([]);
  });
});
