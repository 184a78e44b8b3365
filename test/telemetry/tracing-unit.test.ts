// Tracing without a gateway or a socket (spans kept in memory): when it is on at all, which
// parent a request's span takes, the MCP attributes and errors of SERVER and CLIENT spans (an
// upstream session's opening waited for among them), the context an upstream request carries,
// sampling, and payload attributes only when asked for, redacted and cut.
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import { GatewayError, RpcError } from '../../src/mcp/errors.js';
import { PAYLOAD_LIMIT, requestAttributes, tracesEndpoint, Tracing, type TracingSettings } from '../../src/telemetry/tracing.js';
import { Redactor } from '../../src/util/redact.js';

const PARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
const OTHER = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
const settings = (over: Partial<TracingSettings> = {}): TracingSettings => ({ otlp: {}, sampleRatio: 1, payloads: false, ...over });

function inMemory(over: Partial<TracingSettings> = {}, redact?: (text: string) => string): { tracing: Tracing; spans: () => Promise<ReadableSpan[]> } {
  const exporter = new InMemorySpanExporter();
  const tracing = Tracing.create(settings(over), {
    env: {},
    serviceVersion: 'test',
    addressOf: (name) => (name === 'web' ? { transport: 'tcp', address: 'mcp.example.com', port: 443 } : { transport: 'pipe' }),
    exporter,
    ...(redact ? { redact } : {}),
  })!;
  return {
    tracing,
    spans: async () => {
      await tracing.flush();
      return exporter.getFinishedSpans();
    },
  };
}

describe('whether tracing is on', () => {
  it('is off without an endpoint in the config or the standard variables, and when the SDK is disabled', () => {
    const options = { serviceVersion: 't', addressOf: () => undefined };
    expect(Tracing.create(settings(), { ...options, env: {} })).toBeUndefined();
    expect(Tracing.create(settings({ otlp: { endpoint: 'http://c:4318' } }), { ...options, env: { OTEL_SDK_DISABLED: 'true' } })).toBeUndefined();
    expect(Tracing.create(settings(), { ...options, env: { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' } })).toBeInstanceOf(Tracing);
  });

  it('sends spans to the config’s collector, else the traces endpoint as given, else the base endpoint’s /v1/traces', () => {
    expect(tracesEndpoint(settings({ otlp: { endpoint: 'http://c:4318/' } }), { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x:1' })).toBe('http://c:4318/v1/traces');
    expect(tracesEndpoint(settings(), { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://t:1/custom', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x:1' })).toBe('http://t:1/custom');
    expect(tracesEndpoint(settings(), { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x:1' })).toBe('http://x:1/v1/traces');
    expect(tracesEndpoint(settings(), {})).toBeUndefined();
  });
});

describe('spans of a request', () => {
  it('names a span by method and target, never by a resource URI', () => {
    expect(requestAttributes('tools/call', { name: 'a__echo' }, 7)).toEqual({ name: 'tools/call a__echo', attributes: { 'mcp.method.name': 'tools/call', 'jsonrpc.request.id': '7', 'gen_ai.tool.name': 'a__echo', 'gen_ai.operation.name': 'execute_tool' } });
    expect(requestAttributes('prompts/get', { name: 'a__p' }).name).toBe('prompts/get a__p');
    expect(requestAttributes('resources/read', { uri: 'a+file:///x' })).toEqual({ name: 'resources/read', attributes: { 'mcp.method.name': 'resources/read', 'mcp.resource.uri': 'a+file:///x' } });
  });

  it('takes _meta’s trace context as the parent, else the header’s; invalid ones are ignored', async () => {
    const { tracing, spans } = inMemory();
    tracing.request('a', {}, tracing.parentOf({ traceparent: PARENT }, { traceparent: OTHER })).end({});
    tracing.request('b', {}, tracing.parentOf({ traceparent: 'garbage' }, { traceparent: OTHER })).end({});
    tracing.request('c', {}, tracing.parentOf(undefined, { traceparent: 'nope' })).end({});
    const [a, b, c] = await spans();
    expect([a!.spanContext().traceId, a!.parentSpanContext?.spanId]).toEqual(['4bf92f3577b34da6a3ce929d0e0e4736', '00f067aa0ba902b7']);
    expect([b!.spanContext().traceId, b!.parentSpanContext?.spanId]).toEqual(['0af7651916cd43dd8448eb211c80319c', 'b7ad6b7169203331']);
    expect(c!.parentSpanContext).toBeUndefined();
    expect(a!.kind).toBe(SpanKind.SERVER);
  });

  it('a CLIENT span per upstream request, its context in the upstream request’s _meta, errors by kind', async () => {
    const { tracing, spans } = inMemory();
    const request = tracing.request('tools/call web__echo', {}, tracing.parentOf({ traceparent: PARENT, tracestate: 'k=v' }, {}));
    const hop = request.upstream('web', 'tools/call', { name: 'echo' });
    const carried = hop.carry({ name: 'echo', _meta: { traceparent: OTHER, tracestate: 'x=y', progressToken: 3 } });
    hop.end(new RpcError({ code: -32603, message: 'boom' }));
    const stdio = request.upstream('kid', 'tools/call', { name: 'echo' });
    stdio.end({ content: [], isError: true });
    request.event('switchyard.rate_limited', { 'switchyard.retry_after_ms': 100 });
    request.end({ error: { code: -32602, message: 'Unknown tool: x' } });
    const all = await spans();
    const server = all.find((s) => s.kind === SpanKind.SERVER)!;
    const [web, kid] = all.filter((s) => s.kind === SpanKind.CLIENT);
    expect(carried._meta).toEqual({ progressToken: 3, traceparent: `00-4bf92f3577b34da6a3ce929d0e0e4736-${web!.spanContext().spanId}-01`, tracestate: 'k=v' });
    expect(web!.parentSpanContext?.spanId).toBe(server.spanContext().spanId);
    expect(web!.name).toBe('tools/call echo');
    expect(web!.attributes).toMatchObject({ 'switchyard.upstream.name': 'web', 'server.address': 'mcp.example.com', 'server.port': 443, 'network.transport': 'tcp', 'error.type': '-32603', 'rpc.response.status_code': '-32603' });
    expect(web!.status).toEqual({ code: SpanStatusCode.ERROR, message: 'boom' });
    expect(kid!.attributes).toMatchObject({ 'network.transport': 'pipe', 'error.type': 'tool_error' });
    expect(kid!.attributes['server.address']).toBeUndefined();
    expect(server.attributes).toMatchObject({ 'error.type': '-32602', 'rpc.response.status_code': '-32602' });
    expect(server.events.map((e) => [e.name, e.attributes])).toEqual([['switchyard.rate_limited', { 'switchyard.retry_after_ms': 100 }]]);
  });

  it('a wait for an upstream session to open is a CLIENT span initialize of that upstream, failed as the opening failed', async () => {
    const { tracing, spans } = inMemory();
    const request = tracing.request('tools/call web__echo', {}, tracing.parentOf({}, {}));
    await request.opening('web', Promise.resolve());
    const refused = new GatewayError('upstream_unavailable', 'Upstream kid is unavailable: spawn failed');
    await expect(request.opening('kid', Promise.reject(refused))).rejects.toBe(refused);
    request.end({});
    const all = await spans();
    const server = all.find((s) => s.kind === SpanKind.SERVER)!;
    const [web, kid] = all.filter((s) => s.kind === SpanKind.CLIENT);
    expect(web!.name).toBe('initialize');
    expect(web!.parentSpanContext?.spanId).toBe(server.spanContext().spanId);
    expect(web!.attributes).toEqual({ 'mcp.method.name': 'initialize', 'switchyard.upstream.name': 'web', 'server.address': 'mcp.example.com', 'server.port': 443, 'network.transport': 'tcp' });
    expect(web!.status.code).toBe(SpanStatusCode.UNSET);
    expect(kid!.attributes).toMatchObject({ 'switchyard.upstream.name': 'kid', 'network.transport': 'pipe', 'error.type': 'upstream_unavailable' });
    expect(kid!.status).toEqual({ code: SpanStatusCode.ERROR, message: 'Upstream kid is unavailable: spawn failed' });
  });

  it('samples parent-based: sampleRatio 0 records no new trace but follows a sampled parent, and propagates either way', async () => {
    const { tracing, spans } = inMemory({ sampleRatio: 0 });
    const root = tracing.request('root', {}, tracing.parentOf(undefined, {}));
    const carried = root.upstream('kid', 'ping', {}).carry({});
    root.end({});
    tracing.request('child', {}, tracing.parentOf({ traceparent: PARENT }, {})).end({});
    expect((await spans()).map((s) => s.name)).toEqual(['child']);
    expect((carried._meta as { traceparent: string }).traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/);
  });
});

describe('what can be recorded at all', () => {
  it('a request under an unsampled parent never, a new trace only above sampleRatio 0, a sampled parent always', () => {
    const zero = inMemory({ sampleRatio: 0 }).tracing;
    const some = inMemory({ sampleRatio: 0.25 }).tracing;
    const unsampled = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00';
    expect(zero.mayRecord(zero.parentOf(undefined, {}))).toBe(false);
    expect(zero.mayRecord(zero.parentOf({ traceparent: PARENT }, {}))).toBe(true);
    expect(some.mayRecord(some.parentOf(undefined, {}))).toBe(true);
    expect(some.mayRecord(some.parentOf(undefined, { traceparent: unsampled }))).toBe(false);
  });
});

describe('payload attributes', () => {
  it('are absent unless tracing.payloads, then redacted and cut to 4 KiB', async () => {
    const redactor = new Redactor(['hunter2-secret']);
    for (const payloads of [false, true]) {
      const { tracing, spans } = inMemory({ payloads }, (text) => redactor.redact(text));
      const request = tracing.request('tools/call a__echo', {}, tracing.parentOf(undefined, {}));
      request.arguments({ password: 'hunter2-secret', text: 'x'.repeat(10_000) });
      request.end({ result: { content: [{ type: 'text', text: 'token Bearer abc.def' }] } });
      const [span] = await spans();
      if (!payloads) {
        expect(span!.attributes['gen_ai.tool.call.arguments']).toBeUndefined();
        expect(span!.attributes['gen_ai.tool.call.result']).toBeUndefined();
        continue;
      }
      const args = span!.attributes['gen_ai.tool.call.arguments'] as string;
      expect(args.startsWith('{"password":"[redacted]","text":"xxx')).toBe(true);
      expect(args).toHaveLength(PAYLOAD_LIMIT);
      expect(span!.attributes['gen_ai.tool.call.result']).toBe('{"content":[{"type":"text","text":"token Bearer [redacted]"}]}');
    }
  });
});
