// The table of HTTP refusals (src/http/refusals.ts): each refusal's status, JSON-RPC code,
// message and headers, and the Response `refuse` builds, byte for byte what the inline calls
// it replaced sent (their helpers are copied here as they were).
import { describe, expect, it } from 'vitest';
import type { AuthRefusal } from '../../src/auth/authenticator.js';
import { refuse, refuseAuthentication, refusals, type DetailedRefusal, type FixedRefusal, type RefusalName, type RefusalOptions } from '../../src/http/refusals.js';
import { failure, type JsonRpcId } from '../../src/mcp/jsonrpc.js';

/** src/http/guards.ts rpcErrorResponse, as it was. */
function oldRpcErrorResponse(status: number, code: number, message: string, id: JsonRpcId | null = null, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(failure(id, { code, message })), {
    status,
    headers: { 'content-type': 'application/json', ...headers },
  });
}

/** src/http/modern.ts rpcError, as it was. */
function oldModernRpcError(status: number, code: number, message: string, id: JsonRpcId | null, data?: unknown): Response {
  const error: { code: number; message: string; data?: unknown } = { code, message };
  if (data !== undefined) error.data = data;
  return new Response(JSON.stringify(failure(id, error)), { status, headers: { 'content-type': 'application/json' } });
}

async function wire(response: Response): Promise<{ status: number; headers: [string, string][]; body: string }> {
  return { status: response.status, headers: [...response.headers.entries()], body: await response.text() };
}

/** Every refusal: status, code, its message (for the detail given), the headers that always go with it. */
const EXPECTED: Record<RefusalName, { status: number; code: number; detail?: unknown; message: string; headers?: Record<string, string>; carries?: string[] }> = {
  originForbidden: { status: 403, code: -32600, message: 'Forbidden: Origin not allowed' },
  hostForbidden: { status: 403, code: -32600, message: 'Forbidden: Host not allowed' },
  malformedTarget: { status: 400, code: -32600, message: 'Bad Request: the URL has malformed percent-encoding' },
  methodNotAllowed: { status: 405, code: -32600, message: 'Method Not Allowed', headers: { allow: 'GET, POST, DELETE' } },
  internalError: { status: 500, code: -32603, message: 'Internal error' },
  tokenRequired: { status: 401, code: -32600, message: 'Unauthorized: an access token is required', carries: ['www-authenticate'] },
  invalidToken: { status: 401, code: -32600, detail: 'the token has expired', message: 'Unauthorized: the token has expired', carries: ['www-authenticate'] },
  tokenInQuery: { status: 400, code: -32600, detail: 'no tokens in URLs', message: 'Bad Request: no tokens in URLs', carries: ['www-authenticate'] },
  endpointForbidden: { status: 403, code: -32600, message: 'Forbidden: this endpoint is not open to your teams' },
  insufficientScope: { status: 403, code: -32600, detail: 'the token lacks scope a', message: 'Forbidden: the token lacks scope a', carries: ['www-authenticate'] },
  keysUnavailable: { status: 503, code: -32600, message: 'Service Unavailable: tokens cannot be verified right now', headers: { 'retry-after': '5' } },
  postNotAcceptable: { status: 406, code: -32600, message: 'Not Acceptable: Accept must list application/json and text/event-stream' },
  getNotAcceptable: { status: 406, code: -32600, message: 'Not Acceptable: Accept must list text/event-stream' },
  unsupportedMediaType: { status: 415, code: -32600, message: 'Unsupported Media Type: Content-Type must be application/json' },
  unsupportedVersionHeader: { status: 400, code: -32600, detail: '1999-01-01', message: 'Bad Request: unsupported MCP-Protocol-Version 1999-01-01' },
  payloadTooLarge: { status: 413, code: -32600, detail: 1024, message: 'Payload Too Large: the limit is 1024 bytes' },
  nestedTooDeep: { status: 400, code: -32600, detail: 64, message: 'Invalid Request: JSON nested deeper than 64 levels' },
  parseError: { status: 400, code: -32700, message: 'Parse error' },
  invalidMessage: { status: 400, code: -32600, detail: 'the id must be a string or an integer', message: 'Invalid Request: the id must be a string or an integer' },
  emptyBatch: { status: 400, code: -32600, message: 'Invalid Request: empty batch' },
  batchesUnsupported: { status: 400, code: -32600, detail: '2025-06-18', message: 'Invalid Request: batches are not supported in protocol 2025-06-18' },
  statelessBatch: { status: 400, code: -32600, message: 'Invalid Request: batches are not part of protocol 2026-07-28' },
  sessionRequired: { status: 400, code: -32600, message: 'Bad Request: Mcp-Session-Id header is required' },
  sessionNotFound: { status: 404, code: -32600, message: 'Session not found' },
  alreadyInitialized: { status: 400, code: -32600, message: 'Bad Request: session already initialized' },
  shuttingDown: { status: 503, code: -32603, message: 'Service Unavailable: the gateway is shutting down', headers: { 'retry-after': '1' } },
  tooManySessions: { status: 503, code: -32603, message: 'Service Unavailable: too many sessions are open', headers: { 'retry-after': '30' } },
  sessionsPerPrincipal: {
    status: 429,
    code: -32600,
    detail: 3,
    message: 'Too Many Requests: at most 3 open sessions per principal; end one (DELETE) first',
    headers: { 'retry-after': '30' },
  },
  statelessSessionsPerPrincipal: {
    status: 429,
    code: -32600,
    detail: 3,
    message: 'Too Many Requests: at most 3 sessions per principal (each distinct client capabilities and info take one)',
    headers: { 'retry-after': '30' },
  },
  rateLimited: {
    status: 429,
    code: -32003,
    detail: { burst: 5, refill: '1 per 1s', retryAfter: '2' },
    message: 'Too Many Requests: the rate limit is 5 requests, refilled at 1 per 1s; retry in 2 s',
    carries: ['retry-after', 'ratelimit', 'ratelimit-policy'],
  },
  rateLimitTableFull: {
    status: 503,
    code: -32003,
    detail: '17',
    message: 'Service Unavailable: no room for another rate-limit bucket right now (every one kept is still refilling); retry in 17 s',
    carries: ['retry-after'],
  },
  batchOverBurst: { status: 400, code: -32600, detail: { cost: 9, burst: 5 }, message: 'Bad Request: the batch holds 9 counted requests; the rate limit allows 5 at once' },
  unknownLastEventId: { status: 400, code: -32600, message: 'Bad Request: unknown Last-Event-ID' },
  lastEventIdTooOld: { status: 400, code: -32600, message: 'Bad Request: Last-Event-ID is too old; later events were dropped' },
  streamConflict: { status: 409, code: -32600, message: 'Conflict: this session already has an open stream' },
  unsupportedProtocolVersion: { status: 400, code: -32022, detail: '1999-01-01', message: 'Unsupported protocol version: 1999-01-01' },
  statelessResponse: { status: 400, code: -32600, message: 'Invalid Request: clients of 2026-07-28 send no responses' },
  notARequest: { status: 400, code: -32600, message: 'not a request' },
  invalidMeta: { status: 400, code: -32602, detail: 'params._meta is required', message: 'Invalid params: params._meta is required' },
  versionHeaderRequired: { status: 400, code: -32020, message: 'Header mismatch: MCP-Protocol-Version header is required' },
  versionHeaderMismatch: {
    status: 400,
    code: -32020,
    detail: { header: '2026-07-28', body: '2025-11-25' },
    message: "Header mismatch: MCP-Protocol-Version header value '2026-07-28' does not match body value '2025-11-25'",
  },
  methodHeaderRequired: { status: 400, code: -32020, message: 'Header mismatch: Mcp-Method header is required' },
  methodHeaderMismatch: {
    status: 400,
    code: -32020,
    detail: { header: 'tools/list', body: 'tools/call' },
    message: "Header mismatch: Mcp-Method header value 'tools/list' does not match body value 'tools/call'",
  },
  methodNotFound: { status: 404, code: -32601, detail: 'ping', message: 'Method not found: ping' },
  nameHeaderRequired: { status: 400, code: -32020, message: 'Header mismatch: Mcp-Name header is required' },
  nameHeaderMalformed: { status: 400, code: -32020, message: 'Header mismatch: Mcp-Name header value is malformed' },
  nameHeaderMismatch: { status: 400, code: -32020, detail: { header: 'a', body: 'b' }, message: "Header mismatch: Mcp-Name header value 'a' does not match body value 'b'" },
  notificationsRequired: { status: 400, code: -32602, message: 'Invalid params: notifications is required' },
};

type AnyRefusal = FixedRefusal | DetailedRefusal<unknown>;
const build = (refusal: AnyRefusal, detail: unknown, options?: RefusalOptions): Response =>
  typeof refusal.message === 'string' ? refuse(refusal as FixedRefusal, options) : refuse(refusal as DetailedRefusal<unknown>, detail, options);

describe('the table of HTTP refusals', () => {
  it('lists every refusal with its status, JSON-RPC code, message and headers', () => {
    expect(Object.keys(refusals).sort()).toEqual(Object.keys(EXPECTED).sort());
    for (const [name, expected] of Object.entries(EXPECTED)) {
      const refusal = refusals[name as RefusalName] as AnyRefusal;
      const message = typeof refusal.message === 'string' ? refusal.message : refusal.message(expected.detail);
      expect({ name, status: refusal.status, code: refusal.code, message, headers: refusal.headers, carries: refusal.carries }).toEqual({
        name,
        status: expected.status,
        code: expected.code,
        message: expected.message,
        headers: expected.headers,
        carries: expected.carries,
      });
      // A fixed message takes no detail; a detailed one needs it.
      expect({ name, detailed: typeof refusal.message === 'function' }).toEqual({ name, detailed: 'detail' in expected });
    }
  });

  it('builds the Response the old rpcErrorResponse did, byte for byte, with or without an id and headers', async () => {
    for (const [name, expected] of Object.entries(EXPECTED)) {
      const refusal = refusals[name as RefusalName] as AnyRefusal;
      const carried = Object.fromEntries((expected.carries ?? []).map((header) => [header, `value of ${header}`]));
      for (const id of [undefined, null, 7, 'req-1'] as const) {
        const options = { ...(id === undefined ? {} : { id }), ...(expected.carries ? { headers: carried } : {}) };
        const got = await wire(build(refusal, expected.detail, options));
        const old = await wire(oldRpcErrorResponse(expected.status, expected.code, expected.message, id ?? null, { ...expected.headers, ...carried }));
        expect({ name, id, ...got }).toEqual({ name, id, ...old });
      }
    }
  });

  it('builds the Response with `data` as the stateless endpoint did, byte for byte', async () => {
    const data = { supported: ['2026-07-28', '2025-11-25'], requested: '1999-01-01' };
    const got = await wire(refuse(refusals.unsupportedProtocolVersion, '1999-01-01', { id: 3, data }));
    expect(got).toEqual(await wire(oldModernRpcError(400, -32022, 'Unsupported protocol version: 1999-01-01', 3, data)));
    expect(JSON.parse(got.body)).toEqual({ jsonrpc: '2.0', id: 3, error: { code: -32022, message: 'Unsupported protocol version: 1999-01-01', data } });
    // No data: no data member at all.
    const bare = await wire(refuse(refusals.notARequest));
    expect(bare).toEqual(await wire(oldModernRpcError(400, -32600, 'not a request', null)));
    expect('data' in JSON.parse(bare.body).error).toBe(false);
  });

  it('refuses a failed authentication as the old app.ts did, the challenge in WWW-Authenticate', async () => {
    const challenge = 'Bearer error="invalid_token", error_description="the token has expired"';
    const cases: [AuthRefusal, Response][] = [
      [{ kind: 'tokenRequired', detail: 'no token', challenge: 'Bearer resource_metadata="https://x/.well-known"' }, oldRpcErrorResponse(401, -32600, 'Unauthorized: an access token is required', null, { 'www-authenticate': 'Bearer resource_metadata="https://x/.well-known"' })],
      [{ kind: 'invalidToken', detail: 'the token has expired', challenge }, oldRpcErrorResponse(401, -32600, 'Unauthorized: the token has expired', null, { 'www-authenticate': challenge })],
      [{ kind: 'tokenInQuery', detail: 'x', challenge: 'Bearer error="invalid_request"' }, oldRpcErrorResponse(400, -32600, 'Bad Request: x', null, { 'www-authenticate': 'Bearer error="invalid_request"' })],
      [{ kind: 'insufficientScope', detail: 'the token lacks scope a', challenge: 'Bearer error="insufficient_scope"' }, oldRpcErrorResponse(403, -32600, 'Forbidden: the token lacks scope a', null, { 'www-authenticate': 'Bearer error="insufficient_scope"' })],
      [{ kind: 'keysUnavailable', detail: 'the signing keys could not be fetched' }, oldRpcErrorResponse(503, -32600, 'Service Unavailable: tokens cannot be verified right now', null, { 'retry-after': '5' })],
    ];
    for (const [refused, old] of cases) expect({ kind: refused.kind, ...(await wire(refuseAuthentication(refused))) }).toEqual({ kind: refused.kind, ...(await wire(old)) });
  });

  it('puts the caller’s headers after the refusal’s own, and Content-Type first', async () => {
    const response = refuse(refusals.rateLimited, { burst: 1, refill: '1 per 1s', retryAfter: '1' }, { id: 1, headers: { 'retry-after': '1', ratelimit: 'r', 'ratelimit-policy': 'p' } });
    expect(response.status).toBe(429);
    expect(response.headers.get('content-type')).toBe('application/json');
    expect([response.headers.get('retry-after'), response.headers.get('ratelimit'), response.headers.get('ratelimit-policy')]).toEqual(['1', 'r', 'p']);
    expect(await response.json()).toEqual({ jsonrpc: '2.0', id: 1, error: { code: -32003, message: 'Too Many Requests: the rate limit is 1 requests, refilled at 1 per 1s; retry in 1 s' } });
  });
});
