// Keeps secrets out of log lines: every configured secret value (upstream header values, stdio
// env values, API keys...) and anything shaped like a bearer token or a JWT is replaced by
// "[redacted]" in the finished line, whatever field it ended up in.

const REDACTED = '[redacted]';
const TOKEN_SHAPES = [
  /\bBearer\s+[A-Za-z0-9._~+/=-]+/gi, // RFC 6750 credentials
  /\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*/g, // JWS compact serialization
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

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

export class Redactor {
  #configured: Secret[] = [];
  #learned: string[] = [];
  #secrets: string[] = [];
  /** The short environment secrets as whole tokens, or undefined when there are none. */
  #shortTokens: RegExp | undefined;

  constructor(secrets: Iterable<Secret> = []) {
    this.update(secrets);
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
    this.#secrets = [...new Set([...values, ...this.#learned])].filter((s) => s.length >= MIN_SECRET_LENGTH).sort((a, b) => b.length - a.length);
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
    for (const secret of this.#secrets) {
      if (out.includes(secret)) out = out.split(secret).join(REDACTED);
      // The same value as it appears inside a JSON string.
      const escaped = JSON.stringify(secret).slice(1, -1);
      if (escaped !== secret && out.includes(escaped)) out = out.split(escaped).join(REDACTED);
    }
    if (this.#shortTokens) out = out.replace(this.#shortTokens, REDACTED);
    for (const shape of TOKEN_SHAPES) out = out.replace(shape, (match) => (match.toLowerCase().startsWith('bearer') ? `Bearer ${REDACTED}` : REDACTED));
    return out;
  }
}
