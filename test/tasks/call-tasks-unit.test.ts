// A 2025-11-25 upstream's task-only tool called by a 2026-07-28 client that declared the Tasks
// extension (tasks/call-tasks.ts), without sockets. Without a principal the request's session,
// and with it the upstream session holding the task, ends with the request: the task is never
// handed out, the call follows it to its end (what it ends with is the call's answer, which the
// gateway's own task records), and input it asks for is asked on tasks/result within the call,
// its related-task metadata left out. A principal's task, and a shared child's, come back under
// a sealed handle as before.
import { describe, expect, it } from 'vitest';
import { RpcError } from '../../src/mcp/errors.js';
import type { JsonObject } from '../../src/mcp/jsonrpc.js';
import { taskOutcome, type TaskCall } from '../../src/tasks/call-tasks.js';
import { TaskHandles } from '../../src/tasks/handles.js';
import { taskInputRequests } from '../../src/tasks/wire.js';
import { Cancellation } from '../../src/util/cancel.js';

const RELATED = 'io.modelcontextprotocol/related-task';
const EXT = { extensions: { 'io.modelcontextprotocol/tasks': {} } };
const TASK = { taskId: 'up-1', createdAt: '2026-07-28T12:00:00Z', lastUpdatedAt: '2026-07-28T12:00:00Z', ttl: 60_000, pollInterval: 100 };
const RESULT = { content: [{ type: 'text', text: 'researched' }] };
/** What a 2025-11-25 server answers a plain call of a tool whose taskSupport is "required". */
const REFUSED = new RpcError({ code: -32601, message: 'Tool research requires task augmentation' });

/** A 2025-11-25 upstream whose task goes through `statuses` (one per tasks/get), then ends completed. */
function legacyUpstream(statuses: string[]): { send: TaskCall['send']; sent: string[] } {
  const sent: string[] = [];
  let gets = 0;
  return {
    sent,
    send: async (method, params) => {
      sent.push(method);
      if (method === 'tools/call') return { task: { ...TASK, status: 'working' }, ...(params.task ? {} : { unexpected: true }) };
      if (method === 'tasks/get') return { ...TASK, status: statuses[gets++] ?? 'completed' };
      if (method === 'tasks/result') return { ...RESULT, _meta: { [RELATED]: { taskId: 'up-1' }, kept: 1 } };
      throw new Error(`unexpected ${method}`);
    },
  };
}

function callOf(send: TaskCall['send'], extra: Partial<TaskCall> = {}): TaskCall & { owned: string[] } {
  const owned: string[] = [];
  return {
    owned,
    handles: new TaskHandles(undefined),
    caller: { requestId: 'r-1' },
    upstream: 'everything',
    era: 'sessions',
    capabilities: { tasks: { requests: { tools: { call: {} } } } },
    tool: 'everything__research',
    principal: '',
    protocolVersion: '2026-07-28',
    clientCapabilities: EXT,
    sessionCapabilities: EXT,
    params: { name: 'everything__research', arguments: {} },
    send,
    sendDetached: send,
    progress: () => {},
    signal: new Cancellation().signal,
    maxTotalMs: 10_000,
    off: false,
    own: (taskId) => void owned.push(taskId),
    ...extra,
  };
}

const PARAMS = { name: 'research', arguments: {} };

describe("an anonymous 2026-07-28 request's call of a per-session 2025-11-25 upstream's task-only tool", () => {
  it('is answered with what the task ends with, never with the task', async () => {
    const upstream = legacyUpstream(['working', 'working']);
    const call = callOf(upstream.send);
    const answer = await taskOutcome(call, REFUSED, PARAMS);
    expect(answer).toEqual(RESULT);
    expect(call.owned).toEqual([]);
    expect(upstream.sent).toEqual(['tools/call', 'tasks/get', 'tasks/get', 'tasks/get', 'tasks/result']);
  });

  it('asks the input the task needs on tasks/result within the call, and answers with its result without the related-task metadata', async () => {
    const upstream = legacyUpstream(['working', 'input_required']);
    const answer = await taskOutcome(callOf(upstream.send), REFUSED, PARAMS);
    expect(answer).toEqual({ ...RESULT, _meta: { kept: 1 } });
    expect(upstream.sent).toEqual(['tools/call', 'tasks/get', 'tasks/get', 'tasks/result']);
  });

  it('a cancelled call cancels the task upstream', async () => {
    const upstream = legacyUpstream(Array(100).fill('working'));
    const cancel = new Cancellation();
    const cancels: JsonObject[] = [];
    // The client cancels once the task was seen working.
    const send: TaskCall['send'] = async (method, params) => {
      const answer = await upstream.send(method, params);
      if (method === 'tasks/get') cancel.abort();
      return answer;
    };
    const sendDetached: TaskCall['send'] = async (method, params) => {
      if (method === 'tasks/cancel') cancels.push(params);
      return {};
    };
    await expect(taskOutcome(callOf(send, { signal: cancel.signal, sendDetached }), REFUSED, PARAMS)).rejects.toMatchObject({ code: 'cancelled' });
    expect(cancels).toEqual([{ taskId: 'up-1' }]);
  });
});

describe('where the task outlives the request', () => {
  it("a principal's call gets the task under a sealed handle", async () => {
    const call = callOf(legacyUpstream([]).send, { caller: { requestId: 'r-1', principal: { id: 'alice' } as TaskCall['caller']['principal'] }, principal: 'alice' });
    const answer = (await taskOutcome(call, REFUSED, PARAMS)) as JsonObject;
    expect(answer).toMatchObject({ resultType: 'task', status: 'working' });
    expect(call.handles.open(answer.taskId as string, 'alice')).toMatchObject({ kind: 'upstream', upstream: 'everything', taskId: 'up-1' });
    expect(call.owned).toEqual(['up-1']);
  });

  it("a shared child's task, for an anonymous call, too", async () => {
    const call = callOf(legacyUpstream([]).send, { shared: true });
    const answer = (await taskOutcome(call, REFUSED, PARAMS)) as JsonObject;
    expect(call.handles.open(answer.taskId as string, '')).toMatchObject({ kind: 'upstream', taskId: 'up-1' });
  });
});

describe("the gateway's task's inputRequests", () => {
  it('leave out the related-task metadata of each request (it names the upstream\'s own task)', () => {
    const requests = { 'input-1': { method: 'elicitation/create', params: { message: 'Which?', _meta: { [RELATED]: { taskId: 'everything:up-1' }, other: true } } }, 'input-2': { method: 'sampling/createMessage', params: { messages: [], _meta: { [RELATED]: { taskId: 'x' } } } } };
    expect(taskInputRequests(requests)).toEqual({ 'input-1': { method: 'elicitation/create', params: { message: 'Which?', _meta: { other: true } } }, 'input-2': { method: 'sampling/createMessage', params: { messages: [] } } });
  });
});
