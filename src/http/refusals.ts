// Every refusal the HTTP layer answers with, in one table: its status, its JSON-RPC error code,
// its message (or how the message is made from a detail of the request), and the headers that go
// with it. `refuse` turns one into the Response: a JSON-RPC error body (with the request's id
// when known, JSON-RPC 2.0 §5) and Content-Type application/json.
import type { AuthRefusal } from '../auth/authenticator.js';
import { StatelessErrorCode } from '../mcp/era.js';
import { ErrorCode, statelessError } from '../mcp/errors.js';
import { failure, type JsonRpcErrorObject, type JsonRpcId } from '../mcp/jsonrpc.js';
import { TABLE_FULL_REASON } from '../ratelimit/limiter.js';
import { quote } from '../util/cut.js';

interface RefusalBase {
  readonly status: number;
  /** The JSON-RPC error code of the body. */
  readonly code: number;
  /** Headers that always go with it. */
  readonly headers?: Readonly<Record<string, string>>;
  /** Headers that go with it whose values the request decides (the caller passes them). */
  readonly carries?: readonly string[];
}

/** A refusal whose message is always the same. */
export interface FixedRefusal extends RefusalBase {
  readonly message: string;
}

/** A refusal whose message names something of the request (a limit, a version, a header's value). */
export interface DetailedRefusal<D> extends RefusalBase {
  readonly message: (detail: D) => string;
}

export interface RefusalOptions {
  /** The request's id, when known; null (the default) otherwise. */
  id?: JsonRpcId | null;
  /** The error's `data` member. */
  data?: unknown;
  /** The values of the headers the refusal `carries`. */
  headers?: Readonly<Record<string, string>>;
  /**
   * Answered to a 2026-07-28 client, which never gets a code of the legacy range
   * -32000..-32019 (mcp/errors.ts statelessError: the gateway's -32003 is -32603 with
   * data.reason `rate_limited`). The status and headers stay.
   */
  stateless?: boolean;
}

const fixed = (status: number, code: number, message: string, more: Omit<RefusalBase, 'status' | 'code'> = {}): FixedRefusal => ({ status, code, message, ...more });
const detailed = <D>(status: number, code: number, message: (detail: D) => string, more: Omit<RefusalBase, 'status' | 'code'> = {}): DetailedRefusal<D> => ({
  status,
  code,
  message,
  ...more,
});

const { InvalidRequest, InvalidParams, ParseError, InternalError, MethodNotFound, RateLimited } = ErrorCode;
const { HeaderMismatch, UnsupportedProtocolVersion } = StatelessErrorCode;
const CHALLENGE = ['www-authenticate'] as const;
/** A header pair compared in a 2026-07-28 request: what the header said, what the body said. */
export interface Mismatch {
  header: string;
  body: string;
}

export const refusals = {
  // The edge, before anything else (app.ts, guards.ts): DNS rebinding, the target, the method.
  originForbidden: fixed(403, InvalidRequest, 'Forbidden: Origin not allowed'),
  hostForbidden: fixed(403, InvalidRequest, 'Forbidden: Host not allowed'),
  malformedTarget: fixed(400, InvalidRequest, 'Bad Request: the URL has malformed percent-encoding'),
  methodNotAllowed: fixed(405, InvalidRequest, 'Method Not Allowed', { headers: { allow: 'GET, POST, DELETE' } }),
  internalError: fixed(500, InternalError, 'Internal error'),

  // Authentication (auth/authenticator.ts says which, and the challenge; RFC 6750 §3).
  tokenRequired: fixed(401, InvalidRequest, 'Unauthorized: an access token is required', { carries: CHALLENGE }),
  invalidToken: detailed(401, InvalidRequest, (problem: string) => `Unauthorized: ${problem}`, { carries: CHALLENGE }),
  tokenInQuery: detailed(400, InvalidRequest, (problem: string) => `Bad Request: ${problem}`, { carries: CHALLENGE }),
  insufficientScope: detailed(403, InvalidRequest, (problem: string) => `Forbidden: ${problem}`, { carries: CHALLENGE }),
  /** An endpoint open to some teams only (endpoints[].teams), and the principal in none of them. */
  endpointForbidden: fixed(403, InvalidRequest, 'Forbidden: this endpoint is not open to your teams'),
  keysUnavailable: fixed(503, InvalidRequest, 'Service Unavailable: tokens cannot be verified right now', { headers: { 'retry-after': '5' } }),

  // The request's headers (guards.ts).
  postNotAcceptable: fixed(406, InvalidRequest, 'Not Acceptable: Accept must list application/json and text/event-stream'),
  getNotAcceptable: fixed(406, InvalidRequest, 'Not Acceptable: Accept must list text/event-stream'),
  unsupportedMediaType: fixed(415, InvalidRequest, 'Unsupported Media Type: Content-Type must be application/json'),
  unsupportedVersionHeader: detailed(400, InvalidRequest, (version: string) => `Bad Request: unsupported MCP-Protocol-Version ${version}`),

  // The body (mcp-endpoint.ts).
  payloadTooLarge: detailed(413, InvalidRequest, (maxBytes: number) => `Payload Too Large: the limit is ${maxBytes} bytes`),
  nestedTooDeep: detailed(400, InvalidRequest, (maxDepth: number) => `Invalid Request: JSON nested deeper than ${maxDepth} levels`),
  parseError: fixed(400, ParseError, 'Parse error'),
  invalidMessage: detailed(400, InvalidRequest, (problem: string | undefined) => `Invalid Request: ${problem ?? 'not a JSON-RPC 2.0 message'}`),
  emptyBatch: fixed(400, InvalidRequest, 'Invalid Request: empty batch'),
  batchesUnsupported: detailed(400, InvalidRequest, (protocolVersion: string) => `Invalid Request: batches are not supported in protocol ${protocolVersion}`),
  statelessBatch: fixed(400, InvalidRequest, 'Invalid Request: batches are not part of protocol 2026-07-28'),

  // Sessions (mcp-endpoint.ts).
  sessionRequired: fixed(400, InvalidRequest, 'Bad Request: Mcp-Session-Id header is required'),
  sessionNotFound: fixed(404, InvalidRequest, 'Session not found'),
  alreadyInitialized: fixed(400, InvalidRequest, 'Bad Request: session already initialized'),
  shuttingDown: fixed(503, InternalError, 'Service Unavailable: the gateway is shutting down', { headers: { 'retry-after': '1' } }),
  tooManySessions: fixed(503, InternalError, 'Service Unavailable: too many sessions are open', { headers: { 'retry-after': '30' } }),
  sessionsPerPrincipal: detailed(429, InvalidRequest, (max: number) => `Too Many Requests: at most ${max} open sessions per principal; end one (DELETE) first`, {
    headers: { 'retry-after': '30' },
  }),
  statelessSessionsPerPrincipal: detailed(
    429,
    InvalidRequest,
    (max: number) => `Too Many Requests: at most ${max} sessions per principal (each distinct client capabilities and info take one)`,
    { headers: { 'retry-after': '30' } },
  ),

  // A principal's rate limit (mcp-endpoint.ts, ratelimit/limiter.ts's headers).
  rateLimited: detailed(
    429,
    RateLimited,
    ({ burst, refill, retryAfter }: { burst: number; refill: string; retryAfter: string | undefined }) =>
      `Too Many Requests: the rate limit is ${burst} requests, refilled at ${refill}; retry in ${retryAfter} s`,
    { carries: ['retry-after', 'ratelimit', 'ratelimit-policy'] },
  ),
  /** No room in the store for the principal's bucket (ratelimit/memory-store.ts: Decision.tableFull); its own limit is untouched. */
  rateLimitTableFull: detailed(503, RateLimited, (retryAfter: string | undefined) => `Service Unavailable: ${TABLE_FULL_REASON}; retry in ${retryAfter} s`, {
    carries: ['retry-after'],
  }),
  batchOverBurst: detailed(
    400,
    InvalidRequest,
    ({ cost, burst }: { cost: number; burst: number }) => `Bad Request: the batch holds ${cost} counted requests; the rate limit allows ${burst} at once`,
  ),

  // The GET stream (mcp-endpoint.ts).
  unknownLastEventId: fixed(400, InvalidRequest, 'Bad Request: unknown Last-Event-ID'),
  lastEventIdTooOld: fixed(400, InvalidRequest, 'Bad Request: Last-Event-ID is too old; later events were dropped'),
  streamConflict: fixed(409, InvalidRequest, 'Conflict: this session already has an open stream'),

  // 2026-07-28 validation (streamable-http.mdx "Server Validation"; today refused inline in
  // http/stateless/endpoint.ts, which can switch to these). The -32022 refusal's `data` is
  // { supported, requested }.
  unsupportedProtocolVersion: detailed(400, UnsupportedProtocolVersion, (version: string) => `Unsupported protocol version: ${version}`),
  statelessResponse: fixed(400, InvalidRequest, 'Invalid Request: clients of 2026-07-28 send no responses'),
  notARequest: fixed(400, InvalidRequest, 'not a request'),
  invalidMeta: detailed(400, InvalidParams, (problem: string) => `Invalid params: ${problem}`),
  versionHeaderRequired: fixed(400, HeaderMismatch, 'Header mismatch: MCP-Protocol-Version header is required'),
  versionHeaderMismatch: detailed(400, HeaderMismatch, ({ header, body }: Mismatch) => `Header mismatch: MCP-Protocol-Version header value '${header}' does not match body value '${body}'`),
  methodHeaderRequired: fixed(400, HeaderMismatch, 'Header mismatch: Mcp-Method header is required'),
  methodHeaderMismatch: detailed(400, HeaderMismatch, ({ header, body }: Mismatch) => `Header mismatch: Mcp-Method header value '${header}' does not match body value '${body}'`),
  methodNotFound: detailed(404, MethodNotFound, (method: string) => `Method not found: ${quote(method)}`),
  nameHeaderRequired: fixed(400, HeaderMismatch, 'Header mismatch: Mcp-Name header is required'),
  nameHeaderMalformed: fixed(400, HeaderMismatch, 'Header mismatch: Mcp-Name header value is malformed'),
  nameHeaderMismatch: detailed(400, HeaderMismatch, ({ header, body }: Mismatch) => `Header mismatch: Mcp-Name header value '${header}' does not match body value '${body}'`),
  notificationsRequired: fixed(400, InvalidParams, 'Invalid params: notifications is required'),
} as const;

export type RefusalName = keyof typeof refusals;

/** The Response for `refusal`. */
export function refuse(refusal: FixedRefusal, options?: RefusalOptions): Response;
/** The Response for `refusal`, its message made from `detail`. */
export function refuse<D>(refusal: DetailedRefusal<D>, detail: D, options?: RefusalOptions): Response;
export function refuse<D>(refusal: FixedRefusal | DetailedRefusal<D>, detailOrOptions?: D | RefusalOptions, maybeOptions?: RefusalOptions): Response {
  if (typeof refusal.message === 'string') return respond(refusal, refusal.message, (detailOrOptions as RefusalOptions | undefined) ?? {});
  return respond(refusal, refusal.message(detailOrOptions as D), maybeOptions ?? {});
}

/** The refusal of a request that failed authentication, with the authenticator's challenge. */
export function refuseAuthentication(refused: AuthRefusal): Response {
  const refusal: FixedRefusal | DetailedRefusal<string> = refusals[refused.kind];
  const message = typeof refusal.message === 'string' ? refusal.message : refusal.message(refused.detail);
  return respond(refusal, message, refused.challenge === undefined ? {} : { headers: { 'www-authenticate': refused.challenge } });
}

function respond(refusal: RefusalBase, message: string, options: RefusalOptions): Response {
  const error: JsonRpcErrorObject = { code: refusal.code, message };
  if (options.data !== undefined) error.data = options.data;
  return new Response(JSON.stringify(failure(options.id ?? null, options.stateless ? statelessError(error) : error)), {
    status: refusal.status,
    headers: { 'content-type': 'application/json', ...refusal.headers, ...options.headers },
  });
}
