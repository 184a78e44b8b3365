// Each principal's own credential for each `userAuth` upstream, kept sealed in the credential
// store under a key that names neither the principal nor the secret: what a request to the
// upstream carries (refreshed ahead of expiry, once for all replicas), sign-in and sign-out, and
// the event every replica hears when a principal's credential appears or goes.
import { createHash } from 'node:crypto';
import type { UserAuthConfig } from '../config/schema.js';
import type { Logger } from '../util/log.js';
import { discoverAuthorization, refreshTokens, registerClient, revokeToken, RefreshRejectedError, type RegisteredClient, type TokenSet, type UpstreamAuthorization } from './oauth-client.js';
import type { CredentialStore } from './store.js';

/** What is stored for one principal at one upstream (sealed by the store). */
export type StoredCredential =
  | OAuthCredential
  | { kind: 'secret'; secret: string; obtainedAt: number };

type OAuthCredential = { kind: 'oauth'; obtainedAt: number; issuer: string } & TokenSet;

/** A principal's credential appeared (signed in) or went (signed out, refused, revoked). */
export interface CredentialChange {
  principal: string;
  upstream: string;
  signedIn: boolean;
}

/** A pasted secret that, put in the upstream's header format, no request could carry. */
export class UnusableSecretError extends Error {
  override readonly name = 'UnusableSecretError';
  readonly code = 'unusable_secret';
  constructor(readonly upstream: string) {
    super(`the secret for ${upstream} cannot be sent in a request header`);
  }
}

/** The principal has no usable credential for the upstream: they must sign in (again). */
export class ConsentRequiredError extends Error {
  override readonly name = 'ConsentRequiredError';
  readonly code = 'consent_required';
  constructor(readonly upstream: string) {
    super(`sign-in to ${upstream} is needed`);
  }
}

export interface UserCredentialsDeps {
  store: CredentialStore;
  /** The `userAuth` upstreams: their URL and how users sign in there. */
  upstreams: () => ReadonlyMap<string, { url: string; userAuth: UserAuthConfig }>;
  logger: Logger;
  /** Told every token and secret, so logs can redact them. */
  onSecret?: (secret: string) => void;
  /** Counts refreshes by outcome. */
  onRefresh?: (upstream: string, outcome: 'ok' | 'rejected' | 'error') => void;
  /** Where the upstream's authorization server sends the browser back. */
  redirectUri: () => string;
  /** The Client ID Metadata Document URL of an upstream, when one can be served (https publicUrl). */
  metadataUrl?: (upstream: string) => string | undefined;
  now?: () => number;
}

/** Refresh this long before expiry (or at 80% of a short lifetime). */
const REFRESH_MARGIN_MS = 60_000;
/**
 * How long a refresh, sign-in or sign-out may hold a credential's lock, and how long the others
 * wait for it: as long, so a waiter outlasts a holder that died (its lock lapses first).
 */
const LOCK_MS = 30_000;
const CHANGES = 'changes';
/** What undici refuses in a header value (it throws before sending): all but tab, visible ASCII and Latin-1. */
const UNSENDABLE = /[^\t\x20-\x7e\x80-\xff]/;

/** A store key that does not name the principal. */
export function principalKey(principal: string): string {
  return createHash('sha256').update(principal).digest('base64url').slice(0, 32);
}

export class UserCredentials {
  readonly #deps: UserCredentialsDeps;
  readonly #now: () => number;
  /** What discovery found for each upstream (found again after a failure). */
  readonly #authorizations = new Map<string, Promise<UpstreamAuthorization>>();
  /** Registrations in flight, per store key. */
  readonly #registering = new Map<string, Promise<RegisteredClient>>();
  readonly #listeners = new Set<(change: CredentialChange) => void>();
  readonly #unsubscribe: () => void;

  constructor(deps: UserCredentialsDeps) {
    this.#deps = deps;
    this.#now = deps.now ?? Date.now;
    this.#unsubscribe = deps.store.subscribe(CHANGES, (message) => this.#heard(message));
  }

  /** Hears every change, on this replica or another. */
  onChange(listener: (change: CredentialChange) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  isPersonal(upstream: string): boolean {
    return this.#deps.upstreams().has(upstream);
  }

  async get(principal: string, upstream: string): Promise<StoredCredential | undefined> {
    const value = await this.#deps.store.get(keyOf(principal, upstream));
    return isStored(value) ? value : undefined;
  }

  async has(principal: string, upstream: string): Promise<boolean> {
    return (await this.get(principal, upstream)) !== undefined;
  }

  /** How many principals have a credential for the upstream (for /healthz: no names). */
  count(upstream: string): Promise<number> {
    return this.#deps.store.count(`cred:${upstream}:`);
  }

  /** Whether a pasted secret, in the upstream's header format, can be sent at all. */
  sendable(upstream: string, secret: string): boolean {
    return !UNSENDABLE.test(this.#secretHeader(upstream, secret));
  }

  /**
   * Keeps a new credential and tells every replica; after a refresh in flight, never under it.
   * Throws UnusableSecretError for a secret no request could carry.
   */
  async save(principal: string, upstream: string, credential: StoredCredential): Promise<void> {
    if (credential.kind === 'secret' && !this.sendable(upstream, credential.secret)) throw new UnusableSecretError(upstream);
    this.#tell(credential);
    await this.#locked(principal, upstream, async () => {
      await this.#deps.store.set(keyOf(principal, upstream), credential);
      await this.#publish({ principal, upstream, signedIn: true });
    });
  }

  /**
   * Signs the principal out: the credential is deleted (after a refresh in flight, whose result
   * is then the one deleted), then its tokens are revoked at the server when it offers RFC 7009.
   */
  async signOut(principal: string, upstream: string): Promise<boolean> {
    const stored = await this.#locked(principal, upstream, async () => {
      const found = await this.get(principal, upstream);
      if (found) await this.#delete(principal, upstream);
      return found;
    });
    if (!stored) return false;
    await this.#revoke(upstream, stored, 'sign-out');
    return true;
  }

  /** The upstream's authorization server and the gateway's client there (registered once, kept). */
  async authorization(upstream: string): Promise<{ auth: UpstreamAuthorization; client: RegisteredClient }> {
    const config = this.#deps.upstreams().get(upstream);
    if (!config || config.userAuth.type !== 'oauth') throw new Error(`${upstream} has no OAuth sign-in`);
    const { userAuth } = config;
    let found = this.#authorizations.get(upstream);
    if (!found) {
      found = discoverAuthorization(config.url, userAuth.scopes ? { scopes: userAuth.scopes } : {});
      this.#authorizations.set(upstream, found);
      found.catch(() => this.#authorizations.delete(upstream));
    }
    const auth = await found;
    // Client credentials are bound to the server that issued them (2026-07-28 changelog §9).
    const key = `client:${upstream}:${principalKey(auth.server.issuer)}`;
    if (userAuth.clientId) {
      return { auth, client: { clientId: userAuth.clientId, ...(userAuth.clientSecret ? { clientSecret: userAuth.clientSecret } : {}), method: 'configured', tokenEndpointAuthMethod: userAuth.clientSecret ? 'client_secret_basic' : 'none' } };
    }
    const kept = await this.#deps.store.get(key);
    if (isClient(kept)) return { auth, client: kept };
    // Registered once for every caller and replica: a second registration would leave a
    // sign-in in flight holding a code issued to the client the store no longer keeps.
    let registering = this.#registering.get(key);
    if (!registering) {
      registering = this.#deps.store.withLock(`register:${key}`, 30_000, async () => {
        const again = await this.#deps.store.get(key);
        if (isClient(again)) return again;
        const metadataUrl = this.#deps.metadataUrl?.(upstream);
        const made = await registerClient(auth.server, {
          ...(userAuth.clientId ? { configured: { clientId: userAuth.clientId, ...(userAuth.clientSecret ? { clientSecret: userAuth.clientSecret } : {}) } } : {}),
          ...(metadataUrl ? { metadataUrl } : {}),
          redirectUri: this.#deps.redirectUri(),
          clientName: `Switchyard (${upstream})`,
          reach: auth.reach,
        });
        if (made.clientSecret) this.#deps.onSecret?.(made.clientSecret);
        if (made.method !== 'configured') await this.#deps.store.set(key, made);
        return made;
      });
      this.#registering.set(key, registering);
      void registering.finally(() => this.#registering.delete(key)).catch(() => {});
    }
    const client = await registering;
    return { auth, client };
  }

  /** What requests of `principal` to `upstream` carry: the transport asks it before each one. */
  credential(principal: string, upstream: string): PrincipalCredential {
    const userAuth = this.#deps.upstreams().get(upstream)?.userAuth;
    return new PrincipalCredential(this, principal, upstream, userAuth?.type === 'secret' ? userAuth.header.toLowerCase() : 'authorization');
  }

  /** The header value for the principal's next request; refreshes a token due for it. */
  async headerValue(principal: string, upstream: string, force: boolean): Promise<string> {
    const config = this.#deps.upstreams().get(upstream);
    const stored = await this.get(principal, upstream);
    if (!config || !stored) throw new ConsentRequiredError(upstream);
    if (stored.kind === 'secret') {
      const value = this.#secretHeader(upstream, stored.secret);
      // A refused secret cannot be renewed here, and one no request can carry (kept before it was
      // checked at sign-in) would fail every request: either way the user gives a new one.
      if (force || UNSENDABLE.test(value)) {
        await this.#forget(principal, upstream);
        throw new ConsentRequiredError(upstream);
      }
      this.#tell(stored);
      return value;
    }
    if (!force && (stored.expiresAt === undefined || this.#now() < stored.expiresAt - marginOf(stored))) {
      this.#tell(stored);
      return `Bearer ${stored.accessToken}`;
    }
    return `Bearer ${await this.#refresh(principal, upstream, stored)}`;
  }

  /** The upstream refused a fresh credential too: the principal signs in again. */
  async refused(principal: string, upstream: string): Promise<void> {
    this.#deps.logger.warn('upstream refused a renewed user credential; a new sign-in is needed', { upstream });
    await this.#forget(principal, upstream);
  }

  close(): void {
    this.#unsubscribe();
    this.#listeners.clear();
  }

  /**
   * Refreshes once for all replicas: whoever holds the lock refreshes, the others read its result.
   * Sign-in and sign-out wait for it under the same lock; should the lock lapse first, the result
   * is kept only if the credential it renewed is still the one stored, else dropped and revoked.
   */
  async #refresh(principal: string, upstream: string, seen: OAuthCredential): Promise<string> {
    const key = keyOf(principal, upstream);
    const outcome = await this.#locked(principal, upstream, async () => {
      const now = await this.get(principal, upstream);
      if (!now || now.kind !== 'oauth') throw new ConsentRequiredError(upstream);
      // Another replica (or call) refreshed meanwhile.
      if (now.accessToken !== seen.accessToken && (now.expiresAt === undefined || this.#now() < now.expiresAt - marginOf(now))) {
        this.#tell(now);
        return now.accessToken;
      }
      if (!now.refreshToken) {
        await this.#delete(principal, upstream);
        throw new ConsentRequiredError(upstream);
      }
      let tokens: TokenSet;
      try {
        const { auth, client } = await this.authorization(upstream);
        tokens = await refreshTokens(auth, client, now.refreshToken);
      } catch (err) {
        if (err instanceof RefreshRejectedError) {
          this.#deps.onRefresh?.(upstream, 'rejected');
          if (sameCredential(await this.get(principal, upstream), now)) await this.#delete(principal, upstream);
          throw new ConsentRequiredError(upstream);
        }
        this.#deps.onRefresh?.(upstream, 'error');
        throw err;
      }
      // Expiry and scope are the answer's alone: an answer without expires_in gives a token used
      // until the upstream refuses it, not one as old as the token it replaces.
      const next: OAuthCredential = { kind: 'oauth', issuer: now.issuer, obtainedAt: this.#now(), ...tokens };
      this.#tell(next);
      if (!sameCredential(await this.get(principal, upstream), now)) return { next };
      await this.#deps.store.set(key, next);
      this.#deps.onRefresh?.(upstream, 'ok');
      return next.accessToken;
    });
    if (typeof outcome === 'string') return outcome;
    this.#deps.logger.warn('a refresh finished after the credential was signed out or replaced; its tokens are dropped', { upstream });
    await this.#revoke(upstream, outcome.next, 'refresh');
    const current = await this.get(principal, upstream);
    if (current?.kind !== 'oauth') throw new ConsentRequiredError(upstream);
    this.#tell(current);
    return current.accessToken;
  }

  /** Runs fn under the credential's lock: refresh, sign-in and sign-out of one credential never interleave. */
  #locked<T>(principal: string, upstream: string, fn: () => Promise<T>): Promise<T> {
    return this.#deps.store.withLock(`refresh:${keyOf(principal, upstream)}`, LOCK_MS, fn, LOCK_MS);
  }

  #forget(principal: string, upstream: string): Promise<void> {
    return this.#locked(principal, upstream, () => this.#delete(principal, upstream));
  }

  /** Deletes the credential and tells every replica; the caller holds the lock. */
  async #delete(principal: string, upstream: string): Promise<void> {
    await this.#deps.store.delete(keyOf(principal, upstream));
    await this.#publish({ principal, upstream, signedIn: false });
  }

  /** RFC 7009 revocation of an OAuth credential's tokens, where the server offers it; a failure is logged. */
  async #revoke(upstream: string, credential: StoredCredential, when: 'sign-out' | 'refresh'): Promise<void> {
    if (credential.kind !== 'oauth') return;
    try {
      const { auth, client } = await this.authorization(upstream);
      if (credential.refreshToken) await revokeToken(auth, client, credential.refreshToken, 'refresh_token');
      await revokeToken(auth, client, credential.accessToken, 'access_token');
    } catch (err) {
      this.#deps.logger.warn('revoking a token failed; it is no longer kept here anyway', { upstream, after: when, err: err instanceof Error ? err.message : String(err) });
    }
  }

  /** The header value of a secret: the upstream's format with the secret in it, taken as it is ($ and all). */
  #secretHeader(upstream: string, secret: string): string {
    const userAuth = this.#deps.upstreams().get(upstream)?.userAuth;
    const format = userAuth?.type === 'secret' ? userAuth.format : 'Bearer {secret}';
    return format.replace('{secret}', () => secret);
  }

  async #publish(change: CredentialChange): Promise<void> {
    await this.#deps.store.publish(CHANGES, JSON.stringify(change));
  }

  #heard(message: string): void {
    let change: unknown;
    try {
      change = JSON.parse(message);
    } catch {
      return;
    }
    if (!isChange(change)) return;
    for (const listener of this.#listeners) listener(change);
  }

  #tell(credential: StoredCredential): void {
    const { onSecret } = this.#deps;
    if (!onSecret) return;
    if (credential.kind === 'secret') onSecret(credential.secret);
    else {
      onSecret(credential.accessToken);
      if (credential.refreshToken) onSecret(credential.refreshToken);
    }
  }
}

/** One principal's credential at one upstream, as the Streamable HTTP transport uses it. */
export class PrincipalCredential {
  readonly #owner: UserCredentials;
  readonly #principal: string;
  readonly #upstream: string;
  /** The upstream refused the current one: renew before the next request. */
  #stale = false;
  readonly header: string;

  constructor(owner: UserCredentials, principal: string, upstream: string, header = 'authorization') {
    this.#owner = owner;
    this.#principal = principal;
    this.#upstream = upstream;
    this.header = header;
  }

  async authorization(): Promise<string> {
    const force = this.#stale;
    this.#stale = false;
    return this.#owner.headerValue(this.#principal, this.#upstream, force);
  }

  invalidate(): void {
    this.#stale = true;
  }

  rejected(): void {
    void this.#owner.refused(this.#principal, this.#upstream).catch(() => {});
  }
}

function keyOf(principal: string, upstream: string): string {
  return `cred:${upstream}:${principalKey(principal)}`;
}

/** Whether `stored` is still the OAuth credential `read` (the same sign-in, not refreshed since). */
function sameCredential(stored: StoredCredential | undefined, read: OAuthCredential): boolean {
  return stored?.kind === 'oauth' && stored.obtainedAt === read.obtainedAt && stored.accessToken === read.accessToken && stored.refreshToken === read.refreshToken;
}

function marginOf(stored: { expiresAt?: number; obtainedAt: number }): number {
  const lifetime = (stored.expiresAt ?? Infinity) - stored.obtainedAt;
  return Math.min(REFRESH_MARGIN_MS, lifetime * 0.2);
}

function isStored(value: unknown): value is StoredCredential {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  if (v.kind === 'secret') return typeof v.secret === 'string';
  return v.kind === 'oauth' && typeof v.accessToken === 'string';
}

function isClient(value: unknown): value is RegisteredClient {
  return typeof value === 'object' && value !== null && typeof (value as Record<string, unknown>).clientId === 'string';
}

function isChange(value: unknown): value is CredentialChange {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return typeof v.principal === 'string' && typeof v.upstream === 'string' && typeof v.signedIn === 'boolean';
}
