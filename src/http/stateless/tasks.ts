// The 2026-07-28 endpoint's side of tasks (src/tasks/): a tools/call's sink that may turn the
// call into a task, wired to the call's exchange (cancel it, hand it input responses), and the
// task methods for handles the gateway made, answered from the task store without a session.
import { StatelessErrorCode } from '../../mcp/era.js';
import { toJsonRpcError } from '../../mcp/errors.js';
import { failure, isObject, type JsonObject, type JsonRpcResponse } from '../../mcp/jsonrpc.js';
import type { Caller } from '../../session/context.js';
import type { CallControl, GatewayTasks, Sink, TaskingSink } from '../../tasks/gateway-tasks.js';
import { declaresTasks, TASK_METHODS, TASKS_EXTENSION } from '../../tasks/wire.js';
import type { Exchange, StatelessRequest } from './exchange.js';
import type { StatelessSessions } from './sessions.js';

/**
 * What the exchange running a call lets a task do to it. Input the call waits for is answered
 * where it waits: a call the gateway parked (its own requestState) resumes; an upstream's own
 * input_required (its requestState) is asked again in a new exchange, as the client's retry
 * would be (mrtr.mdx), and the task follows that one.
 */
export function controlOf(stateless: StatelessSessions, first: () => Exchange | undefined, request: StatelessRequest, caller: Caller): () => CallControl {
  let retried: Exchange | undefined;
  const current = (): Exchange | undefined => retried ?? first();
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

/** Whether a sink has handed its call over to a task (the client's connection no longer matters). */
export function isTasked(sink: Sink): boolean {
  return (sink as Partial<TaskingSink>).tasked === true;
}
