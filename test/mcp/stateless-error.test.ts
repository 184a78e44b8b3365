// What a 2026-07-28 client may receive as an error code (basic/index.mdx "Error Codes"): no
// legacy -32000..-32019 and no -32002; the gateway's own code for an unavailable upstream is
// not -32002 (resource not found up to 2025-11-25) for older clients either.
import { describe, expect, it } from 'vitest';
import { ErrorCode, GatewayError, statelessError, toJsonRpcError } from '../../src/mcp/errors.js';

describe('statelessError', () => {
  it('turns the gateway codes into -32603 with the reason, keeping message and data', () => {
    expect(statelessError(toJsonRpcError(new GatewayError('upstream_unavailable', 'Upstream x is unavailable')))).toEqual({ code: -32603, message: 'Upstream x is unavailable', data: { reason: 'upstream_unavailable' } });
    expect(statelessError({ code: -32001, message: 't' })).toEqual({ code: -32603, message: 't', data: { reason: 'upstream_timeout' } });
    expect(statelessError({ code: -32000, message: 'c', data: { a: 1 } })).toEqual({ code: -32603, message: 'c', data: { a: 1, reason: 'upstream_closed' } });
    expect(statelessError({ code: -32019, message: 'o' })).toEqual({ code: -32603, message: 'o', data: { reason: 'upstream_error' } });
  });

  it('turns -32002 into -32602, keeping data.uri', () => {
    expect(statelessError({ code: -32002, message: 'Resource not found', data: { uri: 'x://y' } })).toEqual({ code: -32602, message: 'Resource not found', data: { uri: 'x://y' } });
  });

  it('leaves the standard codes and the 2026-07-28 ones alone', () => {
    for (const code of [-32700, -32600, -32601, -32602, -32603, -32020, -32021, -32022, -32042, -31999, 5]) {
      const error = { code, message: 'm' };
      expect(statelessError(error)).toBe(error);
    }
  });
});

describe('the gateway codes', () => {
  it('keep unavailable off -32002, and unknown resources carry their uri', () => {
    expect(ErrorCode.UpstreamUnavailable).not.toBe(-32002);
    expect(toJsonRpcError(new GatewayError('upstream_unavailable', 'u')).code).toBe(-32005);
    expect(toJsonRpcError(new GatewayError('unknown_name', 'Unknown resource: r', { data: { uri: 'r' } }))).toEqual({ code: -32602, message: 'Unknown resource: r', data: { uri: 'r' } });
  });
});
