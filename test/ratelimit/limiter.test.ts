// The limiter (src/ratelimit/limiter.ts) over a memory store on an injected clock: per-client and
// per-tool buckets sharing the store's table (rateLimits.maxPrincipals), and the headers of a
// refusal, including a newcomer's while the table is full of buckets still refilling.
import { describe, expect, it } from 'vitest';
import type { RateLimitsConfig } from '../../src/config/schema.js';
import { RateLimiter, rateLimitHeaders } from '../../src/ratelimit/limiter.js';
import { MemoryBucketStore } from '../../src/ratelimit/memory-store.js';

const THREE_MINUTES = 180_000;
/** The reviewer's configuration: 100 per 3m per principal, 10 per 3m per (principal, rogue tool), 100 buckets. */
const config: RateLimitsConfig = {
  perClient: { rate: 100, per: THREE_MINUTES },
  perTool: { 'rogue__*': { rate: 10, per: THREE_MINUTES } },
  store: 'memory',
  maxPrincipals: 100,
};
const TOOLS = ['slow', 'progress', 'journal', 'notify', 'garbage', 'unknown-id', 'stderr', 'pid', 'fail'].map((t) => `rogue__${t}`);

/** A clock the test moves by hand. */
function manualClock(start = 1_000_000): { now: () => number; advance: (ms: number) => void } {
  let now = start;
  return { now: () => now, advance: (ms) => (now += ms) };
}

/** A tools/call as the gateway counts it: the principal's bucket, then the tool's. */
async function callTool(limiter: RateLimiter, principal: string, tool: string): Promise<void> {
  expect((await limiter.client(principal))!.decision.allowed, `${principal} client`).toBe(true);
  expect((await limiter.tool(principal, tool))!.decision.allowed, `${principal} ${tool}`).toBe(true);
}

describe('rate limiter', () => {
  // BUG (src/ratelimit/memory-store.ts): per-tool buckets share the table with the principals'
  // own; ten principals calling nine tools once fill 100 slots, and each was kept for 181 s (the
  // time to fill from empty) though every one was full again within 18 s: an eleventh principal's
  // first request was refused as if over its own limit, "retry in 60 s", and again 62 s later.
  it('admits a new principal once the buckets filling the table are full again', async () => {
    const clock = manualClock();
    const limiter = new RateLimiter(config, new MemoryBucketStore(config.maxPrincipals, clock.now));
    for (let p = 0; p < 10; p++) for (const tool of TOOLS) await callTool(limiter, `p${p}`, tool);

    // 100 buckets, each still refilling: a principal's 9 tokens are back in 16.2 s, a tool's 1 in 18 s.
    const refused = (await limiter.client('p10'))!;
    expect(refused.decision).toEqual({ allowed: false, remaining: 0, retryAfterMs: 16_200, resetMs: 16_200, tableFull: true });
    // Not the newcomer's own limit: only Retry-After, no RateLimit fields describing its bucket.
    expect(rateLimitHeaders(refused)).toEqual({ 'retry-after': '17' });

    clock.advance(16_200);
    // The principals' buckets are full again and dropped; the tools' are not yet.
    await callTool(limiter, 'p10', 'rogue__pid');
    expect((await limiter.client('p11'))!.decision.allowed).toBe(true);
    clock.advance(1_800);
    for (let p = 12; p < 20; p++) expect((await limiter.client(`p${p}`))!.decision.allowed, `p${p}`).toBe(true);
    // Every earlier principal still has its whole burst (dropping a full bucket changes nothing).
    expect((await limiter.client('p0'))!.decision).toMatchObject({ allowed: true, remaining: 99 });
  });

  it('describes a principal over its own limit in RateLimit headers', async () => {
    const clock = manualClock();
    const limiter = new RateLimiter({ ...config, perClient: { rate: 2, per: 60_000 } }, new MemoryBucketStore(100, clock.now));
    await limiter.client('alice');
    await limiter.client('alice');
    expect(rateLimitHeaders((await limiter.client('alice'))!)).toEqual({
      'ratelimit-policy': '"per-client";q=2;w=60',
      ratelimit: '"per-client";r=0;t=30',
      'retry-after': '30',
    });
  });
});
