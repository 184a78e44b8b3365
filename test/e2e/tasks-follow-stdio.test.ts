// A 2026-07-28 client's subscriptions/listen following an upstream's task when that upstream is
// a stdio child speaking 2026-07-28 (test/fixtures/tasks-server.mjs stdio): one per session, and
// one shared by every session (`sharing: shared`). On stdio every listen shares one channel, so
// the child's acknowledgement and its notifications/tasks are told apart only by the
// subscription id in `_meta`: the gateway's listen upstream must hear its own acknowledgement
// (else the client waits for it, and is agreed nothing), and the task's notifications must reach
// the listen that follows it and no other session or principal the child serves. The 2026-07-28
// client is raw JSON-RPC over HTTP, as in tasks-extension.test.ts (the v2 client SDK 2.4.0's
// listen filter has no taskIds); the 2025-11-25 client, whose task the gateway follows for its
// GET stream, is the SDK v1 client.
import { join } from 'node:path';
import { CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/auth/api-keys.js';
import { connectClient, endSessions, recordNotifications, startGateway, type NotificationLog, type TestGateway } from '../helpers/gateway.js';
import { FIXTURES, NODE } from '../helpers/paths.js';
import { postRaw } from '../helpers/raw-http.js';
import { SseReader, type JsonRpc } from '../helpers/sse-reader.js';
import { callStateless, statelessMeta, statelessRequest } from '../helpers/stateless-wire.js';

const ALICE = 'alice-key-0123456789abcdef0123456789';
const BOB = 'bob-key-0123456789abcdef0123456789abc';
const WITH_TASKS = statelessMeta({ extensions: { 'io.modelcontextprotocol/tasks': {} } });
/** Well under the gateway's 10 s wait for an upstream's acknowledgement: it must come at once. */
const ACK_WITHIN_MS = 3_000;
const child = (): Record<string, unknown> => ({ command: NODE, args: [join(FIXTURES, 'tasks-server.mjs'), 'stdio'], env: { MODE: 'always', SEQUENTIAL_IDS: '1' } });

let gw: TestGateway;

beforeAll(async () => {
  gw = await startGateway({
    auth: { apiKeys: [{ id: 'alice', hash: hashApiKey(ALICE) }, { id: 'bob', hash: hashApiKey(BOB) }] },
    sessions: { taskAfter: '20s' },
    upstreams: { own: { stdio: child() }, shared: { stdio: child(), sharing: 'shared' } },
  });
});

afterAll(async () => {
  await gw?.close();
});

const auth = (key: string) => ({ authorization: `Bearer ${key}` });

/** A task of `key`'s at `upstream`, its handle. */
async function startTask(upstream: string, ms: number, key: string): Promise<string> {
  const sent = await callStateless(gw.url, 1, `${upstream}__render`, { ms }, {}, auth(key), WITH_TASKS);
  expect(sent.body?.error, JSON.stringify(sent.body)).toBeUndefined();
  const result = sent.body!.result as Record<string, unknown>;
  expect(result).toMatchObject({ resultType: 'task', status: 'working' });
  return result.taskId as string;
}

/** A subscriptions/listen of `key` naming `taskIds`, its acknowledgement read (within ACK_WITHIN_MS of the POST). */
async function listen(id: string, taskIds: string[], key: string, signal: AbortSignal): Promise<{ reader: SseReader; ack: JsonRpc | undefined }> {
  const started = Date.now();
  const request = statelessRequest(id, 'subscriptions/listen', { notifications: { taskIds } }, WITH_TASKS);
  const res = await postRaw(gw.url, request, { protocolVersion: '2026-07-28', headers: { ...auth(key), 'mcp-method': 'subscriptions/listen' }, signal });
  expect(res.status).toBe(200);
  const reader = new SseReader(res);
  const ack = await reader.nextMessage(ACK_WITHIN_MS, 'the acknowledgement');
  expect(Date.now() - started, 'the acknowledgement came late').toBeLessThan(ACK_WITHIN_MS);
  return { reader, ack };
}

const completed = (message: JsonRpc): boolean => message.method === 'notifications/tasks' && message.params?.status === 'completed';

describe("following a 2026-07-28 stdio child's task", () => {
  it('a per-session child: the listen is acknowledged at once with the handle, and hears the task to its end', async () => {
    const handle = await startTask('own', 1_500, ALICE);
    const controller = new AbortController();
    try {
      const { reader, ack } = await listen('sub-own', [handle], ALICE, controller.signal);
      expect(ack).toMatchObject({ method: 'notifications/subscriptions/acknowledged', params: { notifications: { taskIds: [handle] } } });
      const notes = await reader.messagesUntil(completed, 'the completed task', 10_000);
      expect(notes.every((m) => m.method === 'notifications/tasks' && m.params?.taskId === handle)).toBe(true);
      expect(notes.at(-1)).toMatchObject({ params: { taskId: handle, result: { content: [{ type: 'text', text: 'rendered in 1500 ms' }] }, _meta: { 'io.modelcontextprotocol/subscriptionId': 'sub-own' } } });
    } finally {
      controller.abort();
    }
  });

  it("a shared child: each principal's listen is acknowledged with its own handle only, and hears only its own task", async () => {
    // Both tasks on the one child, both listens open on its one channel at once.
    const [mine, theirs] = await Promise.all([startTask('shared', 1_500, ALICE), startTask('shared', 2_000, BOB)]);
    const controller = new AbortController();
    try {
      const [alice, bob] = await Promise.all([listen('sub-a', [mine, theirs], ALICE, controller.signal), listen('sub-b', [theirs, mine], BOB, controller.signal)]);
      expect(alice.ack).toMatchObject({ method: 'notifications/subscriptions/acknowledged', params: { notifications: { taskIds: [mine] } } });
      expect(bob.ack).toMatchObject({ method: 'notifications/subscriptions/acknowledged', params: { notifications: { taskIds: [theirs] } } });
      const aliceHeard = await alice.reader.messagesUntil(completed, "alice's completed task", 10_000);
      const bobHeard = await bob.reader.messagesUntil(completed, "bob's completed task", 10_000);
      expect(aliceHeard.every((m) => m.method === 'notifications/tasks' && m.params?.taskId === mine)).toBe(true);
      expect(bobHeard.every((m) => m.method === 'notifications/tasks' && m.params?.taskId === theirs)).toBe(true);
      expect(aliceHeard.at(-1)).toMatchObject({ params: { result: { content: [{ text: 'rendered in 1500 ms' }] }, _meta: { 'io.modelcontextprotocol/subscriptionId': 'sub-a' } } });
      expect(bobHeard.at(-1)).toMatchObject({ params: { result: { content: [{ text: 'rendered in 2000 ms' }] }, _meta: { 'io.modelcontextprotocol/subscriptionId': 'sub-b' } } });
    } finally {
      controller.abort();
    }
  });

  it("a shared child: a 2025-11-25 client's GET stream hears its own task's status, never another client's", async () => {
    const logs: NotificationLog[] = [];
    const clients = await Promise.all([ALICE, BOB].map((key) => connectClient(gw.url, {}, (c) => void logs.push(recordNotifications(c)), auth(key))));
    try {
      const created = await Promise.all(clients.map((client, i) => client.request({ method: 'tools/call', params: { name: 'shared__render', arguments: { ms: 600 + 400 * i }, task: {} } }, CreateTaskResultSchema)));
      const ids = created.map((c) => c.task.taskId);
      for (const [i, log] of logs.entries()) {
        await log.waitFor((n) => n.method === 'notifications/tasks/status' && n.params?.taskId === ids[i] && n.params?.status === 'completed', `client ${i}'s completed status`, 10_000);
        const statuses = log.all.filter((n) => n.method.startsWith('notifications/tasks'));
        expect(statuses.every((n) => n.method === 'notifications/tasks/status' && n.params?.taskId === ids[i])).toBe(true);
      }
    } finally {
      await endSessions(clients);
    }
  });
});
