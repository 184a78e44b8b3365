// The Tasks extension (SEP-2663) through the gateway, for 2026-07-28 clients (raw JSON-RPC over
// HTTP: the v2 client SDK 2.4.0 does not speak the extension) of upstreams that implement it to
// the letter (test/fixtures/tasks-server.mjs): one that always answers with a task, one that
// answers short calls at once. The client sees sealed handles, never the upstream's ids; tasks/get,
// tasks/update and tasks/cancel reach the owning upstream with Mcp-Name set to its own task id;
// two upstreams issuing the same id never collide; another principal's handle is unknown; a
// subscriptions/listen naming a handle hears the upstream's own notifications/tasks under it.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/auth/api-keys.js';
import { poll } from '../helpers/cli.js';
import { connectClient, startGateway, type TestGateway } from '../helpers/gateway.js';
import { FIXTURES, NODE } from '../helpers/paths.js';
import { stopChild, waitForLine } from '../helpers/processes.js';
import { callStateless, sendStateless, statelessMeta, statelessRequest, type Sent } from '../helpers/stateless-wire.js';
import { postRaw } from '../helpers/raw-http.js';
import { SseReader } from '../helpers/sse-reader.js';

const ALICE = 'alice-key-0123456789abcdef0123456789';
const BOB = 'bob-key-0123456789abcdef0123456789abc';
const EXT = { 'io.modelcontextprotocol/tasks': {} };
const WITH_TASKS = statelessMeta({ extensions: EXT, elicitation: { form: {} } });

interface Fixture {
  url: string;
  stats(): Promise<Record<string, unknown> & { nameHeaders: (string | null)[]; taskCancels: number; updates: number; listens: number; listenedTaskIds: string[]; statusSent: number }>;
  child: ChildProcessWithoutNullStreams;
}

async function startFixture(env: Record<string, string>): Promise<Fixture> {
  const child = spawn(NODE, [join(FIXTURES, 'tasks-server.mjs')], { stdio: 'pipe', env: { ...process.env, ...env } });
  const [, url] = await waitForLine(child, /^listening on (\S+)/);
  const base = new URL(url!);
  return { url: url!, child, stats: async () => (await (await fetch(new URL('/stats', base))).json()) as Awaited<ReturnType<Fixture['stats']>> };
}

let always: Fixture;
let short: Fixture;
let twin: Fixture;
let gw: TestGateway;

beforeAll(async () => {
  [always, short, twin] = await Promise.all([startFixture({ MODE: 'always', SEQUENTIAL_IDS: '1' }), startFixture({ MODE: 'short' }), startFixture({ MODE: 'always', SEQUENTIAL_IDS: '1' })]);
  gw = await startGateway({
    auth: { apiKeys: [{ id: 'alice', hash: hashApiKey(ALICE) }, { id: 'bob', hash: hashApiKey(BOB) }] },
    // The gateway's own tasks wait longer than these upstreams take to answer.
    sessions: { taskAfter: '20s' },
    upstreams: {
      always: { http: { url: always.url } },
      short: { http: { url: short.url } },
      twin: { http: { url: twin.url } },
      // The same server, with a bound on the whole call.
      bounded: { http: { url: always.url }, maxTotalTimeoutMs: 1_000 },
      // A v2-SDK server whose `ask` asks for input (multi round-trip); once with tasks off.
      modern: { stdio: { command: NODE, args: [join(FIXTURES, 'modern-server.mjs'), 'stdio'] } },
      plain: { stdio: { command: NODE, args: [join(FIXTURES, 'modern-server.mjs'), 'stdio'] }, tasks: 'off' },
    },
  });
});

afterAll(async () => {
  await gw?.close();
  await Promise.all([always, short, twin].map((f) => f && stopChild(f.child)));
});

const auth = (key: string) => ({ authorization: `Bearer ${key}` });

function resultOf(sent: Sent): Record<string, unknown> {
  expect(sent.body?.error, JSON.stringify(sent.body)).toBeUndefined();
  return sent.body!.result as Record<string, unknown>;
}

function call(name: string, args: Record<string, unknown>, key = ALICE): Promise<Sent> {
  return callStateless(gw.url, 1, name, args, {}, auth(key), WITH_TASKS);
}

function task(method: string, taskId: string, extra: Record<string, unknown> = {}, key = ALICE): Promise<Sent> {
  return sendStateless(gw.url, statelessRequest(2, method, { taskId, ...extra }, WITH_TASKS), { 'mcp-name': taskId, ...auth(key) });
}

async function settled(taskId: string, until: (task: Record<string, unknown>) => boolean = (t) => ['completed', 'failed', 'cancelled'].includes(t.status as string)): Promise<Record<string, unknown>> {
  return poll(async () => {
    const state = resultOf(await task('tasks/get', taskId));
    return until(state) ? state : undefined;
  }, 'the task', 10_000, 50);
}

describe('the Tasks extension through the gateway', () => {
  it('a task-creating result comes back under a sealed handle; tasks/get reaches the upstream with its own id in Mcp-Name', async () => {
    const created = resultOf(await call('always__render', { ms: 200 }));
    expect(created).toMatchObject({ resultType: 'task', status: 'working' });
    const handle = created.taskId as string;
    expect(handle).not.toMatch(/^task-\d+$/);
    const done = await settled(handle);
    expect(done).toMatchObject({ resultType: 'complete', taskId: handle, status: 'completed', result: { content: [{ type: 'text', text: 'rendered in 200 ms' }] } });
    const { nameHeaders } = await always.stats();
    expect(nameHeaders.length).toBeGreaterThan(0);
    expect(nameHeaders.every((name) => name !== null && /^task-\d+$/.test(name))).toBe(true);
  });

  it('an upstream that answers short calls at once is answered at once; its long calls are tasks', async () => {
    expect(resultOf(await call('short__render', { ms: 50 }))).toMatchObject({ resultType: 'complete', content: [{ type: 'text', text: 'rendered in 50 ms' }] });
    const created = resultOf(await call('short__render', { ms: 600 }));
    expect(created).toMatchObject({ resultType: 'task' });
    expect(await settled(created.taskId as string)).toMatchObject({ status: 'completed', result: { content: [{ type: 'text', text: 'rendered in 600 ms' }] } });
  });

  it('two upstreams issuing the same task id never collide', async () => {
    const first = resultOf(await call('always__render', { ms: 100 })).taskId as string;
    const second = resultOf(await call('twin__render', { ms: 150 })).taskId as string;
    expect(first).not.toBe(second);
    expect(await settled(first)).toMatchObject({ result: { content: [{ text: 'rendered in 100 ms' }] } });
    expect(await settled(second)).toMatchObject({ result: { content: [{ text: 'rendered in 150 ms' }] } });
  });

  it('input_required: inputRequests pass through, tasks/update carries inputResponses back', async () => {
    const handle = resultOf(await call('always__approve', {})).taskId as string;
    const asking = await settled(handle, (t) => t.status === 'input_required');
    expect(asking).toMatchObject({ inputRequests: { confirm: { method: 'elicitation/create' } } });
    expect(resultOf(await task('tasks/update', handle, { inputResponses: { confirm: { action: 'accept', content: { name: 'Ada' } } } }))).toMatchObject({ resultType: 'complete' });
    expect(await settled(handle)).toMatchObject({ status: 'completed', result: { content: [{ text: 'approved by Ada' }] } });
  });

  it('a failed task carries its JSON-RPC error; tasks/cancel reaches the upstream', async () => {
    const broken = resultOf(await call('always__broken', {})).taskId as string;
    expect(await settled(broken)).toMatchObject({ status: 'failed', error: { code: -32603, message: 'render farm on fire' } });
    const before = (await always.stats()).taskCancels;
    const long = resultOf(await call('always__render', { ms: 60_000 })).taskId as string;
    expect(resultOf(await task('tasks/cancel', long))).toMatchObject({ resultType: 'complete' });
    expect((await always.stats()).taskCancels).toBe(before + 1);
    expect(await settled(long)).toMatchObject({ status: 'cancelled' });
  });

  it("another principal's handle, and a tampered one, are unknown tasks", async () => {
    const handle = resultOf(await call('always__render', { ms: 100 })).taskId as string;
    const bob = await task('tasks/get', handle, {}, BOB);
    expect(bob.body?.error).toMatchObject({ code: -32602, message: 'Failed to retrieve task: Task not found' });
    // A character in the middle, changed whatever it was (one at the end may carry only padding bits).
    const at = Math.floor(handle.length / 2);
    const tampered = await task('tasks/get', handle.slice(0, at) + (handle[at] === 'A' ? 'B' : 'A') + handle.slice(at + 1));
    expect(tampered.body?.error).toEqual(bob.body?.error);
    expect((await task('tasks/cancel', handle, {}, BOB)).body?.error).toEqual(bob.body?.error);
    expect(await settled(handle)).toMatchObject({ status: 'completed' });
  });
});

/** A subscriptions/listen of `key` naming `taskIds`, read as it comes. */
async function listenFor(taskIds: string[], key: string, signal: AbortSignal): Promise<SseReader> {
  const request = statelessRequest(`sub-${key.slice(0, 3)}`, 'subscriptions/listen', { notifications: { taskIds } }, WITH_TASKS);
  const res = await postRaw(gw.url, request, { protocolVersion: '2026-07-28', headers: { ...auth(key), 'mcp-method': 'subscriptions/listen' }, signal });
  expect(res.status).toBe(200);
  return new SseReader(res);
}

describe("an upstream's own task status notifications", () => {
  it('reach the listen that named the handle, under the handle, to the end; another principal naming it is not agreed to', async () => {
    const handle = resultOf(await call('always__render', { ms: 1_500 })).taskId as string;
    const before = await always.stats();
    const controller = new AbortController();
    try {
      // Bob names alice's handle: nothing is agreed, and the upstream is never asked.
      const bob = await listenFor([handle], BOB, controller.signal);
      expect(await bob.nextMessage()).toMatchObject({ method: 'notifications/subscriptions/acknowledged', params: { notifications: { taskIds: [] } } });
      const alice = await listenFor([handle, 'not-a-task'], ALICE, controller.signal);
      expect(await alice.nextMessage()).toMatchObject({ method: 'notifications/subscriptions/acknowledged', params: { notifications: { taskIds: [handle] } } });
      const notes = await alice.messagesUntil((m) => m.method === 'notifications/tasks' && m.params?.status === 'completed', 'the completed task', 15_000);
      expect(notes.at(-1)).toMatchObject({
        method: 'notifications/tasks',
        params: { taskId: handle, status: 'completed', result: { content: [{ type: 'text', text: 'rendered in 1500 ms' }] }, _meta: { 'io.modelcontextprotocol/subscriptionId': 'sub-ali' } },
      });
      expect(notes.every((m) => m.params?.taskId === handle)).toBe(true);
      // The upstream was asked once (alice's), for its own id, and told the end itself.
      const after = await always.stats();
      expect(after.listens).toBe(before.listens + 1);
      expect(after.listenedTaskIds.slice(before.listenedTaskIds.length)).toEqual([expect.stringMatching(/^task-\d+$/)]);
      expect(after.statusSent).toBeGreaterThan(before.statusSent);
    } finally {
      controller.abort();
    }
  });
});

describe('a tool that runs only as a task, for clients that know no tasks', () => {
  it("answers an SDK v1 client's plain call with the task's result, relaying its progress", async () => {
    const client = await connectClient(gw.url, {}, undefined, auth(ALICE));
    try {
      const progress: unknown[] = [];
      const result = await client.callTool({ name: 'always__required', arguments: { ms: 400 } }, undefined, { onprogress: (p) => progress.push(p) });
      expect(result).toMatchObject({ content: [{ type: 'text', text: 'rendered in 400 ms' }] });
      expect(progress.length).toBeGreaterThan(0);
    } finally {
      await client.close();
    }
  });

  it("answers a 2026-07-28 client that did not declare the extension the same way", async () => {
    const sent = await callStateless(gw.url, 1, 'always__required', { ms: 200 }, {}, auth(ALICE), statelessMeta({}));
    expect(resultOf(sent)).toMatchObject({ resultType: 'complete', content: [{ type: 'text', text: 'rendered in 200 ms' }] });
  });

  it("the client's cancel cancels the task upstream", async () => {
    const client = await connectClient(gw.url, {}, undefined, auth(ALICE));
    try {
      const before = await always.stats();
      const abort = new AbortController();
      const pending = client.callTool({ name: 'always__required', arguments: { ms: 60_000 } }, undefined, { signal: abort.signal });
      await poll(async () => ((await always.stats()).tasksCreated as number) > (before.tasksCreated as number) || undefined, 'the task upstream', 5_000);
      abort.abort();
      await expect(pending).rejects.toThrow();
      await poll(async () => (await always.stats()).taskCancels > before.taskCancels || undefined, 'tasks/cancel upstream', 5_000);
    } finally {
      await client.close();
    }
  });

  it('is bounded by maxTotalTimeoutMs: the task is cancelled and the call times out', async () => {
    const before = (await always.stats()).taskCancels;
    const sent = await callStateless(gw.url, 1, 'bounded__required', { ms: 60_000 }, {}, auth(ALICE), statelessMeta({}));
    expect(sent.body?.error).toMatchObject({ code: -32603, data: { reason: 'upstream_timeout' } });
    await poll(async () => (await always.stats()).taskCancels > before || undefined, 'tasks/cancel upstream', 5_000);
  });
});

describe('tasks the gateway makes, with input', () => {
  it('an upstream with tasks: off is never made a task of', async () => {
    const answered = resultOf(await callStateless(gw.url, 1, 'plain__ask', {}, {}, auth(ALICE), WITH_TASKS));
    expect(answered).toMatchObject({ resultType: 'input_required' });
  });
});
