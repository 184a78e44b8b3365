// How much of what a request names a span or an audit record keeps: client-chosen strings (a
// tool name, a URI, a request id, an error message quoting them) are cut, and the cut is a copy.

/** Client-chosen strings in spans are cut to this many characters (audit cuts its fields the same). */
export const TEXT_LIMIT = 1024;

/** Payload attributes are cut to 4 KiB (tracing.payloads): the longest attribute value a span keeps. */
export const PAYLOAD_LIMIT = 4096;

/** How long shutdown waits for a collector (or a stalled audit sink) before giving up what it holds. */
export const CLOSE_TIMEOUT_MS = 5_000;

/**
 * `text` cut to at most `limit` characters, as a string of its own. A plain slice is not enough:
 * V8 makes it a view that keeps the whole original alive, so a span or record waiting for a slow
 * collector would hold every byte the client sent. A surrogate pair is never split.
 */
export function cut(text: string, limit: number): string {
  if (text.length <= limit) return text;
  const end = isHighSurrogate(text.charCodeAt(limit - 1)) ? limit - 1 : limit;
  return Buffer.from(text.slice(0, end), 'utf16le').toString('utf16le');
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}
