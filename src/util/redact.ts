// Keeps secrets out of log lines: every configured secret value (upstream header values, stdio
// env values, API keys...) and anything shaped like a bearer token or a JWT is replaced by
// "[redacted]" in the finished line, whatever field it ended up in.

const REDACTED = '[redacted]';
const TOKEN_SHAPES = [
  /\bBearer\s+[A-Za-z0-9._~+/=-]+/gi, // RFC 6750 credentials
  /\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*/g, // JWS compact serialization
];
/** Shorter values (a port, "true") would redact innocent text; they are not secrets anyway. */
const MIN_SECRET_LENGTH = 6;

export class Redactor {
  #secrets: string[] = [];

  constructor(secrets: Iterable<string> = []) {
    this.update(secrets);
  }

  /** Replaces the set of secret values (config reload). */
  update(secrets: Iterable<string>): void {
    // Longest first, so a secret containing another is replaced whole.
    this.#secrets = [...new Set(secrets)].filter((s) => s.length >= MIN_SECRET_LENGTH).sort((a, b) => b.length - a.length);
  }

  add(secret: string): void {
    if (secret.length >= MIN_SECRET_LENGTH && !this.#secrets.includes(secret)) this.update([...this.#secrets, secret]);
  }

  redact(text: string): string {
    let out = text;
    for (const secret of this.#secrets) {
      if (out.includes(secret)) out = out.split(secret).join(REDACTED);
      // The same value as it appears inside a JSON string.
      const escaped = JSON.stringify(secret).slice(1, -1);
      if (escaped !== secret && out.includes(escaped)) out = out.split(escaped).join(REDACTED);
    }
    for (const shape of TOKEN_SHAPES) out = out.replace(shape, (match) => (match.toLowerCase().startsWith('bearer') ? `Bearer ${REDACTED}` : REDACTED));
    return out;
  }
}
