// The user's IdP session kept by the front door, offered to token exchange as its subject
// (FrontDoorSubjects): per grant, an IdP access token got with the grant's kept IdP refresh token,
// renewed shortly before it ends. A front-door token names its grant (`sid`); the authenticator's
// first sight of one tells which grants a principal signs in with. Switchyard's own tokens never
// reach the IdP: only the IdP's refresh token does, at its token endpoint.
import { LRUCache } from 'lru-cache';
import type { SecurityEvents } from '../audit/events.js';
import { LoginRefused, type IdpLogin } from '../credentials/login.js';
import type { FrontDoorSubjects } from '../credentials/subject-tokens.js';
import { TokenExchangeError } from '../credentials/token-exchange.js';
import type { Logger } from '../util/log.js';
import { audit } from './audit.js';
import type { Grant, Grants } from './grants.js';

export interface IdpSessionOptions {
  grants: Grants;
  login: Pick<IdpLogin, 'refreshSession'>;
  logger: Logger;
  events?: SecurityEvents | undefined;
  /** Principals, and grants with an access token held, at most (default 10 000 each). */
  max?: number;
  now?: () => number;
}

/** Renew this long before the IdP access token ends, or at 80 % of a shorter lifetime. */
const RENEW_MARGIN_MS = 60_000;
/** When the IdP names no lifetime (RFC 6749 §5.1 makes expires_in optional). */
const DEFAULT_LIFETIME_S = 300;
/** Grants remembered per principal, newest first (one user on several hosts). */
const GRANTS_PER_PRINCIPAL = 8;

export class IdpSessions implements FrontDoorSubjects {
  readonly #options: IdpSessionOptions;
  readonly #now: () => number;
  /** The grants each principal was seen with, newest first. */
  readonly #grantsOf: LRUCache<string, string[]>;
  /** The IdP access token of each grant, until it is due for renewal. */
  readonly #tokens: LRUCache<string, { token: string; renewAt: number }>;
  /** Refreshes in flight, by grant: concurrent callers share one. */
  readonly #inflight = new Map<string, Promise<string | undefined>>();

  constructor(options: IdpSessionOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#grantsOf = new LRUCache({ max: options.max ?? 10_000 });
    this.#tokens = new LRUCache({ max: options.max ?? 10_000 });
  }

  /** A verified front-door token of `principal` named grant `grantId`. */
  seen(principal: string, grantId: string): void {
    const held = this.#grantsOf.get(principal) ?? [];
    if (held[0] === grantId) return;
    this.#grantsOf.set(principal, [grantId, ...held.filter((id) => id !== grantId)].slice(0, GRANTS_PER_PRINCIPAL));
  }

  /** An IdP access token of the principal's newest grant that has one; undefined when none does. */
  async idpAccessToken(principal: string): Promise<string | undefined> {
    for (const grantId of this.#grantsOf.get(principal) ?? []) {
      const held = this.#tokens.get(grantId);
      if (held && this.#now() < held.renewAt) {
        // A grant revoked since (reuse, RFC 7009, another replica's refusal) lends its session no more.
        if (await this.#options.grants.alive(grantId)) return held.token;
        this.#forget(principal, grantId);
        continue;
      }
      let pending = this.#inflight.get(grantId);
      if (!pending) {
        pending = this.#renew(principal, grantId).finally(() => this.#inflight.delete(grantId));
        this.#inflight.set(grantId, pending);
      }
      const token = await pending;
      if (token) return token;
    }
    return undefined;
  }

  /** The IdP refused the principal's session: each of their grants known here is revoked, so hosts sign in again. */
  async endGrants(principal: string): Promise<void> {
    const grantIds = this.#grantsOf.get(principal) ?? [];
    this.#grantsOf.delete(principal);
    for (const grantId of grantIds) {
      this.#tokens.delete(grantId);
      const grant = await this.#options.grants.end(grantId, principal);
      if (grant) this.#revoked(grant, 'idp_session_ended');
    }
  }

  /** The grant's IdP access token: the one kept with the grant (another replica's), else a refresh at the IdP. */
  async #renew(principal: string, grantId: string): Promise<string | undefined> {
    const { grants, login, logger } = this.#options;
    let outcome: Grant | 'refused' | undefined;
    try {
      outcome = await grants.withIdpSession(grantId, principal, async (grant) => {
        if (grant.idpAccess && this.#now() < grant.idpAccess.renewAt) return undefined;
        if (!grant.idpRefresh) return undefined;
        const started = this.#now();
        try {
          const session = await login.refreshSession(grant.idpRefresh);
          const lifetimeMs = (typeof session.expiresIn === 'number' && session.expiresIn > 0 ? session.expiresIn : DEFAULT_LIFETIME_S) * 1_000;
          const idpAccess = { token: session.accessToken, renewAt: started + lifetimeMs - Math.min(RENEW_MARGIN_MS, lifetimeMs * 0.2) };
          return { ...(session.refreshToken ? { idpRefresh: session.refreshToken } : {}), idpAccess };
        } catch (err) {
          if (err instanceof LoginRefused) return false;
          throw err;
        }
      });
    } catch (err) {
      logger.warn('the IdP session of a front-door grant could not be refreshed', { error: describe(err) });
      throw new TokenExchangeError('unavailable', `the identity provider could not renew your sign-in (${describe(err)})`, { cause: err });
    }
    if (outcome === 'refused' || outcome === undefined) {
      this.#forget(principal, grantId);
      if (outcome === 'refused') audit(this.#options, 'grant_revoked', { principal, grantId, reason: 'idp_refused' });
      return undefined;
    }
    const access = outcome.idpAccess;
    if (!access || this.#now() >= access.renewAt) return undefined;
    this.#tokens.set(grantId, access);
    return access.token;
  }

  #forget(principal: string, grantId: string): void {
    this.#tokens.delete(grantId);
    const held = this.#grantsOf.get(principal)?.filter((id) => id !== grantId);
    if (held && held.length > 0) this.#grantsOf.set(principal, held);
    else this.#grantsOf.delete(principal);
  }

  #revoked(grant: Grant, reason: string): void {
    audit(this.#options, 'grant_revoked', { principal: grant.identity.principal, clientId: grant.clientId, grantId: grant.id, reason });
  }
}

/** One short line about a failed refresh (never a token: oauth4webapi's messages hold none). */
function describe(err: unknown): string {
  if (err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError')) return 'no answer in time';
  const code = err instanceof Error && err.cause instanceof Error && 'code' in err.cause ? String((err.cause as { code: unknown }).code) : undefined;
  if (code) return `unreachable (${code.replace(/[^A-Z0-9_]/g, '')})`;
  return err instanceof Error ? err.message.split('\n')[0]!.slice(0, 120) : 'unknown failure';
}
