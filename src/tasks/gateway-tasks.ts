// Tasks the gateway makes (SEP-2663 "the server decides when a result is a task"): a tools/call
// of a 2026-07-28 client that declared the extension, still running after `sessions.taskAfter`,
// is answered with a task of the gateway's, and the call runs on (the server decides: the old
// `task` parameter, removed in that revision, is no opt-in). Its status, progress (as
// statusMessage), input requests and final result or error go to the task store, so tasks/get
// on any replica answers. The replica running the call renews a lease on it; a task whose lease
// ran out ends `failed` at the next tasks/get (the replica died), never `working` forever.
// tasks/cancel and tasks/update reach the call on its replica (directly, or through the store
// within one heartbeat).
import { randomUUID } from 'node:crypto';
import { ErrorCode, GatewayError, statelessError } from '../mcp/errors.js';
import { isObject, type JsonObject, type JsonRpcErrorObject, type JsonRpcNotification, type JsonRpcResponse } from '../mcp/jsonrpc.js';
import type { Metrics } from '../metrics/metrics.js';
import type { RequestSink } from '../mcp/pending.js';
import type { Caller } from '../session/context.js';
import type { Logger } from '../util/log.js';
import type { AuditedTask, TaskAudit } from './audit.js';
import type { TaskHandles } from './handles.js';
import { TERMINAL, type StoredTask, type TaskStatus, type TaskStore } from './store.js';
import { createTaskResult, declaresTasks, detailedTask, taskInputRequests } from './wire.js';
import { quote } from '../util/cut.js';

/** A sink that may turn its call into a task; `tasked` once it has (the client's connection no longer matters). */
export interface TaskingSink extends RequestSink {
  readonly tasked: boolean;
  /** The client went away before the call became a task: it never will. */
  drop(): void;
}

/** What the gateway can do to the call behind a task (the endpoint's exchange). */
export interface CallControl {
  /** Cancels the call upstream (notifications/cancelled). */
  cancel(reason: string): void;
  /** Hands input responses to the call that asked for them (`requestState` its last); what follows reaches `sink`. */
  answer(inputResponses: JsonObject, requestState: string | undefined, sink: RequestSink): Error | undefined;
}

/** What the gateway's config and policy say about a tool, for tasks. */
export interface TaskScope {
  /** The upstream and catalog name a tool name of this caller stands for. */
  resolve(caller: Caller, name: string): { upstream: string; exposed: string } | undefined;
  /** Whether the caller's teams may call the tool: only they may read or steer its task. */
  mayCall(caller: Caller, exposed: string, upstream: string): boolean;
  /** `upstreams.<name>.tasks: off`. */
  off(upstream: string): boolean;
}

export interface TaskBounds {
  /** A final result larger than this (JSON bytes) ends the task `failed`. */
  maxResultBytes: number;
  /** Unexpired tasks one principal may hold at once; past it a call gets an error, not a task. */
  maxPerPrincipal: number;
  /** The running replica's lease; renewed every third of it. */
  leaseMs: number;
  /** The polling interval suggested to clients. */
  pollIntervalMs: number;
}

export const DEFAULT_BOUNDS: TaskBounds = { maxResultBytes: 4 * 1024 * 1024, maxPerPrincipal: 1_000, leaseMs: 6_000, pollIntervalMs: 1_000 };

export interface GatewayTasksOptions {
  store: TaskStore;
  handles: TaskHandles;
  scope: TaskScope;
  metrics: Metrics;
  logger: Logger;
  /** Audit records of each task's life. */
  audit: TaskAudit;
  /** sessions.taskTtl, sessions.taskAfter, sessions.inputTimeout. */
  ttlMs: number;
  afterMs: number;
  inputTimeoutMs: number;
  bounds?: Partial<TaskBounds>;
}

/** The request that may become a task, as the endpoint validated it. */
export interface TaskableRequest {
  id: string | number;
  method: string;
  params: JsonObject;
  clientCapabilities: JsonObject;
}

const principalOf = (caller: Caller): string => caller.principal?.id ?? '';

function failure(message: string, reason: string): JsonRpcErrorObject {
  return { code: ErrorCode.InternalError, message, data: { reason } };
}

export class GatewayTasks {
  readonly #options: GatewayTasksOptions;
  readonly #bounds: TaskBounds;
  /** The tasks whose calls run on this replica, by store id. */
  readonly #running = new Map<string, RunningTask>();
  #beat: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(options: GatewayTasksOptions) {
    this.#options = options;
    this.#bounds = { ...DEFAULT_BOUNDS, ...options.bounds };
  }

  get handles(): TaskHandles {
    return this.#options.handles;
  }

  get bounds(): TaskBounds {
    return this.#bounds;
  }

  get options(): GatewayTasksOptions {
    return this.#options;
  }

  /**
   * The sink to run a tools/call with: `sink` itself when the call may not become a task (the
   * client did not declare the extension, its upstream has tasks off), else one that answers
   * `sink` with a task once the call has run `taskAfter`.
   */
  adopt(request: TaskableRequest, caller: Caller, sink: RequestSink, control: () => CallControl): RequestSink | TaskingSink {
    if (this.#closed || request.method !== 'tools/call' || !declaresTasks(request.clientCapabilities) || typeof request.params.name !== 'string') return sink;
    const target = this.#options.scope.resolve(caller, request.params.name);
    if (target && this.#options.scope.off(target.upstream)) return sink;
    return new RunningTask(this, request, caller, target ?? { upstream: '', exposed: request.params.name }, sink, control, this.#options.afterMs);
  }

  /** Keeps a task whose call runs here: its lease renewed, what other replicas ask of it delivered. */
  hold(task: RunningTask): void {
    this.#running.set(task.id, task);
    this.#beat ??= setInterval(() => void this.#heartbeat(), Math.max(100, Math.floor(this.#bounds.leaseMs / 3)));
    this.#beat.unref();
  }

  release(task: RunningTask): void {
    this.#running.delete(task.id);
    if (this.#running.size === 0) {
      clearInterval(this.#beat);
      this.#beat = undefined;
    }
  }

  async #heartbeat(): Promise<void> {
    const { store, logger } = this.#options;
    const ids = [...this.#running.keys()];
    try {
      await store.renew(ids, this.#bounds.leaseMs, this.#options.ttlMs);
      for (const task of this.#running.values()) await task.flush();
      const asked = await store.take(ids);
      for (const [id, requests] of asked) {
        const task = this.#running.get(id);
        if (!task) continue;
        for (const update of requests.updates) task.update(update);
        if (requests.cancel) task.cancel('tasks/cancel');
      }
    } catch (err) {
      logger.warn('the task store did not answer a heartbeat', { tasks: ids.length, err });
    }
  }

  /**
   * tasks/get, tasks/update or tasks/cancel of a handle this gateway made; undefined for an
   * upstream's handle (the router serves it). Unknown, another principal's or a tampered
   * handle, or a tool the caller may no longer call: -32602, the same for each.
   */
  serve(method: string, params: JsonObject, caller: Caller): Promise<JsonObject | { forward: string }> | undefined {
    const given = params.taskId;
    const unknown = new GatewayError('invalid_params', 'Failed to retrieve task: Task not found');
    if (typeof given !== 'string') return Promise.reject(new GatewayError('invalid_params', 'taskId must be a string'));
    const handle = this.#options.handles.open(given, principalOf(caller));
    if (!handle) return Promise.reject(unknown);
    if (handle.kind !== 'gateway') return undefined;
    return this.#serve(method, params, caller, handle.id, given, unknown);
  }

  async #serve(method: string, params: JsonObject, caller: Caller, id: string, handle: string, unknown: GatewayError): Promise<JsonObject | { forward: string }> {
    const { store, scope } = this.#options;
    const found = await store.get(id);
    if (!found || found.task.principal !== principalOf(caller)) throw unknown;
    let { task } = found;
    if (task.upstream !== '' && !scope.mayCall(caller, task.tool, task.upstream)) throw unknown;
    // The call was answered with the upstream's own task after all: that one is asked.
    if (task.alias !== undefined) return { forward: task.alias };
    const local = this.#running.get(id);
    if (!local && found.leaseExpired && !TERMINAL.has(task.status)) task = await this.#abandoned(task, handle, caller);
    switch (method) {
      case 'tasks/get':
        return detailedTask(local?.snapshot ?? task, handle);
      case 'tasks/cancel':
        if (TERMINAL.has(task.status)) return {};
        this.#options.audit.cancelRequested({ handle, upstream: task.upstream, tool: task.tool, caller });
        if (local) local.cancel('tasks/cancel');
        else await store.request(id, { cancel: true });
        return {};
      case 'tasks/update': {
        const responses = params.inputResponses;
        if (!isObject(responses)) throw new GatewayError('invalid_params', 'tasks/update needs inputResponses');
        if (TERMINAL.has(task.status)) return {};
        if (local) local.update(responses);
        else await store.request(id, { update: responses });
        return {};
      }
      default:
        throw new GatewayError('method_not_found', `Method not found: ${quote(method)}`);
    }
  }

  /** The replica running the task stopped renewing it: the task ends failed, with why. */
  async #abandoned(task: StoredTask, handle: string, caller: Caller): Promise<StoredTask> {
    const message = 'The gateway replica running this task stopped before the task ended';
    const failed: StoredTask = { ...task, status: 'failed', statusMessage: message, error: failure(message, 'replica_lost') as unknown as JsonObject, lastUpdatedAt: new Date().toISOString() };
    if (await this.#options.store.failIfAbandoned(failed)) {
      // Also a log line: a replica that died with work in hand is the operators' to look into.
      this.#options.logger.warn('a task ended failed: the replica running it stopped renewing it', { upstream: task.upstream, tool: task.tool });
      this.#options.audit.lost({ handle, upstream: task.upstream, tool: task.tool, caller, createdAt: task.createdAt });
      return failed;
    }
    return (await this.#options.store.get(task.id))?.task ?? failed;
  }

  get audit(): TaskAudit {
    return this.#options.audit;
  }

  /** A task handed over to the upstream's own: no longer counted here. */
  uncount(from: TaskStatus): void {
    if (!TERMINAL.has(from)) this.#options.metrics.tasks.dec({ state: from });
  }

  /** A task another replica ended: what this replica last counted it as (working, or an end overruled) is not counted here. */
  disown(status: TaskStatus): void {
    this.#options.metrics.tasks.dec({ state: status });
  }

  /** Counts a task's move from `from` (undefined: just made) to `to`. */
  count(from: TaskStatus | undefined, to: TaskStatus, createdMs: number): void {
    const { metrics } = this.#options;
    if (from === to) return;
    if (from !== undefined && !TERMINAL.has(from)) metrics.tasks.dec({ state: from });
    metrics.tasks.inc({ state: to });
    if (TERMINAL.has(to)) metrics.taskDuration.child(to).observe((Date.now() - createdMs) / 1_000);
  }

  /** Shutdown: the tasks running here end failed (their calls are cancelled with the sessions). */
  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#beat);
    this.#beat = undefined;
    await Promise.allSettled([...this.#running.values()].map((task) => task.shutDown()));
    await this.#options.store.close();
  }
}

/** One call on its way to becoming (or being) a task: the sink the call's exchange answers. */
class RunningTask implements TaskingSink {
  readonly #tasks: GatewayTasks;
  readonly #request: TaskableRequest;
  readonly #caller: Caller;
  readonly #target: { upstream: string; exposed: string };
  readonly #sink: RequestSink;
  readonly #control: () => CallControl;
  readonly id = randomUUID();
  #state: 'waiting' | 'creating' | 'task' | 'ended' = 'waiting';
  #timer: NodeJS.Timeout | undefined;
  #inputTimer: NodeJS.Timeout | undefined;
  #task: StoredTask | undefined;
  /** What arrived while the task was being stored. */
  #early: JsonRpcResponse | undefined;
  #dirty = false;
  #created = 0;
  /** The requestState of the input the call waits for. */
  #requestState: string | undefined;
  /** The handle the client was given. */
  #handle = '';

  constructor(tasks: GatewayTasks, request: TaskableRequest, caller: Caller, target: { upstream: string; exposed: string }, sink: RequestSink, control: () => CallControl, afterMs: number) {
    this.#tasks = tasks;
    this.#request = request;
    this.#caller = caller;
    this.#target = target;
    this.#sink = sink;
    this.#control = control;
    this.#timer = setTimeout(() => void this.#create(), afterMs);
  }

  get tasked(): boolean {
    return this.#state !== 'waiting';
  }

  drop(): void {
    if (this.#state !== 'waiting') return;
    clearTimeout(this.#timer);
    this.#state = 'ended';
  }

  get snapshot(): StoredTask | undefined {
    return this.#task && { ...this.#task };
  }

  notify(message: JsonRpcNotification): void {
    if (this.#state === 'waiting') return this.#sink.notify(message);
    // Progress becomes the task's status message (the extension carries no progress notifications).
    if (message.method !== 'notifications/progress' || !this.#task) return;
    const { progress, total, message: text } = message.params ?? {};
    const statusMessage = typeof text === 'string' ? text : typeof total === 'number' ? `${String(progress)} of ${total}` : `progress ${String(progress)}`;
    this.#task = { ...this.#task, statusMessage, lastUpdatedAt: new Date().toISOString() };
    this.#dirty = true;
  }

  finish(response: JsonRpcResponse): void {
    switch (this.#state) {
      case 'waiting':
        clearTimeout(this.#timer);
        this.#state = 'ended';
        return this.#sink.finish(response);
      case 'creating':
        this.#early = response;
        return;
      case 'task':
        return void this.#record(response);
      default:
        return;
    }
  }

  async #create(): Promise<void> {
    if (this.#state !== 'waiting') return;
    this.#state = 'creating';
    const tasks = this.#tasks;
    const { bounds, options } = tasks;
    const now = new Date();
    const task: StoredTask = {
      id: this.id,
      principal: principalOf(this.#caller),
      upstream: this.#target.upstream,
      tool: this.#target.exposed,
      status: 'working',
      createdAt: now.toISOString(),
      lastUpdatedAt: now.toISOString(),
      ttlMs: options.ttlMs,
      pollIntervalMs: bounds.pollIntervalMs,
    };
    let stored: boolean;
    try {
      stored = await options.store.create(task, bounds.leaseMs, bounds.maxPerPrincipal);
    } catch (err) {
      // No store, no task: the call goes on and is answered when it ends.
      options.logger.warn('the task store is unavailable; a long call is answered when it ends', { err });
      this.#state = 'waiting';
      const early = this.#early;
      this.#early = undefined;
      if (early) this.finish(early);
      return;
    }
    if (!stored) {
      this.#state = 'ended';
      const message = `Too many tasks for this principal (${bounds.maxPerPrincipal} kept until they expire); the call was cancelled`;
      this.#sink.finish({ jsonrpc: '2.0', id: this.#request.id, error: failure(message, 'too_many_tasks') });
      if (!this.#early) this.#control().cancel('too many tasks');
      return;
    }
    this.#task = task;
    this.#created = now.getTime();
    this.#state = 'task';
    tasks.hold(this);
    tasks.count(undefined, 'working', this.#created);
    this.#handle = tasks.handles.seal({ kind: 'gateway', id: this.id, principal: task.principal });
    tasks.audit.created(this.#audited(task));
    this.#sink.finish({ jsonrpc: '2.0', id: this.#request.id, result: createTaskResult(task, this.#handle) });
    const early = this.#early;
    this.#early = undefined;
    if (early) await this.#record(early);
  }

  /** What the call answered, as the task's new state. */
  async #record(response: JsonRpcResponse): Promise<void> {
    if (!this.#task || TERMINAL.has(this.#task.status)) return;
    const { bounds, options } = this.#tasks;
    const at = new Date().toISOString();
    if ('error' in response) {
      const error = statelessError(response.error);
      return this.#end({ ...this.#task, status: 'failed', statusMessage: error.message, error: error as unknown as JsonObject, lastUpdatedAt: at });
    }
    const result = response.result;
    if (result.resultType === 'input_required' && isObject(result.inputRequests)) {
      this.#requestState = typeof result.requestState === 'string' ? result.requestState : undefined;
      this.#move({ ...this.#task, status: 'input_required', inputRequests: taskInputRequests(result.inputRequests), lastUpdatedAt: at });
      clearTimeout(this.#inputTimer);
      this.#inputTimer = setTimeout(() => this.#giveUp(), options.inputTimeoutMs);
      this.#inputTimer.unref();
      return void (await this.flush());
    }
    if (result.resultType === 'task' && typeof result.taskId === 'string') {
      // The upstream made a task of its own after all (its handle, tool-call.ts): this one stands for it.
      clearTimeout(this.#inputTimer);
      this.#tasks.uncount(this.#task.status);
      this.#task = { ...this.#task, alias: result.taskId, lastUpdatedAt: at };
      this.#dirty = true;
      return void (await this.flush());
    }
    const size = Buffer.byteLength(JSON.stringify(result));
    if (size > bounds.maxResultBytes) {
      const message = `The result (${size} bytes) is larger than the gateway keeps for a task (${bounds.maxResultBytes} bytes)`;
      return this.#end({ ...this.#task, status: 'failed', statusMessage: message, error: failure(message, 'task_result_too_large') as unknown as JsonObject, lastUpdatedAt: at });
    }
    const complete = { ...result, resultType: 'complete' };
    return this.#end({ ...this.#task, status: 'completed', result: complete, lastUpdatedAt: at });
  }

  #move(next: StoredTask): void {
    const from = this.#task!.status;
    const { inputRequests: _dropped, ...rest } = next;
    this.#task = next.status === 'input_required' ? next : rest;
    this.#dirty = true;
    this.#tasks.count(from, next.status, this.#created);
  }

  async #end(next: StoredTask): Promise<void> {
    clearTimeout(this.#inputTimer);
    this.#move(next);
    // Not when another replica ended it first: that end is the task's (and was audited there).
    const written = await this.flush();
    if (written && (next.status === 'completed' || next.status === 'failed' || next.status === 'cancelled')) this.#tasks.audit.ended(this.#audited(next), next.status, next.error);
  }

  #audited(task: StoredTask): AuditedTask {
    return { handle: this.#handle, upstream: task.upstream, tool: task.tool, caller: this.#caller, createdAt: task.createdAt };
  }

  /**
   * Writes the task's state when it changed; a terminal task leaves the replica's care once
   * written. False when the store holds the task as ended already (another replica failed it
   * when this one's lease lapsed): that end is final, so the call stops and the task leaves too.
   */
  async flush(): Promise<boolean> {
    const task = this.#task;
    if (!task || !this.#dirty) return true;
    this.#dirty = false;
    const { store, logger } = this.#tasks.options;
    try {
      if (!(await store.put(task, this.#tasks.bounds.leaseMs))) {
        logger.warn('a task this replica runs was ended by another (its lease had lapsed); the call stops', { task: task.id });
        if (!TERMINAL.has(task.status)) this.#control().cancel('ended by another replica');
        // Counted here as what this replica last made of it (working, or an end that is not the task's): that replica's now.
        this.#tasks.disown(task.status);
        this.#state = 'ended';
        this.#tasks.release(this);
        return false;
      }
      if (TERMINAL.has(task.status) || task.alias !== undefined) {
        this.#state = 'ended';
        this.#tasks.release(this);
      }
    } catch (err) {
      this.#dirty = true; // written at the next heartbeat
      logger.warn('could not write a task to the task store', { task: task.id, err });
    }
    return true;
  }

  cancel(reason: string): void {
    if (this.#state !== 'task' || !this.#task || TERMINAL.has(this.#task.status)) return;
    this.#control().cancel(reason);
    void this.#end({ ...this.#task, status: 'cancelled', statusMessage: 'Cancelled at the client\'s request', lastUpdatedAt: new Date().toISOString() });
  }

  update(inputResponses: JsonObject): void {
    if (this.#state !== 'task' || this.#task?.status !== 'input_required') return;
    clearTimeout(this.#inputTimer);
    this.#move({ ...this.#task, status: 'working', lastUpdatedAt: new Date().toISOString() });
    const refused = this.#control().answer(inputResponses, this.#requestState, this);
    if (refused) this.#tasks.options.logger.info('task input not delivered', { task: this.id, err: refused });
    void this.flush();
  }

  #giveUp(): void {
    if (this.#task?.status !== 'input_required') return;
    this.#control().cancel('no input in time');
    const message = 'No tasks/update answered the input requests in time';
    void this.#end({ ...this.#task, status: 'failed', statusMessage: message, error: failure(message, 'input_timeout') as unknown as JsonObject, lastUpdatedAt: new Date().toISOString() });
  }

  async shutDown(): Promise<void> {
    if (!this.#task || TERMINAL.has(this.#task.status)) return;
    const message = 'The gateway replica running this task shut down';
    await this.#end({ ...this.#task, status: 'failed', statusMessage: message, error: failure(message, 'replica_shutdown') as unknown as JsonObject, lastUpdatedAt: new Date().toISOString() });
  }
}
