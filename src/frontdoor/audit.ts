// The front door's audit lines, in one place so they can be routed to the audit sink later:
// consent given or denied, tokens issued or refused, refresh token reuse, revocation. They name
// principals, clients and a digest of the grant, never a token, code or secret.
import type { Logger } from '../util/log.js';
import { digest } from './rules.js';

export type AuditEvent = 'consent_given' | 'consent_denied' | 'token_issued' | 'token_refused' | 'refresh_reuse_detected' | 'grant_revoked';

export interface AuditFields {
  principal?: string;
  clientId?: string;
  /** The grant's id: logged as a digest (the id is the first half of its refresh tokens). */
  grantId?: string;
  grantType?: string;
  reason?: string;
  resource?: string;
}

export function audit(logger: Logger, event: AuditEvent, fields: AuditFields): void {
  const { grantId, ...rest } = fields;
  logger.info('audit', { event, source: 'frontdoor', ...rest, ...(grantId ? { grant: digest(grantId).slice(0, 16) } : {}) });
}
