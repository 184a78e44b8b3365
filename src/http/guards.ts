// Request validators for the MCP endpoint. Each returns a Response when the request must be
// refused, else undefined, so a handler reads as a flat list of guards (after the MCP SDK).
import { isLoopback, type ListenConfig } from '../config/schema.js';
import { ErrorCode } from '../mcp/errors.js';
import { failure, type JsonRpcId } from '../mcp/jsonrpc.js';
import { isSupportedVersion } from '../mcp/versions.js';
import type { HttpInput } from './input.js';

/** An HTTP error whose body is a JSON-RPC error (without an id unless one is known). */
export function rpcErrorResponse(status: number, code: number, message: string, id: JsonRpcId | null = null, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(failure(id, { code, message })), {
    status,
    headers: { 'content-type': 'application/json', ...headers },
  });
}

/** Origin validation against DNS rebinding (transports.mdx "Security Warning"): 403 when not allowed. */
export function checkOrigin(input: HttpInput, allowed: ReadonlySet<string>): Response | undefined {
  const origin = input.header('origin');
  if (origin === undefined || allowed.has(origin)) return undefined;
  return rpcErrorResponse(403, ErrorCode.InvalidRequest, 'Forbidden: Origin not allowed');
}

/** Host names (lowercase, without port) a request may name: never derived from the request itself. */
export function allowedHostsOf(listen: ListenConfig): ReadonlySet<string> {
  const hosts = new Set(['localhost', '127.0.0.1', '::1']);
  if (listen.publicUrl) hosts.add(new URL(listen.publicUrl).hostname.replace(/^\[|\]$/g, '').toLowerCase());
  for (const host of listen.allowedHosts) hosts.add(host.toLowerCase());
  // A concrete listen address (not a wildcard) is a name clients may use.
  if (!['0.0.0.0', '::', '[::]'].includes(listen.host)) hosts.add(listen.host.replace(/^\[|\]$/g, '').toLowerCase());
  return hosts;
}

/** Host validation against DNS rebinding: 403 unless the Host names this gateway. */
export function checkHost(input: HttpInput, allowed: ReadonlySet<string>): Response | undefined {
  const name = input.hostname();
  if (allowed.has(name) || isLoopback(name)) return undefined;
  return rpcErrorResponse(403, ErrorCode.InvalidRequest, 'Forbidden: Host not allowed');
}

/** CORS for an allowed Origin: what a browser client needs to call the endpoint and read its headers. */
export function corsHeaders(origin: string, preflight: boolean): Record<string, string> {
  const headers: Record<string, string> = {
    'access-control-allow-origin': origin,
    vary: 'Origin',
    'access-control-expose-headers': 'mcp-session-id, mcp-protocol-version, www-authenticate, x-request-id, retry-after',
  };
  if (preflight) {
    headers['access-control-allow-methods'] = 'GET, POST, DELETE';
    headers['access-control-allow-headers'] = 'authorization, content-type, accept, mcp-session-id, mcp-protocol-version, mcp-method, mcp-name, last-event-id, x-api-key, x-request-id, traceparent, tracestate';
    headers['access-control-max-age'] = '600';
  }
  return headers;
}

function accepts(accept: string, type: string): boolean {
  return accept.split(',').some((part) => {
    const media = part.split(';')[0]!.trim().toLowerCase();
    return media === type || media === '*/*' || media === `${type.split('/')[0]}/*`;
  });
}

/** Verdicts on Accept values seen: a client sends the same one on every POST. */
const postAccepts = new Map<string, boolean>();

function acceptsPostAnswers(accept: string): boolean {
  let verdict = postAccepts.get(accept);
  if (verdict === undefined) {
    verdict = accepts(accept, 'application/json') && accepts(accept, 'text/event-stream');
    if (postAccepts.size >= 256) postAccepts.clear();
    postAccepts.set(accept, verdict);
  }
  return verdict;
}

/** A POST must accept both JSON and SSE answers and carry JSON. */
export function checkPostHeaders(input: HttpInput): Response | undefined {
  if (!acceptsPostAnswers(input.header('accept') ?? '')) {
    return rpcErrorResponse(406, ErrorCode.InvalidRequest, 'Not Acceptable: Accept must list application/json and text/event-stream');
  }
  const type = input.header('content-type') ?? '';
  if (type !== 'application/json' && type.split(';')[0]!.trim().toLowerCase() !== 'application/json') {
    return rpcErrorResponse(415, ErrorCode.InvalidRequest, 'Unsupported Media Type: Content-Type must be application/json');
  }
  return undefined;
}

export function checkGetHeaders(input: HttpInput): Response | undefined {
  if (accepts(input.header('accept') ?? '', 'text/event-stream')) return undefined;
  return rpcErrorResponse(406, ErrorCode.InvalidRequest, 'Not Acceptable: Accept must list text/event-stream');
}

/** An MCP-Protocol-Version header, when present, must name a supported revision (400 otherwise). */
export function checkProtocolVersion(input: HttpInput): Response | undefined {
  const version = input.header('mcp-protocol-version');
  if (version === undefined || isSupportedVersion(version)) return undefined;
  return rpcErrorResponse(400, ErrorCode.InvalidRequest, `Bad Request: unsupported MCP-Protocol-Version ${version}`);
}
