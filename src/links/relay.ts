// Upstream → client: everything an upstream session sends that is not a response to the
// gateway. Its notifications and requests go to the one client session that owns it (upstream
// sessions are per client session), on the stream of the related client request when there is
// one, else on the session's standalone stream; names, URIs and task ids are rewritten on the
// way. A server-initiated request the client did not declare the capability for is refused.
import { clientSupports } from '../mcp/capabilities.js';
import { GatewayError } from '../mcp/errors.js';
import { isStatelessVersion } from '../mcp/era.js';
import {
  isObject,
  metaOf,
  notification,
  type JsonObject,
  type JsonRpcId,
  type JsonRpcMessage,
  type JsonRpcNotification,
  type JsonRpcRequest,
  type ProgressToken,
} from '../mcp/jsonrpc.js';
import { createdTaskId, mapRelatedTask, relatedTaskId, withBoundedTimings } from '../mcp/tasks.js';
import type { Metrics } from '../metrics/metrics.js';
import type { DownstreamSession } from './session.js';
import type { UpstreamClient } from '../upstream/client.js';
import type { Logger } from '../util/log.js';
import type { NamespaceCodec } from '../names/namespace.js';
import { exposeTaskAnswer } from '../names/content.js';
import type { RequestContext } from '../session/context.js';
import { listChangeOf } from '../mcp/methods.js';
import { hearsLogLine } from './log-lines.js';


export interface RelayDeps {
  /** Read at each use: a config reload may replace the codec. */
  naming: { readonly codec: NamespaceCodec };
  logger: Logger;
  /** How long the gateway waits for the client to answer a request relayed from `upstream`. */
  clientRequestTimeoutMs: (upstream: string) => number;
  /** How many requests from one session of `upstream` may wait for the client at once. */
  maxClientRequests: (upstream: string) => number;
  metrics: Metrics;
  /** Told when an upstream says its tools changed. */
  onToolsChanged?: (upstream: string) => void;
}

/** Wires an upstream session's notifications and requests to the client session that owns it. */
export function wireUpstream(session: DownstreamSession, client: UpstreamClient, deps: RelayDeps): void {
  // A portable session's upstream stream is held by the replica holding the client's GET stream.
  if (session.portable) client.holdStream(session.holdsStream);
  // The context an upstream client hands back is the one the request was sent with (call.ts).
  const send = (message: JsonRpcMessage, context: unknown): void => {
    const related = context as RequestContext | undefined;
    if (related) related.channel.send(message);
    else session.deliver(message);
  };

  const { metrics } = deps;
  // The gateway's ids of the requests this upstream session (this client, its current connection)
  // asked the client and that may still wait: only these does its cancellation match, by the
  // upstream's id, which a restarted upstream or a renewed session gives out again from the start.
  const relayed = new Set<number>();
  client.onnotification = (message, context) => {
    if (message.method === 'notifications/cancelled') return cancelClientRequest(session, relayed, message);
    if (message.method === 'notifications/elicitation/complete') return completeElicitation(session, message, (out) => send(out, context), metrics);
    if (message.method === 'notifications/tools/list_changed') deps.onToolsChanged?.(client.name);
    let forwarded = rewriteNotification(client.name, message, deps.naming.codec);
    // Updates about resources the session's teams cannot see, in any spelling (names/uri.ts), never reach it.
    const uri = forwarded?.method === 'notifications/resources/updated' ? forwarded.params?.uri : undefined;
    if (typeof uri === 'string' && !deps.naming.codec.visibleUri(uri, (spelling) => session.access.canSee('resource', spelling, client.name))) forwarded = undefined;
    // Nor log lines below the level it set (log-lines.ts, as a shared child's).
    if (forwarded && !hearsLogLine(session, client.name, forwarded)) forwarded = undefined;
    // A 2025-11-25 task's status, sent unasked, is heard by who follows it here (a listen that named its handle).
    const taskId = forwarded?.method === 'notifications/tasks/status' ? forwarded.params?.taskId : undefined;
    if (typeof taskId === 'string') for (const follower of session.taskFollowers.get(taskId) ?? []) follower(forwarded!);
    // The extension's own notifications belong to the listen request of the gateway's that asked
    // for them (src/router/task-follow.ts follows the task from it), and to nobody without one.
    if (context === undefined && (message.method === 'notifications/tasks' || message.method === 'notifications/subscriptions/acknowledged')) forwarded = undefined;
    metrics.notifications.inc({ method: metrics.notification(message.method), outcome: forwarded && !session.closed ? 'forwarded' : 'dropped' });
    if (forwarded) send(forwarded, context);
    else deps.logger.debug('upstream notification not forwarded', { upstream: client.name, method: message.method });
  };

  // What the upstream asked the client dies with its connection (a crashed child is restarted, a
  // forgotten HTTP session renewed): the client is told, and a late answer finds nothing to go to.
  client.ondisconnect = () => {
    const asked = [...relayed];
    relayed.clear();
    for (const id of asked) {
      if (!session.clientRequests.settle(id, new GatewayError('upstream_closed', `upstream ${client.name} restarted`))) continue;
      session.deliver(notification('notifications/cancelled', { requestId: id, reason: 'the server that asked restarted' }));
    }
  };

  // Requests of this upstream session waiting for the client. Each holds a pending entry, a
  // timer and a logged SSE event until answered or timed out, so an upstream flooding a client
  // that never answers would grow the gateway without bound: past the cap they are refused.
  let waiting = 0;
  client.onrequest = async (request, context) => {
    const method = metrics.serverRequest(request.method);
    if (session.closed || !clientSupports(session.info.clientCapabilities, request.method)) {
      metrics.serverRequests.inc({ method, outcome: 'refused' });
      if (session.closed) throw new GatewayError('upstream_closed', 'the client session has ended');
      throw new GatewayError('method_not_found', `Method not found: ${request.method} (the client did not declare it)`);
    }
    const related = context as RequestContext | undefined;
    if (related ? related.channel.canAsk === false : !session.delivery.canAsk) {
      // A 2026-07-28 client is asked for input only within a request that can take it (mrtr.mdx).
      metrics.serverRequests.inc({ method, outcome: 'refused' });
      const where = related ? 'within this request' : 'outside one of its requests';
      throw new GatewayError('method_not_found', `Method not found: ${request.method} (the client cannot be asked for input ${where})`);
    }
    const cap = deps.maxClientRequests(client.name);
    if (waiting >= cap) {
      metrics.serverRequests.inc({ method, outcome: 'limited' });
      throw new GatewayError('rate_limited', `Too many requests to the client in flight (${cap} from this server); retry once one is answered`);
    }
    const upstreamToken = metaOf(request.params)?.progressToken;
    const localTask = relatedTaskId(request.params);
    const { id, result } = session.sendRequestToClient(
      {
        upstream: client.name,
        upstreamId: request.id,
        method: request.method,
        progressToken: isToken(upstreamToken) ? upstreamToken : undefined,
        relatedTask: localTask === undefined ? undefined : { exposed: deps.naming.codec.exposeTaskId(client.name, localTask), local: localTask },
      },
      {
        timeoutMs: deps.clientRequestTimeoutMs(client.name),
        maxTotalMs: deps.clientRequestTimeoutMs(client.name),
        onTimeout: () => {
          session.clientRequests.settle(id, new GatewayError('upstream_timeout', `the client did not answer ${request.method} in time`));
          send(notification('notifications/cancelled', { requestId: id, reason: 'timeout' }), context);
        },
      },
    );
    send({ jsonrpc: '2.0', id, method: request.method, params: toClientParams(client.name, request, id, deps.naming.codec) }, context);
    // The slot is held until the entry settles: an answer, its deadline, a cancellation or the
    // session's end all settle it, so none is held forever.
    waiting++;
    relayed.add(id);
    let answer: JsonObject;
    try {
      answer = await result;
    } catch (err) {
      metrics.serverRequests.inc({ method, outcome: 'failed' });
      throw err;
    } finally {
      waiting--;
      relayed.delete(id);
    }
    metrics.serverRequests.inc({ method, outcome: 'answered' });
    // A task the client created for this request: its status notifications go back here.
    const taskId = createdTaskId(answer);
    if (taskId !== undefined) session.rememberClientTask(taskId, client.name);
    return answer;
  };
}

/** The client answered a request the gateway relayed; the answer goes back to its upstream. */
export function answerFromClient(session: DownstreamSession, id: JsonRpcId | null, outcome: JsonObject | Error): boolean {
  if (id === null) return false;
  const request = session.clientRequests.get(id);
  if (!request) return false;
  // Only the upstream task id the gateway exposed goes back to its own form; any other id (a
  // task the client runs itself) belongs to the client and passes unchanged.
  const related = request.relatedTask;
  const mapped = outcome instanceof Error || !related ? outcome : mapRelatedTask(outcome, (taskId) => (taskId === related.exposed ? related.local : taskId));
  session.clientRequests.settle(id, mapped);
  return true;
}

/**
 * Client notifications that belong to one upstream: progress on a relayed request, and status
 * of a task the client runs for an upstream. False when the notification is not one of those.
 */
export function routeClientNotification(session: DownstreamSession, message: JsonRpcNotification): boolean {
  const params = message.params ?? {};
  if (message.method === 'notifications/progress' && isToken(params.progressToken)) {
    const request = session.clientRequests.get(params.progressToken);
    const client = request && session.upstreams.get(request.upstream);
    if (!request || request.progressToken === undefined || !client) return true;
    client.notify(message.method, { ...params, progressToken: request.progressToken }).catch(() => {});
    return true;
  }
  if (message.method === 'notifications/tasks/status' && typeof params.taskId === 'string') {
    const upstream = session.clientTasks.get(params.taskId);
    const client = upstream === undefined ? undefined : session.upstreams.get(upstream);
    client?.notify(message.method, params).catch(() => {});
    return true;
  }
  return false;
}

/**
 * A URL elicitation of this upstream session finished (2025-11-25 client/elicitation.mdx): to the
 * one client that was asked, unchanged (its id is the one the client saw in elicitation/create),
 * when it declared URL mode; 2026-07-28 removed the notification.
 */
function completeElicitation(session: DownstreamSession, message: JsonRpcNotification, send: (message: JsonRpcNotification) => void, metrics: Metrics): void {
  const elicitation = session.info.clientCapabilities.elicitation;
  const forward = typeof message.params?.elicitationId === 'string' && !session.closed && !isStatelessVersion(session.info.protocolVersion) && isObject(elicitation) && isObject(elicitation.url);
  metrics.notifications.inc({ method: metrics.notification(message.method), outcome: forward ? 'forwarded' : 'dropped' });
  if (forward) send(notification(message.method, { elicitationId: message.params!.elicitationId! }));
}

/**
 * The upstream gave up on a request it sent the client: tell the client, with the gateway's id.
 * `relayed`: the gateway's ids of what this upstream session asked (see wireUpstream).
 */
function cancelClientRequest(session: DownstreamSession, relayed: ReadonlySet<number>, message: JsonRpcNotification): void {
  const upstreamId = message.params?.requestId;
  for (const id of relayed) {
    const request = session.clientRequests.get(id);
    if (!request || request.upstreamId !== upstreamId) continue;
    session.clientRequests.settle(id, new GatewayError('cancelled', 'cancelled by the upstream'));
    const params: JsonObject = { requestId: id };
    if (typeof message.params?.reason === 'string') params.reason = message.params.reason;
    session.deliver(notification('notifications/cancelled', params));
    return;
  }
}

/**
 * Params of a relayed request as the client sees them: the progress token is the gateway's id
 * for the request (unique in the session), and a related task id is the client-facing one.
 */
function toClientParams(upstream: string, request: JsonRpcRequest, id: number, codec: NamespaceCodec): JsonObject | undefined {
  if (!request.params) return undefined;
  let params = mapRelatedTask(request.params, (taskId) => codec.exposeTaskId(upstream, taskId));
  const meta = metaOf(params);
  if (meta && isToken(meta.progressToken)) params = { ...params, _meta: { ...meta, progressToken: id } };
  return params;
}

/** What a client sees of an upstream notification, or undefined when it is not forwarded. */
export function rewriteNotification(upstream: string, message: JsonRpcNotification, codec: NamespaceCodec): JsonRpcNotification | undefined {
  const params = message.params ?? {};
  if (listChangeOf(message.method)) return notification(message.method);
  switch (message.method) {
    case 'notifications/resources/updated':
      if (typeof params.uri !== 'string') return undefined;
      return notification(message.method, { ...params, uri: codec.exposeUri(upstream, params.uri) });
    case 'notifications/message': {
      const logger = typeof params.logger === 'string' ? `${upstream}/${params.logger}` : upstream;
      return notification(message.method, mapRelatedTask({ ...params, logger }, (id) => codec.exposeTaskId(upstream, id)));
    }
    case 'notifications/tasks/status':
    case 'notifications/tasks':
      if (typeof params.taskId !== 'string') return undefined;
      // The extension's notification may carry the task's result, whose URIs are namespaced as a call's; either carries the task's timings, bounded.
      return notification(message.method, exposeTaskAnswer(withBoundedTimings({ ...params, taskId: codec.exposeTaskId(upstream, params.taskId) }), codec, upstream));
    case 'notifications/subscriptions/acknowledged': {
      // Only the task ids a listen of the gateway's was agreed to (SEP-2663), as the gateway names them.
      const taskIds = isObject(params.notifications) && Array.isArray(params.notifications.taskIds) ? params.notifications.taskIds.filter((id): id is string => typeof id === 'string') : [];
      return notification(message.method, { notifications: { taskIds: taskIds.map((id) => codec.exposeTaskId(upstream, id)) } });
    }
    default:
      return undefined;
  }
}

function isToken(value: unknown): value is ProgressToken {
  return typeof value === 'string' || typeof value === 'number';
}

