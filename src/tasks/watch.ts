// Task status notifications (SEP-2663 "Task Status Notifications"): a subscriptions/listen that
// names task ids hears `notifications/tasks` with the whole task whenever one the gateway made
// changes. The task store is read at the task's polling interval (any replica may be running
// it); a task is watched until it ends. Handles of an upstream's tasks are followed elsewhere
// (src/router/task-follow.ts: the upstream's own status notifications).
import type { JsonObject } from '../mcp/jsonrpc.js';
import type { Caller } from '../session/context.js';
import type { GatewayTasks } from './gateway-tasks.js';
import { TERMINAL, type TaskStatus } from './store.js';

/** Task ids one listen may watch at once. */
const MAX_WATCHED = 100;

export interface TaskWatch {
  /** The task ids agreed to (the gateway's own tasks of this principal, that exist). */
  agreed: string[];
  close(): void;
}

export async function watchTasks(tasks: GatewayTasks, taskIds: readonly string[], caller: Caller, notify: (task: JsonObject) => void): Promise<TaskWatch> {
  const { handles, store, scope } = tasks.options;
  const principal = caller.principal?.id ?? '';
  const watched = new Map<string, { id: string; seen: string }>();
  for (const handle of new Set(taskIds)) {
    if (watched.size >= MAX_WATCHED) break;
    const opened = handles.open(handle, principal);
    if (opened?.kind !== 'gateway') continue;
    const found = await store.get(opened.id).catch(() => undefined);
    if (!found || found.task.principal !== principal || found.task.alias !== undefined) continue;
    // As tasks/get decides it: a team that may not call the task's tool is not told of it.
    if (found.task.upstream !== '' && !scope.mayCall(caller, found.task.tool, found.task.upstream)) continue;
    watched.set(handle, { id: opened.id, seen: `${found.task.status} ${found.task.lastUpdatedAt}` });
  }
  const agreed = [...watched.keys()];
  let closed = false;
  const timer = setInterval(() => {
    void (async () => {
      for (const [handle, entry] of watched) {
        // As tasks/get answers it: policy decided again, a lost replica's task ended failed.
        const task = await tasks.serve('tasks/get', { taskId: handle }, caller)?.catch(() => undefined);
        if (closed) return;
        if (!task || 'forward' in task) {
          watched.delete(handle);
          continue;
        }
        const seen = `${String(task.status)} ${String(task.lastUpdatedAt)}`;
        if (seen === entry.seen) continue;
        entry.seen = seen;
        const { resultType: _type, ...detailed } = task;
        notify(detailed);
        if (TERMINAL.has(task.status as TaskStatus)) watched.delete(handle);
      }
    })();
  }, tasks.bounds.pollIntervalMs);
  timer.unref();
  return {
    agreed,
    close() {
      closed = true;
      clearInterval(timer);
    },
  };
}
