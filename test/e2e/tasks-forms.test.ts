// The two forms of tasks meet through the gateway, each client getting the form it speaks: a
// 2025-11-25 client (the SDK v1 client) of a 2026-07-28 upstream that answers with a task (the
// SEP-2663 fixture), and a 2026-07-28 client (raw JSON-RPC) of a 2025-11-25 upstream whose tool
// runs only as a task (server-everything's simulate-research-query, taskSupport: required);
// clients that know no tasks get the result of either. The 2025-11-25 upstream's own
// notifications/tasks/status reach a 2026-07-28 client's listen as notifications/tasks under its handle.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { join } from 'node:path';
import { CallToolResultSchema, CreateTaskResultSchema, GetTaskResultSchema, CancelTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/auth/api-keys.js';
import { poll } from '../helpers/cli.js';
import { connectClient, recordNotifications, startGateway, textOf, upstream, type NotificationLog, type TestGateway } from '../helpers/gateway.js';
import { FIXTURES, NODE } from '../helpers/paths.js';
import { stopChild, waitForLine } from '../helpers/processes.js';
import { callStateless, sendStateless, statelessMeta, statelessRequest, type Sent } from '../helpers/stateless-wire.js';
import { postRaw } from '../helpers/raw-http.js';
import { SseReader } from '../helpers/sse-reader.js';

const ALICE = 'alice-key-0123456789abcdef0123456789';
const EXT = { 'io.modelcontextprotocol/tasks': {} };
const WITH_TASKS = statelessMeta({ extensions: EXT });
/** A client that can also answer elicitations (its own session, so the upstream is told it can). */
const ASKING = statelessMeta({ extensions: EXT, elicitation: { form: {} } }, 'asking-client');
const DEADLINE_MS = 20_000;

let fixture: ChildProcessWithoutNullStreams;
let fixtureBase: URL;
let gw: TestGateway;

beforeAll(async () => {
  fixture = spawn(NODE, [join(FIXTURES, 'tasks-server.mjs')], { stdio: 'pipe', env: { ...process.env, MODE: 'always' } });
  const [, url] = await waitForLine(fixture, /^listening on (\S+)/);
  fixtureBase = new URL(url!);
  gw = await startGateway({
    auth: { apiKeys: [{ id: 'alice', hash: hashApiKey(ALICE) }] },
    sessions: { taskAfter: '30s' },
    upstreams: { render: { http: { url: url! } }, everything: upstream.everything() },
  });
});

afterAll(async () => {
  await gw?.close();
  if (fixture) await stopChild(fixture);
});

const auth = { authorization: `Bearer ${ALICE}` };
const stats = async (): Promise<{ taskCancels: number; listens: number }> => (await (await fetch(new URL('/stats', fixtureBase))).json()) as { taskCancels: number; listens: number };

async function withClient<T>(body: (client: Client) => Promise<T>): Promise<T> {
  const client = await connectClient(gw.url, {}, undefined, auth);
  try {
    return await body(client);
  } finally {
    await client.close();
  }
}

function resultOf(sent: Sent): Record<string, unknown> {
  expect(sent.body?.error, JSON.stringify(sent.body)).toBeUndefined();
  return sent.body!.result as Record<string, unknown>;
}

describe('a 2025-11-25 client of a 2026-07-28 upstream answering a task', () => {
  it('gets a 2025-11-25 task: CreateTaskResult, tasks/get and tasks/result', async () => {
    await withClient(async (client) => {
      const created = await client.request({ method: 'tools/call', params: { name: 'render__render', arguments: { ms: 300 }, task: { ttl: 60_000 } } }, CreateTaskResultSchema);
      expect(created.task).toMatchObject({ status: 'working', ttl: 60_000, pollInterval: 100 });
      const taskId = created.task.taskId;
      expect(taskId).not.toMatch(/^render:/);
      const done = await poll(async () => {
        const task = await client.request({ method: 'tasks/get', params: { taskId } }, GetTaskResultSchema);
        return task.status === 'completed' ? task : undefined;
      }, 'the task to complete', DEADLINE_MS, 100);
      expect(done).toMatchObject({ taskId, status: 'completed' });
      const result = await client.request({ method: 'tasks/result', params: { taskId } }, CallToolResultSchema);
      expect(textOf(result)).toBe('rendered in 300 ms');
    });
  });

  it('tasks/result waits for the end; tasks/cancel reaches the upstream and answers the task', async () => {
    await withClient(async (client) => {
      const quick = await client.request({ method: 'tools/call', params: { name: 'render__render', arguments: { ms: 400 }, task: {} } }, CreateTaskResultSchema);
      const result = await client.request({ method: 'tasks/result', params: { taskId: quick.task.taskId } }, CallToolResultSchema, { timeout: DEADLINE_MS });
      expect(textOf(result)).toBe('rendered in 400 ms');
      const before = (await stats()).taskCancels;
      const long = await client.request({ method: 'tools/call', params: { name: 'render__render', arguments: { ms: 60_000 }, task: {} } }, CreateTaskResultSchema);
      const cancelled = await client.request({ method: 'tasks/cancel', params: { taskId: long.task.taskId } }, CancelTaskResultSchema);
      expect(cancelled).toMatchObject({ taskId: long.task.taskId, status: 'cancelled' });
      expect((await stats()).taskCancels).toBe(before + 1);
    });
  });
});

describe("a 2025-11-25 client of a 2026-07-28 upstream's task, listening on its GET stream", () => {
  it("hears the upstream's own status notifications as notifications/tasks/status under its task id", async () => {
    const before = await stats();
    let log: NotificationLog | undefined;
    const client = await connectClient(gw.url, {}, (c) => (log = recordNotifications(c)), auth);
    try {
      const created = await client.request({ method: 'tools/call', params: { name: 'render__render', arguments: { ms: 1_500 }, task: {} } }, CreateTaskResultSchema);
      const taskId = created.task.taskId;
      const completed = await log!.waitFor((n) => n.method === 'notifications/tasks/status' && n.params?.taskId === taskId && n.params.status === 'completed', 'a completed status notification', DEADLINE_MS);
      // The 2025-11-25 Task: ttl and pollInterval, no result (tasks/result has it).
      expect(completed.params).toMatchObject({ taskId, status: 'completed', ttl: 60_000, pollInterval: 100 });
      expect(completed.params).not.toHaveProperty('result');
      const statuses = log!.all.filter((n) => n.method === 'notifications/tasks/status');
      expect(statuses.every((n) => n.params?.taskId === taskId)).toBe(true);
      // Told by the upstream itself: the gateway asked it once, on a listen of its own.
      expect((await stats()).listens).toBe(before.listens + 1);
    } finally {
      await client.close();
    }
  });
});

describe('a 2026-07-28 client of a 2025-11-25 upstream whose tool runs only as a task', () => {
  it('gets an extension task under a handle; tasks/get carries the result once it ended', async () => {
    const created = resultOf(await callStateless(gw.url, 1, 'everything__simulate-research-query', { topic: 'gateways' }, {}, auth, WITH_TASKS));
    expect(created).toMatchObject({ resultType: 'task', status: 'working' });
    const taskId = created.taskId as string;
    expect(taskId).not.toMatch(/^everything:/);
    const done = await poll(async () => {
      const task = resultOf(await sendStateless(gw.url, statelessRequest(2, 'tasks/get', { taskId }, WITH_TASKS), { 'mcp-name': taskId, ...auth }));
      return ['completed', 'failed', 'cancelled'].includes(task.status as string) ? task : undefined;
    }, 'the research task', DEADLINE_MS, 250);
    expect(done).toMatchObject({ resultType: 'complete', taskId, status: 'completed', result: { content: [{ type: 'text' }] } });
    expect(JSON.stringify(done.result)).toContain('gateways');
  });

  it("its status notifications (notifications/tasks/status) reach the client's listen as notifications/tasks under the handle, the last with the result", async () => {
    const taskId = resultOf(await callStateless(gw.url, 1, 'everything__simulate-research-query', { topic: 'relays' }, {}, auth, WITH_TASKS)).taskId as string;
    const controller = new AbortController();
    try {
      const listen = statelessRequest('sub-1', 'subscriptions/listen', { notifications: { taskIds: [taskId] } }, WITH_TASKS);
      const res = await postRaw(gw.url, listen, { protocolVersion: '2026-07-28', headers: { ...auth, 'mcp-method': 'subscriptions/listen' }, signal: controller.signal });
      const events = new SseReader(res);
      expect(await events.nextMessage()).toMatchObject({ method: 'notifications/subscriptions/acknowledged', params: { notifications: { taskIds: [taskId] } } });
      const notes = await events.messagesUntil((m) => m.method === 'notifications/tasks' && m.params?.status === 'completed', 'the completed task', DEADLINE_MS);
      // Each stage the upstream announced, then its end with what tasks/result answered.
      expect(notes.filter((m) => m.params?.status === 'working').length).toBeGreaterThan(0);
      expect(notes.every((m) => m.method === 'notifications/tasks' && m.params?.taskId === taskId)).toBe(true);
      expect(notes.at(-1)).toMatchObject({ params: { taskId, status: 'completed', result: { content: [{ type: 'text' }] }, _meta: { 'io.modelcontextprotocol/subscriptionId': 'sub-1' } } });
      expect(JSON.stringify(notes.at(-1)!.params!.result)).toContain('relays');
    } finally {
      controller.abort();
    }
  });

  it('a client that knows no tasks (SDK v1, a plain tools/call) gets the tool result', async () => {
    await withClient(async (client) => {
      // The list says "required", as the upstream does (lists are the upstream's): the SDK's
      // callTool would refuse before sending, so the plain call is sent as a request.
      const { tools } = await client.listTools();
      expect(tools.find((tool) => tool.name === 'everything__simulate-research-query')?.execution).toEqual({ taskSupport: 'required' });
      const result = await client.request({ method: 'tools/call', params: { name: 'everything__simulate-research-query', arguments: { topic: 'plain' } } }, CallToolResultSchema, { timeout: DEADLINE_MS });
      expect(textOf(result)).toContain('plain');
    });
  });
});

describe('a 2026-07-28 client answering the input a 2025-11-25 task asks for', () => {
  const get = async (taskId: string): Promise<Record<string, unknown>> => resultOf(await sendStateless(gw.url, statelessRequest(2, 'tasks/get', { taskId }, ASKING), { 'mcp-name': taskId, ...auth }));
  const update = (taskId: string, inputResponses: Record<string, unknown>): Promise<Sent> =>
    sendStateless(gw.url, statelessRequest(3, 'tasks/update', { taskId, inputResponses }, ASKING), { 'mcp-name': taskId, ...auth });

  it('tasks/get lists the elicitation the task sent (on tasks/result) as inputRequests; tasks/update answers it and the task completes with the answer', async () => {
    const taskId = resultOf(await callStateless(gw.url, 1, 'everything__simulate-research-query', { topic: 'python', ambiguous: true }, {}, auth, ASKING)).taskId as string;
    const asking = await poll(
      async () => {
        const task = await get(taskId);
        return task.status === 'input_required' && Object.keys((task.inputRequests as object | undefined) ?? {}).length > 0 ? task : undefined;
      },
      'the task to ask for input',
      DEADLINE_MS,
      250,
    );
    const [key, request] = Object.entries(asking.inputRequests as Record<string, Record<string, unknown>>)[0]!;
    expect(request).toMatchObject({ method: 'elicitation/create', params: { message: expect.stringContaining('python') } });
    // The 2025-11-25 related-task metadata is the upstream form's, not the client's.
    expect(JSON.stringify(request)).not.toContain('related-task');
    // Keys the task never asked under are acknowledged and ignored.
    expect(resultOf(await update(taskId, { 'never-asked': { action: 'accept', content: {} } }))).toMatchObject({ resultType: 'complete' });
    expect(resultOf(await update(taskId, { [key]: { action: 'accept', content: { interpretation: 'snake' } } }))).toMatchObject({ resultType: 'complete' });
    const done = await poll(
      async () => {
        const task = await get(taskId);
        return ['completed', 'failed', 'cancelled'].includes(task.status as string) ? task : undefined;
      },
      'the task to end',
      DEADLINE_MS,
      250,
    );
    expect(done).toMatchObject({ taskId, status: 'completed', result: { content: [{ type: 'text' }] } });
    expect(JSON.stringify(done.result)).toContain('Clarification**: snake');
  });
});
