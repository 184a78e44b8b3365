// What a client can make tracing and the audit OTLP sink do, against an OTLP receiver: a long
// tool name and request id reach the collector cut, a span names the session by its prefix
// only, a caller's sampled flag makes nothing exported unless the config trusts callers (and a
// refused credential never), and a collector that never answers costs shutdown 5 s at most,
// with what it held counted as dropped.
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/auth/api-keys.js';
import { startGateway, upstream, type TestGateway } from '../helpers/gateway.js';
import { SERVER, startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.js';

const KEY = 'a-key-0123456789abcdef';
const auth = { apiKeys: [{ id: 'ci', hash: hashApiKey(KEY), team: 'ci' }] };
const VERSION = '2025-11-25';

/** A traceparent of a new trace, sampled by the caller. */
function sampledParent(): { traceparent: string; traceId: string; spanId: string } {
  const traceId = randomBytes(16).toString('hex');
  const spanId = randomBytes(8).toString('hex');
  return { traceparent: `00-${traceId}-${spanId}-01`, traceId, spanId };
}

/** One JSON-RPC POST to the gateway; its status, session id and body. */
async function post(gw: TestGateway, body: unknown, headers: Record<string, string>): Promise<{ status: number; session: string | null; text: string }> {
  const response = await fetch(gw.url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers }, body: JSON.stringify(body) });
  return { status: response.status, session: response.headers.get('mcp-session-id'), text: await response.text() };
}

/** An authenticated session; its id. */
async function initialize(gw: TestGateway, headers: Record<string, string> = {}): Promise<string> {
  const params = { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: 'bounds', version: '1' } };
  const { status, session } = await post(gw, { jsonrpc: '2.0', id: 0, method: 'initialize', params }, { authorization: `Bearer ${KEY}`, ...headers });
  expect(status).toBe(200);
  await post(gw, { jsonrpc: '2.0', method: 'notifications/initialized' }, { authorization: `Bearer ${KEY}`, 'mcp-session-id': session!, 'mcp-protocol-version': VERSION });
  return session!;
}

function call(gw: TestGateway, session: string, body: unknown, traceparent: string): ReturnType<typeof post> {
  return post(gw, body, { authorization: `Bearer ${KEY}`, 'mcp-session-id': session, 'mcp-protocol-version': VERSION, traceparent });
}

/** An unauthenticated request carrying a sampled traceparent: refused with 401. */
async function refused(gw: TestGateway, traceparent: string): Promise<void> {
  expect((await post(gw, { jsonrpc: '2.0', id: 1, method: 'ping' }, { authorization: 'Bearer wrong', traceparent })).status).toBe(401);
}

describe('tracing against what clients send', () => {
  let receiver: OtlpReceiver;
  const spansOf = (traceId: string): ReceivedSpan[] => receiver.spans.filter((s) => s.traceId === traceId);

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
  });

  afterAll(async () => {
    await receiver?.close();
  });

  it('cuts a long tool name and request id to 1,024 characters, and names the session by its first 8', async () => {
    const gw = await startGateway({ auth, upstreams: { everything: upstream.everything() }, tracing: { otlp: { endpoint: receiver.url }, sampleRatio: 1 } }, { logLevel: 'silent' });
    const caller = sampledParent();
    const long = 'x'.repeat(200_000);
    let session: string;
    try {
      session = await initialize(gw, { traceparent: caller.traceparent });
      const answer = await call(gw, session, { jsonrpc: '2.0', id: long, method: 'tools/call', params: { name: long, arguments: {} } }, caller.traceparent);
      expect(answer.status).toBe(200);
    } finally {
      // Closing exports what the batch holds.
      await gw.close();
    }
    const server = spansOf(caller.traceId).filter((s) => s.kind === SERVER);
    const init = server.find((s) => s.name === 'initialize')!;
    const toolCall = server.find((s) => s.name.startsWith('tools/call'))!;
    expect(toolCall.name).toBe(`tools/call ${long}`.slice(0, 1024));
    expect(toolCall.attributes['gen_ai.tool.name']).toBe(long.slice(0, 1024));
    expect(toolCall.attributes['jsonrpc.request.id']).toBe(long.slice(0, 1024));
    expect(toolCall.status.message!.length).toBeLessThanOrEqual(1024);
    // Never the whole id: without authentication it is the session's only credential.
    expect(toolCall.attributes['mcp.session.id']).toBe(session.slice(0, 8));
    expect(init.attributes['mcp.session.id']).toBe(session.slice(0, 8));
  });

  it('exports nothing under sampleRatio 0 for callers that sampled their trace, authenticated or refused', async () => {
    const gw = await startGateway({ auth, upstreams: { everything: upstream.everything() }, tracing: { otlp: { endpoint: receiver.url }, sampleRatio: 0 } }, { logLevel: 'silent' });
    const callers = Array.from({ length: 10 }, sampledParent);
    try {
      const session = await initialize(gw, { traceparent: callers[0]!.traceparent });
      for (const [i, caller] of callers.entries()) {
        expect((await call(gw, session, { jsonrpc: '2.0', id: i + 1, method: 'tools/list' }, caller.traceparent)).status).toBe(200);
        await refused(gw, caller.traceparent);
      }
    } finally {
      await gw.close();
    }
    expect(callers.flatMap((caller) => spansOf(caller.traceId)).map((s) => s.name)).toEqual([]);
  });

  it('with trustCallerSampling, follows an authenticated caller’s flag in its trace, and still not a refused credential’s', async () => {
    const gw = await startGateway({ auth, upstreams: { everything: upstream.everything() }, tracing: { otlp: { endpoint: receiver.url }, sampleRatio: 0, trustCallerSampling: true } }, { logLevel: 'silent' });
    const trusted = sampledParent();
    const unauthenticated = sampledParent();
    try {
      const session = await initialize(gw);
      expect((await call(gw, session, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, trusted.traceparent)).status).toBe(200);
      await refused(gw, unauthenticated.traceparent);
    } finally {
      await gw.close();
    }
    const [list, ...more] = spansOf(trusted.traceId);
    expect(more).toEqual([]);
    expect([list!.name, list!.kind, list!.parentSpanId]).toEqual(['tools/list', SERVER, trusted.spanId]);
    expect(spansOf(unauthenticated.traceId)).toEqual([]);
  });
});

describe('shutdown against a collector that never answers', () => {
  it('takes at most 5 s, resolves, logs why, and counts the audit records it held as dropped', async () => {
    const blackHole = createServer(() => {});
    blackHole.listen(0, '127.0.0.1');
    await once(blackHole, 'listening');
    const endpoint = `http://127.0.0.1:${(blackHole.address() as AddressInfo).port}`;
    try {
      const gw = await startGateway({ auth, upstreams: { everything: upstream.everything() }, tracing: { otlp: { endpoint }, sampleRatio: 1 }, audit: { sink: { otlp: true } } });
      const session = await initialize(gw);
      for (let i = 1; i <= 5; i++) await call(gw, session, { jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'everything__echo', arguments: { message: 'hi' } } }, sampledParent().traceparent);
      const started = Date.now();
      await gw.close();
      expect(Date.now() - started).toBeLessThan(7_000);
      expect(gw.logs.some((line) => line.includes('tracing shutdown failed'))).toBe(true);
      const metrics = await gw.gateway.metrics.registry.metrics();
      expect(metrics).toMatch(/^switchyard_audit_dropped_total\{sink="otlp"\} 5$/m);
    } finally {
      blackHole.closeAllConnections();
      await new Promise<void>((resolve) => blackHole.close(() => resolve()));
    }
  });
});
