// The raw `<prefix>:<upstream task id>` form of a task id reaches only a task the caller's own
// upstream session made. A 2026-07-28 upstream keeps no session per principal (its tasks reach
// clients only under sealed handles), so the form reaches none of its tasks: Bob, naming Alice's
// task by it (the SEP-2663 fixture numbers its tasks task-1, task-2, ...), neither reads, waits
// on nor cancels it, and neither does Alice herself. A 2025-11-25 upstream's task (its own
// upstream session per client session) is still reached by it, and only by its session.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/auth/api-keys.js';
import { startGateway, upstream, type TestGateway } from '../helpers/gateway.js';
import { FIXTURES, NODE } from '../helpers/paths.js';
import { stopChild, waitForLine } from '../helpers/processes.js';
import { initializeRaw, sendIn, type RawSession } from '../helpers/raw-http.js';
import { callStateless, sendStateless, statelessMeta, statelessRequest } from '../helpers/stateless-wire.js';

const ALICE = 'alice-key-0123456789abcdef0123456789';
const BOB = 'bob-key-0123456789abcdef0123456789abc';
const WITH_TASKS = statelessMeta({ extensions: { 'io.modelcontextprotocol/tasks': {} } });
const NOT_FOUND = { code: -32602, message: 'Failed to retrieve task: Task not found' };

let fixture: ChildProcessWithoutNullStreams;
let fixtureBase: URL;
let gw: TestGateway;

beforeAll(async () => {
  fixture = spawn(NODE, [join(FIXTURES, 'tasks-server.mjs')], { stdio: 'pipe', env: { ...process.env, MODE: 'always', SEQUENTIAL_IDS: '1' } });
  const [, url] = await waitForLine(fixture, /^listening on (\S+)/);
  fixtureBase = new URL(url!);
  gw = await startGateway({
    auth: { apiKeys: [{ id: 'alice', hash: hashApiKey(ALICE) }, { id: 'bob', hash: hashApiKey(BOB) }] },
    sessions: { taskAfter: '20s' },
    upstreams: { always: { http: { url: url! } }, everything: upstream.everything() },
  });
});

afterAll(async () => {
  await gw?.close();
  if (fixture) await stopChild(fixture);
});

const stats = async (): Promise<{ taskCancels: number; gets: number }> => (await (await fetch(new URL('/stats', fixtureBase))).json()) as { taskCancels: number; gets: number };

/** The answer of one request in a 2025-11-25 session. */
async function ask(session: RawSession, id: number, method: string, params: Record<string, unknown>): Promise<Record<string, unknown>> {
  const reply = await sendIn(session, { jsonrpc: '2.0', id, method, params });
  const answer = reply.messages.find((m) => m.id === id);
  expect(answer, reply.text).toBeDefined();
  return answer as Record<string, unknown>;
}

/** A 2025-11-25 session (declaring the extension, which enables nothing there) with the fixture upstream open. */
async function sessionOf(key: string): Promise<RawSession> {
  const session = await initializeRaw(gw.url, { headers: { authorization: `Bearer ${key}` }, capabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } } });
  expect(await ask(session, 1, 'tools/call', { name: 'always__wait', arguments: { ms: 1 } })).toHaveProperty('result');
  return session;
}

describe('a 2026-07-28 upstream\'s task named by its raw id', () => {
  it('is not found for another principal: not read, not waited on, not cancelled', async () => {
    const created = await callStateless(gw.url, 1, 'always__render', { ms: 60_000 }, {}, { authorization: `Bearer ${ALICE}` }, WITH_TASKS);
    const handle = (created.body?.result as { taskId?: string } | undefined)?.taskId;
    expect(typeof handle, JSON.stringify(created.body)).toBe('string');
    const bob = await sessionOf(BOB);
    const before = await stats();
    for (const [i, method] of ['tasks/get', 'tasks/result', 'tasks/cancel'].entries()) {
      expect(await ask(bob, 10 + i, method, { taskId: 'always:task-1' }), method).toMatchObject({ error: NOT_FOUND });
    }
    expect(await stats()).toMatchObject({ taskCancels: before.taskCancels, gets: before.gets });
    // Alice's task runs on, under her handle.
    const hers = await sendStateless(gw.url, statelessRequest(2, 'tasks/get', { taskId: handle }, WITH_TASKS), { 'mcp-name': handle, authorization: `Bearer ${ALICE}` });
    expect(hers.body?.result).toMatchObject({ taskId: handle, status: 'working' });
    await sendStateless(gw.url, statelessRequest(3, 'tasks/cancel', { taskId: handle }, WITH_TASKS), { 'mcp-name': handle, authorization: `Bearer ${ALICE}` });
  });

  it('is not found for its own principal either: only its handle reaches it', async () => {
    const alice = await sessionOf(ALICE);
    const created = await ask(alice, 2, 'tools/call', { name: 'always__render', arguments: { ms: 60_000 }, task: {} });
    const handle = (created.result as { task: { taskId: string } }).task.taskId;
    const { tasksCreated } = (await (await fetch(new URL('/stats', fixtureBase))).json()) as { tasksCreated: number };
    expect(await ask(alice, 3, 'tasks/get', { taskId: `always:task-${tasksCreated}` })).toMatchObject({ error: NOT_FOUND });
    expect(await ask(alice, 4, 'tasks/get', { taskId: handle })).toMatchObject({ result: { taskId: handle, status: 'working' } });
    expect(await ask(alice, 5, 'tasks/cancel', { taskId: handle })).toMatchObject({ result: { taskId: handle, status: 'cancelled' } });
  });
});

describe('a 2025-11-25 upstream\'s task named by its raw id', () => {
  it('is reached by the session whose upstream session made it, and by no other', async () => {
    const alice = await initializeRaw(gw.url, { headers: { authorization: `Bearer ${ALICE}` } });
    const created = await ask(alice, 1, 'tools/call', { name: 'everything__simulate-research-query', arguments: { topic: 'raw ids' }, task: { ttl: 60_000 } });
    const taskId = (created.result as { task: { taskId: string } }).task.taskId;
    expect(taskId).toMatch(/^everything:/);
    expect(await ask(alice, 2, 'tasks/get', { taskId })).toMatchObject({ result: { taskId } });
    const bob = await initializeRaw(gw.url, { headers: { authorization: `Bearer ${BOB}` } });
    expect(await ask(bob, 1, 'tools/call', { name: 'everything__echo', arguments: { message: 'open' } })).toHaveProperty('result');
    const got = await ask(bob, 2, 'tasks/get', { taskId });
    expect(got.error, JSON.stringify(got)).toBeDefined();
    expect(await ask(alice, 3, 'tasks/cancel', { taskId })).toMatchObject({ result: { taskId, status: 'cancelled' } });
  });
});
