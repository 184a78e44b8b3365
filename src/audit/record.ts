// The audit record, version 1: one JSON object per security-relevant event, with a fixed set of
// fields in a fixed order (docs/audit.md documents each; test/audit/golden-unit.test.ts holds the
// format). A field that does not apply is left out, never null. Every string field is redacted
// like a log line: a tool name or URI comes from the client and may carry a secret.
import { redactCut } from '../util/redact.js';

export const AUDIT_SCHEMA = 'switchyard.audit/1';

/** What happened. */
export type AuditEvent =
  | 'tool.call'
  | 'prompt.get'
  | 'resource.read'
  | 'request.refused'
  | 'sign_in'
  | 'token.issued'
  | 'token.refused'
  | 'token.exchange'
  | 'pin.approved'
  | 'config.reload'
  | TaskAuditEvent;

/** A task's life (the gateway's own tasks, and an upstream's carried under a handle). */
export type TaskAuditEvent = 'task.created' | 'task.ended' | 'task.cancel_requested' | 'task.lost';

export const AUDIT_EVENTS: readonly AuditEvent[] = [
  'tool.call',
  'prompt.get',
  'resource.read',
  'request.refused',
  'sign_in',
  'token.issued',
  'token.refused',
  'token.exchange',
  'pin.approved',
  'config.reload',
  'task.created',
  'task.ended',
  'task.cancel_requested',
  'task.lost',
];

/** Allowed, or refused by the gateway (policy, a rate limit, a bad credential). */
export type AuditDecision = 'allow' | 'deny';

/** What a caller reports; the audit log adds `schema`, `time`, and shapes `arguments`. */
export interface AuditEntry {
  event: AuditEvent;
  requestId?: string | undefined;
  traceId?: string | undefined;
  principal?: string | undefined;
  team?: string | undefined;
  /** The OAuth client (a CIMD URL or a DCR client id) the front door issued the token to. */
  clientId?: string | undefined;
  /** The MCP endpoint's path. */
  endpoint?: string | undefined;
  upstream?: string | undefined;
  /** The name (or URI) the client used. */
  name?: string | undefined;
  /** The same at the upstream. */
  upstreamName?: string | undefined;
  /** The task, by the handle its client knows it by (never the upstream's own id). */
  task?: string | undefined;
  decision: AuditDecision;
  /** Why it was refused: policy, rate_limit, or a credential's fault. */
  reason?: string | undefined;
  outcome: string;
  errorKind?: string | undefined;
  durationMs?: number | undefined;
  /** Tool arguments, raw: recorded only when `audit.arguments` is on, redacted and cut. */
  arguments?: unknown;
  /** Event-specific facts (a reload's changed upstreams, a token's grant type). */
  detail?: Readonly<Record<string, string | number | boolean | readonly string[]>> | undefined;
}

/** The record as written: the entry's fields in this order. */
const FIELDS = ['requestId', 'traceId', 'principal', 'team', 'clientId', 'endpoint', 'upstream', 'name', 'upstreamName', 'task', 'decision', 'reason', 'outcome', 'errorKind', 'durationMs'] as const;

/**
 * Other string fields (and `detail`'s) are cut to this many characters, marked with "…": a name,
 * URI or client id comes from a client, and a record queued for a slow sink holds it.
 */
export const FIELD_LIMIT = 1024;

/**
 * A string field as recorded: redacted (the log redactor: configured secrets, bearer tokens and
 * JWTs), then cut (a copy, so the original can go); `oncut` hears that it was cut. Only a bounded
 * prefix of a long value is read (redactCut), so a megabyte URI costs what a long one does.
 */
function bounded(value: unknown, redact: (text: string) => string, oncut: () => void): unknown {
  if (typeof value !== 'string') return value;
  const { text, cut } = redactCut(value, FIELD_LIMIT, redact);
  if (!cut) return text;
  oncut();
  return `${text}…`;
}

/** Arguments are cut to this many bytes of JSON (audit.arguments). */
export const ARGUMENTS_LIMIT = 4096;

export interface RecordOptions {
  time: Date;
  /** Whether arguments are recorded at all. */
  arguments: boolean;
  /** The log redactor: applied to every string field and to the arguments. */
  redact: (text: string) => string;
}

/** The argument object as recorded: redacted, and as a JSON string cut to ARGUMENTS_LIMIT bytes when longer. */
function recordedArguments(args: unknown, redact: (text: string) => string): { value: unknown; truncated: boolean } {
  const text = redact(JSON.stringify(args) ?? 'null');
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length > ARGUMENTS_LIMIT) return { value: bytes.subarray(0, ARGUMENTS_LIMIT).toString('utf8').replace(/\uFFFD+$/, ''), truncated: true };
  try {
    return { value: JSON.parse(text) as unknown, truncated: false };
  } catch {
    return { value: text, truncated: false }; // a redaction cut through JSON syntax: the text
  }
}

/** One audit record as a JSON line (with its newline). */
export function auditLine(entry: AuditEntry, options: RecordOptions): string {
  return `${JSON.stringify(auditRecord(entry, options))}\n`;
}

/** One audit record as an object, its fields in the documented order. */
export function auditRecord(entry: AuditEntry, options: RecordOptions): Record<string, unknown> {
  const record: Record<string, unknown> = { schema: AUDIT_SCHEMA, time: options.time.toISOString(), event: entry.event };
  let fieldsCut = false;
  const marked = (): void => void (fieldsCut = true);
  const { redact } = options;
  for (const field of FIELDS) if (entry[field] !== undefined) record[field] = bounded(entry[field], redact, marked);
  if (options.arguments && entry.arguments !== undefined) {
    const { value, truncated } = recordedArguments(entry.arguments, options.redact);
    record.arguments = value;
    if (truncated) record.argumentsTruncated = true;
  }
  if (entry.detail !== undefined) record.detail = Object.fromEntries(Object.entries(entry.detail).map(([key, value]) => [key, Array.isArray(value) ? value.map((item) => bounded(item, redact, marked)) : bounded(value, redact, marked)]));
  if (fieldsCut) record.fieldsTruncated = true;
  return record;
}
