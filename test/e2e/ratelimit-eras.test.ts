// Rate limits as a 2026-07-28 client meets them: the per-client refusal in that revision's
// codes (no -32003: -32603 with data.reason), and a perTool limit charged once per logical call
// when a 2026-07-28 upstream asks for input over several rounds (each retry is a new tools/call
// on the wire), as a sessions-era client's call of the same tool is charged once; a
// requestState the gateway did not issue for that call, or one used already, is no free pass.
import { join } from 'node:path';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { connectClient, textOf, upstream } from '../helpers/gateway.js';
import { FIXTURES, NODE } from '../helpers/paths.js';
import { apiKeys, callPid, KEY_ALICE, limitResult, openSession, RATE_LIMITED, refused, useRateLimitRig } from '../helpers/ratelimit.js';
import { callStateless, statelessMeta } from '../helpers/stateless-wire.js';

const { start, cleanup } = useRateLimitRig();
const ALICE = { 'x-api-key': KEY_ALICE };
const modern = () => ({ stdio: { command: NODE, args: [join(FIXTURES, 'modern-server.mjs'), 'stdio'] } });

describe("a 2026-07-28 client refused by the principal's rate limit", () => {
  it('gets 429 with -32603 and data.reason rate_limited, never the legacy -32003; a sessions-era client still gets -32003', async () => {
    const gw = await start({ auth: { apiKeys }, upstreams: { rogue: upstream.rogue() }, rateLimits: { perClient: { rate: 1, per: '1m', burst: 1 } } });
    const first = await callStateless(gw.url, 1, 'rogue__pid', {}, {}, ALICE);
    expect(first.body).toMatchObject({ id: 1, result: { resultType: 'complete' } });

    const second = await callStateless(gw.url, 2, 'rogue__pid', {}, {}, ALICE);
    expect(second.status).toBe(429);
    expect(second.body).toEqual({
      jsonrpc: '2.0',
      id: 2,
      error: { code: -32603, message: 'Too Many Requests: the rate limit is 1 requests, refilled at 1 per 1m; retry in 60 s', data: { reason: 'rate_limited' } },
    });

    // The same principal's sessions-era request: the gateway's code of that era.
    const session = await openSession(gw.url, { headers: ALICE });
    const res = await refused(session, callPid(3, 3));
    expect(await res.json()).toMatchObject({ id: 3, error: { code: RATE_LIMITED } });
  });
});

describe('a perTool limit and the rounds of one call', () => {
  const ONE_AN_HOUR = { perTool: { 'modern__*': { rate: 1, per: '1h' } } };
  const meta = statelessMeta({ elicitation: { form: {} } });
  const ask = (url: URL, id: number, extra: Record<string, unknown> = {}) => callStateless(url, id, 'modern__ask', {}, extra, ALICE, meta);
  const answer = { user_name: { action: 'accept', content: { name: 'Ann' } } };

  it("costs a 2026-07-28 client one token for a 2026-07-28 upstream's call, however many rounds it takes", async () => {
    const gw = await start({ auth: { apiKeys }, upstreams: { modern: modern() }, rateLimits: ONE_AN_HOUR });
    const first = await ask(gw.url, 1);
    const asked = first.body!.result as { resultType: string; requestState: string; inputRequests: Record<string, unknown> };
    expect(asked.resultType).toBe('input_required');
    expect(Object.keys(asked.inputRequests)).toEqual(['user_name']);

    const second = await ask(gw.url, 2, { requestState: asked.requestState, inputResponses: answer });
    // The upstream got its own requestState back, and the call completed: no second token.
    expect(second.body).toMatchObject({ id: 2, result: { resultType: 'complete' } });
    expect(textOf(second.body!.result)).toBe('hello Ann (state asked-once)');

    // Three rounds, each with a fresh requestState of the upstream's: one token (another tool's bucket).
    const rounds = (id: number, extra: Record<string, unknown> = {}) => callStateless(gw.url, id, 'modern__rounds', {}, extra, ALICE, meta);
    let reply = await rounds(10);
    for (let round = 1; round <= 2; round++) {
      const result = reply.body!.result as { resultType: string; requestState: string };
      expect(result.resultType, JSON.stringify(reply.body)).toBe('input_required');
      reply = await rounds(10 + round, { requestState: result.requestState, inputResponses: { [`q${round}`]: { action: 'accept', content: { answer: `a${round}` } } } });
    }
    expect(textOf(reply.body!.result)).toBe('rounds done: last state round-2, last answer a2');
  });

  it('charges a retry whose requestState the gateway did not issue for the call, or issued and saw used', async () => {
    const gw = await start({ auth: { apiKeys }, upstreams: { modern: modern() }, rateLimits: ONE_AN_HOUR });
    const first = await ask(gw.url, 1);
    const { requestState } = first.body!.result as { requestState: string };
    // The upstream's own state, forged without the gateway's mark: a new call, and the token is spent.
    const forged = await ask(gw.url, 2, { requestState: 'asked-once', inputResponses: answer });
    expect(limitResult(forged.body!.result).text).toBe('Rate limit for modern__ask reached (1 per 1h); retry in 3600 s.');
    // Another tool's call with this call's requestState is no continuation of it either.
    const elsewhere = await callStateless(gw.url, 3, 'modern__rounds', {}, { requestState, inputResponses: {} }, ALICE, meta);
    expect((elsewhere.body!.result as { isError?: boolean }).isError, JSON.stringify(elsewhere.body)).toBeFalsy();
    const stolen = await callStateless(gw.url, 4, 'modern__rounds', {}, { requestState, inputResponses: {} }, ALICE, meta);
    expect(limitResult(stolen.body!.result).text).toMatch(/^Rate limit for modern__rounds reached/);

    const retried = await ask(gw.url, 5, { requestState, inputResponses: answer });
    expect(textOf(retried.body!.result)).toBe('hello Ann (state asked-once)');
    // The same retry again: that round was had; it is charged, and the bucket is empty.
    const replayed = await ask(gw.url, 6, { requestState, inputResponses: answer });
    expect(limitResult(replayed.body!.result).text).toBe('Rate limit for modern__ask reached (1 per 1h); retry in 3600 s.');
  });

  it('costs a sessions-era client one token for the same call (its client answers the elicitation)', async () => {
    const gw = await start({ auth: { apiKeys }, upstreams: { modern: modern() }, rateLimits: ONE_AN_HOUR });
    const client = await connectClient(gw.url, { elicitation: { form: {} } }, (c) => c.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { name: 'Ann' } })), ALICE);
    cleanup.push(() => client.close());
    expect(textOf(await client.callTool({ name: 'modern__ask', arguments: {} }))).toBe('hello Ann (state asked-once)');
    expect(limitResult(await client.callTool({ name: 'modern__ask', arguments: {} })).text).toMatch(/^Rate limit for modern__ask reached/);
  });
});
