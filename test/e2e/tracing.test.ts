// One trace from host to upstream: an SDK client's call carrying a traceparent reaches an OTLP
// receiver as the client's span → the gateway's SERVER span → its CLIENT span → the upstream's
// own span (an upstream instrumented with the OpenTelemetry SDK, reading `_meta.traceparent`),
// for a stdio and an HTTP upstream and for both eras, with the MCP semantic conventions; a first
// call's wait for its lazy upstream session to open is a CLIENT span `initialize`.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { join } from 'node:path';
import { ROOT_CONTEXT, trace } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectClient, startGateway, textOf, type TestGateway } from '../helpers/gateway.js';
import { CLIENT, SERVER, startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.js';
import { FIXTURES, NODE } from '../helpers/paths.js';
import { stopChild, waitForLine } from '../helpers/processes.js';
import { callStateless, statelessMeta } from '../helpers/stateless-wire.js';

const FIXTURE = join(FIXTURES, 'traced-server.mjs');

/** The host's own span, made with the OpenTelemetry SDK, as the traceparent it sends. */
function hostSpan(provider: BasicTracerProvider, name: string): { traceparent: string; traceId: string; spanId: string } {
  const span = provider.getTracer('host').startSpan(name);
  const carrier: Record<string, string> = {};
  new W3CTraceContextPropagator().inject(trace.setSpan(ROOT_CONTEXT, span), carrier, { set: (c, k, v) => (c[k] = v) });
  span.end();
  const { traceId, spanId } = span.spanContext();
  return { traceparent: carrier.traceparent!, traceId, spanId };
}

describe('tracing: one trace from host to upstream', () => {
  let receiver: OtlpReceiver;
  let httpUpstream: ChildProcessWithoutNullStreams;
  let gw: TestGateway;
  let client: Client | undefined;
  const host = new BasicTracerProvider();
  let viaHeader: ReturnType<typeof hostSpan>;
  let viaMeta: ReturnType<typeof hostSpan>;
  let stateless: ReturnType<typeof hostSpan>;
  let ignoredHeader: ReturnType<typeof hostSpan>;
  let upstreamHeaders: Record<string, string>;

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    const otlp = `${receiver.url}/v1/traces`;
    httpUpstream = spawn(NODE, [FIXTURE, '--http'], { env: { PATH: process.env.PATH, OTLP_URL: otlp, SERVICE_NAME: 'traced-http' } });
    const [, url] = await waitForLine(httpUpstream, /^listening (http:\S+)$/);
    gw = await startGateway({
      upstreams: {
        tstdio: { stdio: { command: NODE, args: [FIXTURE], env: { OTLP_URL: otlp, SERVICE_NAME: 'traced-stdio' } } },
        thttp: { http: { url } },
      },
      tracing: { otlp: { endpoint: receiver.url }, sampleRatio: 1 },
    });
    viaHeader = hostSpan(host, 'host call over stdio');
    viaMeta = hostSpan(host, 'host call over http');
    stateless = hostSpan(host, 'host stateless call');
    ignoredHeader = hostSpan(host, 'header the stateless _meta wins over');
    // A sessions-era SDK client: the traceparent in the HTTP header of its POST.
    client = await connectClient(gw.url, {}, undefined, { traceparent: viaHeader.traceparent });
    expect(textOf(await client.callTool({ name: 'tstdio__echo', arguments: { text: 'hi' } }))).toBe('hi');
    // The same client, the traceparent in the request's _meta (which wins over the header).
    expect(textOf(await client.callTool({ name: 'thttp__echo', arguments: { text: 'there' }, _meta: { traceparent: viaMeta.traceparent } }))).toBe('there');
    upstreamHeaders = JSON.parse(textOf(await client.callTool({ name: 'thttp__headers', arguments: {}, _meta: { traceparent: viaMeta.traceparent } }))) as Record<string, string>;
    // A 2026-07-28 request: `_meta` carries the trace context; a different HTTP header loses.
    const sent = await callStateless(gw.url, 1, 'tstdio__echo', { text: 'now' }, {}, { traceparent: ignoredHeader.traceparent }, { ...statelessMeta(), traceparent: stateless.traceparent });
    expect(sent.status).toBe(200);
    await client.close();
    client = undefined;
    // Closing the gateway exports what its batch still holds.
    await gw.close();
  });

  afterAll(async () => {
    await client?.close();
    await gw?.close();
    if (httpUpstream) await stopChild(httpUpstream);
    await receiver?.close();
  });

  /** The chain under one host span: the gateway's SERVER span, its CLIENT span, the upstream's span. */
  async function chain(host: { traceId: string; spanId: string }, tool: string, upstreamService: string): Promise<{ server: ReceivedSpan; client: ReceivedSpan; upstream: ReceivedSpan }> {
    const find = (): { server?: ReceivedSpan; client?: ReceivedSpan; upstream?: ReceivedSpan } => {
      const server = receiver.spans.find((s) => s.service === 'switchyard' && s.kind === SERVER && s.traceId === host.traceId && s.name === `tools/call ${tool}`);
      const client = server && receiver.spans.find((s) => s.service === 'switchyard' && s.kind === CLIENT && s.parentSpanId === server.spanId && s.name !== 'initialize');
      const upstream = client && receiver.spans.find((s) => s.service === upstreamService && s.parentSpanId === client.spanId);
      return { server, client, upstream };
    };
    await receiver.waitFor(() => find().upstream !== undefined, `the spans of ${tool}`);
    const found = find();
    return { server: found.server!, client: found.client!, upstream: found.upstream! };
  }

  it('a stdio upstream: the HTTP traceparent is the SERVER span’s parent, the CLIENT span reaches the child in _meta', async () => {
    const { server, client: hop, upstream } = await chain(viaHeader, 'tstdio__echo', 'traced-stdio');
    expect(server.parentSpanId).toBe(viaHeader.spanId);
    expect(server.attributes).toMatchObject({
      'mcp.method.name': 'tools/call',
      'gen_ai.tool.name': 'tstdio__echo',
      'gen_ai.operation.name': 'execute_tool',
      'mcp.protocol.version': '2025-11-25',
    });
    expect(server.attributes['jsonrpc.request.id']).toEqual(expect.any(String));
    expect(server.attributes['mcp.session.id']).toEqual(expect.any(String));
    expect(server.attributes['error.type']).toBeUndefined();
    // No payload attributes unless tracing.payloads.
    expect(server.attributes['gen_ai.tool.call.arguments']).toBeUndefined();
    expect(server.attributes['gen_ai.tool.call.result']).toBeUndefined();
    expect(hop.name).toBe('tools/call echo');
    expect(hop.traceId).toBe(viaHeader.traceId);
    expect(hop.attributes).toMatchObject({ 'mcp.method.name': 'tools/call', 'gen_ai.tool.name': 'echo', 'switchyard.upstream.name': 'tstdio', 'network.transport': 'pipe' });
    expect(upstream.traceId).toBe(viaHeader.traceId);
  });

  it('an HTTP upstream: _meta.traceparent is the parent; server.address and the traceparent header name the CLIENT span', async () => {
    const { server, client: hop, upstream } = await chain(viaMeta, 'thttp__echo', 'traced-http');
    expect(server.parentSpanId).toBe(viaMeta.spanId);
    expect(hop.attributes).toMatchObject({ 'switchyard.upstream.name': 'thttp', 'server.address': '127.0.0.1', 'network.transport': 'tcp' });
    expect(hop.attributes['server.port']).toEqual(expect.any(Number));
    expect(upstream.traceId).toBe(viaMeta.traceId);
    // The HTTP request to the upstream carries the CLIENT span's context as a header too.
    const headersCall = await chain(viaMeta, 'thttp__headers', 'traced-http');
    expect(upstreamHeaders.traceparent).toBe(`00-${viaMeta.traceId}-${headersCall.client.spanId}-01`);
  });

  it('a 2026-07-28 request: the trace context in _meta wins over the HTTP header, and no session id is named', async () => {
    const { server, upstream } = await chain(stateless, 'tstdio__echo', 'traced-stdio');
    expect(server.parentSpanId).toBe(stateless.spanId);
    expect(server.attributes['mcp.protocol.version']).toBe('2026-07-28');
    expect(server.attributes['mcp.session.id']).toBeUndefined();
    expect(upstream.traceId).toBe(stateless.traceId);
    expect(receiver.spans.some((s) => s.traceId === ignoredHeader.traceId)).toBe(false);
  });

  it('initialize is a SERVER span too, under the same parent, naming the session it opened', async () => {
    const isInit = (s: ReceivedSpan): boolean => s.name === 'initialize' && s.kind === SERVER && s.traceId === viaHeader.traceId;
    await receiver.waitFor(() => receiver.spans.some(isInit), 'the initialize span');
    const init = receiver.spans.find(isInit)!;
    expect(init.kind).toBe(SERVER);
    expect(init.parentSpanId).toBe(viaHeader.spanId);
    expect(init.attributes).toMatchObject({ 'mcp.method.name': 'initialize', 'mcp.protocol.version': expect.any(String), 'jsonrpc.request.id': expect.any(String) });
    const call = receiver.spans.find((s) => s.name === 'tools/call tstdio__echo' && s.traceId === viaHeader.traceId)!;
    expect(init.attributes['mcp.session.id']).toBe(call.attributes['mcp.session.id']);
  });

  it('a first call waiting for its upstream session to open (a lazy upstream) shows the wait as a CLIENT span initialize; a later call has none', async () => {
    const openingOf = (server: ReceivedSpan): ReceivedSpan[] => receiver.spans.filter((s) => s.service === 'switchyard' && s.kind === CLIENT && s.parentSpanId === server.spanId && s.name === 'initialize');
    const overStdio = await chain(viaHeader, 'tstdio__echo', 'traced-stdio');
    const [stdioOpening, ...more] = openingOf(overStdio.server);
    expect(more).toEqual([]);
    expect(stdioOpening?.attributes).toMatchObject({ 'mcp.method.name': 'initialize', 'switchyard.upstream.name': 'tstdio', 'network.transport': 'pipe' });
    expect(stdioOpening!.status.code).not.toBe(2); // not ERROR
    // The wait came first, then the call itself went upstream (a span starts on the millisecond
    // clock and ends a performance.now() difference later: compared to within 1 ms).
    expect(stdioOpening!.end <= overStdio.client.start + 1_000_000n).toBe(true);
    const overHttp = await chain(viaMeta, 'thttp__echo', 'traced-http');
    expect(openingOf(overHttp.server).map((s) => s.attributes)).toEqual([expect.objectContaining({ 'switchyard.upstream.name': 'thttp', 'network.transport': 'tcp', 'server.address': '127.0.0.1' })]);
    // The next call on the same upstream finds its session open: nothing waited for.
    const later = await chain(viaMeta, 'thttp__headers', 'traced-http');
    expect(openingOf(later.server)).toEqual([]);
  });

  it('the gateway exports OTLP JSON and the upstream OTLP protobuf, both decoded', () => {
    expect(receiver.contentTypes.some((t) => t.startsWith('application/json'))).toBe(true);
    expect(receiver.contentTypes.some((t) => t.startsWith('application/x-protobuf'))).toBe(true);
  });
});
