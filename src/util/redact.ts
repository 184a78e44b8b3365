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

/** Tokens learned at run time (upstream access tokens) kept at most; the oldest go first. */
const MAX_LEARNED = 256;

export class Redactor {
  #configured: string[] = [];
  #learned: string[] = [];
  #secrets: string[] = [];

  constructor(secrets: Iterable<string> = []) {
    this.update(secrets);
  }

  /** Replaces the configured secret values (config reload); learned ones stay. */
  update(secrets: Iterable<string>): void {
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
    // Longest first, so a secret containing another is replaced whole.
    this.#secrets = [...new Set([...this.#configured, ...this.#learned])].filter((s) => s.length >= MIN_SECRET_LENGTH).sort((a, b) => b.length - a.length);
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
