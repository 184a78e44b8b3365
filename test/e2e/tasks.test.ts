// Tasks (2025-11-25, experimental; spec: basic/utilities/tasks.mdx) through the gateway, against
// server-everything's task tools over stdio and over Streamable HTTP: clients only ever see
// task ids of the form `<upstream>:<upstream task id>`, and each session sees only its own tasks.
import { setTimeout as delay } from 'node:timers/promises';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  CallToolResultSchema,
  CancelTaskResultSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema,
  GetTaskPayloadRequestSchema,
  GetTaskRequestSchema,
  GetTaskResultSchema,
  ListTasksResultSchema,
  RELATED_TASK_META_KEY,
  type ClientCapabilities,
  type ElicitRequest,
  type GetTaskResult,
  type Task,
} from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectClient, recordNotifications, startGateway, textOf, upstream, type NotificationLog, type TestGateway } from '../helpers/gateway.js';
import { startEverythingHttp, type EverythingHttp } from '../helpers/processes.js';

/** Upstream names in the gateway under test, by the transport that reaches them. */
const UPSTREAMS = [
  ['stdio', 'everything'],
  ['Streamable HTTP', 'remote'],
] as const;

const TERMINAL = ['completed', 'failed', 'cancelled'];
/** server-everything's research runs four one-second stages; this bounds every wait for it. */
const TASK_DEADLINE_MS = 20_000;

let remote: EverythingHttp;
let gw: TestGateway;

beforeAll(async () => {
  remote = await startEverythingHttp();
  gw = await startGateway({ upstreams: { everything: upstream.everything(), remote: upstream.http(remote.url) } });
});

afterAll(async () => {
  await gw?.close();
  await remote?.close();
});

/** Runs `body` with a fresh client session, closed however `body` ends. */
async function withClient<T>(body: (client: Client) => Promise<T>, capabilities: ClientCapabilities = {}, prepare?: (client: Client) => void): Promise<T> {
  const client = await connectClient(gw.url, capabilities, prepare);
  try {
    return await body(client);
  } finally {
    await client.close();
  }
}

/** A task-augmented call of the upstream's research tool; answers the CreateTaskResult. */
function startResearch(client: Client, name: string, args: { topic: string; ambiguous?: boolean } = { topic: 'switchyard' }) {
  return client.request(
    { method: 'tools/call', params: { name: `${name}__simulate-research-query`, arguments: args, task: { ttl: 60_000 } } },
    CreateTaskResultSchema,
  );
}

function getTask(client: Client, taskId: string) {
  return client.request({ method: 'tasks/get', params: { taskId } }, GetTaskResultSchema);
}

function taskResult(client: Client, taskId: string) {
  return client.request({ method: 'tasks/result', params: { taskId } }, CallToolResultSchema, { timeout: TASK_DEADLINE_MS });
}

function cancelTask(client: Client, taskId: string) {
  return client.request({ method: 'tasks/cancel', params: { taskId } }, CancelTaskResultSchema);
}

function listTasks(client: Client) {
  return client.request({ method: 'tasks/list', params: {} }, ListTasksResultSchema);
}

/** Polls tasks/get at the receiver's pollInterval (capped short) until one of `statuses`; bounded. */
async function pollUntil(client: Client, taskId: string, statuses: readonly string[], seen: string[] = []): Promise<GetTaskResult> {
  const deadline = Date.now() + TASK_DEADLINE_MS;
  for (;;) {
    const task = await getTask(client, taskId);
    seen.push(task.status);
    if (statuses.includes(task.status)) return task;
    if (TERMINAL.includes(task.status)) throw new Error(`task ${taskId} ended ${task.status}, not ${statuses.join(' or ')}`);
    if (Date.now() > deadline) throw new Error(`task ${taskId} still ${task.status} after ${TASK_DEADLINE_MS} ms`);
    await delay(Math.min(Math.max(task.pollInterval ?? 200, 100), 1_000));
  }
}

function relatedTaskId(value: { _meta?: Record<string, unknown> | undefined } | undefined): unknown {
  const related = value?._meta?.[RELATED_TASK_META_KEY] as { taskId?: unknown } | undefined;
  return related?.taskId;
}

describe('tasks capability', () => {
  it('is advertised with list, cancel and task-augmented tools/call', async () => {
    await withClient(async (client) => {
      expect(client.getServerCapabilities()?.tasks).toEqual({ list: {}, cancel: {}, requests: { tools: { call: {} } } });
    });
  });
});

describe.each(UPSTREAMS)('task lifecycle over %s', (_transport, name) => {
  let client: Client;
  let taskId: string;

  beforeAll(async () => {
    client = await connectClient(gw.url);
    const created = await startResearch(client, name);
    taskId = created.task.taskId;
  });

  afterAll(async () => {
    await client?.close();
  });

  it('answers a task-augmented tools/call with the client-facing task id', async () => {
    const other = await startResearch(client, name, { topic: 'second' });
    expect(other.task.taskId).toMatch(new RegExp(`^${name}:.+`));
    expect(other.task.status).toBe('working');
    expect(taskId).toMatch(new RegExp(`^${name}:.+`));
    expect(other.task.taskId).not.toBe(taskId);
    await cancelTask(client, other.task.taskId);
  });

  it('tasks/get answers under the same id and polling reaches completed', async () => {
    const seen: string[] = [];
    const task = await pollUntil(client, taskId, TERMINAL, seen);
    expect(task.taskId).toBe(taskId);
    expect(task.status).toBe('completed');
    expect(seen[0]).toBe('working');
  });

  it('tasks/result returns the tool result tied to the client-facing id', async () => {
    const result = await taskResult(client, taskId);
    expect(textOf(result)).toContain('# Research Report: switchyard');
    expect(relatedTaskId(result)).toBe(taskId);
  });

  it('tasks/list lists the task under its client-facing id, every id namespaced', async () => {
    const { tasks } = await listTasks(client);
    expect(tasks.map((t) => t.taskId)).toContain(taskId);
    for (const task of tasks) expect(task.taskId).toMatch(/^(everything|remote):.+/);
  });

  it('tasks/cancel cancels a fresh task under its client-facing id', async () => {
    const created = await startResearch(client, name, { topic: 'to be cancelled' });
    const id = created.task.taskId;
    const cancelled = await cancelTask(client, id);
    expect(cancelled).toMatchObject({ taskId: id, status: 'cancelled' });
    expect(await getTask(client, id)).toMatchObject({ taskId: id, status: 'cancelled' });
  });

  it('tasks/cancel of a task already completed answers -32602', async () => {
    await pollUntil(client, taskId, TERMINAL);
    await expect(cancelTask(client, taskId)).rejects.toMatchObject({ code: -32602 });
  });
});

describe('tasks/list pagination', () => {
  it('follows every upstream\'s cursor behind one cursor, listing each task once', async () => {
    await withClient(async (client) => {
      // server-everything pages tasks ten at a time; twelve per upstream needs two pages.
      const created = await Promise.all(UPSTREAMS.flatMap(([, name]) => Array.from({ length: 12 }, (_, i) => startResearch(client, name, { topic: `page ${i}` }))));
      const ids = created.map((c) => c.task.taskId);
      try {
        const listed: string[] = [];
        let cursor: string | undefined;
        for (let page = 0; page < 10; page++) {
          const result = await client.request({ method: 'tasks/list', params: cursor === undefined ? {} : { cursor } }, ListTasksResultSchema);
          listed.push(...result.tasks.map((t) => t.taskId));
          cursor = result.nextCursor;
          if (page === 0) expect(cursor).toBeDefined();
          if (cursor === undefined) break;
        }
        expect(cursor).toBeUndefined();
        expect([...listed].sort()).toEqual([...ids].sort());
      } finally {
        await Promise.allSettled(ids.map((id) => cancelTask(client, id)));
      }
    });
  });
});

describe('task ids with configured prefixes', () => {
  let prefixed: TestGateway;

  beforeAll(async () => {
    prefixed = await startGateway({
      upstreams: { everything: { ...upstream.everything(), prefix: 'ev' }, remote: { ...upstream.http(remote.url), prefix: '' } },
    });
  });

  afterAll(async () => {
    await prefixed?.close();
  });

  it.each([
    ['a prefixed upstream', 'ev__simulate-research-query', 'ev:'],
    ['the unprefixed upstream', 'simulate-research-query', 'remote:'],
  ])('%s exposes task ids under its routing prefix and routes them back', async (_what, tool, head) => {
    const client = await connectClient(prefixed.url);
    try {
      const { task } = await client.request({ method: 'tools/call', params: { name: tool, arguments: { topic: 'prefixes' }, task: { ttl: 60_000 } } }, CreateTaskResultSchema);
      expect(task.taskId.startsWith(head)).toBe(true);
      expect(await getTask(client, task.taskId)).toMatchObject({ taskId: task.taskId });
      expect((await listTasks(client)).tasks.map((t) => t.taskId)).toEqual([task.taskId]);
      expect(await cancelTask(client, task.taskId)).toMatchObject({ taskId: task.taskId, status: 'cancelled' });
    } finally {
      await client.close();
    }
  });
});

describe('unknown task ids', () => {
  it.each(['nosuch:123', 'garbage', 'everything:not-a-real-task', 'remote:not-a-real-task', ':123', ''])('%j answers -32602 to tasks/get, tasks/result and tasks/cancel', async (taskId) => {
    await withClient(async (client) => {
      await expect(getTask(client, taskId)).rejects.toMatchObject({ code: -32602 });
      await expect(taskResult(client, taskId)).rejects.toMatchObject({ code: -32602 });
      await expect(cancelTask(client, taskId)).rejects.toMatchObject({ code: -32602 });
    });
  });
});

describe.each(UPSTREAMS)('task isolation between sessions over %s', (_transport, name) => {
  it('a task of one session is neither listed nor readable in another', async () => {
    await withClient(async (a) => {
      await withClient(async (b) => {
        const { task } = await startResearch(a, name, { topic: 'private' });
        try {
          expect((await listTasks(a)).tasks.map((t) => t.taskId)).toContain(task.taskId);
          expect((await listTasks(b)).tasks.map((t) => t.taskId)).not.toContain(task.taskId);
          await expect(getTask(b, task.taskId)).rejects.toMatchObject({ code: -32602 });
          await expect(cancelTask(b, task.taskId)).rejects.toMatchObject({ code: -32602 });
          await expect(taskResult(b, task.taskId)).rejects.toMatchObject({ code: -32602 });
          // B's failed attempts left A's task alone.
          expect(await getTask(a, task.taskId)).toMatchObject({ taskId: task.taskId, status: 'working' });
        } finally {
          await cancelTask(a, task.taskId).catch(() => {});
        }
      });
    });
  });
});

describe.each(UPSTREAMS)('task status notifications over %s', (_transport, name) => {
  it('arrive with the client-facing id, only at the owning session', async () => {
    let logA: NotificationLog | undefined;
    let logB: NotificationLog | undefined;
    await withClient(
      async (a) => {
        await withClient(
          async (b) => {
            const { task } = await startResearch(a, name, { topic: 'notified' });
            const completed = await logA!.waitFor(
              (n) => n.method === 'notifications/tasks/status' && n.params?.taskId === task.taskId && n.params.status === 'completed',
              'a completed status notification',
              TASK_DEADLINE_MS,
            );
            expect(completed.params).toMatchObject({ taskId: task.taskId, status: 'completed' });
            const statuses = logA!.all.filter((n) => n.method === 'notifications/tasks/status');
            expect(statuses.map((n) => n.params?.status)).toContain('working');
            for (const n of statuses) expect(n.params?.taskId).toBe(task.taskId);
            expect(logB!.all.filter((n) => n.method === 'notifications/tasks/status')).toEqual([]);
          },
          {},
          (b) => {
            logB = recordNotifications(b);
          },
        );
      },
      {},
      (a) => {
        logA = recordNotifications(a);
      },
    );
  });
});

describe.each(UPSTREAMS)('input_required with elicitation over %s', (_transport, name) => {
  it('relays the elicitation with the client-facing related task and completes with the answer', async () => {
    const elicitations: ElicitRequest[] = [];
    await withClient(
      async (client) => {
        const { task } = await startResearch(client, name, { topic: 'python', ambiguous: true });
        // The spec's flow: poll until input_required, then tasks/result delivers the queued
        // elicitation and blocks until the task ends.
        expect(await pollUntil(client, task.taskId, ['input_required'])).toMatchObject({ taskId: task.taskId });
        expect(elicitations).toEqual([]);
        const result = await taskResult(client, task.taskId);
        expect(elicitations).toHaveLength(1);
        expect(relatedTaskId(elicitations[0]!.params)).toBe(task.taskId);
        expect(relatedTaskId(result)).toBe(task.taskId);
        expect(textOf(result)).toContain('# Research Report: python (snake)');
        expect(textOf(result)).toContain('**Clarification**: snake');
        expect(await getTask(client, task.taskId)).toMatchObject({ taskId: task.taskId, status: 'completed' });
      },
      { elicitation: {} },
      (client) => {
        client.setRequestHandler(ElicitRequestSchema, async (request) => {
          elicitations.push(request);
          return { action: 'accept', content: { interpretation: 'snake' } };
        });
      },
    );
  });
});

/** A client that runs task-augmented elicitations as its own tasks, recording what it is asked. */
function taskRunningClient(clientTaskId: string) {
  const seen = { elicitations: [] as ElicitRequest[], polled: [] as string[], fetched: [] as string[] };
  const now = new Date().toISOString();
  const task = (status: Task['status']): Task => ({ taskId: clientTaskId, status, createdAt: now, lastUpdatedAt: now, ttl: 60_000, pollInterval: 100 });
  const capabilities: ClientCapabilities = { elicitation: {}, tasks: { requests: { elicitation: { create: {} } } } };
  const prepare = (client: Client): void => {
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      seen.elicitations.push(request);
      return { task: task('working') };
    });
    client.setRequestHandler(GetTaskRequestSchema, async (request) => {
      seen.polled.push(request.params.taskId);
      return task('completed');
    });
    client.setRequestHandler(GetTaskPayloadRequestSchema, async (request) => {
      seen.fetched.push(request.params.taskId);
      return { action: 'accept', content: { name: 'Ada' }, _meta: { [RELATED_TASK_META_KEY]: { taskId: request.params.taskId } } };
    });
  };
  return { seen, capabilities, prepare };
}

/** The JSON server-everything prints after "Raw result:": what it got back from the client's tasks/result. */
function rawResultOf(result: unknown): Record<string, unknown> {
  const content = (result as { content: { type: string; text?: string }[] }).content;
  const text = content.map((c) => c.text ?? '').join('\n');
  const at = text.indexOf('Raw result: ');
  if (at < 0) throw new Error(`no raw result in ${text}`);
  return JSON.parse(text.slice(at + 'Raw result: '.length)) as Record<string, unknown>;
}

describe.each(UPSTREAMS)('tasks the client runs for an upstream over %s', (_transport, name) => {
  it('relays the task-augmented request, then tasks/get and tasks/result with the client\'s own task id', async () => {
    const { seen, capabilities, prepare } = taskRunningClient('client-task-1');
    await withClient(
      async (client) => {
        const result = await client.callTool({ name: `${name}__trigger-elicitation-request-async`, arguments: {} }, undefined, { timeout: TASK_DEADLINE_MS });
        expect(textOf(result)).toBe('[COMPLETED] User provided the requested information!');
        expect(seen.elicitations).toHaveLength(1);
        expect(seen.elicitations[0]!.params).toMatchObject({ task: { ttl: 600_000 } });
        expect(seen.polled.length).toBeGreaterThan(0);
        expect(new Set(seen.polled)).toEqual(new Set(['client-task-1']));
        expect(seen.fetched).toEqual(['client-task-1']);
        expect(relatedTaskId(rawResultOf(result) as { _meta?: Record<string, unknown> })).toBe('client-task-1');
      },
      capabilities,
      prepare,
    );
  });

  // The client names its own tasks; an id that happens to look like a gateway id is still its own.
  it('leaves a client task id alone even when it looks like a client-facing upstream task id', async () => {
    const clientTaskId = `${name}:client-task-2`;
    const { seen, capabilities, prepare } = taskRunningClient(clientTaskId);
    await withClient(
      async (client) => {
        const result = await client.callTool({ name: `${name}__trigger-elicitation-request-async`, arguments: {} }, undefined, { timeout: TASK_DEADLINE_MS });
        expect(seen.fetched).toEqual([clientTaskId]);
        expect(relatedTaskId(rawResultOf(result) as { _meta?: Record<string, unknown> })).toBe(clientTaskId);
      },
      capabilities,
      prepare,
    );
  });
});
