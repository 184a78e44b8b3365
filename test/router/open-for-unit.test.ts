// openFor (src/router/call.ts): what every router path waits for before an upstream serves it.
// Nothing to open is no promise and no span; an untraced call waits for exactly what the links
// gave; a traced one gets a CLIENT span `initialize` of the upstream for the wait, ended as the
// wait ends. The links are a stand-in (what ensure() returns is all openFor sees); the spans are
// the real tracer's, kept in memory.
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import type { DownstreamSession } from '../../src/links/session.js';
import { GatewayError } from '../../src/mcp/errors.js';
import { openFor } from '../../src/router/call.js';
import { Tracing } from '../../src/telemetry/tracing.js';

const session = {} as DownstreamSession;

function tracing(): { tracing: Tracing; exporter: InMemorySpanExporter } {
  const exporter = new InMemorySpanExporter();
  const made = Tracing.create({ otlp: {}, sampleRatio: 1, payloads: false }, { env: {}, serviceVersion: 'test', addressOf: () => ({ transport: 'pipe' }), exporter })!;
  return { tracing: made, exporter };
}

/** Links whose ensure() answers `wait`, recording what it was asked. */
function links(wait: Promise<void> | undefined): { ensure: (s: DownstreamSession, upstream: string | undefined) => Promise<void> | undefined; asked: (string | undefined)[] } {
  const asked: (string | undefined)[] = [];
  return {
    asked,
    ensure: (s, upstream) => {
      expect(s).toBe(session);
      asked.push(upstream);
      return wait;
    },
  };
}

describe('openFor', () => {
  it('nothing to open: no promise and no span, traced or not', async () => {
    const { tracing: t, exporter } = tracing();
    const trace = t.request('tools/call a__x', {}, t.parentOf({}, {}));
    const open = links(undefined);
    expect(openFor(open, { session, trace }, 'a')).toBeUndefined();
    expect(openFor(open, { session }, 'a')).toBeUndefined();
    expect(open.asked).toEqual(['a', 'a']);
    trace.end({});
    await t.flush();
    expect(exporter.getFinishedSpans().map((s) => s.name)).toEqual(['tools/call a__x']);
  });

  it('an untraced call waits for exactly what the links gave', () => {
    const wait = Promise.resolve();
    expect(openFor(links(wait), { session }, 'a')).toBe(wait);
  });

  it('a traced call: the wait as a CLIENT span initialize of that upstream (tracing-unit has its attributes), a failure passed on', async () => {
    const { tracing: t, exporter } = tracing();
    const trace = t.request('tools/call a__x', {}, t.parentOf({}, {}));
    await openFor(links(Promise.resolve()), { session, trace }, 'a');
    const refused = new GatewayError('upstream_unavailable', 'Upstream b is unavailable: spawn failed');
    await expect(openFor(links(Promise.reject(refused)), { session, trace }, 'b')).rejects.toBe(refused);
    trace.end({});
    await t.flush();
    const opened = exporter.getFinishedSpans().filter((s) => s.kind === SpanKind.CLIENT);
    expect(opened.map((s) => [s.name, s.attributes['switchyard.upstream.name'], s.status.code])).toEqual([
      ['initialize', 'a', SpanStatusCode.UNSET],
      ['initialize', 'b', SpanStatusCode.ERROR],
    ]);
  });
});
