// Anonymous 2026-07-28 clients (no auth, as the bundled gateway.yaml serves them) that declared
// the Tasks extension, calling a 2025-11-25 upstream's tool that runs only as a task
// (server-everything's simulate-research-query, about 4 s). Each anonymous request gets a
// session of its own, ended with it, and with it its own stdio child: the upstream's task dies
// with that child, so the gateway must not hand it out. The call becomes a task of the
// gateway's, which follows the upstream's task to its end in the request's own session:
// tasks/get reaches it seconds later and gets its result; its input (an ambiguous query asks
// for a clarification) is asked with inputRequests and answered with tasks/update; tasks/cancel
// ends it. So over HTTP, where the request's upstream session is closed after it. A shared child
// outlives requests: its task reaches the client too.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { poll } from '../helpers/cli.js';
import { startOwnEverything, type OwnEverything } from '../helpers/everything-own.js';
import { startGateway, upstream, type TestGateway } from '../helpers/gateway.js';
import { callStateless, sendStateless, statelessMeta, statelessRequest, type Sent } from '../helpers/stateless-wire.js';

const EXT = { 'io.modelcontextprotocol/tasks': {} };
const WITH_TASKS = statelessMeta({ extensions: EXT });
/** A client that can also answer elicitations (the upstream is told it can, so an ambiguous query asks). */
const ASKING = statelessMeta({ extensions: EXT, elicitation: { form: {} } }, 'asking-client');
const DEADLINE_MS = 20_000;
const TERMINAL = ['completed', 'failed', 'cancelled'];

let gw: TestGateway;
/** server-everything's own Streamable HTTP server: an upstream session (and its tasks) per client session, closed with it. */
let own: OwnEverything;

beforeAll(async () => {
  own = await startOwnEverything();
  gw = await startGateway({
    upstreams: {
      // As the bundled gateway.yaml has it: a child per session, one spawned ahead.
      everything: { ...upstream.everything(), stateful: true, warm: 1 },
      shared: { ...upstream.everything(), sharing: 'shared' },
      remote: upstream.http(own.url),
    },
  });
});

afterAll(async () => {
  await gw?.close();
  await own?.close();
});

function resultOf(sent: Sent): Record<string, unknown> {
  expect(sent.body?.error, JSON.stringify(sent.body)).toBeUndefined();
  return sent.body!.result as Record<string, unknown>;
}

const send = (method: string, params: Record<string, unknown>, meta = WITH_TASKS): Promise<Sent> => sendStateless(gw.url, statelessRequest(2, method, params, meta), { 'mcp-name': params.taskId as string });
const get = async (taskId: string, meta = WITH_TASKS): Promise<Record<string, unknown>> => resultOf(await send('tasks/get', { taskId }, meta));

/** Polls the task as a client does, every status it went through, until `until` holds of one. */
async function follow(taskId: string, until: (task: Record<string, unknown>) => boolean, meta = WITH_TASKS): Promise<{ task: Record<string, unknown>; seen: string[] }> {
  const seen: string[] = [];
  const task = await poll(
    async () => {
      const task = await get(taskId, meta);
      if (seen.at(-1) !== task.status) seen.push(task.status as string);
      return until(task) ? task : undefined;
    },
    `task ${taskId.slice(0, 12)}…`,
    DEADLINE_MS,
    250,
  );
  return { task, seen };
}

describe("an anonymous 2026-07-28 client of a per-session 2025-11-25 upstream's task-only tool", () => {
  it('gets a task that tasks/get reaches while it runs and seconds later, to its result', async () => {
    const created = resultOf(await callStateless(gw.url, 1, 'everything__simulate-research-query', { topic: 'anonymity' }, {}, {}, WITH_TASKS));
    expect(created).toMatchObject({ resultType: 'task', status: 'working' });
    const taskId = created.taskId as string;
    const started = Date.now();
    const { task, seen } = await follow(taskId, (t) => TERMINAL.includes(t.status as string));
    // The research takes four stages of a second: the last tasks/get came seconds after the call.
    expect(Date.now() - started).toBeGreaterThan(2_000);
    expect(seen[0]).toBe('working');
    expect(task).toMatchObject({ resultType: 'complete', taskId, status: 'completed', result: { content: [{ type: 'text' }] } });
    expect(JSON.stringify(task.result)).toContain('anonymity');
  });

  it('asks the input the task needs as inputRequests; tasks/update answers it and the task completes with the answer', async () => {
    const created = resultOf(await callStateless(gw.url, 1, 'everything__simulate-research-query', { topic: 'python', ambiguous: true }, {}, {}, ASKING));
    expect(created).toMatchObject({ resultType: 'task' });
    const taskId = created.taskId as string;
    const { task: asking } = await follow(taskId, (t) => t.status === 'input_required' || TERMINAL.includes(t.status as string), ASKING);
    expect(asking.status).toBe('input_required');
    const [key, request] = Object.entries(asking.inputRequests as Record<string, Record<string, unknown>>)[0]!;
    expect(request).toMatchObject({ method: 'elicitation/create', params: { message: expect.stringContaining('python') } });
    // The 2025-11-25 related-task metadata names the upstream's own task, which the client never sees.
    expect(JSON.stringify(request)).not.toContain('related-task');
    expect(resultOf(await send('tasks/update', { taskId, inputResponses: { [key]: { action: 'accept', content: { interpretation: 'snake' } } } }, ASKING))).toMatchObject({ resultType: 'complete' });
    const { task: done } = await follow(taskId, (t) => TERMINAL.includes(t.status as string), ASKING);
    expect(done).toMatchObject({ taskId, status: 'completed', result: { content: [{ type: 'text' }] } });
    expect(JSON.stringify(done.result)).toContain('Clarification**: snake');
  });

  it('tasks/cancel ends it cancelled', async () => {
    const taskId = resultOf(await callStateless(gw.url, 1, 'everything__simulate-research-query', { topic: 'cancelled' }, {}, {}, WITH_TASKS)).taskId as string;
    expect((await get(taskId)).status).toBe('working');
    expect(resultOf(await send('tasks/cancel', { taskId }))).toMatchObject({ resultType: 'complete' });
    const { task } = await follow(taskId, (t) => TERMINAL.includes(t.status as string));
    expect(task.status).toBe('cancelled');
  });
});

describe("an anonymous 2026-07-28 client of a 2025-11-25 HTTP upstream's task-only tool", () => {
  it('gets a task that tasks/get reaches seconds later (the upstream session that made it is closed), to its result', async () => {
    const created = resultOf(await callStateless(gw.url, 1, 'remote__simulate-research-query', { topic: 'remoteness' }, {}, {}, WITH_TASKS));
    expect(created).toMatchObject({ resultType: 'task', status: 'working' });
    const taskId = created.taskId as string;
    const { task } = await follow(taskId, (t) => TERMINAL.includes(t.status as string));
    expect(task).toMatchObject({ taskId, status: 'completed', result: { content: [{ type: 'text' }] } });
    expect(JSON.stringify(task.result)).toContain('remoteness');
  });
});

describe("an anonymous 2026-07-28 client of a shared child's task-only tool", () => {
  it('gets a task that tasks/get reaches seconds later, to its result', async () => {
    const created = resultOf(await callStateless(gw.url, 1, 'shared__simulate-research-query', { topic: 'sharing' }, {}, {}, WITH_TASKS));
    expect(created).toMatchObject({ resultType: 'task', status: 'working' });
    const taskId = created.taskId as string;
    const { task } = await follow(taskId, (t) => TERMINAL.includes(t.status as string));
    expect(task).toMatchObject({ taskId, status: 'completed', result: { content: [{ type: 'text' }] } });
    expect(JSON.stringify(task.result)).toContain('sharing');
  });
});
