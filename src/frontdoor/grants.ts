// What the front door remembers between steps, in the credential store (sealed there, shared by
// replicas): authorization codes (single-use, 60 s), grants with their rotating refresh tokens
// (OAuth 2.1 §4.3.1, RFC 9700 §4.14.2: a spent refresh token presented again revokes the grant),
// the user's IdP refresh token per grant (and the IdP access token token exchange last got with
// it), and which clients a user has approved. Codes and refresh tokens are stored under their
// digest, never as they are. A grant ends grantMaxAge after its sign-in however often it is
// refreshed: the IdP alone cannot end a grant it gave no refresh token for.
import { randomBytes } from 'node:crypto';
import type { CredentialStore } from '../credentials/store.js';
import { digest } from './rules.js';

/** Who signed in at the IdP, as a token names them. */
export interface Identity {
  /** `<idp issuer>|<subject>`. */
  principal: string;
  subject: string;
  /** The ID token's claims copied into access tokens (frontDoor.claims). */
  claims: Record<string, unknown>;
}

/** What an authorization code is bound to (and what its grant inherits). */
export interface CodeRecord {
  clientId: string;
  redirectUri: string;
  /** False when the authorization request left redirect_uri out (the client's one URI was taken); otherwise the token request must name it too (RFC 6749 §4.1.3). */
  redirectUriSent?: boolean;
  challenge: string;
  resource: string;
  scope: string;
  identity: Identity;
  idpRefresh?: string;
}

/** A code redeemed: its record, and the id of the grant it gives (claimed with the code, so a reuse can revoke it). */
export interface RedeemedCode {
  record: CodeRecord;
  grantId: string;
}

/** The marker of a redeemed code: the grant it gives, and whether the code was presented again. */
interface UsedCode {
  grantId: string;
  reused?: true;
}

export interface Grant {
  id: string;
  clientId: string;
  resource: string;
  scope: string;
  identity: Identity;
  /** The user's refresh token at the IdP: refreshed with the host's, and for token exchange's subject (idp-sessions.ts). */
  idpRefresh?: string;
  /** The IdP access token of the last refresh made for token exchange, until it is due for renewal (ms). */
  idpAccess?: { token: string; renewAt: number };
  /** When the grant lapses unless the host refreshes (ms), never past `signedInAt` + grantMaxAge: kept when the IdP session alone is updated. */
  expiresAt?: number;
  /** When the grant was made (ms): its sign-in at the IdP, give or take the consent page and the code's minute. */
  signedInAt?: number;
  /** Digest of the refresh token that may be used now. */
  current: string;
  /** Digests of refresh tokens already used: presented again, they revoke the grant. */
  spent: string[];
}

export type RotateOutcome = { grant: Grant; refreshToken: string } | { refused: 'unknown' | 'reused' | 'client' | 'target' | 'scope' | 'idp' | 'expired' };

export interface GrantOptions {
  store: CredentialStore;
  refreshTtlMs: number;
  /** Longest a grant lasts from its sign-in, refreshed or not (default 30 days, as frontDoor.grantMaxAge). */
  grantMaxAgeMs?: number;
  now?: () => number;
  /** A grant was revoked (reuse, revocation, an IdP refusal): tell every replica. */
  onRevoked: (grantId: string) => Promise<void>;
}

export const CODE_TTL_MS = 60_000;
const USED_CODE_TTL_MS = 10 * 60_000;
const CONSENT_TTL_MS = 365 * 24 * 60 * 60_000;
const MAX_SPENT = 50;
const GRANT_LOCK_MS = 30_000;
const DEFAULT_GRANT_MAX_AGE_MS = 30 * 24 * 60 * 60_000;

const codeKey = (code: string): string => `frontdoor:code:${digest(code)}`;
const usedKey = (code: string): string => `frontdoor:code-used:${digest(code)}`;
const grantKey = (id: string): string => `frontdoor:grant:${id}`;
const consentKey = (principal: string, clientId: string): string => `frontdoor:consent:${digest(`${principal}\n${clientId}`)}`;

function secret(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

export class Grants {
  readonly #options: GrantOptions;
  readonly #now: () => number;
  readonly #maxAgeMs: number;

  constructor(options: GrantOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#maxAgeMs = options.grantMaxAgeMs ?? DEFAULT_GRANT_MAX_AGE_MS;
  }

  async issueCode(record: CodeRecord): Promise<string> {
    const code = secret();
    await this.#options.store.set(codeKey(code), record, CODE_TTL_MS);
    return code;
  }

  /**
   * The code's record, once: a second redemption (or a concurrent one that lost) gets 'reused'
   * and revokes what the first one got (RFC 6749 §4.1.2); an unknown or expired code, undefined.
   * The code is claimed by setting its used marker (set-if-absent: one winner, on every replica)
   * before it is deleted, so a redemption that finds neither is one of an unknown code.
   */
  async redeemCode(code: string): Promise<RedeemedCode | 'reused' | undefined> {
    const { store } = this.#options;
    const record = (await store.get(codeKey(code))) as CodeRecord | undefined;
    const grantId = secret(16);
    if (record !== undefined && (await store.setIfAbsent(usedKey(code), { grantId } satisfies UsedCode, USED_CODE_TTL_MS))) {
      await store.delete(codeKey(code));
      return { record, grantId };
    }
    const used = (await store.get(usedKey(code))) as UsedCode | undefined;
    if (typeof used?.grantId !== 'string') return undefined;
    // Marked before the revocation: a grant its winner writes later sees the mark and revokes itself.
    await store.set(usedKey(code), { grantId: used.grantId, reused: true } satisfies UsedCode, USED_CODE_TTL_MS);
    await this.revoke(used.grantId);
    return 'reused';
  }

  /**
   * A new grant from a redeemed code, and its first refresh token; 'reused' when the code was
   * presented again before the grant was written (the grant is revoked: nothing is issued).
   */
  async createGrant(code: string, redeemed: RedeemedCode): Promise<{ grant: Grant; refreshToken: string } | 'reused'> {
    const { record, grantId: id } = redeemed;
    const refreshSecret = secret();
    const now = this.#now();
    const expiresAt = this.#lapse(now, now);
    const grant: Grant = {
      id,
      clientId: record.clientId,
      resource: record.resource,
      scope: record.scope,
      identity: record.identity,
      ...(record.idpRefresh ? { idpRefresh: record.idpRefresh } : {}),
      current: digest(refreshSecret),
      spent: [],
      signedInAt: now,
      expiresAt,
    };
    await this.#options.store.set(grantKey(id), grant, expiresAt - now);
    // Read after the write: a reuse marked before it is seen here, one marked after it revokes the grant itself.
    const used = (await this.#options.store.get(usedKey(code))) as UsedCode | undefined;
    if (used?.reused) {
      await this.revoke(id);
      return 'reused';
    }
    return { grant, refreshToken: `${id}.${refreshSecret}` };
  }

  /**
   * Spends a refresh token for a new one (under the grant's lock, so replicas rotate one at a
   * time), for the grant's own `resource` when one is named, and for `scope` only when the grant
   * has all of it (else 'scope', and nothing is spent). `refreshIdp` refreshes the user's IdP session first: the refresh token to keep, or
   * false when the IdP refused (the grant is revoked: the user signs in again).
   */
  async rotate(refreshToken: string, clientId: string, resource: string | null, refreshIdp: (grant: Grant) => Promise<string | undefined | false>, scope?: ReadonlySet<string>): Promise<RotateOutcome> {
    const parsed = parseRefreshToken(refreshToken);
    if (!parsed) return { refused: 'unknown' };
    const { store } = this.#options;
    return store.withLock(grantKey(parsed.id), GRANT_LOCK_MS, async (): Promise<RotateOutcome> => {
      const grant = (await store.get(grantKey(parsed.id))) as Grant | undefined;
      if (!grant) return { refused: 'unknown' };
      const presented = digest(parsed.secret);
      if (presented !== grant.current) {
        if (!grant.spent.includes(presented)) return { refused: 'unknown' };
        await this.revoke(grant.id);
        return { refused: 'reused' };
      }
      // RFC 6749 §6: a refresh token is bound to the client it was issued to.
      if (grant.clientId !== clientId) return { refused: 'client' };
      // RFC 8707 §2.2: a refresh may name the resource, which must be the grant's.
      if (resource !== null && resource !== grant.resource) return { refused: 'target' };
      // RFC 6749 §6: the scope asked for must not include any the grant does not have.
      if (scope !== undefined) {
        const granted = new Set(grant.scope.split(' '));
        if ([...scope].some((token) => !granted.has(token))) return { refused: 'scope' };
      }
      // Past grantMaxAge (checked here too: a replica's clock may run ahead of the store's expiry),
      // the user signs in again. A grant without signedInAt (stored by an earlier version) starts its count now.
      const now = this.#now();
      const signedInAt = grant.signedInAt ?? now;
      const expiresAt = this.#lapse(signedInAt, now);
      if (expiresAt <= now) {
        await this.revoke(grant.id);
        return { refused: 'expired' };
      }
      const idpRefresh = await refreshIdp(grant);
      if (idpRefresh === false) {
        await this.revoke(grant.id);
        return { refused: 'idp' };
      }
      const nextSecret = secret();
      const next: Grant = { ...grant, ...(idpRefresh ? { idpRefresh } : {}), current: digest(nextSecret), spent: [...grant.spent, presented].slice(-MAX_SPENT), signedInAt, expiresAt };
      await store.set(grantKey(grant.id), next, expiresAt - now);
      return { grant: next, refreshToken: `${grant.id}.${nextSecret}` };
    });
  }

  /**
   * The user's IdP session put to use between host refreshes (token exchange's subject), under the
   * grant's lock as `rotate` takes it, so an IdP refresh token is never spent twice, on any replica.
   * `renew` reads the grant and answers what to keep (undefined: nothing changed), or false when
   * the IdP refused (the grant is revoked). The grant as kept; 'refused'; undefined when it is gone
   * or is not the principal's.
   */
  async withIdpSession(grantId: string, principal: string, renew: (grant: Grant) => Promise<Pick<Grant, 'idpRefresh' | 'idpAccess'> | false | undefined>): Promise<Grant | 'refused' | undefined> {
    const { store, refreshTtlMs } = this.#options;
    return store.withLock(grantKey(grantId), GRANT_LOCK_MS, async () => {
      const grant = (await store.get(grantKey(grantId))) as Grant | undefined;
      if (!grant || grant.identity.principal !== principal) return undefined;
      const renewed = await renew(grant);
      if (renewed === false) {
        await this.revoke(grant.id);
        return 'refused';
      }
      if (!renewed) return grant;
      const left = (grant.expiresAt ?? this.#now() + refreshTtlMs) - this.#now();
      if (left <= 0) return undefined;
      const next: Grant = { ...grant, ...(renewed.idpRefresh ? { idpRefresh: renewed.idpRefresh } : {}), ...(renewed.idpAccess ? { idpAccess: renewed.idpAccess } : {}) };
      await store.set(grantKey(grant.id), next, left);
      return next;
    });
  }

  /** Revokes the principal's grant (its IdP session has ended); the grant, or undefined when there was none. */
  async end(grantId: string, principal: string): Promise<Grant | undefined> {
    const grant = (await this.#options.store.get(grantKey(grantId))) as Grant | undefined;
    if (!grant || grant.identity.principal !== principal) return undefined;
    await this.revoke(grant.id);
    return grant;
  }

  async alive(grantId: string): Promise<boolean> {
    return (await this.#options.store.get(grantKey(grantId))) !== undefined;
  }

  async revoke(grantId: string): Promise<void> {
    await this.#options.store.delete(grantKey(grantId));
    await this.#options.onRevoked(grantId);
  }

  /**
   * RFC 7009 §2.1: revokes the grant of a refresh token (current or spent) issued to `clientId`;
   * 'client' when it was issued to another client (nothing is revoked); undefined when it names none.
   */
  async revokeRefreshToken(refreshToken: string, clientId: string): Promise<Grant | 'client' | undefined> {
    const parsed = parseRefreshToken(refreshToken);
    if (!parsed) return undefined;
    const grant = (await this.#options.store.get(grantKey(parsed.id))) as Grant | undefined;
    if (!grant) return undefined;
    const presented = digest(parsed.secret);
    if (presented !== grant.current && !grant.spent.includes(presented)) return undefined;
    if (clientId !== grant.clientId) return 'client';
    await this.revoke(grant.id);
    return grant;
  }

  async consented(principal: string, clientId: string): Promise<boolean> {
    return (await this.#options.store.get(consentKey(principal, clientId))) !== undefined;
  }

  async recordConsent(principal: string, clientId: string): Promise<void> {
    await this.#options.store.set(consentKey(principal, clientId), { at: this.#now() }, CONSENT_TTL_MS);
  }

  /** When a grant refreshed at `now` lapses: a refresh lifetime on, but never past its sign-in's grantMaxAge. */
  #lapse(signedInAt: number, now: number): number {
    return Math.min(now + this.#options.refreshTtlMs, signedInAt + this.#maxAgeMs);
  }
}

function parseRefreshToken(token: string): { id: string; secret: string } | undefined {
  const match = /^([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{43})$/.exec(token);
  return match ? { id: match[1]!, secret: match[2]! } : undefined;
}
