// What a pin is taken of: the fields of a tool or prompt that tell a model what it does, as the
// upstream listed them (before a team's view), and their digest over RFC 8785 canonical JSON, so
// key order and whitespace are never drift. Also the text hidden from people but read by models.
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import type { JsonObject } from '../mcp/jsonrpc.js';

export type PinKind = 'tools' | 'prompts';

/** The fields pinned of each kind (a field the upstream leaves out is left out here too). */
const PINNED_FIELDS: Readonly<Record<PinKind, readonly string[]>> = {
  tools: ['name', 'title', 'description', 'inputSchema', 'outputSchema', 'annotations'],
  prompts: ['name', 'description', 'arguments'],
};

/** The pinned fields of an item as its upstream listed it. */
export function definitionOf(kind: PinKind, item: JsonObject): JsonObject {
  const definition: JsonObject = {};
  for (const field of PINNED_FIELDS[kind]) if (item[field] !== undefined) definition[field] = item[field];
  return definition;
}

/** sha-256 (hex) of the canonical JSON (RFC 8785) of a definition. */
export function digestOf(definition: JsonObject): string {
  // canonicalize gives undefined only for a top-level undefined; a definition is an object.
  return `sha256:${createHash('sha256').update(canonicalize(definition) ?? '').digest('hex')}`;
}

/**
 * Code points that hide text from a person reading a definition while a model still reads it:
 * Unicode tag characters (U+E0000–U+E007F), bidirectional embeddings, overrides and isolates
 * (U+202A–U+202E, U+2066–U+2069), and runs of two or more zero-width characters (one alone
 * joins emoji or marks a line-break opportunity; a run carries a hidden message).
 */
const TAG = /[\u{E0000}-\u{E007F}]/u;
const BIDI = /[\u202A-\u202E\u2066-\u2069]/u;
const ZERO_WIDTH = '\u200B\u200C\u200D\u2060\uFEFF';
const ZERO_WIDTH_RUN = new RegExp(`[${ZERO_WIDTH}]{2,}`, 'u');
/** Code points named in a finding at most (a long hidden message is one finding). */
const MAX_NAMED = 16;

/** The hidden-text code points of every string in a definition (keys too), named as U+XXXX; empty when there are none. */
export function hiddenText(definition: JsonObject): string[] {
  const found = new Set<string>();
  const visit = (value: unknown): void => {
    if (found.size >= MAX_NAMED) return;
    if (typeof value === 'string') return scan(value, found);
    if (Array.isArray(value)) return value.forEach(visit);
    if (typeof value === 'object' && value !== null) {
      for (const [key, inner] of Object.entries(value)) {
        scan(key, found);
        visit(inner);
      }
    }
  };
  visit(definition);
  return [...found].slice(0, MAX_NAMED);
}

function scan(text: string, found: Set<string>): void {
  // Most strings are plain ASCII: nothing to look at.
  if (!/[^\x00-\x7F]/.test(text)) return;
  const zeroWidthRun = ZERO_WIDTH_RUN.test(text);
  for (const char of text) {
    if (found.size >= MAX_NAMED) return;
    if (TAG.test(char) || BIDI.test(char) || (zeroWidthRun && ZERO_WIDTH.includes(char))) found.add(codePoint(char));
  }
}

function codePoint(char: string): string {
  return `U+${char.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;
}
