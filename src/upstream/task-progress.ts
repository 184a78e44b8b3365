// "The progressToken provided in the initial request remains valid throughout the task
// lifetime" (basic/utilities/tasks.mdx): once an upstream answers a request by creating a task,
// its progress keeps reaching the caller through a route kept here, until the task ends, the
// route is an hour old, or newer routes push it out.
import { LRUCache } from 'lru-cache';
import type { JsonObject, ProgressToken } from '../mcp/jsonrpc.js';

const MAX_TASK_ROUTES = 1_000;
const TASK_ROUTE_LIFETIME_MS = 60 * 60_000;

/** Where progress for a task goes after the request that created it has been answered. */
interface TaskProgressRoute {
  taskId: string;
  progressToken: ProgressToken;
  onProgress: (params: JsonObject) => void;
  expires: number;
}

export class TaskProgressRoutes {
  /**
   * Made on the first task: an LRUCache allocates for its whole bound at once (about 20 KB for
   * 1,000), which every idle upstream session would otherwise carry.
   */
  #routes: LRUCache<ProgressToken, TaskProgressRoute> | undefined;

  /** Keeps routing the progress of the request sent with `token` (the gateway's id) to the caller. */
  add(token: ProgressToken, taskId: string, progressToken: ProgressToken, onProgress: (params: JsonObject) => void): void {
    this.#routes ??= new LRUCache({ max: MAX_TASK_ROUTES });
    this.#routes.set(token, { taskId, progressToken, onProgress, expires: Date.now() + TASK_ROUTE_LIFETIME_MS });
  }

  /** Delivers task progress with the caller's own token; false when no live route has `token`. */
  deliver(token: ProgressToken, params: JsonObject): boolean {
    const route = this.#routes?.get(token);
    if (!route) return false;
    if (route.expires < Date.now()) {
      this.#routes!.delete(token);
      return false;
    }
    route.onProgress({ ...params, progressToken: route.progressToken });
    return true;
  }

  /** The task ended: its progress has nowhere to go any more. */
  end(taskId: string): void {
    const routes = this.#routes;
    if (!routes) return;
    for (const [token, route] of routes.entries()) if (route.taskId === taskId) routes.delete(token);
  }

  clear(): void {
    this.#routes = undefined;
  }
}
