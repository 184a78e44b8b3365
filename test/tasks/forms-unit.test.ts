// A 2025-11-25 upstream's task seen in the extension's form (tasks/forms.ts), without sockets:
// while input_required, tasks/get carries the requests the task waits on as inputRequests;
// tasks/update hands inputResponses to them and is acknowledged; tasks/update needs them.
import { describe, expect, it } from 'vitest';
import type { JsonObject } from '../../src/mcp/jsonrpc.js';
import { legacyAsExtension, type TaskInput } from '../../src/tasks/forms.js';

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
