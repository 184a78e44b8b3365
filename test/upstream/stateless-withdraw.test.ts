// The input requests a bridged call asked of the client are withdrawn when the call ends before
// they are answered (cancelled, failed, the upstream closed): a 2026-07-28 server holds nothing
// between rounds, so only the gateway can withdraw them. Answered ones are never withdrawn.
import { describe, expect, it } from 'vitest';
import type { JsonObject, JsonRpcRequest } from '../../src/mcp/jsonrpc.js';
import { Cancellation } from '../../src/util/cancel.js';
import { StatelessUpstream } from '../../src/upstream/stateless.js';

const elicit = (key: string): JsonObject => ({ [key]: { method: 'elicitation/create', params: { message: key } } });

/** `promise`, or a rejection naming `what` after 5 s (the call would otherwise wait for the client for ever). */
function within<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: still waiting after 5 s`)), 5_000)));
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/** A StatelessUpstream whose upstream answers `first`, then `last`; asks wait until answered or withdrawn, as the relay's do. */
function upstream(first: JsonObject, last: JsonObject = { resultType: 'complete', content: [] }) {
  const open = new Map<string, { resolve: (answer: JsonObject) => void; reject: (err: Error) => void }>();
  const withdrawn: { id: string; reason: string; context: unknown }[] = [];
  let sends = 0;
  const asking: (() => void)[] = [];
  const stateless = new StatelessUpstream(
    { clientCapabilities: {}, clientInfo: {} },
    {
      name: 'u',
      send: async () => (++sends === 1 ? first : last),
      ask: (request: JsonRpcRequest) =>
        new Promise<JsonObject>((resolve, reject) => {
          open.set(String(request.id), { resolve, reject });
          asking.shift()?.();
        }),
      withdraw: (id, reason, context) => {
        withdrawn.push({ id, reason, context });
        open.get(id)?.reject(new Error('cancelled by the upstream'));
      },
      capabilities: () => ({}),
    },
  );
  /** Resolves once `n` input requests are open. */
  const asked = async (n: number): Promise<void> => {
    while (open.size < n) await new Promise<void>((resolve) => asking.push(resolve));
  };
  return { stateless, open, withdrawn, asked, sends: () => sends };
}

describe('StatelessUpstream input requests', () => {
  it('withdraws what is still asked when the call is cancelled, and sends nothing more', async () => {
    const u = upstream({ resultType: 'input_required', inputRequests: elicit('name'), requestState: 's' });
    const cancel = new Cancellation();
    const call = u.stateless.request('tools/call', { name: 't' }, { signal: cancel.signal, context: 'ctx' });
    await u.asked(1);
    cancel.abort('bye');
    await expect(within(call, 'the cancelled call')).rejects.toThrow(/request cancelled/);
    expect(u.withdrawn).toEqual([{ id: 'input-1', reason: 'the request was cancelled', context: 'ctx' }]);
    expect(u.sends()).toBe(1);
  });

  it('withdraws what is still asked when the upstream closes', async () => {
    const u = upstream({ resultType: 'input_required', inputRequests: elicit('name'), requestState: 's' });
    const call = u.stateless.request('tools/call', { name: 't' }, { context: 'ctx' });
    await u.asked(1);
    u.stateless.close();
    await expect(within(call, 'the call of a closed upstream')).rejects.toThrow(/cancelled by the upstream/);
    expect(u.withdrawn).toEqual([{ id: 'input-1', reason: 'the upstream closed', context: 'ctx' }]);
  });

  it('withdraws the others of a round when one of its input requests fails', async () => {
    const u = upstream({ resultType: 'input_required', inputRequests: { ...elicit('a'), ...elicit('b') }, requestState: 's' });
    const call = u.stateless.request('tools/call', { name: 't' }, {});
    await u.asked(2);
    u.open.get('input-1')!.reject(new Error('refused'));
    await expect(call).rejects.toThrow(/refused/);
    expect(u.withdrawn.map((w) => [w.id, w.reason])).toEqual([['input-2', 'the request ended']]);
  });

  it('withdraws nothing answered', async () => {
    const u = upstream({ resultType: 'input_required', inputRequests: elicit('name'), requestState: 's' });
    const cancel = new Cancellation();
    const call = u.stateless.request('tools/call', { name: 't' }, { signal: cancel.signal });
    await u.asked(1);
    u.open.get('input-1')!.resolve({ action: 'accept', content: { name: 'x' } });
    await expect(call).resolves.toEqual({ content: [] });
    cancel.abort();
    u.stateless.close();
    expect(u.withdrawn).toEqual([]);
  });
});
