// Token bucket arithmetic, shared by every store: `burst` tokens at most, refilled at `rate`
// per `perMs`; a request takes one. Pure, so the Redis script and the memory store agree.

export interface BucketLimit {
  rate: number;
  perMs: number;
  burst: number;
}

export interface BucketState {
  tokens: number;
  updatedAt: number;
}

export interface Decision {
  allowed: boolean;
  /** Tokens left after this request (whole tokens, for the RateLimit header). */
  remaining: number;
  /** When the next token arrives, if this one was refused. */
  retryAfterMs: number;
  /** When the bucket would be full again. */
  resetMs: number;
  /**
   * Refused for want of room, not by this bucket's limit: the store (memory-store.ts) holds as
   * many buckets as it may, every one still refilling. retryAfterMs is when the soonest is full.
   */
  tableFull?: true;
}

export function refillPerMs(limit: BucketLimit): number {
  return limit.rate / limit.perMs;
}

/** How long an untouched bucket takes to fill: after that, forgetting it changes nothing. */
export function fullAfterMs(limit: BucketLimit): number {
  return Math.ceil(limit.burst / refillPerMs(limit));
}

const EPSILON = 1e-9;

export function take(state: BucketState | undefined, limit: BucketLimit, now: number, cost = 1): { state: BucketState; decision: Decision } {
  const perMs = refillPerMs(limit);
  const before = state ? Math.min(limit.burst, state.tokens + Math.max(0, now - state.updatedAt) * perMs) : limit.burst;
  // A tolerance for floating point: a retry exactly retryAfterMs later must find the token.
  const allowed = before + EPSILON >= cost;
  const tokens = allowed ? Math.max(0, before - cost) : before;
  return {
    state: { tokens, updatedAt: now },
    decision: {
      allowed,
      remaining: Math.floor(tokens),
      retryAfterMs: allowed ? 0 : Math.ceil((cost - tokens) / perMs),
      resetMs: Math.ceil((limit.burst - tokens) / perMs),
    },
  };
}
