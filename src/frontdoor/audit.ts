// The front door's audit events, in one place: the IdP login failing, consent given or denied,
// tokens issued or refused, refresh token reuse, revocation. Each is a log line ("msg":"audit")
// and, through the gateway's SecurityEvents, an audit record (switchyard.audit/1) and a span.
// They name principals, clients and a digest of the grant, never a token, code or secret.
import type { SecurityEvents } from '../audit/events.js';
import type { Logger } from '../util/log.js';
import { digest } from './rules.js';

export type AuditEvent = 'login_failed' | 'consent_given' | 'consent_denied' | 'token_issued' | 'token_refused' | 'refresh_reuse_detected' | 'grant_revoked';

export interface AuditFields {
  principal?: string;
  clientId?: string;
  /** The grant's id: written as a digest (the id is the first half of its refresh tokens). */
  grantId?: string;
  grantType?: string;
  /** A short word: why a token was refused, why a login failed. */
  reason?: string;
  resource?: string;
}

/** Where the front door's audit events go: the log, and the audit sink when the gateway has one. */
export interface AuditSinks {
  logger: Logger;
  events?: SecurityEvents | undefined;
}

export function audit(sinks: AuditSinks, event: AuditEvent, fields: AuditFields): void {
  const { grantId, ...rest } = fields;
  const grant = grantId ? digest(grantId).slice(0, 16) : undefined;
  sinks.logger.info('audit', { event, source: 'frontdoor', ...rest, ...(grant ? { grant } : {}) });
  if (sinks.events) record(sinks.events, event, fields, grant);
}

/** The audit record of a front-door event: the closest SecurityEvents call, its facts in `detail`. */
function record(events: SecurityEvents, event: AuditEvent, fields: AuditFields, grant: string | undefined): void {
  const { principal, clientId, grantType, reason, resource } = fields;
  const who = { ...(principal !== undefined ? { principal } : {}), ...(clientId !== undefined ? { clientId } : {}) };
  const detail = { ...(grantType !== undefined ? { grantType } : {}), ...(resource !== undefined ? { resource } : {}), ...(grant !== undefined ? { grant } : {}) };
  switch (event) {
    case 'token_issued':
      return events.tokenIssued({ ...who, outcome: 'ok', detail });
    case 'token_refused':
      return events.tokenRefused({ ...who, outcome: 'refused', reason: reason ?? 'invalid_grant', detail });
    case 'refresh_reuse_detected':
      // A spent refresh token presented again: refused, and its whole grant revoked (RFC 9700 §4.14.2).
      return events.tokenRefused({ ...who, outcome: 'refused', reason: 'reused', detail: { ...detail, revoked: 'grant' } });
    case 'grant_revoked':
      // RFC 7009: the client revoked its grant; every token of it is refused from now on.
      return events.tokenRefused({ ...who, outcome: 'revoked', reason: 'revoked', detail: { ...detail, revoked: 'grant' } });
    case 'consent_given':
      return events.signIn({ ...who, outcome: 'ok', detail: { ...detail, step: 'consent' } });
    case 'consent_denied':
      return events.signIn({ ...who, outcome: 'denied', reason: 'consent_denied', detail: { ...detail, step: 'consent' } });
    case 'login_failed':
      return events.signIn({ ...who, outcome: 'error', reason: reason ?? 'idp_error', detail: { ...detail, step: 'idp_login' } });
  }
}
