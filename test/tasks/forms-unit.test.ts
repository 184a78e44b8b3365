// The two forms of tasks meeting (tasks/forms.ts), without sockets. A 2025-11-25 upstream's task
// in the extension's form: while input_required, tasks/get carries the requests the task waits
// on as inputRequests; tasks/update hands inputResponses to them and is acknowledged;
// tasks/update needs them. An extension upstream's task in the 2025-11-25 form: tasks/cancel of
// a task that already ended is refused with -32602 and never reaches the upstream; and the other
// way, a 2025-11-25 upstream's refusal to cancel its ended task is acknowledged to the client.
import { describe, expect, it } from 'vitest';
import { RpcError, toJsonRpcError } from '../../src/mcp/errors.js';
import type { JsonObject } from '../../src/mcp/jsonrpc.js';
import { extensionAsLegacy, legacyAsExtension, type TaskInput } from '../../src/tasks/forms.js';
import { Cancellation } from '../../src/util/cancel.js';

const TASK = { taskId: 't-1', status: 'input_required', createdAt: '2026-07-28T12:00:00Z', lastUpdatedAt: '2026-07-28T12:00:01Z', ttl: 60_000, pollInterval: 500 };

function upstream(): { send: (method: string, params: JsonObject) => Promise<JsonObject>; sent: string[] } {
  const sent: string[] = [];
  return {
    sent,
    send: async (method) => {
      sent.push(method);
      return method === 'tasks/get' ? TASK : {};
    },
  };
}

function input(): TaskInput & { answered: JsonObject[] } {
  const answered: JsonObject[] = [];
  return {
    answered,
    requests: async () => ({ 'input-7': { method: 'elicitation/create', params: { message: 'Which one?' } } }),
    answer: (responses) => void answered.push(responses),
  };
}

describe("a 2025-11-25 task's input in the extension's form", () => {
  it('tasks/get of an input_required task lists the requests it waits on', async () => {
    const { send } = upstream();
    const task = await legacyAsExtension(send, input())('tasks/get', { taskId: 't-1' });
    expect(task).toMatchObject({ resultType: 'complete', status: 'input_required', ttlMs: 60_000, pollIntervalMs: 500, inputRequests: { 'input-7': { method: 'elicitation/create' } } });
  });

  it('tasks/update hands inputResponses to them and is acknowledged, without a request upstream', async () => {
    const { send, sent } = upstream();
    const held = input();
    const responses = { 'input-7': { action: 'accept', content: { choice: 'a' } } };
    expect(await legacyAsExtension(send, held)('tasks/update', { taskId: 't-1', inputResponses: responses })).toEqual({ resultType: 'complete' });
    expect(held.answered).toEqual([responses]);
    expect(sent).toEqual([]);
  });

  it('tasks/update without inputResponses is invalid params', async () => {
    const { send } = upstream();
    await expect(legacyAsExtension(send, input())('tasks/update', { taskId: 't-1' })).rejects.toMatchObject({ code: 'invalid_params', message: 'tasks/update needs inputResponses' });
  });
});

/** An extension upstream whose task is `status` until a tasks/cancel reaches it (then cancelled, unless it had ended). */
function extensionUpstream(status: string): { send: (method: string, params: JsonObject) => Promise<JsonObject>; sent: string[] } {
  const sent: string[] = [];
  let now = status;
  return {
    sent,
    send: async (method) => {
      sent.push(method);
      if (method === 'tasks/cancel') {
        if (now === 'working' || now === 'input_required') now = 'cancelled';
        return {};
      }
      return { resultType: 'complete', taskId: 't-1', status: now, createdAt: '2026-07-28T12:00:00Z', lastUpdatedAt: '2026-07-28T12:00:01Z', ttlMs: 60_000, pollIntervalMs: 500, ...(now === 'completed' ? { result: { content: [] } } : {}) };
    },
  };
}

describe("an extension task's cancel in the 2025-11-25 form", () => {
  for (const status of ['completed', 'failed', 'cancelled']) {
    it(`tasks/cancel of a ${status} task is invalid params, and is not sent upstream`, async () => {
      const { send, sent } = extensionUpstream(status);
      const outcome = await extensionAsLegacy(send, new Cancellation().signal)('tasks/cancel', { taskId: 't-1' }).then(
        (answered) => ({ answered }),
        (err: unknown) => ({ refused: toJsonRpcError(err) }),
      );
      expect(outcome).toEqual({ refused: { code: -32602, message: `Cannot cancel task: already in terminal status '${status}'` } });
      expect(sent).not.toContain('tasks/cancel');
    });
  }

  it('tasks/cancel of a working task reaches the upstream and answers the task as it is after', async () => {
    const { send, sent } = extensionUpstream('working');
    const task = await extensionAsLegacy(send, new Cancellation().signal)('tasks/cancel', { taskId: 't-1' });
    expect(sent).toContain('tasks/cancel');
    expect(task).toEqual({ taskId: 't-1', status: 'cancelled', createdAt: '2026-07-28T12:00:00Z', lastUpdatedAt: '2026-07-28T12:00:01Z', ttl: 60_000, pollInterval: 500 });
  });
});

describe("a 2025-11-25 task's cancel in the extension's form", () => {
  /** A 2025-11-25 upstream: its task in `status`; a cancel of an ended one refused with -32602, of an unknown one too. */
  function legacyUpstream(status: string | undefined): (method: string, params: JsonObject) => Promise<JsonObject> {
    return async (method) => {
      if (status === undefined) throw new RpcError({ code: -32602, message: 'Failed to retrieve task: Task not found' });
      if (method === 'tasks/get') return { ...TASK, status };
      if (method === 'tasks/cancel' && ['completed', 'failed', 'cancelled'].includes(status)) throw new RpcError({ code: -32602, message: `Cannot cancel task: already in terminal status '${status}'` });
      return { ...TASK, status: 'cancelled' };
    };
  }

  it('a cancel of a task that already ended is acknowledged, as the extension requires of a known task', async () => {
    expect(await legacyAsExtension(legacyUpstream('completed'))('tasks/cancel', { taskId: 't-1' })).toEqual({ resultType: 'complete' });
  });

  it('a cancel of a task the upstream does not know is still its error', async () => {
    await expect(legacyAsExtension(legacyUpstream(undefined))('tasks/cancel', { taskId: 't-9' })).rejects.toMatchObject({ error: { code: -32602 } });
  });
});
