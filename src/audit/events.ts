// Security events outside the call path, for the parts that decide them: a sign-in, a token the
// front door issued, refused or exchanged, a pin approved, a request refused at the edge, a
// config reload, a task's life. Each becomes an audit record and, when tracing is on, a span of its own (in
// the caller's trace when it names one).
import { SpanStatusCode, type Attributes } from '@opentelemetry/api';
import type { Tracing } from '../telemetry/tracing.js';
import { traceIdOf } from '../util/trace.js';
import type { AuditLog } from './audit.js';
import type { AuditEntry, AuditEvent, TaskAuditEvent } from './record.js';

/** What a part reports of a security event (the record's fields; `event` and `decision` are set by the method). */
export type SecurityFacts = Omit<AuditEntry, 'event' | 'decision' | 'traceId'> & {
  /** The W3C trace context of the request it happened in, if any. */
  traceparent?: string | undefined;
  tracestate?: string | undefined;
};

export class SecurityEvents {
  readonly #audit: AuditLog | undefined;
  readonly #tracing: Tracing | undefined;

  constructor(audit: AuditLog | undefined, tracing: Tracing | undefined) {
    this.#audit = audit;
    this.#tracing = tracing;
  }

  /** A principal signed in (the connect page, the front door's login): outcome ok, or why not. */
  signIn(facts: SecurityFacts): void {
    this.#emit('sign_in', facts.outcome === 'ok' ? 'allow' : 'deny', facts);
  }

  /** The front door issued a token (detail.grantType: authorization_code, refresh_token …). */
  tokenIssued(facts: SecurityFacts): void {
    this.#emit('token.issued', 'allow', facts);
  }

  /** The front door refused a token request (reason: invalid_grant, reused …). */
  tokenRefused(facts: SecurityFacts): void {
    this.#emit('token.refused', 'deny', facts);
  }

  /** A token exchanged for one an upstream accepts (RFC 8693), or refused. */
  tokenExchange(facts: SecurityFacts): void {
    this.#emit('token.exchange', facts.outcome === 'ok' ? 'allow' : 'deny', facts);
  }

  /** A changed tool's new definition approved (detail: who approved, the tool). */
  pinApproved(facts: SecurityFacts): void {
    this.#emit('pin.approved', 'allow', facts);
  }

  /** A request refused before it reached the router (rate limit, endpoint policy); reason says which. */
  requestRefused(facts: SecurityFacts): void {
    this.#emit('request.refused', 'deny', facts);
  }

  /** A config reload, applied or rejected. */
  configReload(facts: SecurityFacts): void {
    this.#emit('config.reload', facts.outcome === 'applied' ? 'allow' : 'deny', facts);
  }

  /** A task made, ended (outcome: its status), asked to cancel, or lost with the replica running it. */
  task(event: TaskAuditEvent, facts: SecurityFacts): void {
    this.#emit(event, 'allow', facts);
  }

  #emit(event: AuditEvent, decision: 'allow' | 'deny', facts: SecurityFacts): void {
    const { traceparent, tracestate, ...entry } = facts;
    let traceId: string | undefined;
    if (this.#tracing) {
      const attributes: Attributes = { 'switchyard.audit.event': event, 'switchyard.decision': decision, 'switchyard.outcome': entry.outcome };
      if (entry.principal !== undefined) attributes['enduser.id'] = entry.principal;
      if (entry.clientId !== undefined) attributes['oauth.client.id'] = entry.clientId;
      if (entry.upstream !== undefined) attributes['switchyard.upstream.name'] = entry.upstream;
      if (entry.reason !== undefined) attributes['switchyard.reason'] = entry.reason;
      const span = this.#tracing.standalone(`switchyard ${event}`, attributes, traceparent, tracestate);
      if (decision === 'deny') {
        span.setAttribute('error.type', entry.errorKind ?? entry.reason ?? entry.outcome);
        span.setStatus({ code: SpanStatusCode.ERROR });
      }
      traceId = span.spanContext().traceId;
      span.end();
    } else if (traceparent !== undefined) {
      traceId = traceIdOf(traceparent);
    }
    this.#audit?.write({ ...entry, event, decision, traceId });
  }
}
