// The gateway's own credential towards an upstream (never the client's token): an access token
// from the upstream's authorization server by the OAuth client-credentials grant (RFC 6749
// §4.4), cached until shortly before it expires, refreshed ahead of time, fetched once for all
// concurrent callers. Its answer is read within MAX_TOKEN_ANSWER_BYTES, whatever it says.
import { request, type Dispatcher } from 'undici';
import { BodyTooLarge } from '../util/bounded-read.js';

export interface ClientCredentialsOptions {
  tokenUrl: string;
  clientId: string;
  clientSecret: string;
  scope?: string;
  resource?: string;
  audience?: string;
  dispatcher: Dispatcher;
  /** Told each new token, so logs can redact it. */
  onToken?: (token: string) => void;
  now?: () => number;
}

/** Refresh this long before expiry, or at 80% of a short lifetime. */
const REFRESH_MARGIN_MS = 60_000;
const DEFAULT_LIFETIME_S = 300;
const FAILURE_BACKOFF_MS = 2_000;
/** A token endpoint's answer is a few KiB: past this it is dropped unread (the connection with it) and the fetch fails. */
export const MAX_TOKEN_ANSWER_BYTES = 64 * 1024;

export class ClientCredentials {
  readonly #options: ClientCredentialsOptions;
  readonly #now: () => number;
  #token: { value: string; refreshAt: number; expiresAt: number } | undefined;
  #fetching: Promise<string> | undefined;
  /** After a failed fetch, callers get the same failure until then (no hammering a broken endpoint). */
  #failure: { err: Error; until: number } | undefined;

  constructor(options: ClientCredentialsOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
  }

  /** The Authorization header value for the next upstream request. */
  async authorization(): Promise<string> {
    const now = this.#now();
    const token = this.#token;
    if (token && now < token.refreshAt) return `Bearer ${token.value}`;
    if (token && now < token.expiresAt) {
      // Still valid: refresh in the background, use the current one meanwhile.
      void this.#fetch().catch(() => {});
      return `Bearer ${token.value}`;
    }
    return `Bearer ${await this.#fetch()}`;
  }

  /** Forgets the cached token (the upstream refused it). */
  invalidate(): void {
    this.#token = undefined;
  }

  #fetch(): Promise<string> {
    if (this.#failure && this.#now() < this.#failure.until) return Promise.reject(this.#failure.err);
    this.#fetching ??= this.#request().then(
      (token) => {
        this.#failure = undefined;
        return token;
      },
      (err: unknown) => {
        this.#failure = { err: err instanceof Error ? err : new Error(String(err)), until: this.#now() + FAILURE_BACKOFF_MS };
        throw err;
      },
    ).finally(() => {
      this.#fetching = undefined;
    });
    return this.#fetching;
  }

  async #request(): Promise<string> {
    const { tokenUrl, clientId, clientSecret, scope, resource, audience, dispatcher } = this.#options;
    const form = new URLSearchParams({ grant_type: 'client_credentials' });
    if (scope) form.set('scope', scope);
    if (resource) form.set('resource', resource);
    if (audience) form.set('audience', audience);
    const basic = Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(clientSecret)}`).toString('base64');
    const started = this.#now();
    const { statusCode, headers, body } = await request(tokenUrl, {
      method: 'POST',
      dispatcher,
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json', authorization: `Basic ${basic}` },
      body: form.toString(),
      signal: AbortSignal.timeout(10_000),
    });
    const text = await readBounded(body, headers, MAX_TOKEN_ANSWER_BYTES);
    if (statusCode !== 200) throw new Error(`token endpoint answered HTTP ${statusCode}`);
    const parsed = JSON.parse(text) as { access_token?: unknown; token_type?: unknown; expires_in?: unknown };
    if (typeof parsed.access_token !== 'string' || (typeof parsed.token_type === 'string' && parsed.token_type.toLowerCase() !== 'bearer')) {
      throw new Error('token endpoint answered without a bearer access_token');
    }
    const lifetimeMs = (typeof parsed.expires_in === 'number' && parsed.expires_in > 0 ? parsed.expires_in : DEFAULT_LIFETIME_S) * 1_000;
    const margin = Math.min(REFRESH_MARGIN_MS, lifetimeMs * 0.2);
    this.#token = { value: parsed.access_token, refreshAt: started + lifetimeMs - margin, expiresAt: started + lifetimeMs };
    this.#options.onToken?.(parsed.access_token);
    return parsed.access_token;
  }
}

/** The body as text, at most `maxBytes` (declared or streamed); past that it is destroyed, which drops the connection, and BodyTooLarge thrown. */
async function readBounded(body: Dispatcher.ResponseData['body'], headers: Dispatcher.ResponseData['headers'], maxBytes: number): Promise<string> {
  if (Number(headers['content-length'] ?? 0) > maxBytes) {
    body.destroy();
    throw new BodyTooLarge(maxBytes, true);
  }
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    length += chunk.length;
    if (length > maxBytes) {
      body.destroy();
      throw new BodyTooLarge(maxBytes, false);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
