// Client ID Metadata Documents (2025-11-25 authorization.mdx; draft-ietf-oauth-client-id-
// metadata-document): a client_id that is an https URL names a JSON document describing the
// client. Fetched with an SSRF guard (the URL's shape, the allowed hosts, the address checked at
// connect time, no redirects, 5 KiB and 5 s at most) and kept per its caching headers in a
// bounded LRU; a URL that failed is not fetched again for a minute, and requests for a URL being
// fetched wait for that fetch, so a hostile client cannot make the gateway fetch much or hold much.
import { LRUCache } from 'lru-cache';
import { Agent, request } from 'undici';
import { AddressGuard } from '../util/address-guard.js';
import { cimdUrlRefusal, hostAllowed, redirectRefusal } from './rules.js';

/** A client as the front door knows it, from its metadata document or its registration. */
export interface ClientInfo {
  clientId: string;
  kind: 'cimd' | 'dcr';
  name: string;
  redirectUris: readonly string[];
}

/** The client cannot be used; the message is shown to the user (it names no secret). */
export class ClientRefused extends Error {
  override readonly name = 'ClientRefused';
}

export interface CimdOptions {
  allow: readonly string[];
  allowPrivateAddresses: boolean;
  /** Extra CA certificates (PEM) trusted for the fetch (tests; in production NODE_EXTRA_CA_CERTS). */
  ca?: string;
  /** Documents kept, and failed URLs remembered (each). */
  maxEntries?: number;
  /** The caches' clock (tests). */
  now?: () => number;
}

export const MAX_DOCUMENT_BYTES = 5 * 1024;
export const FETCH_TIMEOUT_MS = 5_000;
/** Freshness when the answer has no caching headers (RFC 9111 §4.2.2 lets a cache choose). */
const DEFAULT_FRESH_MS = 5 * 60_000;
const MAX_FRESH_MS = 24 * 60 * 60_000;
/** How long a URL whose document could not be used is refused without fetching it again. */
export const FAILURE_TTL_MS = 60_000;
/** Anything with no scheme-relative structure of its own: these are redirect URIs a document may never list. */
const ALL_REDIRECTS = ['https://*', 'http://127.0.0.1', 'http://localhost', 'http://[::1]'];

export class ClientDocuments {
  readonly #options: CimdOptions;
  readonly #guard: AddressGuard;
  readonly #agent: Agent;
  readonly #cache: LRUCache<string, ClientInfo>;
  /** Per URL that failed: why, for FAILURE_TTL_MS (this replica's; nothing is shared). */
  readonly #failures: LRUCache<string, string>;
  /** Fetches under way, per URL: a burst of requests for one URL makes one fetch. */
  readonly #pending = new Map<string, Promise<ClientInfo>>();

  constructor(options: CimdOptions) {
    this.#options = options;
    this.#guard = new AddressGuard(options.allowPrivateAddresses);
    this.#agent = new Agent({
      connect: { lookup: this.#guard.lookup, timeout: FETCH_TIMEOUT_MS, ...(options.ca ? { ca: options.ca } : {}) },
      headersTimeout: FETCH_TIMEOUT_MS,
      bodyTimeout: FETCH_TIMEOUT_MS,
      keepAliveTimeout: 1_000,
    });
    const clock = options.now ? { perf: { now: options.now }, ttlResolution: 0 } : {};
    this.#cache = new LRUCache({ max: options.maxEntries ?? 1_000, ttlAutopurge: false, ...clock });
    this.#failures = new LRUCache({ max: options.maxEntries ?? 1_000, ttl: FAILURE_TTL_MS, ttlAutopurge: false, ...clock });
  }

  /** Documents held now (for the clients gauge). */
  get size(): number {
    return this.#cache.size;
  }

  /** The client a URL client_id names, from the cache or fetched; throws ClientRefused. */
  async resolve(clientId: string): Promise<ClientInfo> {
    const shape = cimdUrlRefusal(clientId);
    if (shape) throw new ClientRefused(shape);
    const url = new URL(clientId);
    if (!hostAllowed(url.hostname, this.#options.allow)) throw new ClientRefused(`clients from ${url.hostname} are not allowed here (auth.oauth.frontDoor.cimd.allow)`);
    const cached = this.#cache.get(clientId);
    if (cached) return cached;
    const failed = this.#failures.get(clientId);
    if (failed !== undefined) throw new ClientRefused(failed);
    const literal = url.hostname.replace(/^\[|\]$/g, '');
    if (/^[\d.]+$|:/.test(literal) && !this.#guard.allows(literal)) throw new ClientRefused(`${url.hostname} is a non-public address`);
    let pending = this.#pending.get(clientId);
    if (!pending) {
      pending = this.#load(clientId, url).finally(() => this.#pending.delete(clientId));
      this.#pending.set(clientId, pending);
    }
    return pending;
  }

  /** Fetches and reads the document: kept while fresh, and a refusal remembered for FAILURE_TTL_MS. */
  async #load(clientId: string, url: URL): Promise<ClientInfo> {
    try {
      const { body, freshMs } = await this.#fetch(url);
      const client = documentToClient(clientId, body);
      if (freshMs > 0) this.#cache.set(clientId, client, { ttl: freshMs });
      return client;
    } catch (err) {
      if (err instanceof ClientRefused) this.#failures.set(clientId, err.message);
      throw err;
    }
  }

  async #fetch(url: URL): Promise<{ body: unknown; freshMs: number }> {
    let response: Awaited<ReturnType<typeof request>>;
    try {
      response = await request(url, { method: 'GET', dispatcher: this.#agent, headers: { accept: 'application/json' }, signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
    } catch (err) {
      const refused = (err as { cause?: unknown })?.cause ?? err;
      const why = refused instanceof Error && refused.name === 'AddressRefused' ? refused.message : 'it could not be fetched';
      throw new ClientRefused(`the client's metadata document at ${url.href} was refused: ${why}`);
    }
    try {
      if (response.statusCode !== 200) {
        const redirect = response.statusCode >= 300 && response.statusCode < 400 ? ' (redirects are not followed)' : '';
        throw new ClientRefused(`the client's metadata document answered ${response.statusCode}${redirect}`);
      }
      const declared = Number(response.headers['content-length'] ?? 0);
      if (declared > MAX_DOCUMENT_BYTES) throw new ClientRefused(`the client's metadata document is larger than ${MAX_DOCUMENT_BYTES} bytes`);
      const chunks: Buffer[] = [];
      let length = 0;
      for await (const chunk of response.body) {
        length += (chunk as Buffer).length;
        if (length > MAX_DOCUMENT_BYTES) throw new ClientRefused(`the client's metadata document is larger than ${MAX_DOCUMENT_BYTES} bytes`);
        chunks.push(chunk as Buffer);
      }
      let body: unknown;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        throw new ClientRefused("the client's metadata document is not JSON");
      }
      return { body, freshMs: freshnessOf(response.headers['cache-control'], response.headers.age) };
    } catch (err) {
      if (err instanceof ClientRefused) throw err;
      throw new ClientRefused(`the client's metadata document at ${url.href} could not be read`);
    } finally {
      // Whatever is left unread is dropped with the connection; the abort it causes is expected.
      response.body.on('error', () => {});
      response.body.destroy();
    }
  }

  async close(): Promise<void> {
    this.#cache.clear();
    this.#failures.clear();
    await this.#agent.destroy();
  }
}

/** The client a document describes, when it is one (the spec's required fields, public clients only). */
function documentToClient(clientId: string, body: unknown): ClientInfo {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new ClientRefused("the client's metadata document is not a JSON object");
  const doc = body as Record<string, unknown>;
  if (doc.client_id !== clientId) throw new ClientRefused("the client's metadata document names another client_id than its own URL");
  if (typeof doc.client_name !== 'string' || doc.client_name.trim() === '') throw new ClientRefused("the client's metadata document has no client_name");
  const uris = doc.redirect_uris;
  if (!Array.isArray(uris) || uris.length === 0 || uris.length > 20 || !uris.every((uri): uri is string => typeof uri === 'string' && uri.length <= 2_048)) {
    throw new ClientRefused("the client's metadata document needs redirect_uris: a list of URIs");
  }
  // Custom schemes (cursor://, vscode://) are what desktop hosts use; only the dangerous ones go.
  const schemes = [...ALL_REDIRECTS, ...uris.map((uri) => `${uri.split(':')[0]}://*`).filter((pattern) => !/^https?:/.test(pattern))];
  const bad = uris.map((uri) => redirectRefusal(uri, schemes)).find((why) => why !== undefined);
  if (bad) throw new ClientRefused(`the client's metadata document lists a redirect URI that cannot be used: ${bad}`);
  const method = doc.token_endpoint_auth_method;
  if (method !== undefined && method !== 'none') throw new ClientRefused('only public clients (token_endpoint_auth_method "none") are supported');
  return { clientId, kind: 'cimd', name: doc.client_name.trim().slice(0, 100), redirectUris: uris };
}

/** How long a response may be used (RFC 9111 §4.2.1 max-age less Age; no-store/no-cache: not kept). */
export function freshnessOf(cacheControl: string | string[] | undefined, age: string | string[] | undefined): number {
  const directives = ([] as string[]).concat(cacheControl ?? []).join(',').toLowerCase();
  if (/(^|[\s,])(no-store|no-cache)\b/.test(directives)) return 0;
  const maxAge = /(?:^|[\s,])max-age=(\d+)/.exec(directives)?.[1];
  const ageSeconds = Number(([] as string[]).concat(age ?? [])[0] ?? 0) || 0;
  if (maxAge === undefined) return directives.trim() === '' ? DEFAULT_FRESH_MS : 0;
  return Math.min(MAX_FRESH_MS, Math.max(0, (Number(maxAge) - ageSeconds) * 1_000));
}
