// The 2026-07-28 endpoint's side of tasks (src/tasks/): a tools/call's sink that may turn the
// call into a task, wired to the call's round trip (cancel it, hand it input responses), and the
// task methods for handles the gateway made, answered from the task store without a session.
import { META, StatelessErrorCode } from '../../mcp/era.js';
import { toJsonRpcError } from '../../mcp/errors.js';
import { failure, isObject, type JsonObject, type JsonRpcNotification, type JsonRpcResponse } from '../../mcp/jsonrpc.js';
import type { RequestSink } from '../../mcp/pending.js';
import type { Caller } from '../../session/context.js';
import type { CallControl, GatewayTasks, TaskingSink } from '../../tasks/gateway-tasks.js';
import { declaresTasks, TASK_METHODS, TASKS_EXTENSION } from '../../tasks/wire.js';
import { watchTasks, type TaskWatch } from '../../tasks/watch.js';
import type { TaskFollow } from '../../router/task-follow.js';
import type { RoundTrip, StatelessRequest } from './round-trip.js';
import type { StatelessSessions } from './sessions.js';

/**
 * What the round trip running a call lets a task do to it. Input the call waits for is answered
 * where it waits: a call the gateway parked (its own requestState) resumes; an upstream's own
 * input_required (its requestState) is asked again in a new round trip, as the client's retry
 * would be (mrtr.mdx), and the task follows that one.
 */
export function controlOf(stateless: StatelessSessions, first: () => RoundTrip | undefined, request: StatelessRequest, caller: Caller): () => CallControl {
  let retried: RoundTrip | undefined;
  const current = (): RoundTrip | undefined => retried ?? first();
  return () => ({
    cancel(reason) {
      current()?.abandon(reason);
    },
    answer(inputResponses, requestState, sink) {
      const retry: StatelessRequest = { ...request, params: { ...request.params, inputResponses, ...(requestState !== undefined ? { requestState } : {}) } };
      if (requestState !== undefined && stateless.issued(requestState)) {
        const resumed = stateless.resume(requestState, retry, sink, caller);
        return resumed instanceof Error ? resumed : undefined;
      }
      void stateless.session(retry, caller).then(
        (session) => {
          retried = stateless.run(session, retry, sink, caller);
        },
        (err: unknown) => sink.finish(failure(request.id, toJsonRpcError(err))),
      );
      return undefined;
    },
  });
}

/**
 * tasks/get, tasks/update or tasks/cancel answered by the gateway (a task it made, or a handle
 * that opens to nothing); undefined when the handle is an upstream's (the router forwards it).
 */
export function serveTaskMethod(tasks: GatewayTasks, request: StatelessRequest, caller: Caller): Promise<JsonRpcResponse | { forward: string }> | undefined {
  if (!TASK_METHODS.has(request.method)) return undefined;
  if (!declaresTasks(request.clientCapabilities)) {
    // SEP-2663 "Protocol Errors": a client that did not declare the extension gets -32021.
    return Promise.resolve(
      failure(request.id, {
        code: StatelessErrorCode.MissingRequiredClientCapability,
        message: 'Missing required client capability',
        data: { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
      }),
    );
  }
  const served = tasks.serve(request.method, request.params, caller);
  if (!served) return undefined;
  return served.then(
    (result: JsonObject | { forward: string }) => ('forward' in result && typeof result.forward === 'string' ? { forward: result.forward } : ({ jsonrpc: '2.0', id: request.id, result: result as JsonObject } as JsonRpcResponse)),
    (err: unknown) => failure(request.id, toJsonRpcError(err)),
  );
}

/** Capabilities with the Tasks extension declared (SEP-2663 "Capability Negotiation"). */
export function withTasksExtension(capabilities: JsonObject): JsonObject {
  const extensions = isObject(capabilities.extensions) ? capabilities.extensions : {};
  return { ...capabilities, extensions: { ...extensions, [TASKS_EXTENSION]: {} } };
}

/**
 * Whether a call outlives its client going away: it became a task (or is becoming one). Else a
 * sink that could still have made one never will (the call is abandoned).
 */
export function outlivesClient(sink: RequestSink): boolean {
  const tasking = sink as Partial<TaskingSink>;
  if (tasking.tasked === true) return true;
  tasking.drop?.();
  return false;
}

/**
 * The task ids a subscriptions/listen asks about: a client that did not declare the extension
 * gets -32021 (SEP-2663 "Task Status Notifications"); else the filter without them (the rest is
 * the session's business) and, once listening, the watch of those the gateway agrees to.
 */
export function taskIdsOf(request: StatelessRequest, filter: JsonObject): { refused: JsonRpcResponse } | { rest: JsonObject; taskIds: string[] | undefined } {
  if (!Array.isArray(filter.taskIds)) return { rest: filter, taskIds: undefined };
  if (!declaresTasks(request.clientCapabilities)) {
    return {
      refused: failure(request.id, {
        code: StatelessErrorCode.MissingRequiredClientCapability,
        message: 'Missing required client capability',
        data: { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
      }),
    };
  }
  const { taskIds, ...rest } = filter;
  return { rest, taskIds: (taskIds as unknown[]).filter((id): id is string => typeof id === 'string') };
}

/** Task ids one listen may watch at once (the gateway's and upstreams'). */
const MAX_WATCHED = 100;

/**
 * Watches the agreed task ids, each change a `notifications/tasks` on the listen stream: the
 * gateway's own tasks from the task store (watch.ts), an upstream's from its own status
 * notifications (`follow`, src/router/task-follow.ts).
 */
export async function watchFor(
  tasks: GatewayTasks | undefined,
  taskIds: string[] | undefined,
  caller: Caller,
  subscriptionId: unknown,
  notify: (message: JsonRpcNotification) => void,
  follow: (handle: string, onTask: (task: JsonObject) => void) => Promise<TaskFollow | undefined>,
): Promise<TaskWatch | undefined> {
  if (taskIds === undefined) return undefined;
  const send = (task: JsonObject): void => notify({ jsonrpc: '2.0', method: 'notifications/tasks', params: { ...task, _meta: { [META.subscriptionId]: subscriptionId } } });
  const own: TaskWatch = tasks ? await watchTasks(tasks, taskIds, caller, send) : { agreed: [], close: () => {} };
  const others = [...new Set(taskIds)].filter((id) => !own.agreed.includes(id)).slice(0, Math.max(0, MAX_WATCHED - own.agreed.length));
  const follows = await Promise.all(others.map((id) => follow(id, send).catch(() => undefined)));
  return {
    agreed: [...own.agreed, ...others.filter((_, i) => follows[i] !== undefined)],
    close() {
      own.close();
      for (const followed of follows) followed?.close();
    },
  };
}
