// Who asks for a task, in which revision (SEP-2663 "Compatibility with 2025-11-25 tasks"): under
// 2026-07-28 the old `task` parameter of tools/call is removed (a server ignores it, never an
// opt-in) and only the extension in the request's capabilities lets a task come back, at the
// server's discretion; under 2025-11-25 the extension is not defined (declaring it enables
// nothing) and only `task` asks for one. And server/discover advertises the extension, never the
// legacy `tasks` capability. Upstreams: server-everything (2025-11-25: echo, and
// simulate-research-query, which runs only as a task) and the SEP-2663 fixture (2026-07-28,
// MODE=always: a task for every call of a client that declared the extension).
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CallToolResultSchema, CreateTaskResultSchema, type ClientCapabilities } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/auth/api-keys.js';
import { poll } from '../helpers/cli.js';
import { connectClient, startGateway, textOf, upstream, type TestGateway } from '../helpers/gateway.js';
import { FIXTURES, NODE } from '../helpers/paths.js';
import { stopChild, waitForLine } from '../helpers/processes.js';
import { callStateless, sendStateless, statelessMeta, statelessRequest, type Sent } from '../helpers/stateless-wire.js';

const ALICE = 'alice-key-0123456789abcdef0123456789';
const EXT = { 'io.modelcontextprotocol/tasks': {} };
const WITH_TASKS = statelessMeta({ extensions: EXT });
const WITHOUT = statelessMeta({});
/** The old parameter, as a 2025-11-25 client sends it. */
const LEGACY_TASK = { task: { ttl: 60_000 } };
/** server-everything's research runs four one-second stages; this bounds every wait for it. */
const DEADLINE_MS = 20_000;
/** Any result, as it came (the SDK's result schemas would fill in what is missing). */
const AnyResult = z.object({}).passthrough();

let fixture: ChildProcessWithoutNullStreams;
let gw: TestGateway;

beforeAll(async () => {
  fixture = spawn(NODE, [join(FIXTURES, 'tasks-server.mjs')], { stdio: 'pipe', env: { ...process.env, MODE: 'always' } });
  const [, url] = await waitForLine(fixture, /^listening on (\S+)/);
  gw = await startGateway({
    auth: { apiKeys: [{ id: 'alice', hash: hashApiKey(ALICE) }] },
    // The gateway's own tasks wait longer than these calls take.
    sessions: { taskAfter: '30s' },
    upstreams: { everything: upstream.everything(), render: { http: { url: url! } } },
  });
});

afterAll(async () => {
  await gw?.close();
  if (fixture) await stopChild(fixture);
});

const auth = { authorization: `Bearer ${ALICE}` };

function resultOf(sent: Sent): Record<string, unknown> {
  expect(sent.body?.error, JSON.stringify(sent.body)).toBeUndefined();
  return sent.body!.result as Record<string, unknown>;
}

async function withClient<T>(capabilities: ClientCapabilities, body: (client: Client) => Promise<T>): Promise<T> {
  const client = await connectClient(gw.url, capabilities, undefined, auth);
  try {
    return await body(client);
  } finally {
    await client.close();
  }
}

describe('a 2026-07-28 request carrying the old `task` parameter', () => {
  it('of a client without the extension: a plain tool answers as usual', async () => {
    const result = resultOf(await callStateless(gw.url, 1, 'everything__echo', { message: 'hi' }, LEGACY_TASK, auth, WITHOUT));
    expect(result).toMatchObject({ resultType: 'complete', content: [{ type: 'text', text: 'Echo: hi' }] });
    expect(result.task).toBeUndefined();
  });

  it('of a client without the extension: a tool that runs only as a task answers its result, never a task', async () => {
    const sent = await callStateless(gw.url, 2, 'everything__simulate-research-query', { topic: 'opt-in' }, LEGACY_TASK, auth, WITHOUT);
    const result = resultOf(sent);
    expect(result.task).toBeUndefined();
    expect(result).toMatchObject({ resultType: 'complete' });
    expect(textOf(result)).toContain('opt-in');
  }, DEADLINE_MS);

  it('of a client with the extension: not a switch for a task at once (a quick call is answered as it is)', async () => {
    const result = resultOf(await callStateless(gw.url, 3, 'everything__echo', { message: 'now' }, LEGACY_TASK, auth, WITH_TASKS));
    expect(result).toMatchObject({ resultType: 'complete', content: [{ type: 'text', text: 'Echo: now' }] });
    expect(result.task).toBeUndefined();
  });
});

describe('a task the gateway makes for a client with the extension, without `task`', () => {
  it('comes of a call still running after taskAfter; input it asks for later is input_required, answered by tasks/update', async () => {
    const asking = statelessMeta({ extensions: EXT, elicitation: { form: {} } }, 'asking-client');
    const late = await startGateway({
      auth: { apiKeys: [{ id: 'alice', hash: hashApiKey(ALICE) }] },
      sessions: { taskAfter: '200ms' },
      upstreams: { late: { stdio: { command: NODE, args: [join(FIXTURES, 'late-ask-server.mjs')] } } },
    });
    try {
      const task = (method: string, taskId: string, extra: Record<string, unknown> = {}): Promise<Sent> =>
        sendStateless(late.url, statelessRequest(2, method, { taskId, ...extra }, asking), { 'mcp-name': taskId, ...auth });
      const until = (taskId: string, status: string): Promise<Record<string, unknown>> =>
        poll(async () => {
          const got = resultOf(await task('tasks/get', taskId));
          return got.status === status ? got : undefined;
        }, `the task ${status}`, DEADLINE_MS, 100);
      const created = resultOf(await callStateless(late.url, 1, 'late__ask-later', { ms: 1_000 }, {}, auth, asking));
      expect(created).toMatchObject({ resultType: 'task', status: 'working' });
      const taskId = created.taskId as string;
      const waiting = await until(taskId, 'input_required');
      const [key, request] = Object.entries(waiting.inputRequests as Record<string, { method: string }>)[0]!;
      expect(request).toMatchObject({ method: 'elicitation/create' });
      expect(resultOf(await task('tasks/update', taskId, { inputResponses: { [key]: { action: 'accept', content: { name: 'Ada' } } } }))).toMatchObject({ resultType: 'complete' });
      expect(await until(taskId, 'completed')).toMatchObject({ result: { content: [{ type: 'text', text: 'hello Ada' }] } });
    } finally {
      await late.close();
    }
  }, DEADLINE_MS);
});

describe('a 2025-11-25 client that declares the Tasks extension in its capabilities', () => {
  it('gets the result of a tool that runs only as a task when it sent no `task`', async () => {
    await withClient({ extensions: EXT } as ClientCapabilities, async (client) => {
      const result = await client.request({ method: 'tools/call', params: { name: 'everything__simulate-research-query', arguments: { topic: 'sessions' } } }, AnyResult, { timeout: DEADLINE_MS });
      expect(result.task).toBeUndefined();
      expect(textOf(CallToolResultSchema.parse(result))).toContain('sessions');
    });
  }, DEADLINE_MS);

  it("gets the result of a 2026-07-28 upstream's call when it sent no `task`", async () => {
    await withClient({ extensions: EXT } as ClientCapabilities, async (client) => {
      const result = await client.request({ method: 'tools/call', params: { name: 'render__render', arguments: { ms: 50 } } }, AnyResult, { timeout: DEADLINE_MS });
      expect(result.task).toBeUndefined();
      expect(textOf(CallToolResultSchema.parse(result))).toBe('rendered in 50 ms');
    });
  });

  it('still gets a task when it sends `task`', async () => {
    await withClient({ extensions: EXT } as ClientCapabilities, async (client) => {
      const created = await client.request({ method: 'tools/call', params: { name: 'everything__simulate-research-query', arguments: { topic: 'asked' }, ...LEGACY_TASK } }, CreateTaskResultSchema);
      expect(created.task).toMatchObject({ status: 'working' });
      await client.request({ method: 'tasks/cancel', params: { taskId: created.task.taskId } }, AnyResult);
    });
  });
});

describe('the capabilities each revision is told', () => {
  it('server/discover declares the extension, not the legacy `tasks` capability', async () => {
    const result = resultOf(await sendStateless(gw.url, statelessRequest(4, 'server/discover', {}, WITH_TASKS), auth));
    const capabilities = result.capabilities as Record<string, unknown>;
    expect(capabilities).toMatchObject({ tools: {}, extensions: EXT });
    expect(capabilities).not.toHaveProperty('tasks');
  });

  it('initialize (2025-11-25) still advertises the legacy `tasks` capability of its upstreams', async () => {
    await withClient({}, async (client) => {
      expect(client.getServerCapabilities()?.tasks).toMatchObject({ requests: { tools: { call: {} } } });
    });
  });
});
