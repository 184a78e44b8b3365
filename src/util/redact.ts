// Keeps secrets out of log lines: every configured secret value (upstream header values, stdio
// env values, API keys...) and anything shaped like a bearer token or a JWT is replaced by
// "[redacted]" in the finished line, whatever field it ended up in. Spans and audit records
// redact a client's strings the same way, reading a bounded prefix of each (redactCut).
import { cut } from './cut.js';

const REDACTED = '[redacted]';
const TOKEN_SHAPES = [
  /\bBearer\s+[A-Za-z0-9._~+/=-]+/gi, // RFC 6750 credentials
  // JWS compact serialization. Not after a letter or digit (`\b` would also refuse one after "_",
  // as in a namespaced tool name `everything__eyJ…`), so "monkeyJohn.Doe.Jr" stays a word.
  /(?<![A-Za-z0-9])eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*/g,
];
/** Shorter literal values (a port, "true") would redact innocent text; they are not secrets anyway. */
const MIN_SECRET_LENGTH = 6;

/** Tokens learned at run time (upstream access tokens) kept at most; the oldest go first. */
const MAX_LEARNED = 256;

/**
 * A configured secret. A plain string is one written in the config file: redacted wherever it
 * appears when at least MIN_SECRET_LENGTH long. One `fromEnv` was substituted from ${VAR} into a
 * secret-bearing place: a secret whatever its length. Short ones of those are redacted only
 * where they stand as a whole token (no letter, digit or "_" on either side), so a 4-character
 * password is hidden in `?key=abcd&` or `u:abcd@host` but never inside an ordinary word.
 */
export type Secret = string | { value: string; fromEnv: true };

/**
 * A redacting function as spans and audit records take it; `reach`, when known, is the length of
 * the longest secret it replaces, so redactCut reads at least that far past a cut.
 */
export type Redact = ((text: string) => string) & { readonly reach?: number };

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

export class Redactor {
  #configured: Secret[] = [];
  #learned: string[] = [];
  /** Each secret (longest first) with its JSON-escaped form when that differs, made once per change. */
  #secrets: { value: string; escaped: string | undefined }[] = [];
  /** The short environment secrets as whole tokens, or undefined when there are none. */
  #shortTokens: RegExp | undefined;

  constructor(secrets: Iterable<Secret> = []) {
    this.update(secrets);
  }

  /** The longest secret in any form it is replaced in (0 when there is none). */
  get longest(): number {
    let longest = 0;
    for (const { value, escaped } of this.#secrets) longest = Math.max(longest, value.length, escaped?.length ?? 0);
    return longest;
  }

  /** redact() as a function that knows its reach (redactCut), current across update() and add(). */
  asFunction(): Redact {
    const fn = (text: string): string => this.redact(text);
    return Object.defineProperty(fn, 'reach', { get: () => this.longest });
  }

  /** Replaces the configured secret values (config reload); learned ones stay. */
  update(secrets: Iterable<Secret>): void {
    this.#configured = [...secrets];
    this.#rebuild();
  }

  /** A secret met at run time, such as an access token the gateway obtained. */
  add(secret: string): void {
    if (secret.length < MIN_SECRET_LENGTH || this.#learned.includes(secret)) return;
    this.#learned.push(secret);
    if (this.#learned.length > MAX_LEARNED) this.#learned.shift();
    this.#rebuild();
  }

  #rebuild(): void {
    const values = this.#configured.map((s) => (typeof s === 'string' ? s : s.value));
    // Longest first, so a secret containing another is replaced whole.
    this.#secrets = [...new Set([...values, ...this.#learned])]
      .filter((s) => s.length >= MIN_SECRET_LENGTH)
      .sort((a, b) => b.length - a.length)
      .map((value) => {
        const escaped = JSON.stringify(value).slice(1, -1);
        return { value, escaped: escaped === value ? undefined : escaped };
      });
    const short = new Set<string>();
    for (const s of this.#configured) {
      if (typeof s === 'string' || s.value === '' || s.value.length >= MIN_SECRET_LENGTH) continue;
      short.add(s.value);
      short.add(JSON.stringify(s.value).slice(1, -1));
    }
    const alternatives = [...short].sort((a, b) => b.length - a.length).map(escapeRegExp);
    this.#shortTokens = alternatives.length === 0 ? undefined : new RegExp(`(?<![A-Za-z0-9_])(?:${alternatives.join('|')})(?![A-Za-z0-9_])`, 'g');
  }

  redact(text: string): string {
    let out = text;
    for (const { value, escaped } of this.#secrets) {
      // Spans and audit records redact short strings one by one: a longer secret cannot be in one.
      if (value.length > out.length) continue;
      if (out.includes(value)) out = out.split(value).join(REDACTED);
      // The same value as it appears inside a JSON string.
      if (escaped !== undefined && out.includes(escaped)) out = out.split(escaped).join(REDACTED);
    }
    if (this.#shortTokens) out = out.replace(this.#shortTokens, REDACTED);
    for (const shape of TOKEN_SHAPES) out = out.replace(shape, (match) => (match.toLowerCase().startsWith('bearer') ? `Bearer ${REDACTED}` : REDACTED));
    return out;
  }
}

/**
 * How far past its cut a client's string is still read for redaction (redactCut): a token that
 * begins before the cut is found whole when it ends within this many characters after it, and a
 * configured secret always (the read reaches as far as the longest, Redact's `reach`, when longer).
 */
export const REDACT_LOOKAHEAD = 8192;

/** The start of a JWT the window's end cut off: `eyJ` in the run of token characters at the end. */
const OPEN_JWT = /(?<![A-Za-z0-9])eyJ/;

/** A character of a JWT: base64url or its dots. */
function isTokenChar(code: number): boolean {
  return (code >= 0x61 && code <= 0x7a) || (code >= 0x41 && code <= 0x5a) || (code >= 0x30 && code <= 0x39) || code === 0x2e || code === 0x5f || code === 0x2d;
}

/**
 * A client's string as a span or an audit record keeps it (a tool name, a URI, an error quoting
 * them): redacted, then cut to `limit` characters (a copy, so the original can go). Only its first
 * `limit` + REDACT_LOOKAHEAD characters are read, so a name of megabytes costs what a long one
 * does; a JWT still open where that window ends is redacted from where it begins.
 */
export function redactCut(text: string, limit: number, redact: Redact): { text: string; cut: boolean } {
  const read = limit + Math.max(REDACT_LOOKAHEAD, redact.reach ?? 0);
  if (text.length <= read) {
    const clean = redact(text);
    return clean.length <= limit ? { text: clean, cut: false } : { text: cut(clean, limit), cut: true };
  }
  let clean = redact(text.slice(0, read));
  // The window ends inside a run of token characters: a JWT in it was cut before its signature.
  let start = clean.length;
  while (start > 0 && isTokenChar(clean.charCodeAt(start - 1))) start--;
  if (start < limit && start < clean.length) {
    const open = clean.slice(start).search(OPEN_JWT);
    if (open !== -1) clean = `${clean.slice(0, start + open)}${REDACTED}`;
  }
  // A copy either way: what redact() returned unchanged is a view of the whole original.
  return { text: clean.length > limit ? cut(clean, limit) : Buffer.from(clean, 'utf16le').toString('utf16le'), cut: true };
}
