// A plain call of a tool that runs only as a task (SEP-2663: the upstream answers -32021, needing
// the Tasks extension the client did not declare): the gateway makes the task upstream itself,
// polls it as the upstream's pollIntervalMs says, relays its status messages as progress, and
// answers the call with the task's result (bounded by the upstream's maxTotalTimeoutMs). The
// client's cancel cancels the task upstream. The same follows an upstream's task that must not
// be handed out (call-tasks.ts: it would end with an anonymous request's session), where input
// the task asks for is asked within the call.
import { GatewayError, RpcError } from '../mcp/errors.js';
import { isObject, type JsonObject, type JsonRpcErrorObject } from '../mcp/jsonrpc.js';
import { pause, type CancelSignal } from '../util/cancel.js';
import { MAX_POLL_MS, MIN_POLL_MS } from '../mcp/tasks.js';
import { TASKS_EXTENSION, isTaskResult } from './wire.js';

const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

/** Whether an upstream's error says the call needs the Tasks extension (SEP-2663, -32021). */
export function needsTasks(err: unknown): boolean {
  if (!(err instanceof RpcError) || err.error.code !== -32021) return false;
  const data = err.error.data;
  const extensions = isObject(data) && isObject(data.requiredCapabilities) ? data.requiredCapabilities.extensions : undefined;
  return isObject(extensions) && isObject(extensions[TASKS_EXTENSION]);
}

/** Params of a request made as a client that declared the extension (the session's capabilities, and it). */
export function declaringTasks(params: JsonObject, capabilities: JsonObject, capabilitiesKey: string): JsonObject {
  const extensions = isObject(capabilities.extensions) ? capabilities.extensions : {};
  const meta = isObject(params._meta) ? params._meta : {};
  return { ...params, _meta: { ...meta, [capabilitiesKey]: { ...capabilities, extensions: { ...extensions, [TASKS_EXTENSION]: {} } } } };
}

export interface TaskDriver {
  /** tools/call again, and tasks/get, as a client that declared the extension. */
  send(method: string, params: JsonObject): Promise<JsonObject>;
  /** tasks/cancel, whatever became of the caller. */
  cancel(taskId: string): void;
  /** The task's status message, as the caller's progress. */
  progress(step: number, message: string | undefined): void;
  signal: CancelSignal;
  maxTotalMs: number;
  /**
   * What the task ends with once it asks for input, asked where its caller can give it (a
   * 2025-11-25 task's tasks/result, on which it sends its requests, within a call that can ask
   * the client). Without it, a task that asks for input is cancelled with an error.
   */
  input?(taskId: string): Promise<JsonObject>;
}

/** Runs the call as a task upstream and answers with what the task ends with. */
export async function driveTask(callParams: JsonObject, driver: TaskDriver): Promise<JsonObject> {
  const created = await driver.send('tools/call', callParams);
  return isTaskResult(created) ? followTask(created, driver) : created;
}

/** Polls a task the upstream made (its CreateTaskResult) to its end, and answers with what it ends with. */
export async function followTask(created: JsonObject, driver: TaskDriver): Promise<JsonObject> {
  const taskId = created.taskId as string;
  const deadline = Date.now() + driver.maxTotalMs;
  let task = created;
  let step = 0;
  let said: unknown;
  try {
    while (!TERMINAL.has(task.status as string)) {
      const interval = typeof task.pollIntervalMs === 'number' ? Math.min(MAX_POLL_MS, Math.max(MIN_POLL_MS, task.pollIntervalMs)) : 1_000;
      if (Date.now() + interval > deadline) throw new GatewayError('upstream_timeout', `The upstream's task did not end within ${driver.maxTotalMs} ms`);
      await pause(interval, driver.signal);
      if (driver.signal.aborted) throw new GatewayError('cancelled', 'Request cancelled');
      task = await driver.send('tasks/get', { taskId });
      if (task.status === 'input_required') {
        if (!driver.input) throw new GatewayError('upstream_unavailable', 'The task needs input this client cannot give (it did not declare the Tasks extension)');
        if (typeof task.statusMessage === 'string') driver.progress(++step, task.statusMessage);
        return await driver.input(taskId);
      }
      if (task.statusMessage !== said || task.status === 'working') driver.progress(++step, typeof task.statusMessage === 'string' ? task.statusMessage : undefined);
      said = task.statusMessage;
    }
  } catch (err) {
    driver.cancel(taskId);
    throw err;
  }
  if (task.status === 'completed' && isObject(task.result)) {
    const { resultType: _type, ...result } = task.result;
    return result;
  }
  if (task.status === 'failed' && isObject(task.error) && typeof task.error.code === 'number') throw new RpcError(task.error as unknown as JsonRpcErrorObject);
  throw new GatewayError('upstream_unavailable', typeof task.statusMessage === 'string' ? `The upstream's task ended ${String(task.status)}: ${task.statusMessage}` : `The upstream's task ended ${String(task.status)}`);
}
