// Task helpers (2025-11-25, experimental; spec: basic/utilities/tasks.mdx).
import { isObject, metaOf, type JsonObject } from './jsonrpc.js';

/** The Tasks extension (SEP-2663), the 2026-07-28 form of tasks, as capabilities name it. */
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';

/** The extension's methods (tasks/result and tasks/list are the 2025-11-25 form's only). */
export const EXTENSION_TASK_METHODS: ReadonlySet<string> = new Set(['tasks/get', 'tasks/update', 'tasks/cancel']);

/** The _meta key that ties requests, notifications and results to a task. */
export const RELATED_TASK = 'io.modelcontextprotocol/related-task';

const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

/** The poll intervals the gateway keeps to, polling an upstream's task itself, and gives clients. */
export const MIN_POLL_MS = 100;
export const MAX_POLL_MS = 5_000;

export function isTerminalTaskStatus(status: unknown): boolean {
  return typeof status === 'string' && TERMINAL.has(status);
}

/** The task id of a CreateTaskResult, or undefined for any other result. */
export function createdTaskId(result: JsonObject): string | undefined {
  return isObject(result.task) && typeof result.task.taskId === 'string' ? result.task.taskId : undefined;
}

/** A copy of a CreateTaskResult with its task id replaced. */
export function withCreatedTaskId(result: JsonObject, taskId: string): JsonObject {
  return { ...result, task: { ...(result.task as JsonObject), taskId } };
}

/** The related-task id in a params or result object's `_meta`, if any. */
export function relatedTaskId(value: JsonObject | undefined): string | undefined {
  const related = metaOf(value)?.[RELATED_TASK];
  return isObject(related) && typeof related.taskId === 'string' ? related.taskId : undefined;
}

/**
 * A copy of a params or result object whose `_meta` related-task id is mapped through `map`;
 * the object itself when it has none.
 */
export function mapRelatedTask(value: JsonObject, map: (taskId: string) => string): JsonObject {
  const meta = metaOf(value);
  const related = meta?.[RELATED_TASK];
  if (!isObject(related) || typeof related.taskId !== 'string') return value;
  return { ...value, _meta: { ...meta, [RELATED_TASK]: { ...related, taskId: map(related.taskId) } } };
}

/**
 * A task's timings as a client is given them, whatever its upstream said (either form's names,
 * and a CreateTaskResult's nested `task`): a ttl a whole number of milliseconds, at least 0 (null,
 * unlimited, when it is not a number); a poll interval within what the gateway's own polling keeps
 * to, 100 ms to 5 s (left out when it is not a number). Unchanged when nothing needs bounding.
 * Every task, task list item and task notification an upstream sends a client passes this.
 */
export function withBoundedTimings(task: JsonObject): JsonObject {
  let out = task;
  for (const key of ['ttlMs', 'ttl']) {
    if (!(key in task)) continue;
    const value = task[key];
    const bounded = typeof value === 'number' && Number.isFinite(value) ? Math.max(0, Math.round(value)) : null;
    if (bounded !== value) out = { ...out, [key]: bounded };
  }
  for (const key of ['pollIntervalMs', 'pollInterval']) {
    if (!(key in task)) continue;
    const value = task[key];
    if (typeof value === 'number' && Number.isFinite(value)) {
      const bounded = Math.min(MAX_POLL_MS, Math.max(MIN_POLL_MS, Math.round(value)));
      if (bounded !== value) out = { ...out, [key]: bounded };
    } else {
      const { [key]: _invalid, ...rest } = out;
      out = rest;
    }
  }
  if (isObject(task.task)) {
    const nested = withBoundedTimings(task.task);
    if (nested !== task.task) out = { ...out, task: nested };
  }
  return out;
}
