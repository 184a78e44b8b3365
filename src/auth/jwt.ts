// Access token verification (OAuth 2.1 §5.2, RFC 9068, the MCP authorization spec): a JWS
// signed with an allowed asymmetric algorithm by a key from the issuer's JWKS, with the right
// issuer, an audience that is this resource, an exp (required), a small clock tolerance, and
// optionally typ at+jwt. An unknown kid refetches the JWKS at most once per cooldown (jose).
//
// A token that verified is remembered (bounded, the oldest dropped first) so the signature is
// not checked again on every request of a session: the memory holds only while the same fetch
// of the key set is current and fresh (a reload, which is how a removed key stops working,
// forgets every token verified under the old one) and never past the token's exp, nor past
// MAX_REMEMBER_MS (a bound that holds whatever the token says).
import { createRemoteJWKSet, customFetch, errors, jwksCache, jwtVerify, type ExportedJWKSCache, type FetchImplementation, type JWTPayload, type RemoteJWKSet } from 'jose';
import { LRUCache } from 'lru-cache';
import { BodyTooLarge, readLimited } from '../util/bounded-read.js';
import { AuthError, type Principal } from './principal.js';

export interface JwtVerifierOptions {
  issuer: string;
  /** Where the keys are fetched; or `keys`, a key set of the gateway's own (the front door's). */
  jwksUri?: string;
  keys?: KeySource;
  /** The issuer named in principal ids (`<issuer>|<sub>`) when it is not `issuer` (the front door names the IdP's). */
  principalIssuer?: string;
  /** A last check of a verified token's claims (throws AuthError: a revoked grant); run when a token is first verified. */
  accept?: (payload: JWTPayload) => Promise<void>;
  audience: readonly string[];
  algorithms: readonly string[];
  clockToleranceMs: number;
  /** Require the JWT header typ "at+jwt" (RFC 9068). */
  typ?: string;
  /** The claim naming the subject within the issuer. */
  principalClaim: string;
  jwksCooldownMs: number;
  /** How long fetched keys are trusted before the JWKS is read again (a removed key stops working). */
  jwksMaxAgeMs: number;
}

/**
 * Keys held by the gateway itself rather than fetched: what a token is verified with, and a
 * version that changes whenever tokens verified before must be verified again (new keys, a revocation).
 */
export interface KeySource {
  key: (...args: Parameters<RemoteJWKSet>) => ReturnType<RemoteJWKSet>;
  version(): number | undefined;
  fresh(): boolean;
}

type KeyFunction = KeySource['key'] & { readonly fresh: boolean };

/** The key set could not be read (down, an HTTP error, not JSON, too large): not the token's fault. */
class KeysUnavailable extends Error {}

/** A JWKS answer is read up to this many bytes; a real key set is a few KiB (jose alone reads any size). */
export const MAX_JWKS_BYTES = 1024 * 1024;
/**
 * An exp further ahead than this is refused: access tokens are short-lived, a year is far beyond
 * any issuer's lifetime, and it still catches exp: 1e309 (Infinity after JSON.parse) and its
 * finite cousins, which would otherwise never expire.
 */
export const MAX_TOKEN_LIFETIME_MS = 366 * 24 * 60 * 60 * 1_000;
/** A verified token is remembered at most this long, then its signature is checked again. */
export const MAX_REMEMBER_MS = 60 * 60 * 1_000;

/** The JWKS answer went past MAX_JWKS_BYTES. */
class KeySetTooLarge extends Error {}

/**
 * A fetch for jose that reads the body itself, stopping (and dropping the connection) past
 * `maxBytes`, declared or streamed, so an oversized or endless key set costs a bounded buffer.
 */
export function boundedFetch(maxBytes: number, fetchImpl: typeof fetch = fetch): FetchImplementation {
  return async function boundedJwksFetch(url, options) {
    const response = await fetchImpl(url, options);
    // jose refuses anything but 200 without reading it.
    if (response.status !== 200) {
      await response.body?.cancel();
      return new Response(null, { status: response.status });
    }
    let body: Buffer;
    try {
      body = await readLimited(response, maxBytes);
    } catch (err) {
      if (err instanceof BodyTooLarge) throw new KeySetTooLarge(`the key set ${err.declared ? 'declares more than' : 'is larger than'} ${maxBytes} bytes`);
      throw err;
    }
    return new Response(body, { status: 200, headers: { 'content-type': 'application/json' } });
  };
}

interface Verified {
  principal: Principal;
  /** The key set fetch (its time) the token verified under. */
  keysFetchedAt: number;
  /** The token's exp, in ms. */
  expiresAt: number;
}

/**
 * Verified tokens in the order they were verified, at most `maxEntries` of them and `maxBytes`
 * in all (a token costs its length and a little). Full, it drops the oldest: a token still in
 * use is then verified once more (one signature check), so a lookup changes nothing (peek: the
 * order is the order of verification, not of use).
 */
export class VerifiedTokens<T extends {}> {
  readonly #entries: LRUCache<string, T>;

  constructor(limits: { maxEntries: number; maxBytes: number } = { maxEntries: 10_000, maxBytes: 64 * 1024 * 1024 }) {
    this.#entries = new LRUCache<string, T>({ max: limits.maxEntries, maxSize: limits.maxBytes, sizeCalculation: (_value, token) => costOf(token) });
  }

  get(token: string): T | undefined {
    return this.#entries.peek(token);
  }

  /** Held again, a token becomes the newest. */
  set(token: string, value: T): void {
    this.#entries.set(token, value);
  }

  delete(token: string): void {
    this.#entries.delete(token);
  }

  /** The tokens held, oldest first. */
  keys(): IterableIterator<string> {
    return this.#entries.rkeys();
  }
}

function costOf(token: string): number {
  return token.length + 256;
}

export class JwtVerifier {
  readonly #options: JwtVerifierOptions;
  readonly #jwks: KeyFunction;
  /** jose writes each fetched key set and its time here. */
  readonly #fetched: Partial<ExportedJWKSCache> = {};
  readonly #keysVersion: () => number | undefined;
  readonly #verified = new VerifiedTokens<Verified>();
  readonly #now: () => number;

  constructor(options: JwtVerifierOptions, now: () => number = Date.now) {
    this.#options = options;
    this.#now = now;
    const own = options.keys;
    if (own) {
      this.#jwks = Object.defineProperty((...args: Parameters<RemoteJWKSet>) => own.key(...args), 'fresh', { get: () => own.fresh() }) as KeyFunction;
      this.#keysVersion = () => own.version();
      return;
    }
    if (options.jwksUri === undefined) throw new Error('a JwtVerifier needs jwksUri or keys');
    this.#jwks = createRemoteJWKSet(new URL(options.jwksUri), {
      cooldownDuration: options.jwksCooldownMs,
      cacheMaxAge: options.jwksMaxAgeMs,
      timeoutDuration: 5_000,
      [jwksCache]: this.#fetched as ExportedJWKSCache,
      [customFetch]: boundedFetch(MAX_JWKS_BYTES),
    });
    this.#keysVersion = () => this.#fetched.uat;
  }

  /** The signing key, telling "no such key" apart from "cannot read the keys". */
  async #key(...args: Parameters<RemoteJWKSet>): Promise<Awaited<ReturnType<RemoteJWKSet>>> {
    try {
      return await this.#jwks(...args);
    } catch (err) {
      if (err instanceof errors.JWKSNoMatchingKey || err instanceof errors.JWKSMultipleMatchingKeys || err instanceof errors.JOSEAlgNotAllowed || err instanceof errors.JOSENotSupported) throw err;
      throw new KeysUnavailable('the signing keys could not be fetched', { cause: err });
    }
  }

  /** The principal of a token verified before, while that verification still holds; else undefined. */
  known(token: string): Principal | undefined {
    const known = this.#verified.get(token);
    if (known === undefined) return undefined;
    if (known.keysFetchedAt !== this.#keysVersion() || this.#now() >= known.expiresAt) {
      // Verified under keys since replaced, or expired: never good again.
      this.#verified.delete(token);
      return undefined;
    }
    return this.#jwks.fresh ? known.principal : undefined;
  }

  async verify(token: string): Promise<Principal> {
    const known = this.known(token);
    if (known) return known;
    const { issuer, audience, algorithms, clockToleranceMs, typ, principalClaim } = this.#options;
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, (header, input) => this.#key(header, input), {
        issuer,
        audience: [...audience],
        algorithms: [...algorithms],
        clockTolerance: Math.round(clockToleranceMs / 1_000),
        requiredClaims: ['exp'],
        ...(typ ? { typ } : {}),
      }));
    } catch (err) {
      throw toAuthError(err);
    }
    const badTime = timeClaimProblem(payload, this.#now());
    if (badTime) throw new AuthError('claims', badTime);
    const subject = payload[principalClaim];
    if (typeof subject !== 'string' || subject === '') throw new AuthError('claims', `the token has no ${principalClaim} claim`);
    const keysFetchedAt = this.#keysVersion();
    await this.#options.accept?.(payload);
    const principal: Principal = { id: `${this.#options.principalIssuer ?? issuer}|${subject}`, kind: 'oauth', scopes: scopesOf(payload), claims: payload };
    if (keysFetchedAt !== undefined && typeof payload.exp === 'number') {
      this.#verified.set(token, { principal, keysFetchedAt, expiresAt: Math.min(payload.exp * 1_000, this.#now() + MAX_REMEMBER_MS) });
    }
    return principal;
  }
}

/**
 * Why the token's time claims are unusable, or undefined. jose checks they are numbers, but
 * Infinity (1e309 in the token's JSON) is one; exp is required (requiredClaims) and present.
 */
function timeClaimProblem(payload: JWTPayload, now: number): string | undefined {
  for (const claim of ['exp', 'nbf', 'iat'] as const) {
    const value = payload[claim];
    if (value !== undefined && !Number.isFinite(value)) return `the token's ${claim} claim is not a finite number`;
  }
  if (payload.exp! * 1_000 > now + MAX_TOKEN_LIFETIME_MS) return "the token's exp claim is too far in the future";
  return undefined;
}

/** Scopes of a token: the space-separated `scope` claim (RFC 9068) or an `scp` array. */
function scopesOf(payload: JWTPayload): string[] {
  if (typeof payload.scope === 'string') return payload.scope.split(' ').filter(Boolean);
  if (Array.isArray(payload.scp)) return payload.scp.filter((s): s is string => typeof s === 'string');
  return [];
}

function toAuthError(err: unknown): AuthError {
  if (err instanceof KeysUnavailable) return new AuthError('jwks_unavailable', 'the signing keys could not be fetched');
  if (err instanceof errors.JWTExpired) return new AuthError('expired', 'the token has expired');
  if (err instanceof errors.JWTClaimValidationFailed) {
    if (err.claim === 'iss') return new AuthError('issuer', 'the token was not issued by the expected issuer');
    if (err.claim === 'aud') return new AuthError('audience', 'the token was not issued for this resource');
    if (err.claim === 'nbf' || err.claim === 'iat') return new AuthError('not_yet_valid', 'the token is not yet valid');
    return new AuthError('claims', `the token's ${err.claim} claim is ${err.reason === 'missing' ? 'missing' : 'invalid'}`);
  }
  if (err instanceof errors.JOSEAlgNotAllowed) return new AuthError('algorithm', 'the token is signed with an algorithm that is not allowed');
  if (err instanceof errors.JWKSNoMatchingKey) return new AuthError('unknown_key', 'the token is signed with an unknown key');
  if (err instanceof errors.JWSSignatureVerificationFailed) return new AuthError('signature', 'the token signature is invalid');
  if (err instanceof errors.JWKSTimeout || err instanceof errors.JWKSInvalid) return new AuthError('jwks_unavailable', 'the signing keys could not be fetched');
  if (err instanceof errors.JOSEError) return new AuthError('malformed', 'the token is malformed');
  return new AuthError('jwks_unavailable', 'the token could not be verified');
}
