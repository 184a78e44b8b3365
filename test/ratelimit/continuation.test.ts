// A perTool limit charges one call once, whatever number of rounds it takes
// (src/ratelimit/continuation.ts, src/ratelimit/limiter.ts): the marks around an upstream's
// requestState, what opens one (this principal, tool and arguments, unexpired, within the rounds
// one token buys), the nonce taken once, and the upstream's own state out of any mark.
import { describe, expect, it } from 'vitest';
import { ContinuationMarks, MARK_TTL_MS, MAX_FREE_ROUNDS, upstreamRequestState } from '../../src/ratelimit/continuation.js';
import { RateLimiter } from '../../src/ratelimit/limiter.js';
import { MemoryBucketStore } from '../../src/ratelimit/memory-store.js';

const ARGS = { city: 'Oslo' };

describe('ContinuationMarks', () => {
  it('opens its own mark for the same principal, tool and arguments (in any key order), and nothing else', () => {
    let now = 1_000;
    const marks = new ContinuationMarks([], () => now);
    const mark = marks.mark('alice', 'up__ask', { b: 1, a: 2 }, 'state-1', 1);
    expect(mark.startsWith('sy1.')).toBe(true);
    expect(marks.open(mark, 'alice', 'up__ask', { a: 2, b: 1 })).toMatchObject({ state: 'state-1', round: 1, expires: 1_000 + MARK_TTL_MS });
    expect(marks.open(mark, 'bob', 'up__ask', { a: 2, b: 1 })).toBeUndefined();
    expect(marks.open(mark, 'alice', 'up__other', { a: 2, b: 1 })).toBeUndefined();
    expect(marks.open(mark, 'alice', 'up__ask', { a: 3, b: 1 })).toBeUndefined();
    // Another limiter's (another replica's without shared keys, or before a reload): not this one's.
    expect(new ContinuationMarks().open(mark, 'alice', 'up__ask', { a: 2, b: 1 })).toBeUndefined();
    now += MARK_TTL_MS;
    expect(marks.open(mark, 'alice', 'up__ask', { a: 2, b: 1 })).toBeUndefined();
  });

  it('refuses a forged payload, a bare state and a round past MAX_FREE_ROUNDS', () => {
    const marks = new ContinuationMarks(['k'.repeat(32)]);
    const mark = marks.mark('alice', 't', ARGS, undefined, 1);
    const [, body, signature] = mark.split('.');
    const forged = `sy1.${Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(body!, 'base64url').toString()), r: 1, s: 'mine' })).toString('base64url')}.${signature}`;
    expect(marks.open(forged, 'alice', 't', ARGS)).toBeUndefined();
    expect(marks.open('asked-once', 'alice', 't', ARGS)).toBeUndefined();
    expect(marks.open(marks.mark('alice', 't', ARGS, 's', MAX_FREE_ROUNDS), 'alice', 't', ARGS)).toMatchObject({ round: MAX_FREE_ROUNDS });
    expect(marks.open(marks.mark('alice', 't', ARGS, 's', MAX_FREE_ROUNDS + 1), 'alice', 't', ARGS)).toBeUndefined();
    // Shared keys: any replica holding them opens it.
    expect(new ContinuationMarks(['k'.repeat(32)]).open(mark, 'alice', 't', ARGS)).toMatchObject({ state: undefined, round: 1 });
  });

  it("gives the upstream its own state out of a mark, signed or not, and anything else as it is", () => {
    const marks = new ContinuationMarks();
    expect(upstreamRequestState(marks.mark('a', 't', ARGS, 'round-2', 2))).toBe('round-2');
    expect(upstreamRequestState(marks.mark('a', 't', ARGS, undefined, 2))).toBeUndefined();
    expect(upstreamRequestState('round-2')).toBe('round-2');
    expect(upstreamRequestState('sy1.not-base64-json.x')).toBe('sy1.not-base64-json.x');
    expect(upstreamRequestState(undefined)).toBeUndefined();
  });
});

describe('RateLimiter.tool and the rounds of one call', () => {
  const limiter = (): RateLimiter => new RateLimiter({ perTool: { 'up__*': { rate: 1, per: 3_600_000 } }, store: 'memory', maxPrincipals: 100 }, new MemoryBucketStore(100));

  it('charges the first round, not a retry with its mark, and a replay of that mark as a new call', async () => {
    const rl = limiter();
    const first = await rl.tool('alice', 'up__ask', { arguments: ARGS });
    expect(first).toMatchObject({ round: 0, decision: { allowed: true } });
    const mark = rl.mark('alice', 'up__ask', ARGS, 'asked-once', first!.round + 1);
    expect(await rl.tool('alice', 'up__ask', { requestState: mark, arguments: ARGS })).toMatchObject({ round: 1, decision: { allowed: true } });
    // Used: a new call, and the bucket is empty.
    expect(await rl.tool('alice', 'up__ask', { requestState: mark, arguments: ARGS })).toMatchObject({ round: 0, decision: { allowed: false } });
    // The upstream's bare state is no continuation either.
    expect(await rl.tool('alice', 'up__ask', { requestState: 'asked-once', arguments: ARGS })).toMatchObject({ round: 0, decision: { allowed: false } });
  });

  it('answers undefined (no promise) for a tool under no limit, mark or not', () => {
    const rl = limiter();
    expect(rl.tool('alice', 'other__ask', { requestState: rl.mark('alice', 'other__ask', ARGS, 's', 1), arguments: ARGS })).toBeUndefined();
  });
});
