// The nesting depth of a JSON text, found in one pass without parsing (so a hostile body of a
// million brackets costs a scan, not a stack). Brackets inside strings do not count.

/** True when no object or array in `text` nests deeper than `max`. */
export function withinDepth(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (inString) {
      if (ch === 92) i++; // backslash: skip the escaped character
      else if (ch === 34) inString = false;
      continue;
    }
    if (ch === 34) inString = true;
    else if (ch === 123 || ch === 91) {
      if (++depth > max) return false;
    } else if (ch === 125 || ch === 93) depth--;
  }
  return true;
}
