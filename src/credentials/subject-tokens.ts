// The user's own IdP tokens, as token exchange needs them for its subject: the last one each
// principal's client sent (verified as the IdP's by the authenticator; a token Switchyard issued
// itself never gets here), else the one the front door keeps from the user's login.
import { LRUCache } from 'lru-cache';
import type { SubjectTokens } from './token-exchange.js';

/**
 * The front door's side (its login keeps the user's IdP session): the principal's IdP access
 * token, refreshed when due, and the end of their grant when the IdP refused it. Not given
 * while the front door offers no such access.
 */
export interface FrontDoorSubjects {
  idpAccessToken(principal: string): Promise<string | undefined>;
  endGrants(principal: string): Promise<void>;
}

export interface ClientSubjectOptions {
  /** Principals remembered at most (default 10 000). */
  max?: number;
  frontDoor?: FrontDoorSubjects;
  /** Whether any upstream exchanges tokens now (read on each request; nothing is kept otherwise). */
  wanted?: () => boolean;
  now?: () => number;
}

/** A token is not offered as a subject in its last seconds: the exchange would carry it past its end. */
const SUBJECT_MARGIN_MS = 5_000;

export class ClientSubjectTokens implements SubjectTokens {
  readonly #tokens: LRUCache<string, { token: string; expiresAt: number }>;
  readonly #frontDoor: FrontDoorSubjects | undefined;
  readonly #now: () => number;
  readonly #wanted: () => boolean;

  constructor(options: ClientSubjectOptions = {}) {
    this.#wanted = options.wanted ?? (() => true);
    this.#tokens = new LRUCache({ max: options.max ?? 10_000 });
    this.#frontDoor = options.frontDoor;
    this.#now = options.now ?? Date.now;
  }

  /**
   * A request carried this IdP token of the principal's, verified and accepted (`exp` in seconds,
   * from the verified token). The last one seen is the subject, whichever expires later: a user
   * who signed in again has a newer token, and the IdP may have revoked the one before.
   */
  remember(principal: string, token: string, exp: number | undefined): void {
    if (!this.#wanted()) return;
    const expiresAt = exp === undefined ? this.#now() + 5 * 60_000 : exp * 1_000;
    if (expiresAt <= this.#now()) return;
    if (this.#tokens.get(principal)?.token === token) return;
    this.#tokens.set(principal, { token, expiresAt });
  }

  async subjectToken(principal: string): Promise<string | undefined> {
    const held = this.#tokens.get(principal);
    if (held && held.expiresAt - SUBJECT_MARGIN_MS > this.#now()) return held.token;
    return this.#frontDoor?.idpAccessToken(principal);
  }

  async ended(principal: string): Promise<void> {
    this.#tokens.delete(principal);
    await this.#frontDoor?.endGrants(principal);
  }
}
