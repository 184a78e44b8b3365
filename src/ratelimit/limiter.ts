// MCP-aware limits: a token bucket per principal over the requests it makes, and one per
// (principal, tool) where configured. The buckets live in a store (memory or Redis; in memory
// both kinds take slots of the one table, rateLimits.maxPrincipals). An
// upstream's maxConcurrent is counted in its pool record (upstream/concurrency.ts), so a reload
// of these limits never resets it. A tool's call is charged once, whatever number of rounds of
// input it takes: a retry carrying the mark of its previous round (continuation.ts) takes none.
import type { LimitConfig, RateLimitsConfig } from '../config/schema.js';
import { globToRegExp } from '../util/glob.js';
import type { BucketLimit, Decision } from './bucket.js';
import { ContinuationMarks, MARK_TTL_MS } from './continuation.js';
import type { BucketStore } from './memory-store.js';

export interface LimitOutcome {
  decision: Decision;
  limit: BucketLimit;
  /** The policy's name in RateLimit-Policy headers and messages. */
  policy: string;
}

/** A tools/call under a perTool limit: which round of its call it is (0: a new call, which took a token). */
export interface ToolOutcome extends LimitOutcome {
  round: number;
}

/** What of a tools/call may make it the next round of a call already charged. */
export interface ToolCallRound {
  requestState?: unknown;
  /** The arguments as the client sent them (a mark is for one call's arguments). */
  arguments?: unknown;
}

/** Each mark's nonce is taken once: a bucket of one token, refilled long after the mark expired. */
const ONCE: BucketLimit = { rate: 1, perMs: 2 * MARK_TTL_MS, burst: 1 };
/** The decision of a round that takes no token. */
const NOT_CHARGED: Decision = { allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 0 };

function toLimit(config: LimitConfig): BucketLimit {
  return { rate: config.rate, perMs: config.per, burst: config.burst ?? Math.max(1, Math.ceil(config.rate)) };
}

/** "5 per 1m" for messages. */
export function describeLimit(limit: BucketLimit): string {
  const seconds = limit.perMs / 1_000;
  const per = seconds % 3_600 === 0 ? `${seconds / 3_600}h` : seconds % 60 === 0 ? `${seconds / 60}m` : `${seconds}s`;
  return `${limit.rate} per ${per}`;
}

export class RateLimiter {
  readonly #store: BucketStore;
  readonly #client: BucketLimit | undefined;
  readonly #tools: { glob: RegExp; pattern: string; limit: BucketLimit }[];
  readonly #marks: ContinuationMarks;

  /**
   * `keys` sign the marks of calls' rounds (the first signs, all verify); without them a random
   * key: a round retried on another replica, or after a reload that changed these limits, is
   * then charged as a new call.
   */
  constructor(config: RateLimitsConfig | undefined, store: BucketStore, keys?: readonly string[]) {
    this.#store = store;
    this.#marks = new ContinuationMarks(keys);
    this.#client = config?.perClient ? toLimit(config.perClient) : undefined;
    this.#tools = Object.entries(config?.perTool ?? {}).map(([pattern, limit]) => ({ glob: globToRegExp(pattern), pattern, limit: toLimit(limit) }));
  }

  // Both buckets answer undefined at once (no promise) when no limit applies: they are asked on
  // every call.

  /** The per-principal bucket; undefined when no perClient limit is configured. */
  client(principal: string, cost = 1): Promise<LimitOutcome> | undefined {
    const limit = this.#client;
    if (!limit) return undefined;
    return this.#store.take(`client:${principal}`, limit, cost).then((decision) => ({ decision, limit, policy: 'per-client' }));
  }

  /**
   * The (principal, tool) bucket of the first perTool entry matching the tool's name. A call
   * whose requestState is a mark this limiter signed for the same principal, tool and arguments,
   * unexpired, of a round within MAX_FREE_ROUNDS and not taken before, is that call's next
   * round: it takes no token. Anything else (no mark, a forged, foreign, expired or used one) is
   * a new call.
   */
  tool(principal: string, tool: string, call: ToolCallRound = {}): Promise<ToolOutcome> | undefined {
    if (this.#tools.length === 0) return undefined;
    const entry = this.#tools.find((t) => t.glob.test(tool));
    if (!entry) return undefined;
    const charge = (): Promise<ToolOutcome> =>
      this.#store.take(`tool:${principal}:${entry.pattern}:${tool}`, entry.limit).then((decision) => ({ decision, limit: entry.limit, policy: 'per-tool', round: 0 }));
    const mark = call.requestState === undefined ? undefined : this.#marks.open(call.requestState, principal, tool, call.arguments);
    if (!mark) return charge();
    return this.#store.take(`round:${mark.nonce}`, ONCE).then((once) => (once.allowed ? { decision: NOT_CHARGED, limit: entry.limit, policy: 'per-tool', round: mark.round } : charge()));
  }

  /** The requestState a client retries round `round` of a call under a perTool limit with: the upstream's own `state`, marked. */
  mark(principal: string, tool: string, args: unknown, state: string | undefined, round: number): string {
    return this.#marks.mark(principal, tool, args, state, round);
  }

  close(): Promise<void> {
    return this.#store.close();
  }
}

/**
 * Why a request refused with Decision.tableFull was refused, for its message: not its own limit
 * (its bucket would be full) but no room to keep one, until a bucket kept is full again.
 */
export const TABLE_FULL_REASON = 'no room for another rate-limit bucket right now (every one kept is still refilling)';

/**
 * RateLimit-Policy and RateLimit headers (draft-ietf-httpapi-ratelimit-headers), plus Retry-After.
 * A refusal for want of room (Decision.tableFull) has Retry-After alone: the RateLimit fields
 * would describe the principal's own quota, which it has not used.
 */
export function rateLimitHeaders(outcome: LimitOutcome): Record<string, string> {
  const { decision, limit, policy } = outcome;
  if (decision.tableFull) return { 'retry-after': String(Math.max(1, Math.ceil(decision.retryAfterMs / 1_000))) };
  const headers: Record<string, string> = {
    'ratelimit-policy': `"${policy}";q=${limit.burst};w=${Math.max(1, Math.round(limit.perMs / 1_000))}`,
    ratelimit: `"${policy}";r=${decision.remaining};t=${Math.ceil((decision.allowed ? decision.resetMs : decision.retryAfterMs) / 1_000)}`,
  };
  if (!decision.allowed) headers['retry-after'] = String(Math.max(1, Math.ceil(decision.retryAfterMs / 1_000)));
  return headers;
}
