// MCP-aware limits: a token bucket per principal over the requests it makes, one per
// (principal, tool) where configured, and an upstream's maxConcurrent calls in flight. The
// buckets live in a store (memory or Redis); concurrency is counted in this process.
import type { LimitConfig, RateLimitsConfig } from '../config/schema.js';
import { globToRegExp } from '../policy/policy.js';
import type { BucketLimit, Decision } from './bucket.js';
import type { BucketStore } from './memory-store.js';

export interface LimitOutcome {
  decision: Decision;
  limit: BucketLimit;
  /** The policy's name in RateLimit-Policy headers and messages. */
  policy: string;
}

function toLimit(config: LimitConfig): BucketLimit {
  return { rate: config.rate, perMs: config.per, burst: config.burst ?? Math.max(1, Math.ceil(config.rate)) };
}

/** "5 per 1m" for messages. */
export function describeLimit(limit: BucketLimit): string {
  const seconds = limit.perMs / 1_000;
  const per = seconds % 3_600 === 0 ? `${seconds / 3_600}h` : seconds % 60 === 0 ? `${seconds / 60}m` : `${seconds}s`;
  return `${limit.rate} per ${per}`;
}

const UNLIMITED = { release: (): void => {} };

export class RateLimiter {
  readonly #store: BucketStore;
  readonly #client: BucketLimit | undefined;
  readonly #tools: { glob: RegExp; pattern: string; limit: BucketLimit }[];
  readonly #inFlight = new Map<string, number>();
  /** Smoothed tools/call duration per upstream, for the retry hint of a concurrency refusal. */
  readonly #latency = new Map<string, number>();

  constructor(config: RateLimitsConfig | undefined, store: BucketStore) {
    this.#store = store;
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

  /** The (principal, tool) bucket of the first perTool entry matching the tool's name. */
  tool(principal: string, tool: string): Promise<LimitOutcome> | undefined {
    if (this.#tools.length === 0) return undefined;
    const entry = this.#tools.find((t) => t.glob.test(tool));
    if (!entry) return undefined;
    return this.#store.take(`tool:${principal}:${entry.pattern}:${tool}`, entry.limit).then((decision) => ({ decision, limit: entry.limit, policy: 'per-tool' }));
  }

  /** Whether all `max` slots of `upstream` are taken now (a look, taking nothing). */
  busy(upstream: string, max: number | undefined): { retryAfterMs: number; inFlight: number } | undefined {
    const current = this.#inFlight.get(upstream) ?? 0;
    if (max === undefined || current < max) return undefined;
    return { retryAfterMs: Math.max(1_000, Math.ceil((this.#latency.get(upstream) ?? 1_000) / 1_000) * 1_000), inFlight: current };
  }

  /**
   * Takes one of `max` slots for a call to `upstream`; the release function, or the suggested
   * retry delay (ms) when all slots are taken.
   */
  acquire(upstream: string, max: number | undefined): { release: () => void } | { retryAfterMs: number; inFlight: number } {
    // Without a limit nothing is counted (a reload that sets one starts counting from the calls after it).
    if (max === undefined) return UNLIMITED;
    const busy = this.busy(upstream, max);
    if (busy) return busy;
    const current = this.#inFlight.get(upstream) ?? 0;
    this.#inFlight.set(upstream, current + 1);
    const started = Date.now();
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.#inFlight.set(upstream, (this.#inFlight.get(upstream) ?? 1) - 1);
        const took = Date.now() - started;
        this.#latency.set(upstream, 0.8 * (this.#latency.get(upstream) ?? took) + 0.2 * took);
      },
    };
  }

  close(): Promise<void> {
    return this.#store.close();
  }
}

/** RateLimit-Policy and RateLimit headers (draft-ietf-httpapi-ratelimit-headers), plus Retry-After. */
export function rateLimitHeaders(outcome: LimitOutcome): Record<string, string> {
  const { decision, limit, policy } = outcome;
  const headers: Record<string, string> = {
    'ratelimit-policy': `"${policy}";q=${limit.burst};w=${Math.max(1, Math.round(limit.perMs / 1_000))}`,
    ratelimit: `"${policy}";r=${decision.remaining};t=${Math.ceil((decision.allowed ? decision.resetMs : decision.retryAfterMs) / 1_000)}`,
  };
  if (!decision.allowed) headers['retry-after'] = String(Math.max(1, Math.ceil(decision.retryAfterMs / 1_000)));
  return headers;
}
