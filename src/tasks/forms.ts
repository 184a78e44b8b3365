// The two forms of tasks meeting: the 2025-11-25 experimental form (a `task` parameter, a
// CreateTaskResult holding `task`, tasks/result, `ttl` and `pollInterval`) and the Tasks
// extension (SEP-2663: `resultType: "task"`, the task inline, tasks/get carrying the result or
// error, tasks/update, `ttlMs` and `pollIntervalMs`). Each client gets the form it speaks,
// whichever its upstream speaks: requests about a task are sent in the upstream's form and
// answered in the client's.
import { GatewayError, RpcError } from '../mcp/errors.js';
import { isObject, type JsonObject, type JsonRpcErrorObject } from '../mcp/jsonrpc.js';
import { pause, type CancelSignal } from '../util/cancel.js';
import { MAX_POLL_MS, MIN_POLL_MS, isTerminalTaskStatus, withBoundedTimings } from '../mcp/tasks.js';
import { META, isStatelessVersion } from '../mcp/era.js';
import { declaringTasks } from './drive.js';
import { isTaskResult } from './wire.js';
import { quote } from '../util/cut.js';

export type TaskForm = 'extension' | 'legacy';

type Send = (method: string, params: JsonObject) => Promise<JsonObject>;

/** How long a tasks/result polling an upstream's task waits when its upstream's maxTotalTimeoutMs is not given. */
const DEFAULT_MAX_TOTAL_MS = 600_000;

/** A 2025-11-25 Task's fields as the extension names them. */
export function legacyToExtension(task: JsonObject): JsonObject {
  const { ttl, pollInterval, task: _nested, _meta: _m, ...rest } = task;
  const out: JsonObject = { ...rest, ttlMs: typeof ttl === 'number' ? ttl : null };
  if (typeof pollInterval === 'number') out.pollIntervalMs = pollInterval;
  return out;
}

/** An extension task's fields as the 2025-11-25 form names them (its result, error and input left out). */
export function extensionToLegacy(task: JsonObject): JsonObject {
  const { ttlMs, pollIntervalMs, resultType: _t, result: _r, error: _e, inputRequests: _i, _meta: _m, ...rest } = task;
  const out: JsonObject = { ...rest, ttl: typeof ttlMs === 'number' ? ttlMs : null };
  if (typeof pollIntervalMs === 'number') out.pollInterval = pollIntervalMs;
  return out;
}

/**
 * The input a 2025-11-25 upstream's task waits for, in the extension's terms: the requests it
 * sent (related to the task, on tasks/result) keyed as `inputRequests`, and their answers from
 * `inputResponses` (src/router/task-input.ts holds them).
 */
export interface TaskInput {
  requests(): Promise<JsonObject>;
  answer(inputResponses: JsonObject): void;
}

/**
 * Requests about a 2025-11-25 upstream's task, answered as the extension answers them: the
 * call made with a `task` parameter; tasks/get with the result (or error) of tasks/result once
 * the task ended, and with the requests it waits on (`input`) while `input_required`;
 * tasks/update answering those; tasks/cancel acknowledged.
 */
export function legacyAsExtension(send: Send, input?: TaskInput): Send {
  return async (method, params) => {
    switch (method) {
      case 'tools/call': {
        const created = await send(method, { ...params, task: isObject(params.task) ? params.task : {} });
        return isObject(created.task) ? { resultType: 'task', ...legacyToExtension(created.task) } : created;
      }
      case 'tasks/get': {
        const task: JsonObject = { resultType: 'complete', ...legacyToExtension(await send(method, params)) };
        if (task.status === 'input_required' && input) return { ...task, inputRequests: await input.requests() };
        if (task.status !== 'completed' && task.status !== 'failed') return task;
        try {
          const { _meta: _m, ...result } = await send('tasks/result', { taskId: params.taskId as string });
          return { ...task, status: 'completed', result };
        } catch (err) {
          if (!(err instanceof RpcError)) throw err;
          return { ...task, status: 'failed', error: err.error as unknown as JsonObject };
        }
      }
      case 'tasks/cancel':
        try {
          await send(method, params);
        } catch (err) {
          // A 2025-11-25 upstream refuses the cancel of a task that already ended; the extension
          // acknowledges a cancel of any task it knows (the work may have finished first).
          if (!(err instanceof RpcError) || !(await ended(send, params))) throw err;
        }
        return { resultType: 'complete' };
      case 'tasks/update':
        if (!input) throw new GatewayError('invalid_params', `${method} is not served for this task (its upstream speaks 2025-11-25 tasks)`);
        if (!isObject(params.inputResponses)) throw new GatewayError('invalid_params', 'tasks/update needs inputResponses');
        // Keys of requests not outstanding are ignored (SEP-2663 "Task Update Requests").
        input.answer(params.inputResponses);
        return { resultType: 'complete' };
      default:
        throw new GatewayError('invalid_params', `${method} is not served for this task (its upstream speaks 2025-11-25 tasks)`);
    }
  };
}

/** Whether the upstream knows the task and it has ended. */
async function ended(send: Send, params: JsonObject): Promise<boolean> {
  try {
    return isTerminalTaskStatus((await send('tasks/get', params)).status);
  } catch {
    return false;
  }
}

/**
 * Requests of a 2025-11-25 client about an extension upstream's task, answered in the 2025-11-25
 * form: tasks/result polls the task to its end (as the upstream's pollIntervalMs says, until the
 * client cancels the request, and for at most `maxTotalMs`, the upstream's maxTotalTimeoutMs:
 * then -32001, the task left running) and answers its result or error; tasks/cancel of a task that already ended is refused (-32602, as
 * 2025-11-25 requires; the extension would only acknowledge it), else answers the task as it is
 * after the cancel.
 */
export function extensionAsLegacy(send: Send, signal: CancelSignal, maxTotalMs = DEFAULT_MAX_TOTAL_MS): Send {
  return async (method, params) => {
    switch (method) {
      case 'tools/call': {
        const created = await send(method, params);
        return isTaskResult(created) ? { task: extensionToLegacy(created) } : created;
      }
      case 'tasks/get':
        return extensionToLegacy(await send(method, params));
      case 'tasks/cancel': {
        const before = await send('tasks/get', params);
        if (isTerminalTaskStatus(before.status)) throw new GatewayError('invalid_params', `Cannot cancel task: already in terminal status '${String(before.status)}'`);
        await send(method, params);
        return extensionToLegacy(await send('tasks/get', params));
      }
      case 'tasks/result': {
        const deadline = Date.now() + maxTotalMs;
        let task = await send('tasks/get', params);
        while (!isTerminalTaskStatus(task.status)) {
          const interval = typeof task.pollIntervalMs === 'number' ? Math.min(MAX_POLL_MS, Math.max(MIN_POLL_MS, task.pollIntervalMs)) : 1_000;
          if (Date.now() + interval > deadline) throw new GatewayError('upstream_timeout', `The upstream's task did not end within ${maxTotalMs} ms`);
          await pause(interval, signal);
          if (signal.aborted) throw new GatewayError('cancelled', 'Request cancelled');
          task = await send('tasks/get', params);
        }
        if (task.status === 'completed' && isObject(task.result)) {
          const { resultType: _t, ...result } = task.result;
          return result;
        }
        if (task.status === 'failed' && isObject(task.error) && typeof task.error.code === 'number') throw new RpcError(task.error as unknown as JsonRpcErrorObject);
        throw new GatewayError('invalid_params', `The task was ${String(task.status)}`);
      }
      default:
        throw new GatewayError('method_not_found', `Method not found: ${quote(method)}`);
    }
  };
}

/**
 * A request about a task, sent in the upstream's form and answered in the client's (under the
 * handle the client knows, its timings bounded). `maxTotalMs`: the upstream's maxTotalTimeoutMs,
 * which bounds a 2025-11-25 client's tasks/result of an extension upstream's task.
 */
export async function taskRequest(method: string, params: JsonObject, handle: string, upstreamTaskId: string, forms: { upstream: TaskForm; client: TaskForm }, send: Send, signal: CancelSignal, input?: TaskInput, maxTotalMs?: number): Promise<JsonObject> {
  const own = { ...params, taskId: upstreamTaskId };
  let view = send;
  if (forms.upstream === 'legacy' && forms.client === 'extension') view = legacyAsExtension(send, input);
  else if (forms.upstream === 'extension' && forms.client === 'legacy') view = extensionAsLegacy(send, signal, maxTotalMs);
  const result = await view(method, own);
  // tasks/result answers the task's result (a tool's), not a task.
  if (method === 'tasks/result') return result;
  const bounded = withBoundedTimings(result);
  return typeof bounded.taskId === 'string' ? { ...bounded, taskId: handle } : bounded;
}


/** The forms a request about a task meets: its upstream's (by era) and its client's (by version). */
export function formsOf(upstreamEra: string | undefined, clientVersion: string): { upstream: TaskForm; client: TaskForm } {
  return { upstream: upstreamEra === 'stateless' ? 'extension' : 'legacy', client: isStatelessVersion(clientVersion) ? 'extension' : 'legacy' };
}

/** Params of a request to a 2026-07-28 upstream about a task, made as a client that declared the extension. */
export function declaringFor(upstreamEra: string | undefined, params: JsonObject, capabilities: JsonObject): JsonObject {
  return upstreamEra === 'stateless' ? declaringTasks(params, capabilities, META.clientCapabilities) : params;
}
