// A task's result reaches its client with its URIs namespaced as a tools/call's result's are,
// however the client reads it: a 2025-11-25 client's tasks/result under the handle, a 2026-07-28
// client's tasks/get carrying the result inline. Left bare, a link would name whatever an
// unprefixed upstream serves under that URI.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { join } from 'node:path';
import { CallToolResultSchema, CreateTaskResultSchema, GetTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { poll } from '../helpers/cli.js';
import { connectClient, startGateway, type TestGateway } from '../helpers/gateway.js';
import { FIXTURES, NODE } from '../helpers/paths.js';
import { stopChild, waitForLine } from '../helpers/processes.js';
import { callStateless, sendStateless, statelessMeta, statelessRequest, type Sent } from '../helpers/stateless-wire.js';

const WITH_TASKS = statelessMeta({ extensions: { 'io.modelcontextprotocol/tasks': {} } });
const LINKED = 'render+file:///report';
const DEADLINE_MS = 20_000;

let fixture: ChildProcessWithoutNullStreams;
let gw: TestGateway;

beforeAll(async () => {
  fixture = spawn(NODE, [join(FIXTURES, 'tasks-server.mjs')], { stdio: 'pipe', env: { ...process.env, MODE: 'always', LINK: '1' } });
  const [, url] = await waitForLine(fixture, /^listening on (\S+)/);
  gw = await startGateway({
    listen: { allowUnauthenticated: true },
    sessions: { taskAfter: '30s' },
    upstreams: { render: { http: { url: url! } }, core: { stdio: { command: NODE, args: [join(FIXTURES, 'spellings-server.mjs')] }, prefix: '' } },
  });
});

afterAll(async () => {
  await gw?.close();
  if (fixture) await stopChild(fixture);
});

/** The URI of the resource_link in a result's content. */
const linkOf = (result: unknown): unknown => ((result as { content?: { type: string; uri?: string }[] }).content ?? []).find((block) => block.type === 'resource_link')?.uri;

function resultOf(sent: Sent): Record<string, unknown> {
  expect(sent.body?.error, JSON.stringify(sent.body)).toBeUndefined();
  return sent.body!.result as Record<string, unknown>;
}

describe("a task's result", () => {
  it("read by a 2025-11-25 client's tasks/result under its handle", async () => {
    const client = await connectClient(gw.url);
    try {
      const created = await client.request({ method: 'tools/call', params: { name: 'render__render', arguments: { ms: 50 }, task: { ttl: 60_000 } } }, CreateTaskResultSchema);
      const { taskId } = created.task;
      await poll(async () => ((await client.request({ method: 'tasks/get', params: { taskId } }, GetTaskResultSchema)).status === 'completed' ? true : undefined), 'the task to complete', DEADLINE_MS, 50);
      const result = await client.request({ method: 'tasks/result', params: { taskId } }, CallToolResultSchema);
      expect(linkOf(result)).toBe(LINKED);
    } finally {
      await client.close();
    }
  });

  it("carried inline by a 2026-07-28 client's tasks/get", async () => {
    const created = resultOf(await callStateless(gw.url, 1, 'render__render', { ms: 50 }, {}, {}, WITH_TASKS));
    const handle = created.taskId as string;
    const done = await poll(async () => {
      const task = resultOf(await sendStateless(gw.url, statelessRequest(2, 'tasks/get', { taskId: handle }, WITH_TASKS), { 'mcp-name': handle }));
      return task.status === 'completed' ? task : undefined;
    }, 'the task to complete', DEADLINE_MS, 50);
    expect(linkOf(done.result)).toBe(LINKED);
  });
});
