// The audit line of a pinning event (drift seen, an operator's approval or rejection): one
// structured log line with event `audit`, so it can be told from the rest of the log.
import type { Logger } from '../util/log.js';
import type { PinKind } from './definition.js';

export interface PinAuditEntry {
  action: 'pin.drift' | 'pin.approved' | 'pin.rejected';
  upstream: string;
  kind: PinKind;
  name: string;
  digest?: string;
  pinnedDigest?: string;
  drift?: string;
  /** Hidden-text code points (U+XXXX) found in the definition. */
  hidden?: readonly string[];
  mode?: string;
  /** Who decided: the principal at /admin/pins, or the CLI's --by. */
  by?: string;
}

export type PinAudit = (entry: PinAuditEntry) => void;

export function auditToLog(logger: Logger): PinAudit {
  return function pinAudit(entry) {
    (entry.action === 'pin.drift' ? logger.warn : logger.info).call(logger, 'audit', { event: 'audit', ...entry });
  };
}
