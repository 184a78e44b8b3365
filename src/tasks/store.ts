// Where the tasks the gateway makes live, so that any replica answers tasks/get: the task's
// state (written by the replica running its call), the lease that replica renews while it
// runs, and what other replicas ask of it (a cancel, input responses) until it picks them up.
// `memory` serves one replica; `redis.ts` every replica sharing the Redis server.
import type { JsonObject } from '../mcp/jsonrpc.js';

export type TaskStatus = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';

/** A task as the store keeps it (the SEP-2663 `Task` fields, and whose it is). */
export interface StoredTask {
  id: string;
  /** The principal it was made for ('' without one): only they may read it. */
  principal: string;
  /** The upstream and the tool (as the client named it) of the call it stands for: policy is decided on them. */
  upstream: string;
  tool: string;
  status: TaskStatus;
  statusMessage?: string;
  createdAt: string;
  lastUpdatedAt: string;
  ttlMs: number;
  pollIntervalMs: number;
  result?: JsonObject;
  error?: JsonObject;
  inputRequests?: JsonObject;
  /** The upstream's own task this one became (its handle): requests about it go there. */
  alias?: string;
}

/** What other replicas asked of a running task since its owner last looked. */
export interface TaskRequests {
  cancel: boolean;
  /** inputResponses of tasks/update, oldest first. */
  updates: JsonObject[];
}

export const TERMINAL: ReadonlySet<TaskStatus> = new Set(['completed', 'failed', 'cancelled']);

export interface TaskStore {
  /**
   * Stores a new task with its owner's lease; false when its principal already holds `max`
   * unexpired tasks (nothing is stored then). Resolves once any replica would find it.
   */
  create(task: StoredTask, leaseMs: number, max: number): Promise<boolean>;
  /** The task with whether its owner's lease ran out, or undefined when unknown or expired. */
  get(id: string): Promise<{ task: StoredTask; leaseExpired: boolean } | undefined>;
  /**
   * The owner's write: the task's new state, its lease renewed, kept `ttlMs` from now (and
   * counted against its principal until then). False, and nothing written, when the stored task
   * already ended (another replica may have failed it): a terminal status is final.
   */
  put(task: StoredTask, leaseMs: number): Promise<boolean>;
  /** Ends a task whose owner stopped renewing its lease; false when it was renewed or ended meanwhile. */
  failIfAbandoned(task: StoredTask): Promise<boolean>;
  /** A replica other than the owner asks for a cancel or hands over input responses. */
  request(id: string, ask: { cancel: true } | { update: JsonObject }): Promise<void>;
  /** The owner takes what was asked of its tasks (each once). */
  take(ids: readonly string[]): Promise<Map<string, TaskRequests>>;
  /** Renews the leases of the owner's running tasks (and keeps them `ttlMs` longer). */
  renew(ids: readonly string[], leaseMs: number, ttlMs: number): Promise<void>;
  close(): Promise<void>;
}

interface MemoryEntry {
  task: StoredTask;
  leaseUntil: number;
  expires: number;
  requests: TaskRequests;
}

/** One replica's tasks; expired ones are dropped as they are met and on each create. */
export class MemoryTaskStore implements TaskStore {
  readonly #tasks = new Map<string, MemoryEntry>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  async create(task: StoredTask, leaseMs: number, max: number): Promise<boolean> {
    const now = this.#now();
    let held = 0;
    for (const [id, entry] of this.#tasks) {
      if (entry.expires <= now) this.#tasks.delete(id);
      else if (entry.task.principal === task.principal) held++;
    }
    if (held >= max) return false;
    this.#tasks.set(task.id, { task: structuredClone(task), leaseUntil: now + leaseMs, expires: now + task.ttlMs, requests: { cancel: false, updates: [] } });
    return true;
  }

  async get(id: string): Promise<{ task: StoredTask; leaseExpired: boolean } | undefined> {
    const entry = this.#live(id);
    return entry && { task: structuredClone(entry.task), leaseExpired: entry.leaseUntil < this.#now() };
  }

  async put(task: StoredTask, leaseMs: number): Promise<boolean> {
    const entry = this.#live(task.id);
    if (entry && TERMINAL.has(entry.task.status)) return false;
    const now = this.#now();
    this.#tasks.set(task.id, { task: structuredClone(task), leaseUntil: now + leaseMs, expires: now + task.ttlMs, requests: entry?.requests ?? { cancel: false, updates: [] } });
    return true;
  }

  async failIfAbandoned(task: StoredTask): Promise<boolean> {
    const entry = this.#live(task.id);
    if (!entry || TERMINAL.has(entry.task.status) || entry.leaseUntil >= this.#now()) return false;
    entry.task = structuredClone(task);
    return true;
  }

  async request(id: string, ask: { cancel: true } | { update: JsonObject }): Promise<void> {
    const entry = this.#live(id);
    if (!entry) return;
    if ('cancel' in ask) entry.requests.cancel = true;
    else entry.requests.updates.push(ask.update);
  }

  async take(ids: readonly string[]): Promise<Map<string, TaskRequests>> {
    const out = new Map<string, TaskRequests>();
    for (const id of ids) {
      const entry = this.#live(id);
      if (!entry || (!entry.requests.cancel && entry.requests.updates.length === 0)) continue;
      out.set(id, entry.requests);
      entry.requests = { cancel: false, updates: [] };
    }
    return out;
  }

  async renew(ids: readonly string[], leaseMs: number, ttlMs: number): Promise<void> {
    const now = this.#now();
    for (const id of ids) {
      const entry = this.#live(id);
      if (!entry) continue;
      entry.leaseUntil = now + leaseMs;
      entry.expires = now + ttlMs;
    }
  }

  async close(): Promise<void> {
    this.#tasks.clear();
  }

  #live(id: string): MemoryEntry | undefined {
    const entry = this.#tasks.get(id);
    if (entry && entry.expires <= this.#now()) {
      this.#tasks.delete(id);
      return undefined;
    }
    return entry;
  }
}
