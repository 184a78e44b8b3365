// The table of HTTP refusals answered to a 2026-07-28 client (src/http/refusals.ts, option
// `stateless`): no refusal carries a code of the legacy range -32000..-32019 (basic/index.mdx);
// the gateway's -32003 becomes -32603 with data.reason, the status and headers stay.
import { describe, expect, it } from 'vitest';
import { refuse, refusals, type DetailedRefusal, type FixedRefusal, type RefusalName } from '../../src/http/refusals.js';

const DETAILS: Partial<Record<RefusalName, unknown>> = {
  rateLimited: { burst: 1, refill: '1 per 1m', retryAfter: '60' },
  batchOverBurst: { cost: 3, burst: 2 },
  versionHeaderMismatch: { header: 'a', body: 'b' },
  methodHeaderMismatch: { header: 'a', body: 'b' },
  nameHeaderMismatch: { header: 'a', body: 'b' },
};

function build(name: RefusalName, stateless: boolean): Response {
  const refusal = refusals[name] as FixedRefusal | DetailedRefusal<unknown>;
  const options = { id: 7, stateless };
  return typeof refusal.message === 'string' ? refuse(refusal as FixedRefusal, options) : refuse(refusal as DetailedRefusal<unknown>, DETAILS[name] ?? 'x', options);
}

describe('a refusal answered to a 2026-07-28 client', () => {
  it('never carries a legacy code, whichever refusal it is', async () => {
    for (const name of Object.keys(refusals) as RefusalName[]) {
      const { error } = (await build(name, true).json()) as { error: { code: number } };
      expect(error.code > -32000 || error.code < -32019, `${name}: ${error.code}`).toBe(true);
    }
  });

  it("turns the rate limit's -32003 into -32603 with data.reason rate_limited, keeping the status, headers and message", async () => {
    const headers = { 'retry-after': '60', ratelimit: '"per-client";r=0;t=60', 'ratelimit-policy': '"per-client";q=1;w=60' };
    const legacy = refuse(refusals.rateLimited, DETAILS.rateLimited as never, { id: 7, headers });
    const modern = refuse(refusals.rateLimited, DETAILS.rateLimited as never, { id: 7, headers, stateless: true });
    expect(modern.status).toBe(legacy.status);
    expect([...modern.headers]).toEqual([...legacy.headers]);
    expect(await legacy.json()).toMatchObject({ error: { code: -32003 } });
    expect(await modern.json()).toEqual({
      jsonrpc: '2.0',
      id: 7,
      error: { code: -32603, message: 'Too Many Requests: the rate limit is 1 requests, refilled at 1 per 1m; retry in 60 s', data: { reason: 'rate_limited' } },
    });
  });

  it('leaves every refusal outside the legacy range byte for byte as it was', async () => {
    for (const name of Object.keys(refusals) as RefusalName[]) {
      const code = refusals[name].code;
      if (code <= -32000 && code >= -32019) continue;
      expect(await build(name, true).text(), name).toBe(await build(name, false).text());
    }
  });
});
