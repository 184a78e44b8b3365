// Client-chosen strings the gateway keeps or says back (a span's attribute, an audit field, an
// error quoting an unknown name) are cut, and the cut is a copy.

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

/** How much of a name or URI an error message quotes back to the client. */
export const QUOTE_LIMIT = 256;

/** `text` as an error message quotes it: whole when short, else its first QUOTE_LIMIT characters and "…". */
export function quote(text: string): string {
  return text.length <= QUOTE_LIMIT ? text : `${cut(text, QUOTE_LIMIT)}…`;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}
