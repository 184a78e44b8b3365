// The MCP endpoint for 2026-07-28 clients (spec/2026-07-28/basic/transports/streamable-http.mdx):
// one POST per request, no session. The request's era is decided from MCP-Protocol-Version and
// the body's `_meta` (isStatelessRequest). Validation follows "Server Validation": an unsupported version is
// 400 / -32022 with the supported list, missing `_meta` fields 400 / -32602, a missing or
// mismatched MCP-Protocol-Version, Mcp-Method or Mcp-Name header 400 / -32020, an unknown method
// 404 / -32601. Policy and routing use the body, never the headers.
//
// An answer is JSON unless a related notification (progress, a log message the request asked
// for) goes first: then it is an SSE stream without event ids (streams are not resumable in
// this era). The client closing the connection before the answer cancels the request upstream.
import { ALL_VERSIONS, META, StatelessErrorCode, decodeHeaderValue, isStatelessVersion, requestMetaOf } from '../../mcp/era.js';
import { ErrorCode, statelessError, toJsonRpcError } from '../../mcp/errors.js';
import { existsIn, hasMcpName, isCacheable, mirroredName } from '../../mcp/methods.js';
import { failure, isObject, isRequest, metaOf, type JsonObject, type JsonRpcMessage, type JsonRpcNotification, type JsonRpcResponse } from '../../mcp/jsonrpc.js';
import { isSupportedVersion } from '../../mcp/versions.js';
import type { RequestSink } from '../../mcp/pending.js';
import type { Caller } from '../../session/context.js';
import type { StatelessRequest } from './round-trip.js';
import type { StatelessSessions, Subscription } from './sessions.js';
import type { DownstreamSession } from '../../links/session.js';
import { encodeSseEvent } from '../../util/sse.js';
import { GATEWAY_NAME, GATEWAY_VERSION } from '../../version.js';
import type { HttpInput } from '../input.js';
import { refuse, refusals } from '../refusals.js';
import { droppableMethod, SseConnection, type QueueBounds } from '../sse-connection.js';
import type { KeepAlives } from '../keep-alives.js';
import type { GatewayTasks } from '../../tasks/gateway-tasks.js';
import { controlOf, outlivesClient, serveTaskMethod, taskIdsOf, watchFor, withTasksExtension } from './tasks.js';
import type { EdgeCall } from './accounting.js';

/** How long a client may reuse a list or discovery result (server/utilities/caching.mdx). */
export const LIST_TTL_MS = 30_000;

/**
 * Whether a POST is a 2026-07-28 request: its MCP-Protocol-Version says so; or, without a
 * session, its body declares a version in `_meta`, or its header names a version the gateway
 * does not speak at all (answered -32022, which a client of either era understands).
 */
export function isStatelessRequest(input: HttpInput, body: unknown, hasSession: boolean): boolean {
  const header = input.header('mcp-protocol-version');
  if (isStatelessVersion(header)) return true;
  if (hasSession) return false;
  if (isObject(body) && body.method === 'initialize') return false;
  if (header !== undefined) return !isSupportedVersion(header);
  const params = isObject(body) ? body.params : undefined;
  return isObject(params) && isObject(params._meta) && typeof params._meta[META.protocolVersion] === 'string';
}

/** The validated request, or the refusal (streamable-http.mdx "Server Validation"). */
export function validateStateless(input: HttpInput, message: JsonRpcMessage): StatelessRequest | Response {
  const id = isRequest(message) ? message.id : null;
  const header = input.header('mcp-protocol-version');
  const declared = 'params' in message && isObject(message.params) ? message.params : undefined;
  const meta = requestMetaOf(declared);
  // A header that says otherwise than the body is the first thing wrong, whatever either says.
  if (header !== undefined && typeof meta !== 'string' && header !== meta.protocolVersion) {
    return refuse(refusals.versionHeaderMismatch, { header, body: meta.protocolVersion }, { id });
  }
  const version = typeof meta === 'string' ? header : meta.protocolVersion;
  if (version !== undefined && !isStatelessVersion(version) && !isSupportedVersion(version)) {
    return refuse(refusals.unsupportedProtocolVersion, version, { id, data: { supported: ALL_VERSIONS, requested: version } });
  }
  if (!('method' in message)) return refuse(refusals.statelessResponse);
  if (!isRequest(message)) return refuse(refusals.notARequest); // notifications are handled before
  if (typeof meta === 'string') return refuse(refusals.invalidMeta, meta, { id });
  if (header === undefined) return refuse(refusals.versionHeaderRequired, { id });
  const method = input.header('mcp-method');
  if (method === undefined) return refuse(refusals.methodHeaderRequired, { id });
  if (method !== message.method) return refuse(refusals.methodHeaderMismatch, { header: method, body: message.method }, { id });
  if (!existsIn(message.method, 'stateless')) return refuse(refusals.methodNotFound, message.method, { id });
  const name = mirroredName(message);
  if (hasMcpName(message.method)) {
    const raw = input.header('mcp-name');
    if (raw === undefined) return refuse(refusals.nameHeaderRequired, { id });
    const decoded = decodeHeaderValue(raw);
    if (decoded === undefined) return refuse(refusals.nameHeaderMalformed, { id });
    if (decoded !== name) return refuse(refusals.nameHeaderMismatch, { header: raw, body: name ?? '' }, { id });
  }
  // The protocol fields are the gateway's business; the rest of `_meta` (progressToken,
  // traceparent, the log level) goes on with the request.
  const { [META.protocolVersion]: _v, [META.clientCapabilities]: _c, [META.clientInfo]: _i, ...rest } = metaOf(declared) ?? {};
  // So is the 2025-11-25 `task` parameter of tools/call, removed in this revision: ignored,
  // never an opt-in (SEP-2663 "Compatibility"), it asks no upstream of either era for a task.
  const { _meta: _dropped, ...given } = declared ?? {};
  const { task: _task, ...untasked } = given;
  const bare = message.method === 'tools/call' ? untasked : given;
  const params: JsonObject = Object.keys(rest).length === 0 ? bare : { ...bare, _meta: rest };
  return {
    id: message.id,
    protocolVersion: meta.protocolVersion,
    method: message.method,
    params,
    clientCapabilities: meta.clientCapabilities,
    clientInfo: meta.clientInfo ?? { name: 'unknown', version: '0' },
    logLevel: meta.logLevel,
    // Checked against the tool's schema once the tool is known (tool-call.ts).
    paramHeaders: message.method === 'tools/call' ? input.headersStartingWith('mcp-param-') : undefined,
  };
}

/** A result as a client of this era reads it: resultType, the gateway's serverInfo, caching hints. */
export function shapeResult(method: string, result: JsonObject): JsonObject {
  const out: JsonObject = { ...result, resultType: typeof result.resultType === 'string' ? result.resultType : 'complete' };
  out._meta = { ...metaOf(result), [META.serverInfo]: { name: GATEWAY_NAME, version: GATEWAY_VERSION } };
  if (isCacheable(method) && out.resultType === 'complete') {
    out.ttlMs = method === 'resources/read' ? 0 : LIST_TTL_MS;
    // Never `public` (caching.mdx: only where every caller gets the same bytes): what a
    // principal's teams see is theirs alone, upstreams list by the client's capabilities
    // (server-everything offers sampling tools only to clients that sample), lists hold a
    // session's own resources, and a resource's content may be anyone's.
    out.cacheScope = 'private';
  }
  return out;
}

/** An answer as a client of this era reads it: its result shaped, its error in this era's codes. */
function shapeAnswer(method: string, response: JsonRpcResponse): JsonRpcResponse {
  return 'result' in response ? { ...response, result: shapeResult(method, response.result) } : { ...response, error: statelessError(response.error) };
}

/**
 * The HTTP status of an answer sent as JSON: a method not served is 404 (streamable-http.mdx),
 * a capability the client lacks 400 (basic/index.mdx), headers not matching the body 400
 * (streamable-http.mdx "Server Validation"); everything else 200.
 */
function statusOf(response: JsonRpcResponse): number {
  if (!('error' in response)) return 200;
  if (response.error.code === ErrorCode.MethodNotFound) return 404;
  if (response.error.code === StatelessErrorCode.MissingRequiredClientCapability) return 400;
  // A header that does not match the body (the gateway's check of Mcp-Param-*, or an upstream's).
  if (response.error.code === StatelessErrorCode.HeaderMismatch) return 400;
  return 200;
}

/**
 * server/discover: the versions the gateway speaks and what the client's teams can see; the
 * Tasks extension whenever the gateway makes tasks (it can make one of any call). Never the
 * 2025-11-25 `tasks` capability its upstreams may declare: this revision has none (SEP-2663
 * "Compatibility": not advertised under a revision that has the extension).
 */
export function discover(session: DownstreamSession, tasks = false): JsonObject {
  const { tasks: _legacy, ...declared } = session.capabilities;
  const capabilities = tasks ? withTasksExtension(declared) : declared;
  const result: JsonObject = { supportedVersions: [...ALL_VERSIONS], capabilities };
  if (session.instructions !== undefined) result.instructions = session.instructions;
  return result;
}

export interface StatelessEndpointDeps {
  stateless: StatelessSessions;
  /** The gateway's one keep-alive timer for every SSE connection (or an interval for one of each's own). */
  keepAlive: number | KeepAlives;
  /** What may wait for a client that does not read: a request's stream, or a subscriptions/listen one. */
  bounds?: (kind: 'request' | 'standalone') => QueueBounds | undefined;
  /** Tasks the gateway makes of long calls, and serves from its task store. */
  tasks?: GatewayTasks;
}

/**
 * Runs a validated request and answers it as JSON, or as SSE once a notification must go first.
 * What is answered here, not by the router, is accounted on `edge` (accounting.ts); a request
 * that fails here (a rejection) is the caller's to refuse and account.
 */
export async function serveStateless(deps: StatelessEndpointDeps, input: HttpInput, request: StatelessRequest, caller: Caller, edge: EdgeCall): Promise<Response> {
  const { stateless } = deps;
  const requestState = request.params.requestState;
  // A retry of a call the gateway parked goes on in that call's session.
  const parked = typeof requestState === 'string' && stateless.issued(requestState);
  // A listen is the edge's from its request to its acknowledgement: the stream's open, its session's too.
  const listening = !parked && request.method === 'subscriptions/listen';
  if (listening) edge.begin();
  // A task the gateway made is answered from the task store, on any replica, without a session.
  const own = deps.tasks && serveTaskMethod(deps.tasks, request, caller);
  // One that became the upstream's own task is asked of the upstream, and answered under the client's handle.
  let handle: string | undefined;
  if (own) {
    edge.begin();
    const outcome = await own;
    if (!('forward' in outcome)) {
      edge.end(outcome);
      const shaped = shapeAnswer(request.method, outcome);
      return Response.json(shaped, { status: statusOf(shaped) });
    }
    // The router answers and accounts it: the span begun here is never ended, so never exported.
    handle = request.params.taskId as string;
    request = { ...request, params: { ...request.params, taskId: outcome.forward } };
  }
  const asked = request;
  const session = parked ? undefined : await stateless.session(request, caller);
  const shape = (response: JsonRpcResponse): JsonRpcResponse =>
    shapeAnswer(asked.method, handle !== undefined && 'result' in response && typeof response.result.taskId === 'string' ? { ...response, result: { ...response.result, taskId: handle } } : response);
  if (session && request.method === 'server/discover') {
    edge.begin();
    stateless.release(session);
    const result = discover(session, deps.tasks !== undefined);
    edge.end({ jsonrpc: '2.0', id: request.id, result }, session);
    return Response.json({ jsonrpc: '2.0', id: request.id, result: shapeResult(request.method, result) });
  }
  if (session && listening) return listen(deps, input, session, request, caller, edge);

  return new Promise<Response>((resolve) => {
    let connection: SseConnection | undefined;
    const http: RequestSink = {
      notify(message) {
        if (!connection) {
          connection = new SseConnection({}, deps.keepAlive, deps.bounds?.('request'));
          connection.onclose = () => {
            if (roundTrip.answers(sink) && !outlivesClient(sink)) roundTrip.abandon('the client closed the stream');
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
        } else resolve(Response.json(shaped, { status: statusOf(shaped) }));
      },
    };
    let roundTrip: ReturnType<StatelessSessions['run']>;
    // A call still running after sessions.taskAfter is answered with a task (src/tasks/).
    const sink = deps.tasks ? deps.tasks.adopt(request, caller, http, controlOf(stateless, () => roundTrip, request, caller)) : http;
    if (!session) {
      const resumed = stateless.resume(requestState as string, request, sink, caller);
      if (!(resumed instanceof Error)) roundTrip = resumed;
      else {
        // Refused here (unknown or expired, another request's): the router never sees it.
        const answer = failure(request.id, toJsonRpcError(resumed));
        edge.end(answer);
        const refused = failure(request.id, statelessError(answer.error));
        resolve(Response.json(refused, { status: statusOf(refused) }));
        return;
      }
    } else {
      // A requestState the gateway did not issue, and the inputResponses with it, are an
      // upstream's own multi round-trip: they go on to it as they came (call.ts).
      roundTrip = stateless.run(session, request, sink, caller);
    }
    input.onGone(() => {
      if (roundTrip.answers(sink) && !outlivesClient(sink)) roundTrip.abandon('the client closed the connection');
    });
  });
}

/**
 * subscriptions/listen: an SSE stream, acknowledged first, open until the client closes it or
 * the gateway ends it with its final result (its session ending, or a drain: ListenStreams).
 * Accounted on `edge` when acknowledged, or refused (a rejection is the caller's to account).
 */
async function listen(deps: StatelessEndpointDeps, input: HttpInput, session: DownstreamSession, request: StatelessRequest, caller: Caller, edge: EdgeCall): Promise<Response> {
  const filter = isObject(request.params.notifications) ? request.params.notifications : undefined;
  if (!filter) {
    deps.stateless.release(session);
    return edge.refused(refuse(refusals.notificationsRequired, { id: request.id }), session);
  }
  // Task ids are the gateway's (tasks.ts); the rest of the filter is the session's.
  const asked = taskIdsOf(request, filter);
  if ('refused' in asked) {
    deps.stateless.release(session);
    edge.end(asked.refused, session);
    return Response.json(asked.refused, { status: statusOf(asked.refused) });
  }
  const connection = new SseConnection({}, deps.keepAlive, deps.bounds?.('standalone'));
  const sink: RequestSink = {
    notify: (message) => connection.write(encodeSseEvent(JSON.stringify(message)), droppableMethod(message)),
    finish(response) {
      connection.write(encodeSseEvent(JSON.stringify(response)));
      connection.close();
    },
  };
  let subscription: Subscription;
  try {
    subscription = await deps.stateless.listen(session, request.id, asked.rest, sink, caller);
  } catch (err) {
    deps.stateless.release(session);
    throw err;
  }
  // What a watched task says before the acknowledgement is written waits for it.
  let early: JsonRpcNotification[] | undefined = [];
  const told = (message: JsonRpcNotification): void => (early ? void early.push(message) : sink.notify(message));
  let watch: Awaited<ReturnType<typeof watchFor>>;
  try {
    watch = await watchFor(deps.tasks, asked.taskIds, caller, request.id, told, (handle, onTask) => deps.stateless.followTask(session, handle, caller, onTask));
  } catch (err) {
    subscription.close();
    throw err;
  }
  const agreed = watch ? { ...subscription.agreed, taskIds: watch.agreed } : subscription.agreed;
  const close = (): void => {
    watch?.close();
    subscription.close();
  };
  connection.onclose = close;
  input.onGone(close);
  sink.notify({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { _meta: { [META.subscriptionId]: request.id }, notifications: agreed } });
  // Open: its span and call line end here, while the stream lives on (tracing.md).
  edge.end({ jsonrpc: '2.0', id: request.id, result: { notifications: agreed } }, session);
  const waiting = early;
  early = undefined;
  for (const message of waiting) sink.notify(message);
  // From here a drain may end the stream with its final result (at once, if one began).
  subscription.acknowledged();
  return connection.response;
}
