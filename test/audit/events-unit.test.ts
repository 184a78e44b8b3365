// The security events other parts report (sign-ins, the front door's tokens, token exchange,
// pin approvals, refusals at the edge, reloads, a task's life): each is one audit record with its decision,
// and a span of its own, in the caller's trace when it names one.
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { SpanStatusCode } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import { AuditLog, type WritableLike } from '../../src/audit/audit.js';
import { SecurityEvents } from '../../src/audit/events.js';
import { Metrics } from '../../src/metrics/metrics.js';
import { Tracing } from '../../src/telemetry/tracing.js';

const PARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

function setup(traced: boolean) {
  const chunks: string[] = [];
  const out: WritableLike = { write: (chunk, done) => (chunks.push(chunk), done(), true) };
  const audit = new AuditLog({ sink: 'stdout', arguments: false }, { metrics: new Metrics([]), stdout: out, resolvePath: (p) => p, env: {}, serviceVersion: 'test' });
  const exporter = new InMemorySpanExporter();
  const tracing = traced ? Tracing.create({ otlp: {}, sampleRatio: 1, payloads: false }, { env: {}, serviceVersion: 'test', addressOf: () => undefined, exporter }) : undefined;
  const events = new SecurityEvents(audit, tracing);
  return {
    events,
    records: async () => {
      await audit.close();
      return chunks.join('').trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    },
    spans: async () => {
      await tracing?.flush();
      return exporter.getFinishedSpans();
    },
  };
}

describe('security events', () => {
  it('are audit records with their decision, and spans named by event in the trace they happened in', async () => {
    const { events, records, spans } = setup(true);
    events.signIn({ principal: 'alice', upstream: 'github', outcome: 'ok' });
    events.signIn({ principal: 'alice', upstream: 'github', outcome: 'wrong_user', reason: 'wrong_user' });
    events.tokenIssued({ principal: 'alice', clientId: 'dcr-1', outcome: 'ok', detail: { grantType: 'authorization_code' }, traceparent: PARENT });
    events.tokenRefused({ clientId: 'dcr-1', outcome: 'refused', reason: 'invalid_grant' });
    events.tokenExchange({ principal: 'alice', upstream: 'tickets', outcome: 'ok' });
    events.pinApproved({ principal: 'bob', upstream: 'tickets', name: 'search', outcome: 'ok' });
    events.requestRefused({ requestId: 'r1', outcome: 'refused', reason: 'rate_limit' });
    events.configReload({ outcome: 'rejected' });
    events.task('task.created', { principal: 'alice', upstream: 'render', name: 'render__video', task: 'handle-1', outcome: 'ok' });
    const written = await records();
    expect(written.map((r) => [r.event, r.decision, r.outcome])).toEqual([
      ['sign_in', 'allow', 'ok'],
      ['sign_in', 'deny', 'wrong_user'],
      ['token.issued', 'allow', 'ok'],
      ['token.refused', 'deny', 'refused'],
      ['token.exchange', 'allow', 'ok'],
      ['pin.approved', 'allow', 'ok'],
      ['request.refused', 'deny', 'refused'],
      ['config.reload', 'deny', 'rejected'],
      ['task.created', 'allow', 'ok'],
    ]);
    expect(written.at(-1)).toMatchObject({ upstream: 'render', name: 'render__video', task: 'handle-1' });
    const all = await spans();
    expect(all.map((s) => s.name)).toEqual(['switchyard sign_in', 'switchyard sign_in', 'switchyard token.issued', 'switchyard token.refused', 'switchyard token.exchange', 'switchyard pin.approved', 'switchyard request.refused', 'switchyard config.reload', 'switchyard task.created']);
    // Each record carries its span's trace id; the token was issued in the caller's trace.
    written.forEach((record, i) => expect(record.traceId).toBe(all[i]!.spanContext().traceId));
    expect(all[2]!.spanContext().traceId).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
    expect(all[2]!.parentSpanContext?.spanId).toBe('00f067aa0ba902b7');
    expect(all[2]!.attributes).toMatchObject({ 'enduser.id': 'alice', 'oauth.client.id': 'dcr-1', 'switchyard.decision': 'allow' });
    expect(all[3]!.status.code).toBe(SpanStatusCode.ERROR);
    expect(all[3]!.attributes['error.type']).toBe('invalid_grant');
  });

  it('without tracing, a record still names the trace its caller gave', async () => {
    const { events, records } = setup(false);
    events.tokenIssued({ clientId: 'dcr-1', outcome: 'ok', traceparent: PARENT });
    events.tokenIssued({ clientId: 'dcr-1', outcome: 'ok' });
    const [given, none] = await records();
    expect(given!.traceId).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
    expect(none!.traceId).toBeUndefined();
  });
});
