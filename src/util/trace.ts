// W3C Trace Context (https://www.w3.org/TR/trace-context/): continue a caller's trace into an
// upstream request with the gateway as a new span, keeping the trace id and flags. Both fields
// come from clients and are forwarded as HTTP headers, so anything not valid W3C syntax is
// dropped here: a forwarded value never carries CR/LF or other control characters.
import { randomBytes } from 'node:crypto';

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** A valid traceparent, normalized to lowercase; undefined for anything else. */
export function parseTraceparent(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const match = TRACEPARENT.exec(value.trim().toLowerCase());
  if (!match || match[1] === 'ff' || /^0+$/.test(match[2]!) || /^0+$/.test(match[3]!)) return undefined;
  return match[0];
}

/**
 * The trace a request continues: its own `_meta.traceparent` when valid, else the HTTP header's
 * (what an upstream is sent and what the audit record names must be the same trace).
 */
export function continuedTraceparent(meta: unknown, header: unknown): string | undefined {
  return parseTraceparent(meta) ?? parseTraceparent(header);
}

/** The trace id of a valid traceparent; undefined for anything else. */
export function traceIdOf(traceparent: unknown): string | undefined {
  return parseTraceparent(traceparent)?.split('-')[1];
}

/** The traceparent for a child span of `parent`: same version, trace id and flags. */
export function childTraceparent(parent: string): string {
  const [version, traceId, , flags] = parent.split('-');
  return `${version}-${traceId}-${randomBytes(8).toString('hex')}-${flags}`;
}

/** trace-context §3.3.1.1: "up to 32 list-members". */
export const MAX_TRACESTATE_MEMBERS = 32;
/**
 * trace-context §3.3.1.5: vendors must propagate at least 512 characters; more is allowed, but
 * a bound keeps one client from making every upstream request (and log line) larger.
 */
export const MAX_TRACESTATE_LENGTH = 512;

// §3.3.1.3.1 key = simple-key / multi-tenant-key (level 2: a key may start with a digit).
const KEY = /^(?:[a-z0-9][_0-9a-z\-*/]{0,255}|[a-z0-9][_0-9a-z\-*/]{0,240}@[a-z][_0-9a-z\-*/]{0,13})$/;
// §3.3.1.3.2 value = 0*255(chr) nblk-chr; chr = %x20 / nblk-chr; nblk-chr = %x21-2B / %x2D-3C / %x3E-7E.
const VALUE = /^[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]$/;
// OWS around list-members (RFC 7230 §3.2.3): spaces and horizontal tabs only.
const OWS = /^[ \t]+|[ \t]+$/g;

/**
 * A valid tracestate, normalized (optional whitespace around members and empty members
 * removed); undefined for anything else, which the caller drops rather than forwards
 * (§3.3.1.1: an invalid tracestate is not propagated). Duplicate keys make it invalid too.
 */
export function parseTracestate(value: unknown): string | undefined {
  // Twice the bound leaves room for optional whitespace; the normalized form is checked below.
  if (typeof value !== 'string' || value.length > 2 * MAX_TRACESTATE_LENGTH) return undefined;
  const members: string[] = [];
  const keys = new Set<string>();
  for (const raw of value.split(',')) {
    const member = raw.replace(OWS, '');
    if (member === '') continue; // §3.3.1.1: empty list-members are allowed and ignored
    const eq = member.indexOf('=');
    if (eq === -1) return undefined;
    const key = member.slice(0, eq);
    if (!KEY.test(key) || !VALUE.test(member.slice(eq + 1)) || keys.has(key)) return undefined;
    keys.add(key);
    members.push(member);
    if (members.length > MAX_TRACESTATE_MEMBERS) return undefined;
  }
  if (members.length === 0) return undefined;
  const normalized = members.join(',');
  return normalized.length <= MAX_TRACESTATE_LENGTH ? normalized : undefined;
}
