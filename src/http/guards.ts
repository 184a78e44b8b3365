// Request validators for the MCP endpoint. Each returns a Response when the request must be
// refused, else undefined, so a handler reads as a flat list of guards (after the MCP SDK).
import { isLoopback, type ListenConfig } from '../config/schema.js';
import { ErrorCode } from '../mcp/errors.js';
import { failure, type JsonRpcId } from '../mcp/jsonrpc.js';
import { isSupportedVersion } from '../mcp/versions.js';

/** An HTTP error whose body is a JSON-RPC error (without an id unless one is known). */
export function rpcErrorResponse(status: number, code: number, message: string, id: JsonRpcId | null = null, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(failure(id, { code, message })), {
    status,
    headers: { 'content-type': 'application/json', ...headers },
  });
}

/** Origin validation against DNS rebinding (transports.mdx "Security Warning"): 403 when not allowed. */
export function checkOrigin(request: Request, allowed: ReadonlySet<string>): Response | undefined {
  const origin = request.headers.get('origin');
  if (origin === null || allowed.has(origin)) return undefined;
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
export function checkHost(request: Request, allowed: ReadonlySet<string>): Response | undefined {
  // The adapter builds the request URL from the Host header (in-process requests name it).
  const name = new URL(request.url).hostname.replace(/^\[|\]$/g, '').toLowerCase();
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
    headers['access-control-allow-headers'] = 'authorization, content-type, accept, mcp-session-id, mcp-protocol-version, last-event-id, x-api-key, x-request-id, traceparent, tracestate';
    headers['access-control-max-age'] = '600';
  }
  return headers;
}

function accepts(request: Request, type: string): boolean {
  const accept = request.headers.get('accept') ?? '';
  return accept.split(',').some((part) => {
    const media = part.split(';')[0]!.trim().toLowerCase();
    return media === type || media === '*/*' || media === `${type.split('/')[0]}/*`;
  });
}

/** A POST must accept both JSON and SSE answers and carry JSON. */
export function checkPostHeaders(request: Request): Response | undefined {
  if (!accepts(request, 'application/json') || !accepts(request, 'text/event-stream')) {
    return rpcErrorResponse(406, ErrorCode.InvalidRequest, 'Not Acceptable: Accept must list application/json and text/event-stream');
  }
  const type = (request.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/json') {
    return rpcErrorResponse(415, ErrorCode.InvalidRequest, 'Unsupported Media Type: Content-Type must be application/json');
  }
  return undefined;
}

export function checkGetHeaders(request: Request): Response | undefined {
  if (accepts(request, 'text/event-stream')) return undefined;
  return rpcErrorResponse(406, ErrorCode.InvalidRequest, 'Not Acceptable: Accept must list text/event-stream');
}

/** An MCP-Protocol-Version header, when present, must name a supported revision (400 otherwise). */
export function checkProtocolVersion(request: Request): Response | undefined {
  const version = request.headers.get('mcp-protocol-version');
  if (version === null || isSupportedVersion(version)) return undefined;
  return rpcErrorResponse(400, ErrorCode.InvalidRequest, `Bad Request: unsupported MCP-Protocol-Version ${version}`);
}

/** Reads the body as text, or returns undefined once it exceeds `max` bytes. */
export async function readBody(request: Request, max: number): Promise<string | undefined> {
  const declared = Number(request.headers.get('content-length') ?? NaN);
  if (declared > max) return undefined;
  if (!request.body) return '';
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let length = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    length += value.byteLength;
    if (length > max) {
      await reader.cancel();
      return undefined;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}
