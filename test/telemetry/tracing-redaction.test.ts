// Spans keep no secret the log line of the same request hides: a tool name or resource URI the
// client sent (in the span name and the gen_ai/mcp attributes) and an error's status message
// (which quotes them) go through the log redactor, as payload attributes already did; a span
// of a security event (`standalone`) too.
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { SpanKind } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import { RpcError } from '../../src/mcp/errors.js';
import { requestAttributes, TEXT_LIMIT, Tracing } from '../../src/telemetry/tracing.js';
import { Redactor } from '../../src/util/redact.js';

const SECRET = 'configured-secret-0123';
const JWT = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLXZhbHVlLTEyMw';

function inMemory(): { tracing: Tracing; spans: () => Promise<ReadableSpan[]> } {
  const exporter = new InMemorySpanExporter();
  const redactor = new Redactor([SECRET]);
  const tracing = Tracing.create({ otlp: {}, sampleRatio: 1, payloads: false }, { env: {}, serviceVersion: 'test', addressOf: () => ({ transport: 'pipe' }), exporter, redact: (text) => redactor.redact(text) })!;
  return {
    tracing,
    spans: async () => {
      await tracing.flush();
      return exporter.getFinishedSpans();
    },
  };
}

/** Every string a span carries: name, attribute values, status message, event attributes. */
function textOf(span: ReadableSpan): string {
  return JSON.stringify([span.name, span.attributes, span.status, span.events.map((e) => e.attributes)]);
}

describe('span redaction', () => {
  it('a resource URI and a tool name with a secret or a JWT: redacted in names, attributes and status messages', async () => {
    const { tracing, spans } = inMemory();
    const uri = `everything+demo://resource/x?key=${SECRET}&t=${JWT}`;
    const read = requestAttributes('resources/read', { uri }, 1);
    const readTrace = tracing.request(read.name, read.attributes, tracing.parentOf(undefined, {}));
    const hop = readTrace.upstream('everything', 'resources/read', { uri: `demo://resource/x?key=${SECRET}&t=${JWT}` });
    hop.end(new RpcError({ code: -32602, message: `Unknown resource: demo://resource/x?key=${SECRET}` }));
    readTrace.end({ error: { code: -32602, message: `Unknown resource: ${uri}` } });
    const name = `everything__${JWT}`;
    const call = requestAttributes('tools/call', { name }, 2);
    tracing.request(call.name, call.attributes, tracing.parentOf(undefined, {})).end({ error: { code: -32602, message: `Unknown tool: ${name}` } });
    tracing.standalone(`switchyard sign_in`, { 'enduser.id': `p|${JWT}`, 'oauth.client.id': `https://c/?k=${SECRET}` }).end();
    const all = await spans();
    expect(all).toHaveLength(4);
    for (const span of all) {
      expect(textOf(span)).not.toContain(SECRET);
      expect(textOf(span)).not.toContain('eyJ');
    }
    const server = all.filter((s) => s.kind === SpanKind.SERVER);
    expect(server[0]!.attributes['mcp.resource.uri']).toBe('everything+demo://resource/x?key=[redacted]&t=[redacted]');
    expect(server[0]!.status.message).toBe('Unknown resource: everything+demo://resource/x?key=[redacted]&t=[redacted]');
    expect(server[1]!.name).toBe('tools/call everything__[redacted]');
    expect(server[1]!.attributes['gen_ai.tool.name']).toBe('everything__[redacted]');
  });

  it('a huge name is still cut to TEXT_LIMIT, redacted where the cut would leave half a token', async () => {
    const { tracing, spans } = inMemory();
    const name = `${'n'.repeat(TEXT_LIMIT - 20)}__${JWT}${'x'.repeat(1_000_000)}`;
    const call = requestAttributes('tools/call', { name }, 1);
    tracing.request(call.name, call.attributes, tracing.parentOf(undefined, {})).end({ error: { code: -32602, message: `Unknown tool: ${name}` } });
    const [span] = await spans();
    expect(span!.attributes['gen_ai.tool.name']).toBe(`${'n'.repeat(TEXT_LIMIT - 20)}__[redacted]`);
    expect(span!.name.length).toBeLessThanOrEqual(TEXT_LIMIT);
    expect(span!.status.message!.length).toBeLessThanOrEqual(TEXT_LIMIT);
    expect(textOf(span!)).not.toContain('eyJ');
  });
});
