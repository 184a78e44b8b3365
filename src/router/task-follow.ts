// An upstream's task followed for a subscriptions/listen that named its handle (SEP-2663 "Task
// Status Notifications"): the upstream's own status notifications reach the listener under the
// client's handle. A 2026-07-28 upstream is asked to listen for the task (its
// notifications/tasks carry the whole task); a 2025-11-25 upstream's notifications/tasks/status
// (sent unasked to the upstream session that made the task, tasks.mdx "Task Notifications") are
// followed by a tasks/get in the extension's form, which carries the result once it ended. Only
// a handle of the listener's principal, of a tool its teams may call, is followed, and only the
// session's own upstream session is heard: no other session's tasks reach the listener. The
// gateway's listen hears its acknowledgement and the task's notifications on its own request
// (the stream of its HTTP exchange; on stdio, where every listen shares the channel, by the
// subscription id they carry), so a shared child's other sessions never hear them.
import { isObject, type JsonObject, type JsonRpcNotification } from '../mcp/jsonrpc.js';
import type { NamespaceCodec } from '../names/namespace.js';
import { requestContext, type RequestChannel, type RequestContext } from '../session/context.js';
import type { SessionLinks } from '../links/links.js';
import type { DownstreamSession } from '../links/session.js';
import type { TaskHandles } from '../tasks/handles.js';
import type { UpstreamClient } from '../upstream/client.js';
import { declaringFor, formsOf, taskRequest } from '../tasks/forms.js';
import { Cancellation } from '../util/cancel.js';
import type { TaskInputs } from './task-input.js';

/** How long a 2026-07-28 upstream's acknowledgement of the gateway's listen is waited for. */
const ACK_TIMEOUT_MS = 10_000;
const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

export interface TaskFollow {
  close(): void;
}

export interface TaskFollowDeps {
  links: SessionLinks;
  handles: TaskHandles;
  codec: NamespaceCodec;
  /** A 2025-11-25 upstream's task's input, listed in the notification while it waits for some. */
  inputs: TaskInputs;
}

/**
 * Follows the task `exposed` names for `session`'s listener: `onTask` hears the whole task (as
 * tasks/get would answer it, under the handle) each time the upstream says it changed, until it
 * ends or `close`. Undefined when it is not followed (not this principal's handle, a tool its
 * teams may not call, an upstream that did not agree to tell).
 */
export async function followTask(deps: TaskFollowDeps, session: DownstreamSession, exposed: string, context: RequestContext, onTask: (task: JsonObject) => void): Promise<TaskFollow | undefined> {
  const handle = deps.handles.open(exposed, context.principal?.id ?? '');
  if (handle?.kind !== 'upstream' || !session.access.mayCall(handle.tool, handle.upstream)) return undefined;
  await deps.links.ensure(session, handle.upstream);
  const owner = session.upstreams.get(handle.upstream);
  if (!owner || owner.closed) return undefined;
  const id = deps.codec.exposeTaskId(owner.name, handle.taskId);
  const cancel = new Cancellation();
  const forms = formsOf(owner.era, context.protocolVersion);
  const send = (method: string, params: JsonObject): Promise<JsonObject> => owner.request(method, declaringFor(owner.era, params, session.info.clientCapabilities), { signal: cancel.signal });
  let seen = '';
  // What the upstream tells before it agreed waits for its agreement (a task it did not agree
  // to tell of is not the listener's to hear).
  let held: JsonObject[] | undefined = forms.upstream === 'extension' ? [] : undefined;
  const emit = (task: JsonObject): void => {
    if (cancel.aborted) return;
    const { resultType: _type, _meta: _meta, ...detailed } = task;
    const state = `${String(detailed.status)} ${String(detailed.lastUpdatedAt)}`;
    if (state === seen) return;
    seen = state;
    if (held) held.push({ ...detailed, taskId: exposed });
    else onTask({ ...detailed, taskId: exposed });
    if (TERMINAL.has(detailed.status as string)) follow.close();
  };
  const follower = (message: JsonRpcNotification): void => {
    // The extension's notification is the whole task; 2025-11-25's says only that it changed.
    if (message.method === 'notifications/tasks' && message.params) emit(message.params);
    else void taskRequest('tasks/get', { taskId: exposed }, exposed, handle.taskId, forms, send, cancel.signal, deps.inputs.of(session, owner, handle.taskId, context)).then(emit, () => {});
  };
  const followers = session.taskFollowers.get(id) ?? new Set();
  followers.add(follower);
  session.taskFollowers.set(id, followers);
  const follow: TaskFollow = {
    close() {
      if (cancel.aborted) return;
      cancel.abort(new Error('the listener closed'));
      followers.delete(follower);
      if (followers.size === 0 && session.taskFollowers.get(id) === followers) session.taskFollowers.delete(id);
    },
  };
  if (held) {
    const agreed = await listenUpstream(session, owner, handle.taskId, id, context, cancel, follower);
    const told = held;
    held = undefined;
    if (!agreed) {
      follow.close();
      return undefined;
    }
    for (const task of told) onTask(task);
  }
  return follow;
}

/**
 * Asks a 2026-07-28 upstream to tell of the task on a listen of the gateway's, whose
 * notifications/tasks of this task (`id`, as the gateway names it) `hear` hears; whether it agreed.
 */
function listenUpstream(session: DownstreamSession, owner: UpstreamClient, taskId: string, id: string, context: RequestContext, cancel: Cancellation, hear: (message: JsonRpcNotification) => void): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), ACK_TIMEOUT_MS);
    timer.unref();
    const settle = (agreed: boolean): void => {
      clearTimeout(timer);
      resolve(agreed);
    };
    // The listen's own stream: its acknowledgement says which task ids the upstream agreed to,
    // then the task's notifications follow (of this task only, whatever else the upstream says).
    const channel: RequestChannel = {
      canAsk: false,
      send(message) {
        if (!('method' in message)) return;
        if (message.method === 'notifications/tasks' && message.params?.taskId === id) return hear(message);
        if (message.method !== 'notifications/subscriptions/acknowledged') return;
        const notifications = isObject(message.params?.notifications) ? message.params.notifications : {};
        settle(Array.isArray(notifications.taskIds) && notifications.taskIds.includes(id));
      },
    };
    const listening = requestContext(context, { protocolVersion: context.protocolVersion, clientCapabilities: context.clientCapabilities, logLevel: undefined }, channel);
    const params = declaringFor(owner.era, { notifications: { taskIds: [taskId] } }, session.info.clientCapabilities);
    owner.request('subscriptions/listen', params, { signal: cancel.signal, timeoutMs: Infinity, maxTotalMs: Infinity, context: listening }).then(
      () => settle(false),
      () => settle(false),
    );
  });
}
