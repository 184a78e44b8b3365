// A 2025-11-25 upstream's tasks, named by their raw `<prefix>:<task id>` form. Its timings reach
// clients bounded like every task's (a ttl a whole number of milliseconds, at least 0, or null;
// a poll interval within 100 ms to 5 s, or left out): in the CreateTaskResult, each tasks/list
// item, tasks/get and notifications/tasks/status, whichever revision the client speaks. And the
// raw form reaches only a task the gateway handed this session under it, of a tool the
// session's teams may call: a task of a tool a policy reload denied, or one the gateway made
// upstream itself (a task-only tool called plainly), is -32602 "Task not found", as unknown.
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/auth/api-keys.js';
import { configFromObject } from '../../src/config/load.js';
import { connectClient, recordNotifications, startGateway, textOf, type NotificationLog, type TestGateway } from '../helpers/gateway.js';
import { FIXTURES, NODE, ROOT } from '../helpers/paths.js';
import { callStateless, sendStateless, statelessMeta, statelessRequest } from '../helpers/stateless-wire.js';

const KEY = 'ops-key-0123456789abcdef0123456789ab';
const auth = { authorization: `Bearer ${KEY}` };
const WITH_TASKS = statelessMeta({ extensions: { 'io.modelcontextprotocol/tasks': {} } });
/** Any result, as it came (the SDK's result schemas would fill in what is missing). */
const AnyResult = z.object({}).passthrough();
const NOT_FOUND = { code: -32602, message: 'MCP error -32602: Failed to retrieve task: Task not found' };

/** The gateway's config: one 2025-11-25 upstream with tasks, one team whose rules `deny` narrows. */
const rawConfig = (deny: string[] = []) => ({
  auth: { apiKeys: [{ id: 'ops', hash: hashApiKey(KEY), team: 'ops' }] },
  teams: [{ name: 'ops', allow: ['*'], deny }],
  upstreams: { legacy: { stdio: { command: NODE, args: [join(FIXTURES, 'legacy-tasks-server.mjs')] } } },
});

let gw: TestGateway;

beforeAll(async () => {
  gw = await startGateway(rawConfig(), { logLevel: 'warn' });
});

afterAll(async () => {
  await gw?.close();
});

async function withClient<T>(body: (client: Client, notes: NotificationLog) => Promise<T>): Promise<T> {
  let notes: NotificationLog | undefined;
  const client = await connectClient(gw.url, {}, (c) => (notes = recordNotifications(c)), auth);
  try {
    return await body(client, notes!);
  } finally {
    await client.close();
  }
}

const ask = (client: Client, method: string, params: Record<string, unknown>) => client.request({ method, params }, AnyResult);
const makeTask = async (client: Client, tool: string): Promise<string> => ((await ask(client, 'tools/call', { name: tool, arguments: {}, task: { ttl: 60_000 } })).task as { taskId: string }).taskId;

describe("a 2025-11-25 upstream's task timings", () => {
  it('reach a 2025-11-25 client bounded: CreateTaskResult, notifications/tasks/status, tasks/list, tasks/get', async () => {
    await withClient(async (client, notes) => {
      // The upstream says ttl -5, pollInterval 0.
      const created = await ask(client, 'tools/call', { name: 'legacy__slow', arguments: {}, task: { ttl: 60_000 } });
      expect(created.task).toEqual(expect.objectContaining({ taskId: 'legacy:t-1', status: 'working', ttl: 0, pollInterval: 100 }));
      // ttl 2.5, pollInterval -3.
      const status = await notes.waitFor((n) => n.method === 'notifications/tasks/status', 'the task status notification');
      expect(status.params).toEqual(expect.objectContaining({ taskId: 'legacy:t-1', ttl: 3, pollInterval: 100 }));
      expect(await makeTask(client, 'legacy__slow')).toBe('legacy:t-2');
      // ttl 1.5 and pollInterval 1e9; then ttl "forever" and pollInterval "soon".
      const { tasks } = (await ask(client, 'tasks/list', {})) as { tasks: Record<string, unknown>[] };
      expect(tasks).toEqual([expect.objectContaining({ taskId: 'legacy:t-1', ttl: 2, pollInterval: 5_000 }), expect.objectContaining({ taskId: 'legacy:t-2', ttl: null })]);
      expect(tasks[1]).not.toHaveProperty('pollInterval');
      // ttl -1, pollInterval -7.
      expect(await ask(client, 'tasks/get', { taskId: 'legacy:t-1' })).toEqual(expect.objectContaining({ taskId: 'legacy:t-1', ttl: 0, pollInterval: 100 }));
    });
  });

  it('reach a 2026-07-28 client bounded, under its handle', async () => {
    const created = await callStateless(gw.url, 1, 'legacy__only-task', {}, {}, auth, WITH_TASKS);
    const task = created.body?.result as Record<string, unknown>;
    expect(task, JSON.stringify(created.body)).toMatchObject({ resultType: 'task', ttlMs: 0, pollIntervalMs: 100 });
    const handle = task.taskId as string;
    const got = await sendStateless(gw.url, statelessRequest(2, 'tasks/get', { taskId: handle }, WITH_TASKS), { 'mcp-name': handle, ...auth });
    expect(got.body?.result).toMatchObject({ taskId: handle, status: 'completed', ttlMs: 0, pollIntervalMs: 100 });
  });
});

describe("a 2025-11-25 upstream's task named by its raw id", () => {
  it('is not found once a policy reload denies the tool that made it; the other tools\' tasks still are', async () => {
    await withClient(async (client) => {
      const secret = await makeTask(client, 'legacy__secret');
      const slow = await makeTask(client, 'legacy__slow');
      expect(await ask(client, 'tasks/get', { taskId: secret })).toMatchObject({ taskId: secret, status: 'working' });
      gw.gateway.reload(configFromObject({ listen: { port: 0 }, health: { probeInterval: 0 }, ...rawConfig(['legacy__secret']) }, { file: join(ROOT, 'gateway.test.yaml'), env: {} }));
      try {
        for (const method of ['tasks/get', 'tasks/result', 'tasks/cancel']) {
          await expect(ask(client, method, { taskId: secret }), method).rejects.toMatchObject(NOT_FOUND);
        }
        expect(((await ask(client, 'tasks/list', {})).tasks as { taskId: string }[]).map((t) => t.taskId)).toEqual([slow]);
        expect(await ask(client, 'tasks/get', { taskId: slow })).toMatchObject({ taskId: slow, status: 'working' });
        expect(textOf(await ask(client, 'tasks/result', { taskId: slow }))).toBe('slow done');
        expect(await ask(client, 'tasks/cancel', { taskId: slow })).toMatchObject({ taskId: slow, status: 'cancelled' });
      } finally {
        gw.gateway.reload(configFromObject({ listen: { port: 0 }, health: { probeInterval: 0 }, ...rawConfig() }, { file: join(ROOT, 'gateway.test.yaml'), env: {} }));
      }
    });
  });

  it('that this replica did not hand the session (a fleet without affinity) reaches its task while the upstream is visible', async () => {
    await withClient(async (client) => {
      // The gateway makes the task upstream (legacy:t-1) for a plain call, polls it and answers its result.
      expect(textOf(await ask(client, 'tools/call', { name: 'legacy__only-task', arguments: {} }))).toBe('only-task done');
      expect(await ask(client, 'tasks/get', { taskId: 'legacy:t-1' })).toMatchObject({ taskId: 'legacy:t-1', status: 'completed' });
      gw.gateway.reload(configFromObject({ listen: { port: 0 }, health: { probeInterval: 0 }, ...rawConfig(['upstream:legacy']) }, { file: join(ROOT, 'gateway.test.yaml'), env: {} }));
      try {
        await expect(ask(client, 'tasks/get', { taskId: 'legacy:t-1' })).rejects.toMatchObject(NOT_FOUND);
      } finally {
        gw.gateway.reload(configFromObject({ listen: { port: 0 }, health: { probeInterval: 0 }, ...rawConfig() }, { file: join(ROOT, 'gateway.test.yaml'), env: {} }));
      }
    });
  });

});
