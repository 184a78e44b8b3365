// The tasks a session names by the raw `<prefix>:<task id>` form (a 2025-11-25 upstream's task,
// handed to a 2025-11-25 client that asked for one with `task`). That form carries no tool, unlike
// a sealed handle (src/tasks/handles.ts), so the replica that hands a task out remembers which
// tool made it: tasks/get, tasks/result, tasks/cancel and tasks/list reach it by that form only
// while the session's teams may still call that tool (a reload, a renewed token's teams). A raw id
// this replica did not hand the session (another replica did, in a fleet without affinity; or one
// forgotten past the bound) is decided as before the tool was known: by the upstream's visibility
// to the session's teams (a shared child's ownership is checked by the router either way).
// Bounded per session (LRU), kept with the session (a WeakMap: nothing outlives it).
import { LRUCache } from 'lru-cache';
import type { DownstreamSession } from '../links/session.js';

/** Raw task ids remembered per session; the least recently named go first. */
const MAX_TASKS_PER_SESSION = 1_000;

/** Upstream names have no ':' (config/schema.ts), so the first one ends the upstream. */
const keyOf = (upstream: string, taskId: string): string => `${upstream}:${taskId}`;

export class RawTasks {
  readonly #bySession = new WeakMap<DownstreamSession, LRUCache<string, string>>();

  /** The gateway handed `session` the task `taskId` of `upstream` by its raw form; `tool` (the catalog's name) made it. */
  handed(session: DownstreamSession, upstream: string, taskId: string, tool: string): void {
    let tasks = this.#bySession.get(session);
    if (!tasks) {
      tasks = new LRUCache<string, string>({ max: MAX_TASKS_PER_SESSION });
      this.#bySession.set(session, tasks);
    }
    tasks.set(keyOf(upstream, taskId), tool);
  }

  /**
   * The tool that made the task when this replica handed it to `session` ('' when it did not and
   * the session's teams may see the upstream), or undefined: the form does not reach the task.
   */
  toolOf(session: DownstreamSession, upstream: string, taskId: string): string | undefined {
    const tool = this.#bySession.get(session)?.get(keyOf(upstream, taskId));
    if (tool === undefined) return session.access.canSeeUpstream(upstream) ? '' : undefined;
    return session.access.mayCall(tool, upstream) ? tool : undefined;
  }
}
