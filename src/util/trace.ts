// W3C Trace Context (https://www.w3.org/TR/trace-context/): continue a caller's trace into an
// upstream request with the gateway as a new span, keeping the trace id and flags.
import { randomBytes } from 'node:crypto';

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** A valid traceparent, normalized to lowercase; undefined for anything else. */
export function parseTraceparent(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const match = TRACEPARENT.exec(value.trim().toLowerCase());
  if (!match || match[1] === 'ff' || /^0+$/.test(match[2]!) || /^0+$/.test(match[3]!)) return undefined;
  return match[0];
}

/** The traceparent for a child span of `parent`: same version, trace id and flags. */
export function childTraceparent(parent: string): string {
  const [version, traceId, , flags] = parent.split('-');
  return `${version}-${traceId}-${randomBytes(8).toString('hex')}-${flags}`;
}
