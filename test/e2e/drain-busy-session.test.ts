// A draining gateway and a session with a call in flight on it: what concerns that call (a
// cancellation, an answer to the server's question) is still taken, but the session starts
// nothing new: a new request, alone or in a batch, gets the drain's 503 unrun (the client may
// send it to another replica), as a new session's does. (test/e2e/drain.test.ts: the drain itself.)
import { afterEach, describe, expect, it } from 'vitest';
import { poll } from '../helpers/cli.js';
import { startGateway, upstream, type TestGateway } from '../helpers/gateway.js';
import { expectRpcError, initializeRaw, postRpc, sendIn } from '../helpers/raw-http.js';

const call = (id: number, name: string, args: Record<string, unknown>): unknown => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });

let gw: TestGateway | undefined;

afterEach(async () => {
  await gw?.close();
  gw = undefined;
});

describe('a session busy on a draining gateway', () => {
  it('gets 503 for a new request, alone or in a batch, which never runs; its cancellation is taken and ends its call', async () => {
    gw = await startGateway({ shutdown: { gracePeriod: '10s' }, upstreams: { everything: upstream.everything() } });
    // 2025-03-26: the revision with batches.
    const busy = await initializeRaw(gw.url, { protocolVersion: '2025-03-26', id: 1 });
    const slow = postRpc(gw.url, call(2, 'everything__trigger-long-running-operation', { duration: 5, steps: 5 }), { headers: busy.headers, timeoutMs: 20_000 });
    await poll(async () => ((await (await fetch(new URL('/healthz', gw!.url))).json()) as { upstreams: Record<string, { pending?: number }> }).upstreams.everything?.pending || undefined, 'the slow call in flight');

    const drained = gw.gateway.drain();
    const alone = await sendIn(busy, call(3, 'everything__echo', { message: 'during' }));
    expectRpcError(alone, 503, -32603, 3);
    expect(alone.headers.get('retry-after')).toBe('1');
    expect(alone.json).toMatchObject({ error: { message: 'Service Unavailable: the gateway is shutting down' } });
    const batch = await sendIn(busy, [call(4, 'everything__echo', { message: 'batched' }), { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 999 } }]);
    expectRpcError(batch, 503, -32603);

    const cancelled = await sendIn(busy, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 2, reason: 'the test' } });
    expect(cancelled.status).toBe(202);
    await drained;
    expect((await slow).text).not.toMatch(/Long running operation completed/);
    // Neither refused request reached the upstream.
    expect(gw.logs.filter((line) => line.includes('"tool":"echo"'))).toEqual([]);
  }, 30_000);
});
