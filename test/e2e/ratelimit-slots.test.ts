// An upstream's maxConcurrent against a client that does not wait: a call cancelled (or timed
// out) keeps its slot while the upstream may still be working on it (the rogue fixture ignores
// cancellation), until the upstream answers it; and calls that start in the same tick (a JSON-RPC
// batch) take their slots before their perTool tokens, so a call refused for concurrency spends none.
import { describe, expect, it } from 'vitest';
import { upstream } from '../helpers/gateway.js';
import { poll } from '../helpers/cli.js';
import { messagesOf, readReply } from '../helpers/raw-http.js';
import { BATCH_VERSION, limitResult, ok, openSession, recorded, rpc, send, useRateLimitRig, type RpcMessage } from '../helpers/ratelimit.js';

const { start, recordFile } = useRateLimitRig();

const slowCall = (id: number | string, ms: number): RpcMessage => rpc(id, 'tools/call', { name: 'rogue__slow', arguments: { ms } });
const textOf = (message: RpcMessage): string => (message.result?.content as { text: string }[] | undefined)?.[0]?.text ?? JSON.stringify(message);

describe('a call given up on while its upstream still works on it', () => {
  it('keeps its slot until the upstream answers it: cancelling and calling again does not get past maxConcurrent', async () => {
    const record = recordFile();
    const gw = await start({ upstreams: { rogue: { ...upstream.rogue({ RECORD_FILE: record }), maxConcurrent: 1 } } });
    const session = await openSession(gw.url);
    await ok(session, rpc(0, 'tools/call', { name: 'rogue__pid', arguments: {} }));

    const started = Date.now();
    const slow = send(session, slowCall('slow', 2_000));
    slow.catch(() => undefined); // read below
    await poll(async () => ((await recorded(record)).some((m) => m.method === 'tools/call' && m.params?.name === 'slow') ? true : undefined), 'the upstream to get the slow call', 10_000, 25);
    expect((await send(session, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'slow', reason: 'changed my mind' } })).status).toBe(202);
    await (await slow).body?.cancel();

    // The upstream is still sleeping on the cancelled call (it ignores cancellation): no slot for another.
    const again = await ok(session, rpc('again', 'tools/call', { name: 'rogue__pid', arguments: {} }));
    expect(Date.now() - started, 'the refusal came while the slow call still ran upstream').toBeLessThan(2_000);
    expect(limitResult(again.result).text).toBe('1 call in flight for rogue__pid; retry in 1 s.');

    // Once it answered (late, to nobody), the slot is free again.
    const passed = await poll(
      async () => {
        const answer = await ok(session, rpc(`retry-${Date.now()}`, 'tools/call', { name: 'rogue__pid', arguments: {} }));
        return answer.result?.isError === true ? undefined : Date.now();
      },
      'a call to pass again',
      10_000,
      100,
    );
    expect(passed - started).toBeGreaterThanOrEqual(2_000);
    const pids = (await recorded(record)).filter((m) => m.method === 'tools/call' && m.params?.name === 'pid');
    expect(pids).toHaveLength(2); // the first, and the one after the slow call ended
  });
});

describe('calls that start in the same tick', () => {
  it('spend no perTool token when refused for concurrency (a batch of two, maxConcurrent 1)', async () => {
    const record = recordFile();
    const gw = await start({
      upstreams: { rogue: { ...upstream.rogue({ RECORD_FILE: record }), maxConcurrent: 1 } },
      rateLimits: { perTool: { rogue__slow: { rate: 2, per: '1h' } } },
    });
    const session = await openSession(gw.url, { version: BATCH_VERSION });
    await ok(session, rpc(0, 'tools/call', { name: 'rogue__pid', arguments: {} }));

    const batch = await readReply(await send(session, [slowCall(1, 300), slowCall(2, 300)]));
    expect(batch.status).toBe(200);
    const answers = messagesOf<RpcMessage>(batch).filter((m) => m.id !== undefined);
    const texts = answers.map(textOf).sort();
    expect(texts).toEqual(['1 call in flight for rogue__slow; retry in 1 s.', 'slow done']);

    // One token spent (by the call that ran); one left for the next call.
    const next = await ok(session, slowCall(3, 1));
    expect(textOf(next)).toBe('slow done');
    const slow = (await recorded(record)).filter((m) => m.method === 'tools/call' && m.params?.name === 'slow');
    expect(slow.map((m) => (m.params?.arguments as { ms: number }).ms)).toEqual([300, 1]);
  });
});
