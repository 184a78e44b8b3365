// Tracing without a gateway or a socket (spans kept in memory): when it is on at all, which
// parent a request's span takes, the MCP attributes and errors of SERVER and CLIENT spans (an
// upstream session's opening waited for among them), the context an upstream request carries,
// sampling, and payload attributes only when asked for, redacted and cut.
import { InMemorySpanExporter, type ReadableSpan, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import { GatewayError, RpcError } from '../../src/mcp/errors.js';
import { PAYLOAD_LIMIT, requestAttributes, TEXT_LIMIT, tracesEndpoint, Tracing, type TracingSettings } from '../../src/telemetry/tracing.js';
import { Redactor } from '../../src/util/redact.js';
import { heapInUseMb } from '../helpers/heap.js';

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

  it('sampleRatio 0 records neither a new trace nor one a caller sampled, and propagates either way', async () => {
    const { tracing, spans } = inMemory({ sampleRatio: 0 });
    const root = tracing.request('root', {}, tracing.parentOf(undefined, {}));
    const carried = root.upstream('kid', 'ping', {}).carry({});
    root.end({});
    const child = tracing.request('child', {}, tracing.parentOf({ traceparent: PARENT }, {}));
    child.end({});
    expect(await spans()).toEqual([]);
    expect((carried._meta as { traceparent: string }).traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/);
    // Still in the caller's trace.
    expect(child.traceId).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
  });

  it('follows a caller’s sampled flag only with trustCallerSampling, and a security event’s caller never', async () => {
    const { tracing, spans } = inMemory({ sampleRatio: 0, trustCallerSampling: true });
    tracing.request('trusted', {}, tracing.parentOf({ traceparent: PARENT }, {})).end({});
    tracing.request('not sampled by its caller', {}, tracing.parentOf(undefined, { traceparent: PARENT.replace(/01$/, '00') })).end({});
    tracing.request('new', {}, tracing.parentOf(undefined, {})).end({});
    const refused = tracing.standalone('switchyard request.refused', {}, PARENT);
    refused.end();
    const [trusted, ...more] = await spans();
    expect(more).toEqual([]);
    expect([trusted!.name, trusted!.spanContext().traceId, trusted!.parentSpanContext?.spanId]).toEqual(['trusted', '4bf92f3577b34da6a3ce929d0e0e4736', '00f067aa0ba902b7']);
    expect(refused.spanContext().traceId).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
  });
});

describe('what can be recorded at all', () => {
  it('a request under an unsampled parent never, a new trace only above sampleRatio 0, a sampled parent by the gateway’s share', () => {
    const zero = inMemory({ sampleRatio: 0 }).tracing;
    const some = inMemory({ sampleRatio: 0.25 }).tracing;
    const all = inMemory({ sampleRatio: 1 }).tracing;
    const trusting = inMemory({ sampleRatio: 0, trustCallerSampling: true }).tracing;
    const unsampled = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00';
    expect(zero.mayRecord(zero.parentOf(undefined, {}))).toBe(false);
    expect(zero.mayRecord(zero.parentOf({ traceparent: PARENT }, {}))).toBe(false);
    expect(all.mayRecord(all.parentOf({ traceparent: PARENT }, {}))).toBe(true);
    expect(trusting.mayRecord(trusting.parentOf({ traceparent: PARENT }, {}))).toBe(true);
    expect(trusting.mayRecord(trusting.parentOf({ traceparent: unsampled }, {}))).toBe(false);
    expect(some.mayRecord(some.parentOf(undefined, {}))).toBe(true);
    expect(some.mayRecord(some.parentOf(undefined, { traceparent: unsampled }))).toBe(false);
  });

  it('a caller cannot pick trace ids that are always sampled: the share is a keyed hash of the id', () => {
    const { tracing } = inMemory({ sampleRatio: 0.01 });
    // Ids whose 32-bit words XOR to zero: the SDK's TraceIdRatioBasedSampler samples every one.
    let sampled = 0;
    for (let i = 0; i < 1000; i++) {
      const a = (i * 2654435761 + 1).toString(16).padStart(8, '0').slice(-8);
      const b = (i * 40503 + 7).toString(16).padStart(8, '0').slice(-8);
      if (tracing.mayRecord(tracing.parentOf(undefined, { traceparent: `00-${a}${a}${b}${b}-00f067aa0ba902b7-01` }))) sampled++;
    }
    // About 10 of 1000 (the odds of 50 or more are below 1e-15).
    expect(sampled).toBeLessThan(50);
  });

  it('decides once per trace: the same id gets the same answer every time', () => {
    const { tracing } = inMemory({ sampleRatio: 0.5 });
    const answers = Array.from({ length: 5 }, () => tracing.mayRecord(tracing.parentOf({ traceparent: PARENT }, {})));
    expect(new Set(answers).size).toBe(1);
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

describe('shutdown', () => {
  it('against a collector that never answers, gives up after its timeout with an error saying so', async () => {
    const silent: SpanExporter = { export: () => {}, shutdown: () => Promise.resolve() };
    const tracing = Tracing.create(settings(), { env: {}, serviceVersion: 't', addressOf: () => undefined, exporter: silent })!;
    tracing.request('x', {}, tracing.parentOf(undefined, {})).end({});
    let timer: NodeJS.Timeout | undefined;
    const stillWaiting = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('still waiting after 2 s')), 2_000)));
    try {
      await expect(Promise.race([tracing.shutdown(100), stillWaiting])).rejects.toThrow('spans not exported within 100 ms of shutdown were dropped');
    } finally {
      clearTimeout(timer);
    }
  });
});

describe('what a client makes long', () => {
  it('reaches a span cut to 1,024 characters: names, attributes, status, a security event’s fields', async () => {
    const { tracing, spans } = inMemory();
    const long = 'x'.repeat(100_000);
    const { name, attributes } = requestAttributes('tools/call', { name: long }, long);
    const request = tracing.request(name, attributes, tracing.parentOf(undefined, {}));
    request.upstream('kid', 'resources/read', { uri: long }).end(new RpcError({ code: -32603, message: long }));
    request.end({ error: { code: -32602, message: `Unknown tool: ${long}` } });
    tracing.standalone('switchyard token.refused', { 'oauth.client.id': long }).end();
    const [client, server, event] = await spans();
    expect(server!.name).toBe(`tools/call ${long}`.slice(0, TEXT_LIMIT));
    expect(server!.attributes['gen_ai.tool.name']).toBe(long.slice(0, TEXT_LIMIT));
    expect(server!.attributes['jsonrpc.request.id']).toBe(long.slice(0, TEXT_LIMIT));
    expect(server!.status.message).toHaveLength(TEXT_LIMIT);
    expect(client!.attributes['mcp.resource.uri']).toBe(long.slice(0, TEXT_LIMIT));
    expect(client!.status.message).toHaveLength(TEXT_LIMIT);
    expect(event!.attributes['oauth.client.id']).toBe(long.slice(0, TEXT_LIMIT));
  });

  it('never splits a surrogate pair where it cuts', async () => {
    const { tracing, spans } = inMemory();
    tracing.request('x', { 'gen_ai.tool.name': `${'a'.repeat(TEXT_LIMIT - 1)}😀` }, tracing.parentOf(undefined, {})).end({});
    const [span] = await spans();
    expect(span!.attributes['gen_ai.tool.name']).toBe('a'.repeat(TEXT_LIMIT - 1));
  });

  it('meets span limits as a backstop: no value past 4 KiB, at most 64 attributes and 32 events', async () => {
    const { tracing, spans } = inMemory();
    const request = tracing.request('x', {}, tracing.parentOf(undefined, {}));
    request.span.setAttribute('late', 'y'.repeat(10_000));
    for (let i = 0; i < 100; i++) request.span.setAttribute(`a${i}`, i);
    for (let i = 0; i < 40; i++) request.event(`e${i}`);
    request.end({});
    const [span] = await spans();
    expect(span!.attributes.late).toHaveLength(PAYLOAD_LIMIT);
    expect(Object.keys(span!.attributes)).toHaveLength(64);
    expect(span!.events).toHaveLength(32);
  });

  it('holds none of it whole: 20 spans of 3 MB tool names, ids and arguments keep well under 20 MB', async () => {
    const { tracing, spans } = inMemory({ payloads: true });
    const before = heapInUseMb();
    for (let i = 0; i < 20; i++) {
      // A string of its own each time, as each request's body is.
      const long = String(i).padEnd(3_000_000, 'x');
      const { name, attributes } = requestAttributes('tools/call', { name: long }, long);
      const request = tracing.request(name, attributes, tracing.parentOf(undefined, {}));
      request.arguments({ text: long });
      request.end({ error: { code: -32602, message: `Unknown tool: ${long}` } });
    }
    // The spans are all held (as a batch waiting for a slow collector holds them).
    expect(await spans()).toHaveLength(20);
    expect(heapInUseMb() - before).toBeLessThan(20);
  });
});
