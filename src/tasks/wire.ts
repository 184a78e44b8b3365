// The Tasks extension on the wire (SEP-2663, `io.modelcontextprotocol/tasks`): who declared it,
// and the shapes of CreateTaskResult and of the DetailedTask that tasks/get answers.
import { isObject, type JsonObject } from '../mcp/jsonrpc.js';
import { EXTENSION_TASK_METHODS, RELATED_TASK, TASKS_EXTENSION } from '../mcp/tasks.js';
import type { StoredTask } from './store.js';

export { TASKS_EXTENSION };

/** The methods of the extension a client sends about a task (each with `params.taskId`). */
export const TASK_METHODS: ReadonlySet<string> = EXTENSION_TASK_METHODS;

/** Whether capabilities (a client's per-request ones, or a server's) declare the extension. */
export function declaresTasks(capabilities: JsonObject | undefined): boolean {
  const extensions = capabilities?.extensions;
  return isObject(extensions) && isObject(extensions[TASKS_EXTENSION]);
}

/** A result of the extension's polymorphic form: `resultType: "task"` with the task inline. */
export function isTaskResult(result: JsonObject): boolean {
  return result.resultType === 'task' && typeof result.taskId === 'string';
}

/** A result, or a request's params, without the 2025-11-25 related-task metadata: it names an upstream's own task id, never one a client knows. */
export function withoutRelatedTask(value: JsonObject): JsonObject {
  const meta = value._meta;
  if (!isObject(meta) || !(RELATED_TASK in meta)) return value;
  const { [RELATED_TASK]: _related, ...rest } = meta;
  const { _meta: _dropped, ...others } = value;
  return Object.keys(rest).length > 0 ? { ...others, _meta: rest } : others;
}

/** A task's inputRequests, each request's params without the related-task metadata (the task asking is the one they belong to). */
export function taskInputRequests(requests: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const [key, request] of Object.entries(requests)) out[key] = isObject(request) && isObject(request.params) ? { ...request, params: withoutRelatedTask(request.params) } : request;
  return out;
}

/** The task's fields as a client reads them, under the handle it knows it by. */
function taskFields(task: StoredTask, handle: string): JsonObject {
  const out: JsonObject = {
    taskId: handle,
    status: task.status,
    createdAt: task.createdAt,
    lastUpdatedAt: task.lastUpdatedAt,
    ttlMs: task.ttlMs,
    pollIntervalMs: task.pollIntervalMs,
  };
  if (task.statusMessage !== undefined) out.statusMessage = task.statusMessage;
  return out;
}

/** The answer to the call that made the task (resultType "task"). */
export function createTaskResult(task: StoredTask, handle: string): JsonObject {
  return { resultType: 'task', ...taskFields(task, handle) };
}

/** tasks/get's answer: the task with what its status carries (result, error or inputRequests). */
export function detailedTask(task: StoredTask, handle: string): JsonObject {
  const out: JsonObject = { resultType: 'complete', ...taskFields(task, handle) };
  if (task.status === 'completed' && task.result) out.result = task.result;
  if (task.status === 'failed' && task.error) out.error = task.error;
  if (task.status === 'input_required' && task.inputRequests) out.inputRequests = task.inputRequests;
  return out;
}
