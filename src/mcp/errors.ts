// Errors that cross layers, and the one place that maps them to what a client sees.
// A GatewayError carries a stable string code (as undici's errors do); RpcError is a JSON-RPC
// error received from an upstream, relayed unchanged. Anything else is an internal fault:
// logged by the caller, never described to the client.
import type { JsonRpcErrorObject } from './jsonrpc.js';

export const ErrorCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  // Gateway codes live in -32000..-32019 (docs/protocol.md), for clients of the sessions era; not
  // -32002, which is resource-not-found up to 2025-11-25. A 2026-07-28 client gets none of them
  // (basic/index.mdx): statelessError() maps them to -32603 with the reason in data.
  UpstreamClosed: -32000,
  Timeout: -32001,
  RateLimited: -32003,
  UpstreamUnavailable: -32005,
} as const;

/** The gateway's reason for each of its codes in -32000..-32019, for clients that may not see the codes. */
const REASONS: Record<number, string> = {
  [ErrorCode.UpstreamClosed]: 'upstream_closed',
  [ErrorCode.Timeout]: 'upstream_timeout',
  [ErrorCode.RateLimited]: 'rate_limited',
  [ErrorCode.UpstreamUnavailable]: 'upstream_unavailable',
};

export type GatewayErrorCode =
  | 'upstream_closed' // the upstream connection or process ended with the request pending
  | 'upstream_timeout' // no answer within the configured time; cancelled upstream
  | 'upstream_unavailable' // the upstream is down or was left out of this session
  | 'upstream_protocol' // the upstream broke the protocol (bad initialize result, HTTP error)
  | 'unknown_name' // no tool/prompt/resource by that namespaced name
  | 'invalid_request' // a request the gateway will not take in this state (a second initialize)
  | 'invalid_params'
  | 'invalid_cursor'
  | 'method_not_found'
  | 'rate_limited' // too many of something in flight (server requests to one client)
  | 'header_mismatch' // 2026-07-28: a request's headers do not match its body (-32020, HTTP 400)
  | 'cancelled'; // the client cancelled; nothing is sent back

export class GatewayError extends Error {
  override readonly name = 'GatewayError';
  /** What goes in the JSON-RPC error's data (e.g. the uri of a resource not found). */
  readonly data: Readonly<Record<string, unknown>> | undefined;

  constructor(
    readonly code: GatewayErrorCode,
    message: string,
    options?: { cause?: unknown; data?: Record<string, unknown> },
  ) {
    super(message, options);
    this.data = options?.data;
  }
}

/** A JSON-RPC error answered by an upstream; relayed to the client as it came. */
export class RpcError extends Error {
  override readonly name = 'RpcError';
  constructor(readonly error: JsonRpcErrorObject) {
    super(error.message);
  }
}

const gatewayCodes: Record<GatewayErrorCode, number> = {
  upstream_closed: ErrorCode.UpstreamClosed,
  upstream_timeout: ErrorCode.Timeout,
  upstream_unavailable: ErrorCode.UpstreamUnavailable,
  upstream_protocol: ErrorCode.UpstreamUnavailable,
  unknown_name: ErrorCode.InvalidParams,
  invalid_request: ErrorCode.InvalidRequest,
  invalid_params: ErrorCode.InvalidParams,
  invalid_cursor: ErrorCode.InvalidParams,
  method_not_found: ErrorCode.MethodNotFound,
  rate_limited: ErrorCode.RateLimited,
  header_mismatch: -32020, // HeaderMismatch (mcp/era.ts StatelessErrorCode)
  cancelled: ErrorCode.InternalError,
};

/**
 * The JSON-RPC error a client sees for `err`. Gateway errors keep their message (written for
 * clients); upstream errors pass through; anything else becomes a bare -32603, never a
 * client-fault code and never the internal cause.
 */
export function toJsonRpcError(err: unknown): JsonRpcErrorObject {
  if (err instanceof RpcError) return err.error;
  if (err instanceof GatewayError) return err.data ? { code: gatewayCodes[err.code], message: err.message, data: err.data } : { code: gatewayCodes[err.code], message: err.message };
  return { code: ErrorCode.InternalError, message: 'Internal error' };
}

/**
 * An error as a 2026-07-28 client may receive it (basic/index.mdx): no code of the legacy range
 * -32000..-32019 (the gateway's, or a sessions-era upstream's) and no -32002: those become
 * -32603 with the reason in data (a resource not found becomes -32602, as that revision says).
 */
export function statelessError(error: JsonRpcErrorObject): JsonRpcErrorObject {
  const { code } = error;
  if (code > -32000 || code < -32019) return error;
  const data = typeof error.data === 'object' && error.data !== null ? (error.data as Record<string, unknown>) : {};
  if (code === -32002) return { code: ErrorCode.InvalidParams, message: error.message, data };
  return { code: ErrorCode.InternalError, message: error.message, data: { ...data, reason: REASONS[code] ?? 'upstream_error' } };
}

/** True for failures the gateway itself caused or could not explain (worth logging as errors). */
export function isInternal(err: unknown): boolean {
  return !(err instanceof RpcError) && !(err instanceof GatewayError);
}
