// Tasks the gateway makes (SEP-2663 "the server decides when a result is a task"): a 2026-07-28
// client that declared io.modelcontextprotocol/tasks calls a plain slow tool (no tasks of its
// own: the lazy-probe fixture's `slow`, 100 ms a step; 90 s in the first case) through gateway
// A; the call outlives sessions.taskAfter and the client's own request timeout, so A answers
// with a task and runs the call on. Two gateways share one redis-server (sessions.store) and sessions.keys: the task
// is polled and finished on B, cancelled on B in a second run (the upstream sees the cancel),
// and another principal's or a tampered handle is an unknown task on either, as is one sealed under
// a key a replica no longer lists (a rotation keeps the old key listed). Each replica
// writes audit records of the tasks it makes, cancels or finds lost.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/auth/api-keys.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { FIXTURES, NODE } from '../helpers/paths.js';
import { stopChild, waitForLine } from '../helpers/processes.js';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { callStateless, sendStateless, statelessMeta, statelessRequest, type Sent } from '../helpers/stateless-wire.js';
import { poll, startCli } from '../helpers/cli.js';
import { postRaw } from '../helpers/raw-http.js';
import { SseReader } from '../helpers/sse-reader.js';
import { scrape } from '../helpers/metrics.js';

const ALICE = 'alice-key-0123456789abcdef0123456789';
const BOB = 'bob-key-0123456789abcdef0123456789abc';
const EXT = { 'io.modelcontextprotocol/tasks': {} };
const WITH_TASKS = statelessMeta({ extensions: EXT });
const KEYS = ['task-handle-key-0123456789abcdef0123456789'];
/** The client's own patience for one HTTP request: the call outlives it, the task does not need it. */
const CLIENT_TIMEOUT_MS = 1_500;

let redis: TestRedis;
/** The SEP-2663 fixture, answering every call with a task of its own. */
let render: ChildProcessWithoutNullStreams;
let renderUrl: string;
let a: TestGateway;
let b: TestGateway;
/** Where each replica writes its audit records. */
let auditDir: string;

function gatewayConfig(auditFile?: string): Record<string, unknown> {
  return {
    ...(auditFile ? { audit: { sink: { file: { path: join(auditDir, auditFile) } } } } : {}),
    metrics: { enabled: true },
    auth: { apiKeys: [{ id: 'alice', hash: hashApiKey(ALICE) }, { id: 'bob', hash: hashApiKey(BOB) }] },
    sessions: { keys: KEYS, store: { redis: { url: redis.url, prefix: `${redis.prefix}sess:` } }, taskAfter: '300ms' },
    upstreams: { probe: { stdio: { command: NODE, args: [join(FIXTURES, 'lazy-probe-server.mjs')] } }, render: { http: { url: renderUrl } } },
  };
}

beforeAll(async () => {
  redis = await startRedis();
  auditDir = await mkdtemp(join(tmpdir(), 'switchyard-tasks-audit-'));
  render = spawn(NODE, [join(FIXTURES, 'tasks-server.mjs')], { stdio: 'pipe', env: { ...process.env, MODE: 'always' } });
  renderUrl = (await waitForLine(render, /^listening on (\S+)/))[1]!;
  a = await startGateway(gatewayConfig('a.jsonl'));
  b = await startGateway(gatewayConfig('b.jsonl'));
});

afterAll(async () => {
  await a?.close();
  await b?.close();
  await redis?.close();
  if (render) await stopChild(render);
  if (auditDir) await rm(auditDir, { recursive: true, force: true });
});

/** The audit records a replica wrote of one task, once `until` holds of them. */
async function taskRecords(file: string, taskId: string, until: (records: Record<string, unknown>[]) => boolean): Promise<Record<string, unknown>[]> {
  return poll(
    async () => {
      const text = await readFile(join(auditDir, file), 'utf8').catch(() => '');
      const records = text.trim().split('\n').filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>).filter((r) => r.task === taskId);
      return until(records) ? records : undefined;
    },
    `the audit records of ${file}`,
    5_000,
    50,
  );
}

const auth = (key: string) => ({ authorization: `Bearer ${key}` });

/**
 * tools/call probe__slow of `steps` tenths of a second, answered within the client's own
 * timeout. With a progress token, the upstream's progress becomes the task's status message.
 */
async function startSlow(gw: TestGateway, steps: number, progressToken?: string): Promise<Sent> {
  return callStateless(gw.url, 1, 'probe__slow', { steps }, {}, auth(ALICE), progressToken === undefined ? WITH_TASKS : { ...WITH_TASKS, progressToken });
}

function taskRequest(gw: TestGateway, method: string, taskId: string, key = ALICE, meta = WITH_TASKS, extra: Record<string, unknown> = {}): Promise<Sent> {
  return sendStateless(gw.url, statelessRequest(2, method, { taskId, ...extra }, meta), { 'mcp-name': taskId, ...auth(key) });
}

function resultOf(sent: Sent): Record<string, unknown> {
  expect(sent.body?.error, JSON.stringify(sent.body)).toBeUndefined();
  return sent.body!.result as Record<string, unknown>;
}

async function finalState(gw: TestGateway, taskId: string, deadlineMs = 20_000, everyMs = 100): Promise<Record<string, unknown>> {
  return poll(
    async () => {
      const task = resultOf(await taskRequest(gw, 'tasks/get', taskId));
      return ['completed', 'failed', 'cancelled'].includes(task.status as string) ? task : undefined;
    },
    'the task to end',
    deadlineMs,
    everyMs,
  );
}

describe('a long call becomes a task the gateway makes', () => {
  it('a 90-second call is answered with a task before the client gives up, polled and finished on another replica', async () => {
    const created = await Promise.race([
      startSlow(a, 900, 'long-call'),
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error('no answer within the client timeout')), CLIENT_TIMEOUT_MS)),
    ]);
    const task = resultOf(created);
    expect(task).toMatchObject({ resultType: 'task', status: 'working', ttlMs: 3_600_000 });
    const taskId = task.taskId as string;
    expect(taskId).not.toContain('probe');

    // Durably created: B finds it at once, still working (the call has ~90 s to go).
    const polled = resultOf(await taskRequest(b, 'tasks/get', taskId));
    expect(polled).toMatchObject({ resultType: 'complete', taskId, status: 'working' });

    // Polled on B at the task's own interval until it ends; the call's progress is its status message meanwhile.
    const working = await poll(async () => {
      const task = resultOf(await taskRequest(b, 'tasks/get', taskId));
      return typeof task.statusMessage === 'string' ? task : undefined;
    }, 'a status message', 10_000, 250);
    expect(working).toMatchObject({ status: 'working', statusMessage: expect.stringMatching(/^\d+ of 900$/) });
    const done = await finalState(b, taskId, 150_000, polled.pollIntervalMs as number);
    expect(done).toMatchObject({ status: 'completed', taskId, result: { content: [{ type: 'text', text: 'done' }] } });
  }, 180_000);

  it("a silent call outlives the upstream's timeoutMs once it may be a task; a plain call still does not", async () => {
    // The upstream's idle deadline is 1 s; the call sends no progress (no progressToken) for 2.5 s.
    const base = gatewayConfig();
    const strict = await startGateway({ ...base, upstreams: { probe: { stdio: { command: NODE, args: [join(FIXTURES, 'lazy-probe-server.mjs')] }, timeoutMs: 1_000 } } });
    try {
      const taskId = resultOf(await startSlow(strict, 25)).taskId as string;
      expect(await finalState(strict, taskId)).toMatchObject({ status: 'completed', result: { content: [{ type: 'text', text: 'done' }] } });
      // Without the extension nobody but the client waits: the deadline ends the call.
      const plain = await callStateless(strict.url, 5, 'probe__slow', { steps: 25 }, {}, auth(ALICE), statelessMeta({}));
      expect(plain.body?.error).toMatchObject({ message: expect.stringMatching(/did not answer tools\/call within \d+ ms/) });
    } finally {
      await strict.close();
    }
  });

  it('another principal, a tampered handle and a client without the extension get nothing', async () => {
    const taskId = resultOf(await startSlow(a, 20)).taskId as string;
    for (const gw of [a, b]) {
      const other = await taskRequest(gw, 'tasks/get', taskId, BOB);
      expect(other.body?.error).toMatchObject({ code: -32602, message: 'Failed to retrieve task: Task not found' });
      // A character in the middle, changed whatever it was (one at the end may carry only padding bits).
      const at = Math.floor(taskId.length / 2);
      const flipped = taskId.slice(0, at) + (taskId[at] === 'A' ? 'B' : 'A') + taskId.slice(at + 1);
      const tampered = await taskRequest(gw, 'tasks/get', flipped);
      expect(tampered.body?.error).toEqual(other.body?.error);
      const cancelByBob = await taskRequest(gw, 'tasks/cancel', taskId, BOB);
      expect(cancelByBob.body?.error).toEqual(other.body?.error);
      const undeclared = await taskRequest(gw, 'tasks/get', taskId, ALICE, statelessMeta({}));
      expect(undeclared.status).toBe(400);
      expect(undeclared.body?.error).toMatchObject({ code: -32021, data: { requiredCapabilities: { extensions: EXT } } });
    }
    expect(await finalState(b, taskId)).toMatchObject({ status: 'completed' });
  });

  it('after a key rotation: a handle sealed under a key still listed opens, one under a key no longer configured is unknown', async () => {
    const taskId = resultOf(await startSlow(a, 20)).taskId as string;
    const newKey = 'task-handle-key-rotated-0123456789abcdef01';
    const withGatewayKeys = (keys: string[]): Record<string, unknown> => {
      const config = gatewayConfig();
      return { ...config, sessions: { ...(config.sessions as object), keys } };
    };
    // The new key first (it seals from now on), the old one still listed (it opens what it sealed).
    const rotated = await startGateway(withGatewayKeys([newKey, ...KEYS]));
    const retired = await startGateway(withGatewayKeys([newKey]));
    try {
      expect(resultOf(await taskRequest(rotated, 'tasks/get', taskId)).taskId).toBe(taskId);
      const unknown = await taskRequest(retired, 'tasks/get', taskId);
      expect(unknown.body?.error).toMatchObject({ code: -32602, message: 'Failed to retrieve task: Task not found' });
      // What the rotated replica seals, a replica without the new key cannot open.
      const sealedNew = resultOf(await startSlow(rotated, 20)).taskId as string;
      expect(resultOf(await taskRequest(retired, 'tasks/get', sealedNew)).taskId).toBe(sealedNew);
      expect((await taskRequest(a, 'tasks/get', sealedNew)).body?.error).toEqual(unknown.body?.error);
      expect(await finalState(rotated, sealedNew)).toMatchObject({ status: 'completed' });
    } finally {
      await rotated.close();
      await retired.close();
    }
    expect(await finalState(b, taskId)).toMatchObject({ status: 'completed' });
  });

  it('tasks/cancel on B reaches the call on A: the upstream sees notifications/cancelled', async () => {
    const taskId = resultOf(await startSlow(a, 600)).taskId as string;
    const ack = resultOf(await taskRequest(b, 'tasks/cancel', taskId));
    expect(ack).toMatchObject({ resultType: 'complete' });
    expect(await finalState(b, taskId, 10_000)).toMatchObject({ status: 'cancelled' });
    // The same principal's session on A holds the child that ran the call.
    const count = await poll(
      async () => {
        const sent = await callStateless(a.url, 3, 'probe__cancelled', {}, {}, auth(ALICE), WITH_TASKS);
        const text = ((resultOf(sent).content as { text: string }[])[0]!).text;
        return text === '0' ? undefined : text;
      },
      'the upstream to see the cancel',
      5_000,
      100,
    );
    expect(count).toBe('1');
    // A made it and saw it end; B was asked to cancel it: each says so, naming the task by its handle.
    const named = { principal: 'apikey:alice', upstream: 'probe', name: 'probe__slow', task: taskId, decision: 'allow' };
    const onA = await taskRecords('a.jsonl', taskId, (records) => records.some((r) => r.event === 'task.ended'));
    expect(onA.map((r) => [r.event, r.outcome])).toEqual([
      ['task.created', 'ok'],
      ['task.ended', 'cancelled'],
    ]);
    for (const record of onA) expect(record).toMatchObject(named);
    const onB = await taskRecords('b.jsonl', taskId, (records) => records.length > 0);
    expect(onB).toEqual([expect.objectContaining({ event: 'task.cancel_requested', outcome: 'ok', ...named })]);
    // A counts the tasks it ran by their end, with how long each took.
    const metrics = await scrape(new URL('/metrics', a.url));
    expect(metrics.get('switchyard_tasks{state="cancelled"}')).toBeGreaterThanOrEqual(1);
    expect(metrics.get('switchyard_task_duration_seconds_count{state="cancelled"}')).toBeGreaterThanOrEqual(1);
  });

  it('a call answered within taskAfter is a plain result, and a client without the extension never gets a task', async () => {
    const quick = resultOf(await startSlow(a, 1));
    expect(quick).toMatchObject({ resultType: 'complete', content: [{ type: 'text', text: 'done' }] });
    const plain = resultOf(await callStateless(a.url, 4, 'probe__slow', { steps: 6 }, {}, auth(ALICE), statelessMeta({})));
    expect(plain).toMatchObject({ resultType: 'complete', content: [{ type: 'text', text: 'done' }] });
  });

  it("a call the upstream answers with its own task after taskAfter: the gateway's task stands for it, on any replica", async () => {
    const created = resultOf(await callStateless(a.url, 1, 'render__render', { ms: 300, delayMs: 800 }, {}, auth(ALICE), WITH_TASKS));
    expect(created).toMatchObject({ resultType: 'task', status: 'working', pollIntervalMs: 1_000 });
    const taskId = created.taskId as string;
    const done = await finalState(b, taskId);
    expect(done).toMatchObject({ taskId, status: 'completed', result: { content: [{ type: 'text', text: 'rendered in 300 ms' }] } });
  });

  it("a team that may not call the task's tool cannot read its task (the gateway's, or an upstream's)", async () => {
    const own = resultOf(await startSlow(a, 20)).taskId as string;
    const upstreams = resultOf(await callStateless(a.url, 1, 'render__render', { ms: 2_000 }, {}, auth(ALICE), WITH_TASKS)).taskId as string;
    // The same fleet, where alice's team may call nothing but probe__cancelled.
    const base = gatewayConfig();
    const strict = await startGateway({
      ...base,
      auth: { apiKeys: [{ id: 'alice', hash: hashApiKey(ALICE), team: 'ops' }] },
      teams: [{ name: 'ops', allow: ['probe__cancelled'] }],
    });
    try {
      for (const taskId of [own, upstreams]) {
        expect(resultOf(await taskRequest(b, 'tasks/get', taskId))).toMatchObject({ taskId });
        const refused = await taskRequest(strict, 'tasks/get', taskId);
        expect(refused.body?.error).toMatchObject({ code: -32602, message: 'Failed to retrieve task: Task not found' });
        expect((await taskRequest(strict, 'tasks/cancel', taskId)).body?.error).toEqual(refused.body?.error);
      }
      // Nor hear of them: a listen naming both is agreed neither.
      const controller = new AbortController();
      try {
        const listen = statelessRequest('sub-3', 'subscriptions/listen', { notifications: { taskIds: [own, upstreams] } }, WITH_TASKS);
        const res = await postRaw(strict.url, listen, { protocolVersion: '2026-07-28', headers: { ...auth(ALICE), 'mcp-method': 'subscriptions/listen' }, signal: controller.signal });
        expect(await new SseReader(res).nextMessage()).toMatchObject({ method: 'notifications/subscriptions/acknowledged', params: { notifications: { taskIds: [] } } });
      } finally {
        controller.abort();
      }
    } finally {
      await strict.close();
    }
  });

  it('subscriptions/listen with taskIds on B hears notifications/tasks as the task on A changes, to its end', async () => {
    const taskId = resultOf(await startSlow(a, 10)).taskId as string;
    const controller = new AbortController();
    const listen = statelessRequest('sub-1', 'subscriptions/listen', { notifications: { taskIds: [taskId, 'not-a-task'] } }, WITH_TASKS);
    const res = await postRaw(b.url, listen, { protocolVersion: '2026-07-28', headers: { ...auth(ALICE), 'mcp-method': 'subscriptions/listen' }, signal: controller.signal });
    try {
      const events = new SseReader(res);
      expect(await events.nextMessage()).toMatchObject({ method: 'notifications/subscriptions/acknowledged', params: { notifications: { taskIds: [taskId] } } });
      const notes = await events.messagesUntil((m) => m.method === 'notifications/tasks' && m.params?.status === 'completed', 'the completed task', 15_000);
      expect(notes.at(-1)).toMatchObject({ params: { taskId, status: 'completed', result: { content: [{ text: 'done' }] }, _meta: { 'io.modelcontextprotocol/subscriptionId': 'sub-1' } } });
    } finally {
      controller.abort();
    }
    const undeclared = await sendStateless(b.url, statelessRequest('sub-2', 'subscriptions/listen', { notifications: { taskIds: [taskId] } }, statelessMeta({})), auth(ALICE));
    expect(undeclared.body?.error).toMatchObject({ code: -32021 });
  });

  it('server/discover advertises the extension', async () => {
    const sent = await sendStateless(a.url, statelessRequest(5, 'server/discover', {}, WITH_TASKS), auth(ALICE));
    expect(resultOf(sent)).toMatchObject({ capabilities: { extensions: EXT } });
  });
});

describe('a replica that dies', () => {
  it("leaves no task working forever: another replica ends it failed, saying why", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'switchyard-tasks-'));
    const file = join(dir, 'gateway.yaml');
    await writeFile(file, JSON.stringify({ listen: { port: 0 }, health: { probeInterval: 0 }, ...gatewayConfig() }));
    const dying = await startCli(file);
    try {
      const taskId = resultOf(await callStateless(dying.url, 1, 'probe__slow', { steps: 600 }, {}, auth(ALICE), WITH_TASKS)).taskId as string;
      expect(resultOf(await taskRequest(b, 'tasks/get', taskId))).toMatchObject({ status: 'working' });
      process.kill(dying.gatewayPid, 'SIGKILL');
      const ended = await finalState(b, taskId, 20_000);
      expect(ended).toMatchObject({ status: 'failed', error: { code: -32603, data: { reason: 'replica_lost' } } });
      expect(ended.statusMessage).toMatch(/replica running this task stopped/);
      // Once ended, it stays so.
      expect(resultOf(await taskRequest(a, 'tasks/get', taskId))).toMatchObject({ status: 'failed' });
      // B found it lost: one record says so.
      const lost = await taskRecords('b.jsonl', taskId, (records) => records.length > 0);
      expect(lost).toEqual([expect.objectContaining({ event: 'task.lost', reason: 'replica_lost', outcome: 'failed', principal: 'apikey:alice', upstream: 'probe', name: 'probe__slow' })]);
    } finally {
      await dying.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
