// UpstreamClient on its own, over an in-memory transport with fake timers: the two deadlines of a
// request (idle, which progress restarts, and total, which nothing extends), cancellation (what
// the upstream is told, and when it is told nothing), and close (what happens to requests
// pending and to those that come after). No process, no socket, no real time passes.
// (test/e2e/upstream-client-http.test.ts covers the handshake against a real HTTP server.)
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { GatewayError, RpcError } from '../../src/mcp/errors.js';
import type { JsonObject, JsonRpcId } from '../../src/mcp/jsonrpc.js';
import { TransportError } from '../../src/transport/types.js';
import { UpstreamClient } from '../../src/upstream/client.js';
import { Cancellation } from '../../src/util/cancel.js';
import { silentLogger } from '../../src/util/log.js';
import { connectedClient, flush, linkedTransports, ScriptedServer, settlesNow, type MemoryTransport, watch } from '../helpers/memory-transport.js';
import { SESSIONS_ONLY } from '../../src/upstream/stateless-protocol.js';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

/** The exchange (cancellation) the client sent request `id` with. */
function exchangeOf(transport: MemoryTransport, id: JsonRpcId): Cancellation | undefined {
  return transport.sendOptions[transport.sent.findIndex((m) => 'id' in m && m.id === id)]?.cancel;
}

function gatewayCode(outcome: unknown): string | undefined {
  return outcome instanceof GatewayError ? outcome.code : undefined;
}

describe('a request deadline', () => {
  it('fails the request with upstream_timeout when timeoutMs passes without an answer, not a millisecond before', async () => {
    const { client, server } = await connectedClient('up');
    const call = watch(client.request('tools/call', { name: 'slow' }, { timeoutMs: 1_000 }));
    await flush();
    expect(server.take('tools/call')).toBeDefined();

    await vi.advanceTimersByTimeAsync(999);
    expect(call.outcome).toBeUndefined();
    expect(client.pendingCount).toBe(1);

    await vi.advanceTimersByTimeAsync(1);
    expect(gatewayCode(call.outcome)).toBe('upstream_timeout');
    expect((call.outcome as Error).message).toBe('upstream up did not answer tools/call within 1000 ms');
    expect(client.pendingCount).toBe(0);
  });

  it("defaults to the upstream's timeoutMs when the request names none", async () => {
    const { client } = await connectedClient('up', { client: { timeoutMs: 250, maxTotalTimeoutMs: 10_000 } });
    const call = watch(client.request('tools/call', { name: 'slow' }));
    await vi.advanceTimersByTimeAsync(249);
    expect(call.outcome).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(gatewayCode(call.outcome)).toBe('upstream_timeout');
  });

  it('tells the upstream notifications/cancelled with its own request id and reason "timeout"', async () => {
    const cancels: string[] = [];
    const { client, server } = await connectedClient('up', { client: { onCancel: (reason) => cancels.push(reason) } });
    const call = watch(client.request('tools/call', { name: 'slow' }, { timeoutMs: 500 }));
    await flush();
    const held = server.take('tools/call');
    await vi.advanceTimersByTimeAsync(500);
    expect(gatewayCode(call.outcome)).toBe('upstream_timeout');
    expect(server.notifications('notifications/cancelled').map((n) => n.params)).toEqual([{ requestId: held.id, reason: 'timeout' }]);
    expect(cancels).toEqual(['timeout']);
  });

  it('resolves with the answer that comes in time, and leaves no timer behind', async () => {
    const { client, server } = await connectedClient('up');
    // Counted from here: the request's own timers, whatever else the worker's clock holds.
    const timers = vi.getTimerCount();
    const call = watch(client.request('tools/call', { name: 'quick' }, { timeoutMs: 1_000 }));
    await vi.advanceTimersByTimeAsync(600);
    server.take('tools/call').respond({ content: [{ type: 'text', text: 'done' }] });
    await flush();
    expect(call.outcome).toEqual({ content: [{ type: 'text', text: 'done' }] });
    expect(vi.getTimerCount()).toBe(timers);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(server.notifications('notifications/cancelled')).toEqual([]);
  });

  it('drops an answer that arrives after the deadline as an unknown response', async () => {
    const { client, server } = await connectedClient('up');
    const call = watch(client.request('tools/call', { name: 'slow' }, { timeoutMs: 100 }));
    await flush();
    const held = server.take('tools/call');
    await vi.advanceTimersByTimeAsync(100);
    held.respond({ late: true });
    await flush();
    expect(gatewayCode(call.outcome)).toBe('upstream_timeout');
    expect(client.unknownResponses).toBe(1);
  });

  it('fails connect with upstream_timeout when initialize is not answered in time, without cancelling initialize, and closes the transport', async () => {
    const { client: transport, server: serverEnd } = linkedTransports();
    const server = new ScriptedServer(serverEnd).handle('initialize', () => undefined);
    const client = new UpstreamClient('mute', transport, { timeoutMs: 60_000, maxTotalTimeoutMs: 60_000, logger: silentLogger });
    const connecting = client.connect({ protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } }, 2_000, SESSIONS_ONLY);
    const failed = connecting.catch((err: unknown) => err);
    await vi.advanceTimersByTimeAsync(1_999);
    expect(server.requests('initialize')).toHaveLength(1);
    expect(transport.closed).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(gatewayCode(await settlesNow(failed, 'connect'))).toBe('upstream_timeout');
    await flush();
    // The spec forbids cancelling initialize: the connection is closed instead.
    expect(server.notifications('notifications/cancelled')).toEqual([]);
    expect(transport.closed).toBe(true);
    expect(client.closed).toBe(true);
  });
});

describe('progress', () => {
  it("restarts the idle deadline and reaches the caller with the caller's own progress token", async () => {
    const { client, server } = await connectedClient('up');
    const progress: JsonObject[] = [];
    const call = watch(
      client.request('tools/call', { name: 'long', _meta: { progressToken: 'caller-7' } }, { timeoutMs: 1_000, maxTotalMs: 60_000, onProgress: (p) => progress.push(p) }),
    );
    await flush();
    const held = server.take('tools/call');
    // The upstream sees the gateway's id as the token, never the caller's.
    expect((held.request.params?._meta as JsonObject).progressToken).toBe(held.id);

    await vi.advanceTimersByTimeAsync(800);
    held.progress(1, 3);
    await vi.advanceTimersByTimeAsync(800); // 1,600 ms in all: past the first idle deadline
    expect(call.outcome).toBeUndefined();
    held.progress(2, 3);
    await vi.advanceTimersByTimeAsync(999); // 999 ms after the last progress
    expect(call.outcome).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(gatewayCode(call.outcome)).toBe('upstream_timeout');
    expect(progress).toEqual([
      { progressToken: 'caller-7', progress: 1, total: 3 },
      { progressToken: 'caller-7', progress: 2, total: 3 },
    ]);
  });

  it('never extends the total deadline, however often it arrives', async () => {
    const { client, server } = await connectedClient('up');
    const call = watch(client.request('tools/call', { name: 'long', _meta: { progressToken: 1 } }, { timeoutMs: 1_000, maxTotalMs: 2_500 }));
    await flush();
    const held = server.take('tools/call');
    for (let step = 1; step <= 4; step++) {
      await vi.advanceTimersByTimeAsync(500);
      held.progress(step);
    }
    // 2,000 ms in; progress just arrived, so only the total deadline can end it.
    await vi.advanceTimersByTimeAsync(499);
    expect(call.outcome).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(gatewayCode(call.outcome)).toBe('upstream_timeout');
    expect((call.outcome as Error).message).toMatch(/within 2500 ms$/);
  });

  it('does not restart the deadline of a request that asked for no progress', async () => {
    const { client, server } = await connectedClient('up');
    const call = watch(client.request('tools/call', { name: 'long' }, { timeoutMs: 1_000 }));
    await flush();
    const held = server.take('tools/call');
    await vi.advanceTimersByTimeAsync(800);
    // A token equal to the request id, which this request never handed out.
    server.notify('notifications/progress', { progressToken: held.id, progress: 1 });
    await vi.advanceTimersByTimeAsync(200);
    expect(gatewayCode(call.outcome)).toBe('upstream_timeout');
  });
});

describe('cancellation', () => {
  it('sends notifications/cancelled with the upstream request id and the reason, and rejects the caller with cancelled', async () => {
    const cancels: string[] = [];
    const { client, server, transport } = await connectedClient('up', { client: { onCancel: (reason) => cancels.push(reason) } });
    const signal = new Cancellation();
    const timers = vi.getTimerCount();
    const call = watch(client.request('tools/call', { name: 'long' }, { signal, timeoutMs: 60_000 }));
    await flush();
    const held = server.take('tools/call');
    signal.abort('cancelled by client');
    await flush();
    expect(gatewayCode(call.outcome)).toBe('cancelled');
    expect(server.notifications('notifications/cancelled').map((n) => n.params)).toEqual([{ requestId: held.id, reason: 'cancelled by client' }]);
    expect(cancels).toEqual(['cancelled by client']);
    expect(client.pendingCount).toBe(0);
    // The request's exchange was aborted too, and its deadline timer went with it.
    expect(exchangeOf(transport, held.id)?.aborted).toBe(true);
    expect(vi.getTimerCount()).toBe(timers);
  });

  it('cancels only the request whose signal aborted', async () => {
    const { client, server } = await connectedClient('up');
    const first = new Cancellation();
    const a = watch(client.request('tools/call', { name: 'a' }, { signal: first }));
    const b = watch(client.request('tools/call', { name: 'b' }, { signal: new Cancellation() }));
    await flush();
    const [heldA, heldB] = server.held('tools/call');
    first.abort('stop a');
    await flush();
    expect(gatewayCode(a.outcome)).toBe('cancelled');
    expect(b.outcome).toBeUndefined();
    expect(server.notifications('notifications/cancelled').map((n) => n.params?.requestId)).toEqual([heldA!.id]);
    heldB!.respond({ ok: 'b' });
    await flush();
    expect(b.outcome).toEqual({ ok: 'b' });
  });

  it('sends nothing upstream for a signal already aborted, and still answers a turn later', async () => {
    const { client, server } = await connectedClient('up');
    const before = server.received.length;
    const signal = new Cancellation();
    signal.abort('too late');
    const call = watch(client.request('tools/call', { name: 'x' }, { signal }));
    expect(call.outcome).toBeUndefined();
    await flush();
    expect(gatewayCode(call.outcome)).toBe('cancelled');
    expect(server.received.length).toBe(before);
  });

  it('tells an upstream that cancels by closing nothing: aborting the exchange is the cancellation', async () => {
    const { client, server, transport } = await connectedClient('up', { transport: { cancelsByClosing: true } });
    const signal = new Cancellation();
    const call = watch(client.request('tools/call', { name: 'long' }, { signal }));
    await flush();
    const held = server.take('tools/call');
    signal.abort('cancelled by client');
    await flush();
    expect(gatewayCode(call.outcome)).toBe('cancelled');
    expect(server.notifications('notifications/cancelled')).toEqual([]);
    expect(exchangeOf(transport, held.id)?.aborted).toBe(true);
  });

  it("passes an upstream's own error answer to the caller unchanged", async () => {
    const { client, server } = await connectedClient('up');
    const call = watch(client.request('tools/call', { name: 'x' }));
    await flush();
    server.take('tools/call').fail({ code: -32602, message: 'Unknown tool: x', data: { hint: 1 } });
    await flush();
    expect(call.outcome).toBeInstanceOf(RpcError);
    expect((call.outcome as RpcError).error).toEqual({ code: -32602, message: 'Unknown tool: x', data: { hint: 1 } });
  });
});

describe('close', () => {
  it('settles every pending request with upstream_closed, aborts their exchanges and leaves no timer', async () => {
    const ends: (Error | undefined)[] = [];
    const { client, server, transport } = await connectedClient('up', { client: { onEnd: (reason) => ends.push(reason) } });
    const timers = vi.getTimerCount();
    const a = watch(client.request('tools/call', { name: 'a' }));
    const b = watch(client.request('resources/read', { uri: 'x://1' }));
    await flush();
    const held = server.held();
    expect(held.map((h) => h.request.method)).toEqual(['tools/call', 'resources/read']);
    await client.close();
    await flush();
    expect(gatewayCode(a.outcome)).toBe('upstream_closed');
    expect(gatewayCode(b.outcome)).toBe('upstream_closed');
    expect((a.outcome as Error).message).toBe('upstream up closed');
    expect(client.pendingCount).toBe(0);
    expect(held.map((h) => exchangeOf(transport, h.id)?.aborted)).toEqual([true, true]);
    expect(vi.getTimerCount()).toBeLessThanOrEqual(timers);
    expect(transport.closed).toBe(true);
    // Closed by its owner: no cancellation for each request, and onEnd without a reason, once.
    expect(server.notifications('notifications/cancelled')).toEqual([]);
    expect(ends).toEqual([undefined]);
  });

  it('fails a request made after close at once, with upstream_closed, sending nothing', async () => {
    const { client, server } = await connectedClient('up');
    await client.close();
    const before = server.received.length;
    const call = watch(client.request('tools/list'));
    const notified = client.notify('notifications/roots/list_changed').catch((err: unknown) => err);
    await flush(); // microtasks only: no clock moved
    expect(gatewayCode(call.outcome)).toBe('upstream_closed');
    expect(gatewayCode(await notified)).toBe('upstream_closed');
    expect(server.received.length).toBe(before);
  });

  it('when the connection ends unasked, fails pending requests with the reason and tells onclose and onEnd', async () => {
    const ends: (Error | undefined)[] = [];
    const { client, transport } = await connectedClient('up', { client: { onEnd: (reason) => ends.push(reason) } });
    const closes: (Error | undefined)[] = [];
    client.onclose = (reason) => closes.push(reason);
    const call = watch(client.request('tools/call', { name: 'a' }));
    await flush();
    const reason = new TransportError('closed', 'process exited (SIGKILL)');
    transport.drop(reason);
    await flush();
    expect(gatewayCode(call.outcome)).toBe('upstream_closed');
    expect((call.outcome as Error).message).toBe('upstream up closed: process exited (SIGKILL)');
    expect(client.closed).toBe(true);
    expect(closes).toEqual([reason]);
    expect(ends).toEqual([reason]);
    const later = watch(client.request('ping'));
    await flush();
    expect(gatewayCode(later.outcome)).toBe('upstream_closed');
  });
});
