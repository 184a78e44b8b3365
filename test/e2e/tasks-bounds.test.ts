// Upstream tasks within bounds. A 2025-11-25 client's tasks/result of a 2026-07-28 upstream's
// task (polled by the gateway) ends at the upstream's maxTotalTimeoutMs with -32001, and stops
// polling when the client cancels it; of a 2025-11-25 upstream's task it blocks past the
// upstream's timeoutMs until the task ends (tasks.mdx), bounded by maxTotalTimeoutMs. A hostile
// 2026-07-28 upstream (the SEP-2663 fixture behind a rewriting proxy: task ids 7,000 characters
// long on asking, a negative ttlMs, pollIntervalMs 0) gets no handle for such an id (the client
// an error, the task a cancel), and clients get its timings bounded.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { poll } from '../helpers/cli.js';
import { startGateway, upstream, type TestGateway } from '../helpers/gateway.js';
import { FIXTURES, NODE } from '../helpers/paths.js';
import { stopChild, waitForLine } from '../helpers/processes.js';
import { initializeRaw, postRaw, sendIn, type RawSession } from '../helpers/raw-http.js';
import { callStateless, sendStateless, statelessMeta, statelessRequest } from '../helpers/stateless-wire.js';

const WITH_TASKS = statelessMeta({ extensions: { 'io.modelcontextprotocol/tasks': {} } });
/** What the proxy appends to a task id when the call's arguments say `long: true`. */
const PAD = 'x'.repeat(7_000);

let fixture: ChildProcessWithoutNullStreams;
let fixtureBase: URL;
let proxy: http.Server;
let gw: TestGateway;

/** Every task id and timing the fixture answers, as a hostile upstream would say them. */
function hostile(body: Record<string, unknown>, long: boolean): Record<string, unknown> {
  const result = body.result as Record<string, unknown> | undefined;
  if (!result || typeof result.taskId !== 'string') return body;
  return { ...body, result: { ...result, taskId: long ? result.taskId + PAD : result.taskId, ttlMs: -5, pollIntervalMs: 0 } };
}

/** A proxy in front of the fixture: task ids padded on asking (and unpadded on the way in), timings made hostile. */
function startProxy(target: URL): Promise<URL> {
  proxy = http.createServer(async (req, res) => {
    let text = '';
    for await (const chunk of req) text += chunk;
    const message = text ? (JSON.parse(text) as Record<string, unknown>) : {};
    const params = (message.params ?? {}) as Record<string, unknown>;
    const long = (params.arguments as Record<string, unknown> | undefined)?.long === true || (typeof params.taskId === 'string' && params.taskId.endsWith(PAD));
    if (typeof params.taskId === 'string') params.taskId = params.taskId.replace(PAD, '');
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) if (typeof value === 'string' && !['host', 'content-length', 'connection'].includes(name)) headers[name] = name === 'mcp-name' ? value.replace(PAD, '') : value;
    const answer = await fetch(new URL(req.url ?? '/', target), { method: req.method, headers, ...(req.method === 'POST' ? { body: JSON.stringify(message) } : {}) });
    const type = answer.headers.get('content-type') ?? '';
    res.writeHead(answer.status, { 'content-type': type || 'application/json' });
    if (!type.startsWith('text/event-stream')) return void res.end(type.startsWith('application/json') ? JSON.stringify(hostile((await answer.json()) as Record<string, unknown>, long)) : await answer.text());
    // A listen's stream, passed on as it comes until either side ends it.
    res.flushHeaders();
    res.on('close', () => void answer.body?.cancel().catch(() => {}));
    try {
      for await (const chunk of answer.body ?? []) res.write(chunk);
    } catch {
      // Either side went away.
    }
    res.end();
  });
  return new Promise((resolve) => proxy.listen(0, '127.0.0.1', () => resolve(new URL(`http://127.0.0.1:${(proxy.address() as AddressInfo).port}/mcp`))));
}

beforeAll(async () => {
  fixture = spawn(NODE, [join(FIXTURES, 'tasks-server.mjs')], { stdio: 'pipe', env: { ...process.env, MODE: 'always' } });
  const [, url] = await waitForLine(fixture, /^listening on (\S+)/);
  fixtureBase = new URL(url!);
  const proxied = await startProxy(fixtureBase);
  gw = await startGateway({
    sessions: { taskAfter: '20s' },
    upstreams: {
      always: { http: { url: url! }, timeoutMs: 1_000, maxTotalTimeoutMs: 2_000 },
      hostile: { http: { url: proxied.href } },
      // A 2025-11-25 upstream whose task (a research query, about 4 s) outlives its timeoutMs; and one whose maxTotalTimeoutMs it outlives.
      slow: { ...upstream.everything(), timeoutMs: 1_500 },
      capped: { ...upstream.everything(), timeoutMs: 500, maxTotalTimeoutMs: 2_000 },
    },
  });
});

afterAll(async () => {
  await gw?.close();
  proxy?.closeAllConnections();
  await new Promise((resolve) => (proxy ? proxy.close(resolve) : resolve(undefined)));
  if (fixture) await stopChild(fixture);
});

const stats = async (): Promise<{ gets: number; taskCancels: number; tasksCreated: number }> => (await (await fetch(new URL('/stats', fixtureBase))).json()) as { gets: number; taskCancels: number; tasksCreated: number };

async function ask(session: RawSession, id: number, method: string, params: Record<string, unknown>, timeoutMs = 10_000): Promise<Record<string, unknown>> {
  const reply = await sendIn(session, { jsonrpc: '2.0', id, method, params }, { timeoutMs });
  const answer = reply.messages.find((m) => m.id === id);
  expect(answer, reply.text).toBeDefined();
  return answer as Record<string, unknown>;
}

async function legacyTask(session: RawSession, name: string, args: Record<string, unknown>): Promise<Record<string, unknown>> {
  const created = await ask(session, 1, 'tools/call', { name, arguments: args, task: { ttl: 60_000 } });
  expect(created.result, JSON.stringify(created)).toHaveProperty('task');
  return (created.result as { task: Record<string, unknown> }).task;
}

/** Upstream tasks/get made in `ms` (nothing to await: the count must stay as it is). */
async function getsWithin(ms: number): Promise<number> {
  const before = (await stats()).gets;
  await new Promise((resolve) => setTimeout(resolve, ms));
  return (await stats()).gets - before;
}

describe('tasks/result of a 2026-07-28 upstream\'s task for a 2025-11-25 client', () => {
  it('ends at the upstream\'s maxTotalTimeoutMs with -32001, and the polling with it', async () => {
    const session = await initializeRaw(gw.url);
    const { taskId } = await legacyTask(session, 'always__render', { ms: 600_000 });
    const started = Date.now();
    const answer = await ask(session, 2, 'tasks/result', { taskId }, 8_000);
    expect(answer).toMatchObject({ error: { code: -32001, message: "The upstream's task did not end within 2000 ms" } });
    expect(Date.now() - started).toBeLessThan(4_000);
    expect(await getsWithin(600)).toBe(0);
    // The task itself runs on: tasks/result timing out ends only the wait.
    expect(await ask(session, 3, 'tasks/get', { taskId })).toMatchObject({ result: { taskId, status: 'working' } });
    await ask(session, 4, 'tasks/cancel', { taskId });
  });

  it('stops polling when the client cancels it', async () => {
    const session = await initializeRaw(gw.url);
    const { taskId } = await legacyTask(session, 'always__render', { ms: 600_000 });
    const before = (await stats()).gets;
    const waiting = sendIn(session, { jsonrpc: '2.0', id: 2, method: 'tasks/result', params: { taskId } }, { timeoutMs: 8_000 }).catch((err: Error) => err);
    await poll(async () => ((await stats()).gets > before + 1 ? true : undefined), 'the gateway to poll the task', 5_000);
    const cancelled = await postRaw(gw.url, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 2, reason: 'enough' } }, { headers: session.headers });
    expect(cancelled.status).toBe(202);
    await poll(async () => ((await getsWithin(300)) === 0 ? true : undefined), 'the polling to stop', 1_500, 0);
    await ask(session, 3, 'tasks/cancel', { taskId });
    await waiting;
  });
});

describe('tasks/result of a 2025-11-25 upstream\'s task', () => {
  it('blocks past the upstream\'s timeoutMs until the task ends', async () => {
    const session = await initializeRaw(gw.url);
    const { taskId } = await legacyTask(session, 'slow__simulate-research-query', { topic: 'bounds' });
    const started = Date.now();
    const answer = await ask(session, 2, 'tasks/result', { taskId }, 20_000);
    expect(JSON.stringify(answer.result), JSON.stringify(answer)).toContain('Research Report');
    expect(Date.now() - started).toBeGreaterThan(1_500);
  });

  it('is bounded by the upstream\'s maxTotalTimeoutMs', async () => {
    const session = await initializeRaw(gw.url);
    const { taskId } = await legacyTask(session, 'capped__simulate-research-query', { topic: 'bounds' });
    const answer = await ask(session, 2, 'tasks/result', { taskId }, 20_000);
    expect(answer).toMatchObject({ error: { code: -32001 } });
    expect((answer.error as { message: string }).message).toMatch(/^upstream capped did not answer tasks\/result within 2\d{3} ms$/);
  });
});

describe('a hostile 2026-07-28 upstream\'s task', () => {
  it('with a task id too long for a handle: an error for the client, a cancel for the task', async () => {
    const before = await stats();
    const created = await callStateless(gw.url, 1, 'hostile__render', { ms: 60_000, long: true }, {}, {}, WITH_TASKS);
    expect(created.body?.error, JSON.stringify(created.body).slice(0, 300)).toMatchObject({ code: -32603, message: 'upstream hostile answered with a task id of 7036 characters (at most 1024); the gateway asked it to cancel the task', data: { reason: 'upstream_unavailable' } });
    const session = await initializeRaw(gw.url);
    const legacy = await ask(session, 1, 'tools/call', { name: 'hostile__render', arguments: { ms: 60_000, long: true }, task: {} });
    expect(legacy.error).toMatchObject({ code: -32005, message: 'upstream hostile answered with a task id of 7036 characters (at most 1024); the gateway asked it to cancel the task' });
    await poll(async () => ((await stats()).taskCancels === before.taskCancels + 2 ? true : undefined), 'both tasks cancelled upstream', 5_000);
    expect((await stats()).tasksCreated).toBe(before.tasksCreated + 2);
  });

  it('reaches clients with its ttl at least 0 and its poll interval within 100 ms to 5 s', async () => {
    const created = await callStateless(gw.url, 1, 'hostile__render', { ms: 60_000 }, {}, {}, WITH_TASKS);
    const task = created.body?.result as Record<string, unknown>;
    expect(task).toMatchObject({ resultType: 'task', status: 'working', ttlMs: 0, pollIntervalMs: 100 });
    const handle = task.taskId as string;
    const got = await sendStateless(gw.url, statelessRequest(2, 'tasks/get', { taskId: handle }, WITH_TASKS), { 'mcp-name': handle });
    expect(got.body?.result).toMatchObject({ taskId: handle, ttlMs: 0, pollIntervalMs: 100 });
    await sendStateless(gw.url, statelessRequest(3, 'tasks/cancel', { taskId: handle }, WITH_TASKS), { 'mcp-name': handle });

    const session = await initializeRaw(gw.url);
    const legacy = await legacyTask(session, 'hostile__render', { ms: 60_000 });
    expect(legacy).toMatchObject({ status: 'working', ttl: 0, pollInterval: 100 });
    expect(await ask(session, 2, 'tasks/get', { taskId: legacy.taskId })).toMatchObject({ result: { ttl: 0, pollInterval: 100 } });
    expect(await ask(session, 3, 'tasks/cancel', { taskId: legacy.taskId })).toMatchObject({ result: { status: 'cancelled', ttl: 0, pollInterval: 100 } });
  });
});
