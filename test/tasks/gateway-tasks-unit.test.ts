// The tasks the gateway makes, alone (memory store, no sockets): a call outliving taskAfter is
// answered with a task and recorded to its end; the bounds (result size, tasks per principal)
// end in a clear error; a cancel reaches the call; metrics count each state; each task's life
// is audit records naming it by its handle (a replica lost with it: task.lost).
import { describe, expect, it } from 'vitest';
import { AuditLog, type WritableLike } from '../../src/audit/audit.js';
import { SecurityEvents } from '../../src/audit/events.js';
import type { JsonObject, JsonRpcResponse } from '../../src/mcp/jsonrpc.js';
import type { RequestSink } from '../../src/mcp/pending.js';
import { Metrics } from '../../src/metrics/metrics.js';
import type { Caller } from '../../src/session/context.js';
import { GatewayTasks, type CallControl, type TaskBounds, type TaskingSink } from '../../src/tasks/gateway-tasks.js';
import { TaskAudit } from '../../src/tasks/audit.js';
import { TaskHandles } from '../../src/tasks/handles.js';
import { MemoryTaskStore } from '../../src/tasks/store.js';
import { createLogger } from '../../src/util/log.js';

const EXT = { extensions: { 'io.modelcontextprotocol/tasks': {} } };
const alice: Caller = { requestId: 'r', principal: { id: 'apikey:alice', kind: 'apikey', scopes: [], claims: {} } };

function setup(bounds: Partial<TaskBounds> = {}, store = new MemoryTaskStore()) {
  const metrics = new Metrics(['u']);
  const chunks: string[] = [];
  const out: WritableLike = { write: (chunk, done) => (chunks.push(chunk), done(), true) };
  const log = new AuditLog({ sink: 'stdout', arguments: false }, { metrics, stdout: out, resolvePath: (p) => p, env: {}, serviceVersion: 'test' });
  const tasks = new GatewayTasks({
    store,
    handles: new TaskHandles(['k'.repeat(40)]),
    metrics,
    logger: createLogger({ level: 'error', write: () => {} }),
    audit: new TaskAudit(new SecurityEvents(log, undefined), () => ['render-team'], '/mcp'),
    ttlMs: 60_000,
    afterMs: 0,
    inputTimeoutMs: 60_000,
    bounds,
    scope: { resolve: (_caller, name) => ({ upstream: 'u', exposed: name }), mayCall: () => true, off: () => false },
  });
  /** The audit records written so far (the log is closed to flush them). */
  const records = async (): Promise<Record<string, unknown>[]> => {
    await log.close();
    return chunks.join('').trim().split('\n').filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>);
  };
  return { tasks, metrics, records };
}

/** A sink that resolves with its answer. */
function answered(): { sink: RequestSink; response: Promise<JsonRpcResponse> } {
  let resolve!: (response: JsonRpcResponse) => void;
  const response = new Promise<JsonRpcResponse>((r) => (resolve = r));
  return { sink: { notify: () => {}, finish: resolve }, response };
}

function control(onCancel: (reason: string) => void = () => {}): () => CallControl {
  return () => ({ cancel: onCancel, answer: () => undefined });
}

async function get(tasks: GatewayTasks, taskId: string): Promise<JsonObject> {
  return (await tasks.serve('tasks/get', { taskId }, alice)) as JsonObject;
}

async function until(tasks: GatewayTasks, taskId: string, status: string): Promise<JsonObject> {
  for (let i = 0; i < 100; i++) {
    const task = await get(tasks, taskId);
    if (task.status === status) return task;
    await new Promise((resolve) => setImmediate(resolve));
  }
  throw new Error(`task never ${status}`);
}

/** The store, with what each write came to (false: the task was ended already) and the ids of the tasks made. */
function watched(store: MemoryTaskStore): { store: MemoryTaskStore; writes: boolean[]; made: string[] } {
  const writes: boolean[] = [];
  const made: string[] = [];
  const [put, create] = [store.put.bind(store), store.create.bind(store)];
  store.put = async (task, leaseMs) => {
    const written = await put(task, leaseMs);
    writes.push(written);
    return written;
  };
  store.create = async (task, leaseMs, max) => (made.push(task.id), create(task, leaseMs, max));
  return { store, writes, made };
}

const request = { id: 1, method: 'tools/call', params: { name: 'u__t', arguments: {} }, clientCapabilities: EXT };

describe('tasks the gateway makes', () => {
  it('answer a call with a task and record its result; metrics count the states', async () => {
    const { tasks, metrics } = setup();
    const { sink, response } = answered();
    const call = tasks.adopt(request, alice, sink, control());
    const created = (await response) as { result: JsonObject };
    expect(created.result).toMatchObject({ resultType: 'task', status: 'working' });
    const taskId = created.result.taskId as string;
    call.finish({ jsonrpc: '2.0', id: 1, result: { content: [{ type: 'text', text: 'ok' }] } });
    expect(await until(tasks, taskId, 'completed')).toMatchObject({ result: { resultType: 'complete', content: [{ text: 'ok' }] } });
    const text = await metrics.registry.metrics();
    expect(text).toContain('switchyard_tasks{state="completed"} 1');
    expect(text).toContain('switchyard_tasks{state="working"} 0');
    expect(text).toMatch(/switchyard_task_duration_seconds_count\{state="completed"\} 1/);
    await tasks.close();
  });

  it('a result past the size bound ends the task failed, saying why', async () => {
    const { tasks } = setup({ maxResultBytes: 100 });
    const { sink, response } = answered();
    const call = tasks.adopt(request, alice, sink, control());
    const taskId = ((await response) as { result: JsonObject }).result.taskId as string;
    call.finish({ jsonrpc: '2.0', id: 1, result: { content: [{ type: 'text', text: 'x'.repeat(500) }] } });
    expect(await until(tasks, taskId, 'failed')).toMatchObject({ error: { code: -32603, data: { reason: 'task_result_too_large' } } });
    await tasks.close();
  });

  it('past the count per principal a call gets a clear error and is cancelled', async () => {
    const { tasks } = setup({ maxPerPrincipal: 1 });
    const first = answered();
    tasks.adopt(request, alice, first.sink, control());
    expect(((await first.response) as { result: JsonObject }).result.resultType).toBe('task');
    const second = answered();
    const cancelled: string[] = [];
    tasks.adopt(request, alice, second.sink, control((reason) => cancelled.push(reason)));
    expect(await second.response).toMatchObject({ error: { code: -32603, data: { reason: 'too_many_tasks' } } });
    expect(cancelled).toEqual(['too many tasks']);
    await tasks.close();
  });

  it('tasks/cancel reaches the call and ends the task cancelled', async () => {
    const { tasks } = setup();
    const { sink, response } = answered();
    const cancelled: string[] = [];
    tasks.adopt(request, alice, sink, control((reason) => cancelled.push(reason)));
    const taskId = ((await response) as { result: JsonObject }).result.taskId as string;
    expect(await tasks.serve('tasks/cancel', { taskId }, alice)).toEqual({});
    expect(cancelled).toEqual(['tasks/cancel']);
    expect(await until(tasks, taskId, 'cancelled')).toMatchObject({ status: 'cancelled' });
    await tasks.close();
  });

  it('a client gone before taskAfter: no task is made of its abandoned call', async () => {
    const { tasks, metrics } = setup();
    const heard: unknown[] = [];
    const sink = tasks.adopt(request, alice, { notify: () => {}, finish: (response) => heard.push(response) }, control()) as TaskingSink;
    sink.drop();
    // The timer of taskAfter (0 here) was set first: a timer set now fires after it would have.
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(heard).toEqual([]);
    expect(await metrics.registry.metrics()).not.toContain('switchyard_tasks{state="working"} 1');
    await tasks.close();
  });

  it('a client without the extension keeps its own sink: no task is ever made', () => {
    const { tasks } = setup();
    const { sink } = answered();
    expect(tasks.adopt({ ...request, clientCapabilities: {} }, alice, sink, control())).toBe(sink);
  });

  it("a task's life is audit records: made, cancel asked, ended, each naming the handle, upstream, tool, principal and team", async () => {
    const { tasks, records } = setup();
    const { sink, response } = answered();
    tasks.adopt(request, alice, sink, control());
    const taskId = ((await response) as { result: JsonObject }).result.taskId as string;
    await tasks.serve('tasks/get', { taskId }, alice);
    await tasks.serve('tasks/cancel', { taskId }, alice);
    await until(tasks, taskId, 'cancelled');
    const named = { principal: 'apikey:alice', team: 'render-team', endpoint: '/mcp', upstream: 'u', name: 'u__t', task: taskId, decision: 'allow' };
    const written = await records();
    // tasks/get is polling, not an event: no record.
    expect(written.map((r) => [r.event, r.outcome])).toEqual([
      ['task.created', 'ok'],
      ['task.cancel_requested', 'ok'],
      ['task.ended', 'cancelled'],
    ]);
    for (const record of written) expect(record).toMatchObject({ schema: 'switchyard.audit/1', requestId: 'r', ...named });
    expect(typeof written[2]!.durationMs).toBe('number');
    await tasks.close();
  });

  it('a failed task is audited with what failed it', async () => {
    const { tasks, records } = setup({ maxResultBytes: 100 });
    const { sink, response } = answered();
    const call = tasks.adopt(request, alice, sink, control());
    const taskId = ((await response) as { result: JsonObject }).result.taskId as string;
    call.finish({ jsonrpc: '2.0', id: 1, result: { content: [{ type: 'text', text: 'x'.repeat(500) }] } });
    await until(tasks, taskId, 'failed');
    expect((await records()).at(-1)).toMatchObject({ event: 'task.ended', outcome: 'failed', errorKind: 'task_result_too_large', task: taskId });
    await tasks.close();
  });

  it('a task whose replica stopped renewing it ends failed on the next tasks/get, audited as task.lost', async () => {
    let now = Date.now();
    const store = new MemoryTaskStore(() => now);
    const a = setup({}, store);
    const b = setup({}, store);
    const { sink, response } = answered();
    a.tasks.adopt(request, alice, sink, control());
    const taskId = ((await response) as { result: JsonObject }).result.taskId as string;
    // Replica A is gone: its lease runs out, and replica B is asked.
    now += 10_000;
    expect(await b.tasks.serve('tasks/get', { taskId }, alice)).toMatchObject({ status: 'failed', error: { data: { reason: 'replica_lost' } } });
    expect(await b.records()).toEqual([expect.objectContaining({ event: 'task.lost', outcome: 'failed', reason: 'replica_lost', task: taskId, principal: 'apikey:alice', team: 'render-team', upstream: 'u', name: 'u__t' })]);
    await b.tasks.close();
    await a.tasks.close();
  });

  it('a task another replica ended stays ended: its owner, finishing the call late, writes and audits no other end', async () => {
    let now = Date.now();
    const { store, writes } = watched(new MemoryTaskStore(() => now));
    const a = setup({}, store);
    const b = setup({}, store);
    const { sink, response } = answered();
    const call = a.tasks.adopt(request, alice, sink, control());
    const taskId = ((await response) as { result: JsonObject }).result.taskId as string;
    // A's lease lapses (its heartbeats could not reach the store) and B ends the task.
    now += 10_000;
    expect(await b.tasks.serve('tasks/get', { taskId }, alice)).toMatchObject({ status: 'failed' });
    // A's call then completes: the stored end is final, and A's answer is not a second one.
    call.finish({ jsonrpc: '2.0', id: 1, result: { content: [{ type: 'text', text: 'late' }] } });
    await expect.poll(() => writes.at(-1), { timeout: 5_000 }).toBe(false);
    expect(await b.tasks.serve('tasks/get', { taskId }, alice)).toMatchObject({ status: 'failed' });
    expect((await a.records()).filter((r) => r.event === 'task.ended')).toEqual([]);
    // Nor is it counted completed here: its end is B's.
    expect(await a.metrics.registry.metrics()).toContain('switchyard_tasks{state="completed"} 0');
    await a.tasks.close();
    await b.tasks.close();
  });
  it('a working task another replica ended leaves the working gauge when this one learns it', async () => {
    const { store, writes, made } = watched(new MemoryTaskStore());
    const { tasks, metrics } = setup({ leaseMs: 300 }, store);
    const { sink, response } = answered();
    let cancelled: string | undefined;
    const call = tasks.adopt(request, alice, sink, control((reason) => (cancelled = reason)));
    const taskId = ((await response) as { result: JsonObject }).result.taskId as string;
    expect(await metrics.registry.metrics()).toContain('switchyard_tasks{state="working"} 1');
    // Another replica failed it (this one's lease had lapsed); this one's next write learns so.
    const stored = (await store.get(made[0]!))!.task;
    await store.put({ ...stored, status: 'failed' }, 300);
    call.notify({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 1, progress: 1 } });
    await expect.poll(() => writes.at(-1), { timeout: 5_000 }).toBe(false);
    expect(cancelled).toBe('ended by another replica');
    expect(await get(tasks, taskId)).toMatchObject({ status: 'failed' });
    expect(await metrics.registry.metrics()).toContain('switchyard_tasks{state="working"} 0');
    await tasks.close();
  });
});
