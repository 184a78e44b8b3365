// Tokens for upstreams that trust the company IdP (`upstreams.<name>.http.tokenExchange`): the
// user's IdP token (the subject) is exchanged at the IdP for one issued to the upstream's own
// audience, by RFC 8693 token exchange or Entra ID's on-behalf-of grant. One exchange per
// (principal, upstream) at a time, kept until shortly before it expires in a bounded cache, and
// shared by replicas through the credential store when it is Redis. The upstream gets only the
// exchanged token: never the client's, never a credential of the gateway's.
import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import * as oauth from 'oauth4webapi';
import type { TokenExchangeConfig } from '../config/token-exchange-schema.js';
import type { Logger } from '../util/log.js';
import { idpFetch, MAX_IDP_METADATA_BYTES, MAX_IDP_TOKEN_BYTES } from './idp-fetch.js';
import type { CredentialStore } from './store.js';

/** RFC 8693 §2.1 and the Entra on-behalf-of request (jwt-bearer, RFC 7523 §2.1). */
const TOKEN_EXCHANGE_GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange';
const JWT_BEARER_GRANT = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
/** RFC 8693 §3: what Switchyard asks for. */
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';
/** Renew this long before expiry, or at 80 % of a shorter lifetime. */
const RENEW_MARGIN_MS = 60_000;
const DEFAULT_LIFETIME_S = 300;
const REQUEST_TIMEOUT_MS = 10_000;
/** Errors of the IdP that say the exchange's own settings are wrong (RFC 8693 §2.2.2, RFC 6749 §5.2). */
const CONFIG_ERRORS = new Set(['invalid_target', 'invalid_scope', 'unauthorized_client', 'invalid_client', 'unsupported_grant_type', 'invalid_request']);

/** Where the user's IdP token comes from: the one the client sent, or the front door's. */
export interface SubjectTokens {
  /** The principal's current IdP access token, or undefined when none is held. */
  subjectToken(principal: string): Promise<string | undefined>;
  /** The IdP refused the principal's session (invalid_grant): whatever keeps it ends it. */
  ended?(principal: string): Promise<void>;
}

/** Why no exchanged token: each kind has its own answer to the client and its own log. */
export type ExchangeFailure = 'unavailable' | 'sign_in' | 'config';

export class TokenExchangeError extends Error {
  override readonly name = 'TokenExchangeError';
  /** The IdP's error code (or `http_<status>` when its refusal named none), for the audit's `reason`. */
  readonly reason: string | undefined;
  constructor(
    readonly kind: ExchangeFailure,
    /** What the client may be told (no token, no IdP body). */
    readonly publicMessage: string,
    options?: { cause?: unknown; reason?: string },
  ) {
    super(publicMessage, options?.cause === undefined ? undefined : { cause: options.cause });
    this.reason = options?.reason;
  }
}

export interface TokenExchangeDeps {
  /** The IdP (auth.oauth.issuer): its metadata names the token endpoint when `tokenUrl` does not. */
  issuer: string;
  /** auth.oauth.login's client, for `client: login`. */
  login: { clientId?: string | undefined; clientSecret?: string | undefined } | undefined;
  /** The upstream's settings, read at each exchange (a reload may change them). */
  config: (upstream: string) => TokenExchangeConfig | undefined;
  subjects: SubjectTokens;
  /** The shared store (Redis): exchanged tokens are kept there too, sealed, for every replica. */
  store?: () => Promise<CredentialStore>;
  logger: Logger;
  /** Told each token it holds (subject and exchanged), so logs can redact them. */
  onSecret?: (secret: string) => void;
  /** Each exchange's outcome (ok, unavailable, sign_in, config), for metrics and audit. */
  onExchange?: (facts: { principal: string; upstream: string; outcome: 'ok' | ExchangeFailure; variant: string; error?: string }) => void;
  /** Cached (principal, upstream) tokens at most (default 10 000). */
  maxEntries?: number;
  fetch?: typeof fetch;
  now?: () => number;
}

interface Exchanged {
  token: string;
  /** ms since the epoch. */
  renewAt: number;
  expiresAt: number;
  /** When the exchange was asked for (absent in what an older version stored). */
  obtainedAt?: number;
}

/** A cached token and whose it is (in memory only: the shared store's copy names no principal). */
interface Held extends Exchanged {
  principal: string;
}

export class TokenExchanger {
  readonly #deps: TokenExchangeDeps;
  readonly #now: () => number;
  readonly #cache: LRUCache<string, Held>;
  /** The cache's keys by principal, kept with the cache (a key leaves with its entry): the end of a principal's IdP session drops them all. */
  readonly #keysOf = new Map<string, Set<string>>();
  /** The upstreams tokens were asked for (the config's names): where a principal's shared copies may be. */
  readonly #upstreams = new Set<string>();
  /** When each principal's IdP session was found ended: nothing obtained before is taken from the shared store. */
  readonly #endedAt: LRUCache<string, number>;
  /** Exchanges in flight, by (principal, upstream): concurrent calls share one. */
  readonly #inflight = new Map<string, Promise<Exchanged>>();
  /** The last token an upstream refused, by key: never taken again from the shared store. */
  readonly #refused: LRUCache<string, string>;
  /** Configuration errors already logged, by upstream and IdP error (logged once each). */
  readonly #reported = new Set<string>();
  #server: Promise<oauth.AuthorizationServer> | undefined;

  constructor(deps: TokenExchangeDeps) {
    this.#deps = deps;
    this.#now = deps.now ?? Date.now;
    this.#cache = new LRUCache<string, Held>({
      max: deps.maxEntries ?? 10_000,
      dispose: (held, key) => {
        const keys = this.#keysOf.get(held.principal);
        keys?.delete(key);
        if (keys?.size === 0) this.#keysOf.delete(held.principal);
      },
    });
    this.#refused = new LRUCache({ max: deps.maxEntries ?? 10_000 });
    this.#endedAt = new LRUCache({ max: deps.maxEntries ?? 10_000 });
  }

  /** Whether `upstream` is reached by token exchange. */
  has(upstream: string): boolean {
    return this.#deps.config(upstream) !== undefined;
  }

  /** The credential of one principal at one upstream, asked for on every upstream request. */
  credential(principal: string, upstream: string): { authorization(): Promise<string>; invalidate(): void; unavailable(err: unknown): boolean } {
    return {
      authorization: async () => `Bearer ${await this.token(principal, upstream)}`,
      // The upstream refused it (401): the next request exchanges anew.
      invalidate: () => this.forget(principal, upstream),
      unavailable: (err) => causeOf(err)?.kind === 'unavailable',
    };
  }

  /** An exchanged token for the principal at the upstream: cached, or exchanged now (once for all callers). */
  async token(principal: string, upstream: string): Promise<string> {
    this.#upstreams.add(upstream);
    const key = this.#keyOf(principal, upstream);
    const cached = this.#cache.get(key);
    if (cached && this.#now() < cached.renewAt) return cached.token;
    let pending = this.#inflight.get(key);
    if (!pending) {
      pending = this.#obtain(principal, upstream, key).finally(() => this.#inflight.delete(key));
      this.#inflight.set(key, pending);
    }
    return (await pending).token;
  }

  /**
   * Drops the principal's token for the upstream (it was refused). The shared store's copy is
   * not deleted (a delete could land after another caller stored its successor): it is skipped
   * here, and overwritten by the next exchange.
   */
  forget(principal: string, upstream: string): void {
    this.#drop(this.#keyOf(principal, upstream));
  }

  #drop(key: string): void {
    const held = this.#cache.get(key);
    if (held) this.#refused.set(key, held.token);
    this.#cache.delete(key);
  }

  /**
   * The principal's IdP session has ended: none of their exchanged tokens, for any upstream, is
   * used again. Each one this replica holds is dropped, and no copy obtained before now is taken
   * from the shared store by this replica, under any key. The shared store's copies under the
   * keys this replica can name (those it held, and each upstream's it served) are deleted too, so
   * other replicas do not take them either; a delete that lands after a successor was stored
   * costs one more exchange, nothing else. Bounded: the principal's own keys and the upstreams.
   */
  async #endAll(principal: string): Promise<void> {
    this.#endedAt.set(principal, this.#now());
    const keys = new Set(this.#keysOf.get(principal));
    for (const upstream of this.#upstreams) {
      if (this.has(upstream)) keys.add(this.#keyOf(principal, upstream));
      else this.#upstreams.delete(upstream);
    }
    for (const key of keys) this.#drop(key);
    const store = await this.#store();
    if (store) await Promise.all([...keys].map((key) => store.delete(key).catch(() => false)));
  }

  /** The cache and store key: names neither the principal nor a token; a changed setting makes another. */
  #keyOf(principal: string, upstream: string): string {
    // What the token is for, never the client's secret.
    const { client: _client, ...target } = this.#deps.config(upstream) ?? { client: undefined };
    const settings = JSON.stringify(target);
    return `exchange:${upstream}:${createHash('sha256').update(`${principal}\n${settings}`).digest('base64url').slice(0, 32)}`;
  }

  async #obtain(principal: string, upstream: string, key: string): Promise<Exchanged> {
    const store = await this.#store();
    const fresh = (value: unknown): Exchanged | undefined =>
      isExchanged(value) && this.#now() < value.renewAt && value.token !== this.#refused.get(key) && !this.#endedSince(principal, value) ? value : undefined;
    const exchange = async (): Promise<Exchanged> => {
      const shared = fresh(await store?.get(key));
      if (shared) return shared;
      const obtained = await this.#exchange(principal, upstream);
      await store?.set(key, obtained, Math.max(1_000, obtained.renewAt - this.#now()));
      return obtained;
    };
    // Across replicas, one exchange per (principal, upstream) too: the others read its result.
    const result = store ? await store.withLock(`lock:${key}`, REQUEST_TIMEOUT_MS * 2, exchange) : await exchange();
    this.#deps.onSecret?.(result.token);
    // An exchange that began before the principal's session was found ended serves its callers once, and is not kept.
    if (this.#endedSince(principal, result)) return result;
    this.#cache.set(key, { ...result, principal });
    let keys = this.#keysOf.get(principal);
    if (!keys) this.#keysOf.set(principal, (keys = new Set()));
    keys.add(key);
    return result;
  }

  /** Whether the principal's IdP session was found ended after (or as) this token was obtained. */
  #endedSince(principal: string, exchanged: Exchanged): boolean {
    const ended = this.#endedAt.get(principal);
    return ended !== undefined && (exchanged.obtainedAt ?? 0) <= ended;
  }

  async #exchange(principal: string, upstream: string): Promise<Exchanged> {
    const config = this.#deps.config(upstream);
    if (!config) throw new TokenExchangeError('config', `${upstream} is not reached by token exchange`);
    const report = (outcome: 'ok' | ExchangeFailure, error?: string): void => this.#deps.onExchange?.({ principal, upstream, outcome, variant: config.variant, ...(error ? { error } : {}) });
    let subject: string | undefined;
    try {
      subject = await this.#deps.subjects.subjectToken(principal);
    } catch (err) {
      // The front door could not renew the user's IdP session: counted and answered as the exchange's own failure.
      const failure = this.#classify(upstream, err);
      report(failure.kind, failure.reason);
      throw failure;
    }
    if (!subject) {
      report('sign_in', 'no_subject_token');
      throw new TokenExchangeError('sign_in', `Switchyard holds no token of yours from the identity provider to use ${upstream} with; sign in to Switchyard again`);
    }
    this.#deps.onSecret?.(subject);
    const started = this.#now();
    let answer: oauth.TokenEndpointResponse;
    try {
      answer = await this.#request(config, subject);
    } catch (err) {
      const failure = this.#classify(upstream, err);
      report(failure.kind, failure.reason);
      if (failure.kind === 'sign_in') {
        // The user's IdP session is gone: neither their subject nor any token exchanged with it acts for them again.
        await this.#endAll(principal).catch(() => {});
        await this.#deps.subjects.ended?.(principal).catch(() => {});
      }
      throw failure;
    }
    const lifetimeMs = (typeof answer.expires_in === 'number' && answer.expires_in > 0 ? answer.expires_in : DEFAULT_LIFETIME_S) * 1_000;
    report('ok');
    return { token: answer.access_token, expiresAt: started + lifetimeMs, renewAt: started + lifetimeMs - Math.min(RENEW_MARGIN_MS, lifetimeMs * 0.2), obtainedAt: started };
  }

  /** One request at the token endpoint, as the variant spells it. */
  async #request(config: TokenExchangeConfig, subject: string): Promise<oauth.TokenEndpointResponse> {
    const server = await this.#tokenEndpoint(config);
    const { clientId, clientSecret } = config.client === 'login' ? { clientId: this.#deps.login?.clientId ?? '', clientSecret: this.#deps.login?.clientSecret ?? '' } : config.client;
    const client: oauth.Client = { client_id: clientId };
    const options = requestOptions(server.token_endpoint!, this.#deps.fetch, MAX_IDP_TOKEN_BYTES);
    let response: Response;
    if (config.variant === 'entra-obo') {
      // Entra's on-behalf-of: the client's secret in the form, the scope `<audience>/.default`.
      const form = { assertion: subject, requested_token_use: 'on_behalf_of', scope: `${config.audience!}/.default` };
      response = await oauth.genericTokenEndpointRequest(server, client, oauth.ClientSecretPost(clientSecret), JWT_BEARER_GRANT, form, options);
    } else {
      // The subject is the user's IdP access token; the config takes only a type true of it
      // (access_token, or jwt where every subject is a verified JWT), never id_token.
      const form = new URLSearchParams({ subject_token: subject, subject_token_type: config.subjectTokenType, requested_token_type: ACCESS_TOKEN_TYPE });
      if (config.audience !== undefined) form.set('audience', config.audience);
      if (config.resource !== undefined) form.set('resource', config.resource);
      if (config.scopes.length > 0) form.set('scope', config.scopes.join(' '));
      response = await oauth.genericTokenEndpointRequest(server, client, oauth.ClientSecretBasic(clientSecret), TOKEN_EXCHANGE_GRANT, form, options);
    }
    if (response.status >= 500) {
      await response.body?.cancel().catch(() => {});
      throw new IdpStatusError(response.status);
    }
    try {
      return await oauth.processGenericTokenEndpointResponse(server, client, response);
    } catch (err) {
      // A refusal read from its status and headers leaves its body unread: let the connection go.
      if (!response.bodyUsed) await response.body?.cancel().catch(() => {});
      throw err;
    }
  }

  /** The token endpoint: `tokenUrl`, or the IdP's metadata (read once, again after a failure). */
  #tokenEndpoint(config: TokenExchangeConfig): Promise<oauth.AuthorizationServer> {
    if (config.tokenUrl) return Promise.resolve({ issuer: this.#deps.issuer, token_endpoint: config.tokenUrl });
    this.#server ??= (async () => {
      const issuer = new URL(this.#deps.issuer);
      const response = await oauth.discoveryRequest(issuer, { ...requestOptions(issuer, this.#deps.fetch, MAX_IDP_METADATA_BYTES), algorithm: 'oidc' });
      if (response.status >= 500) throw new IdpStatusError(response.status);
      const server = await oauth.processDiscoveryResponse(issuer, response);
      if (!server.token_endpoint) throw new Error('the IdP names no token_endpoint');
      return server;
    })().catch((err: unknown) => {
      this.#server = undefined;
      throw err;
    });
    return this.#server;
  }

  /**
   * What a failed exchange means, logged as such (configuration errors once per upstream and
   * error). The IdP refusing the request (a 4xx, however it says why) is the user's ended session
   * for invalid_grant and the gateway's configuration otherwise; only a 5xx, a timeout or no
   * answer is the IdP being unavailable.
   */
  #classify(upstream: string, err: unknown): TokenExchangeError {
    if (err instanceof TokenExchangeError) return err;
    const refusal = refusalOf(err);
    if (refusal) {
      const error = refusal.error === undefined ? undefined : safeCode(refusal.error);
      if (error === 'invalid_grant') {
        this.#deps.logger.info('token exchange refused: the user\'s IdP session has ended', { upstream, error });
        return new TokenExchangeError('sign_in', `your sign-in at the identity provider has ended; sign in to Switchyard again to use ${upstream}`, { cause: err, reason: error });
      }
      if ((error !== undefined && CONFIG_ERRORS.has(error)) || (refusal.status >= 400 && refusal.status < 500)) {
        const said = error ?? `HTTP ${refusal.status}`;
        const seen = `${upstream}|${said}`;
        if (!this.#reported.has(seen)) {
          this.#reported.add(seen);
          this.#deps.logger.error('token exchange misconfigured: the IdP refused the request', { upstream, error: said, description: safeText(refusal.description), status: refusal.status });
        }
        return new TokenExchangeError('config', `the gateway's token exchange for ${upstream} is misconfigured (the IdP answered ${said}; the gateway's log says more)`, { cause: err, reason: error ?? `http_${refusal.status}` });
      }
    }
    this.#deps.logger.warn('token exchange failed: the IdP is unavailable', { upstream, err: describe(err) });
    return new TokenExchangeError('unavailable', `the identity provider could not issue a token for ${upstream} (${describe(err)})`, { cause: err });
  }

  async #store(): Promise<CredentialStore | undefined> {
    return this.#deps.store ? this.#deps.store().catch(() => undefined) : undefined;
  }
}

/** A 5xx of the IdP (oauth4webapi reads only OAuth error bodies). */
class IdpStatusError extends Error {
  constructor(readonly status: number) {
    super(`the IdP answered HTTP ${status}`);
  }
}

/**
 * An answer of the IdP's that refused the request: its status and the OAuth error it gave
 * (RFC 6749 §5.2), from the JSON body or, for a failed client authentication (401), from the
 * WWW-Authenticate challenge; no error when the answer named none (not an OAuth error body).
 */
function refusalOf(err: unknown): { status: number; error: string | undefined; description: string | undefined } | undefined {
  if (err instanceof oauth.ResponseBodyError) return { status: err.status, error: err.error, description: err.error_description };
  if (err instanceof oauth.WWWAuthenticateChallengeError) {
    const params = err.cause.find((challenge) => typeof challenge.parameters.error === 'string')?.parameters;
    return { status: err.status, error: params?.error, description: params?.error_description };
  }
  // A non-conforming answer (no JSON, no error member) carries the response as its cause.
  if (err instanceof oauth.OperationProcessingError && err.cause instanceof Response) return { status: err.cause.status, error: undefined, description: undefined };
  return undefined;
}

function causeOf(err: unknown): TokenExchangeError | undefined {
  for (let at = err, depth = 0; at instanceof Error && depth < 5; at = at.cause, depth++) if (at instanceof TokenExchangeError) return at;
  return undefined;
}

function isExchanged(value: unknown): value is Exchanged {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return typeof v.token === 'string' && typeof v.renewAt === 'number' && typeof v.expiresAt === 'number' && (v.obtainedAt === undefined || typeof v.obtainedAt === 'number');
}

/**
 * oauth4webapi options for a request to `endpoint`: plain http only to a loopback address; the
 * answer read within `maxBytes` (past it the IdP counts as unavailable, as for a 5xx).
 */
function requestOptions(endpoint: URL | string, fetcher: typeof fetch | undefined, maxBytes: number) {
  const url = new URL(endpoint);
  const loopback = url.protocol === 'http:' && (url.hostname === 'localhost' || url.hostname === '[::1]' || /^127(?:\.\d{1,3}){3}$/.test(url.hostname));
  return { [oauth.allowInsecureRequests]: loopback, [oauth.customFetch]: idpFetch(maxBytes, fetcher), signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) };
}

/** A server-given word (an RFC 6749 §5.2 error code) kept short and printable. */
function safeCode(value: unknown): string {
  return (typeof value === 'string' ? value.replace(/[^A-Za-z0-9_.:-]/g, '').slice(0, 64) : '') || 'unknown_error';
}

/** An IdP's error description, one short line of printable text (it never holds a token of ours). */
function safeText(value: unknown): string | undefined {
  return typeof value === 'string' ? value.replace(/[^\x20-\x7e]/g, ' ').slice(0, 200) : undefined;
}

function describe(err: unknown): string {
  if (err instanceof IdpStatusError) return err.message;
  if (err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError')) return 'no answer in time';
  const code = err instanceof Error && err.cause instanceof Error && 'code' in err.cause ? String((err.cause as { code: unknown }).code) : undefined;
  if (code) return `unreachable (${code.replace(/[^A-Z0-9_]/g, '')})`;
  return err instanceof Error ? err.message.split('\n')[0]!.slice(0, 120) : 'unknown failure';
}
