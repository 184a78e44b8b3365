// The MCP endpoint for 2026-07-28 clients (spec/2026-07-28/basic/transports/streamable-http.mdx):
// one POST per request, no session. The request's era is decided from MCP-Protocol-Version and
// the body's `_meta` (eraOf). Validation follows "Server Validation": an unsupported version is
// 400 / -32022 with the supported list, missing `_meta` fields 400 / -32602, a missing or
// mismatched MCP-Protocol-Version, Mcp-Method or Mcp-Name header 400 / -32020, an unknown method
// 404 / -32601. Policy and routing use the body, never the headers.
//
// An answer is JSON unless a related notification (progress, a log message the request asked
// for) goes first: then it is an SSE stream without event ids (streams are not resumable in
// this era). The client closing the connection before the answer cancels the request upstream.
import {
  ALL_VERSIONS,
  CACHEABLE_METHODS,
  META,
  MODERN_METHODS,
  ModernErrorCode,
  NAMED_METHODS,
  decodeHeaderValue,
  isModernVersion,
  mirroredName,
  requestMetaOf,
} from '../mcp/era.js';
import { ErrorCode } from '../mcp/errors.js';
import { failure, isObject, isRequest, metaOf, type JsonObject, type JsonRpcMessage, type JsonRpcRequest, type JsonRpcResponse } from '../mcp/jsonrpc.js';
import { isSupportedVersion } from '../mcp/versions.js';
import type { RequestContext } from '../router/router.js';
import type { Sink, StatelessRequest, StatelessSessions } from '../router/stateless.js';
import type { DownstreamSession } from '../session/session.js';
import { encodeSseEvent } from '../util/sse.js';
import { GATEWAY_NAME, GATEWAY_VERSION } from '../version.js';
import type { HttpInput } from './input.js';
import { droppableMethod, SseConnection, type QueueBounds } from './sse-connection.js';

/** How long a client may reuse a list or discovery result (server/utilities/caching.mdx). */
export const LIST_TTL_MS = 30_000;

/**
 * Whether a POST is a 2026-07-28 request: its MCP-Protocol-Version says so; or, without a
 * session, its body declares a version in `_meta`, or its header names a version the gateway
 * does not speak at all (answered -32022, which a client of either era understands).
 */
export function isModernRequest(input: HttpInput, body: unknown, hasSession: boolean): boolean {
  const header = input.header('mcp-protocol-version');
  if (isModernVersion(header)) return true;
  if (hasSession) return false;
  if (isObject(body) && body.method === 'initialize') return false;
  if (header !== undefined) return !isSupportedVersion(header);
  const params = isObject(body) ? body.params : undefined;
  return isObject(params) && isObject(params._meta) && typeof params._meta[META.protocolVersion] === 'string';
}

function rpcError(status: number, code: number, message: string, id: JsonRpcRequest['id'] | null, data?: unknown): Response {
  const error: { code: number; message: string; data?: unknown } = { code, message };
  if (data !== undefined) error.data = data;
  return new Response(JSON.stringify(failure(id, error)), { status, headers: { 'content-type': 'application/json' } });
}

/** The validated request, or the refusal (streamable-http.mdx "Server Validation"). */
export function validateModern(input: HttpInput, message: JsonRpcMessage): StatelessRequest | Response {
  const id = isRequest(message) ? message.id : null;
  const header = input.header('mcp-protocol-version');
  const declared = 'params' in message && isObject(message.params) ? message.params : undefined;
  const meta = requestMetaOf(declared);
  const version = typeof meta === 'string' ? header : meta.protocolVersion;
  if (version !== undefined && !isModernVersion(version) && !isSupportedVersion(version)) {
    return rpcError(400, ModernErrorCode.UnsupportedProtocolVersion, `Unsupported protocol version: ${version}`, id, { supported: ALL_VERSIONS, requested: version });
  }
  if (!('method' in message)) return rpcError(400, ErrorCode.InvalidRequest, 'Invalid Request: clients of 2026-07-28 send no responses', null);
  if (!isRequest(message)) return rpcError(400, ErrorCode.InvalidRequest, 'not a request', null); // notifications are handled before
  if (typeof meta === 'string') return rpcError(400, ErrorCode.InvalidParams, `Invalid params: ${meta}`, id);
  if (header === undefined) return rpcError(400, ModernErrorCode.HeaderMismatch, 'Header mismatch: MCP-Protocol-Version header is required', id);
  if (header !== meta.protocolVersion) {
    return rpcError(400, ModernErrorCode.HeaderMismatch, `Header mismatch: MCP-Protocol-Version header value '${header}' does not match body value '${meta.protocolVersion}'`, id);
  }
  const method = input.header('mcp-method');
  if (method === undefined) return rpcError(400, ModernErrorCode.HeaderMismatch, 'Header mismatch: Mcp-Method header is required', id);
  if (method !== message.method) return rpcError(400, ModernErrorCode.HeaderMismatch, `Header mismatch: Mcp-Method header value '${method}' does not match body value '${message.method}'`, id);
  if (!MODERN_METHODS.has(message.method)) return rpcError(404, ErrorCode.MethodNotFound, `Method not found: ${message.method}`, id);
  const name = mirroredName(message);
  if (NAMED_METHODS.has(message.method)) {
    const raw = input.header('mcp-name');
    if (raw === undefined) return rpcError(400, ModernErrorCode.HeaderMismatch, 'Header mismatch: Mcp-Name header is required', id);
    const decoded = decodeHeaderValue(raw);
    if (decoded === undefined) return rpcError(400, ModernErrorCode.HeaderMismatch, 'Header mismatch: Mcp-Name header value is malformed', id);
    if (decoded !== name) return rpcError(400, ModernErrorCode.HeaderMismatch, `Header mismatch: Mcp-Name header value '${raw}' does not match body value '${name ?? ''}'`, id);
  }
  // The protocol fields are the gateway's business; the rest of `_meta` (progressToken,
  // traceparent, the log level) goes on with the request.
  const { [META.protocolVersion]: _v, [META.clientCapabilities]: _c, [META.clientInfo]: _i, ...rest } = metaOf(declared) ?? {};
  const { _meta: _dropped, ...bare } = declared ?? {};
  const params: JsonObject = Object.keys(rest).length === 0 ? bare : { ...bare, _meta: rest };
  return {
    id: message.id,
    method: message.method,
    params,
    clientCapabilities: meta.clientCapabilities,
    clientInfo: meta.clientInfo ?? { name: 'unknown', version: '0' },
    logLevel: meta.logLevel,
  };
}

/** A result as a client of this era reads it: resultType, the gateway's serverInfo, caching hints. */
export function shapeResult(method: string, result: JsonObject, session: DownstreamSession): JsonObject {
  const out: JsonObject = { ...result, resultType: typeof result.resultType === 'string' ? result.resultType : 'complete' };
  out._meta = { ...metaOf(result), [META.serverInfo]: { name: GATEWAY_NAME, version: GATEWAY_VERSION } };
  if (CACHEABLE_METHODS.has(method) && out.resultType === 'complete') {
    out.ttlMs = method === 'resources/read' ? 0 : LIST_TTL_MS;
    // What a principal's teams see is theirs alone; without policy every principal sees the
    // same lists. A resource's content may be anyone's (per-session servers): never shared.
    out.cacheScope = session.access.shaped || method === 'resources/read' ? 'private' : 'public';
  }
  return out;
}

/** server/discover: the versions the gateway speaks and what the client's teams can see. */
export function discover(session: DownstreamSession): JsonObject {
  const result: JsonObject = { supportedVersions: [...ALL_VERSIONS], capabilities: session.capabilities };
  if (session.instructions !== undefined) result.instructions = session.instructions;
  return result;
}

export interface ModernDeps {
  stateless: StatelessSessions;
  keepAliveMs: number;
  /** What may wait for a client that does not read: a request's stream, or a subscriptions/listen one. */
  bounds?: (kind: 'request' | 'standalone') => QueueBounds | undefined;
}

/** Runs a validated request and answers it as JSON, or as SSE once a notification must go first. */
export async function serveModern(deps: ModernDeps, input: HttpInput, request: StatelessRequest, context: RequestContext): Promise<Response> {
  const { stateless } = deps;
  const session = await stateless.session(request, context);
  const shape = (response: JsonRpcResponse): JsonRpcResponse => ('result' in response ? { ...response, result: shapeResult(request.method, response.result, session) } : response);
  if (request.method === 'server/discover') {
    return Response.json({ jsonrpc: '2.0', id: request.id, result: shapeResult(request.method, discover(session), session) });
  }
  if (request.method === 'subscriptions/listen') return listen(deps, input, session, request, context);

  return new Promise<Response>((resolve) => {
    let connection: SseConnection | undefined;
    const sink: Sink = {
      notify(message) {
        if (!connection) {
          connection = new SseConnection({}, deps.keepAliveMs, deps.bounds?.('request'));
          connection.onclose = () => {
            if (exchange.answers(sink)) exchange.abandon('the client closed the stream');
          };
          resolve(connection.response);
        }
        connection.write(encodeSseEvent(JSON.stringify(message)), droppableMethod(message));
      },
      finish(response) {
        const shaped = shape(response);
        if (connection) {
          connection.write(encodeSseEvent(JSON.stringify(shaped)));
          connection.close();
        } else resolve(Response.json(shaped));
      },
    };
    const requestState = request.params.requestState;
    let exchange: ReturnType<StatelessSessions['run']>;
    if (typeof requestState === 'string') {
      const resumed = stateless.resume(requestState, request, sink, context);
      if (!(resumed instanceof Error)) exchange = resumed;
      else {
        resolve(Response.json(failure(request.id, resumed.error)));
        return;
      }
    } else {
      // Answers without a requestState answer nothing of the gateway's; they go no further.
      const { inputResponses: _stray, ...params } = request.params;
      exchange = stateless.run(session, { ...request, params }, sink, context);
    }
    input.onGone(() => {
      if (exchange.answers(sink)) exchange.abandon('the client closed the connection');
    });
  });
}

/** subscriptions/listen: an SSE stream, acknowledged first, open until the client closes it. */
async function listen(deps: ModernDeps, input: HttpInput, session: DownstreamSession, request: StatelessRequest, context: RequestContext): Promise<Response> {
  const filter = isObject(request.params.notifications) ? request.params.notifications : undefined;
  if (!filter) return rpcError(400, ErrorCode.InvalidParams, 'Invalid params: notifications is required', request.id);
  const connection = new SseConnection({}, deps.keepAliveMs, deps.bounds?.('standalone'));
  const sink: Sink = {
    notify: (message) => connection.write(encodeSseEvent(JSON.stringify(message)), droppableMethod(message)),
    finish(response) {
      connection.write(encodeSseEvent(JSON.stringify(response)));
      connection.close();
    },
  };
  const { agreed, close } = await deps.stateless.listen(session, request.id, filter, sink, context);
  connection.onclose = close;
  input.onGone(close);
  sink.notify({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { _meta: { [META.subscriptionId]: request.id }, notifications: agreed } });
  return connection.response;
}
