// The nesting depth of a JSON text, found in one pass without parsing (so a hostile body of a
// million brackets costs a scan, not a stack). Brackets inside strings do not count.

/** True when no object or array in `text` nests deeper than `max`. */
export function withinDepth(text: string, max: number): boolean {
  // Nesting deeper than `max` takes max + 1 brackets opened and as many closed: a shorter text
  // is within the limit, or is no JSON at all (which the parser says next).
  if (text.length < 2 * (max + 1)) return true;
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (ch === 34) {
      i = closingQuote(text, i);
      if (i === -1) return true;
    } else if (ch === 123 || ch === 91) {
      if (++depth > max) return false;
    } else if (ch === 125 || ch === 93) depth--;
  }
  return true;
}

/** Where the string opened at `open` ends (its unescaped closing quote); -1 if it never does. */
function closingQuote(text: string, open: number): number {
  let quote = text.indexOf('"', open + 1);
  while (quote !== -1) {
    let backslashes = 0;
    while (text.charCodeAt(quote - 1 - backslashes) === 92) backslashes++;
    if (backslashes % 2 === 0) return quote;
    quote = text.indexOf('"', quote + 1);
  }
  return -1;
}
