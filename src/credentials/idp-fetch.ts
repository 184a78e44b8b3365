// How the gateway reads the company IdP (auth.oauth.issuer) itself: its OpenID discovery document
// and its token endpoint (the login's code grant and refresh, the front door's refresh, token
// exchange). The operator chose the IdP, but whatever answers at its URL is read within a bound
// like any other answer: a larger declared Content-Length is refused unread, a longer stream is
// dropped at the bound (its connection with it), whatever the status, and the caller meets the
// IdP failing (as if it had answered 5xx) rather than the gateway holding the answer in memory.
// The JWKS is read by jose through its own bounded fetch (src/auth/jwt.ts, MAX_JWKS_BYTES).
import { bufferedResponse } from '../util/bounded-read.js';

/** The discovery document: a big tenant's lists many algorithms, claims and scopes, still far under this. */
export const MAX_IDP_METADATA_BYTES = 1024 * 1024;
/** A token endpoint's answer (tokens with an ID token, or an OAuth error): a few KiB. */
export const MAX_IDP_TOKEN_BYTES = 64 * 1024;

/** What oauth4webapi's customFetch calls. */
export type IdpFetch = (url: string, init: RequestInit) => Promise<Response>;

/**
 * A fetch for oauth4webapi whose answer is held in memory, read within `maxBytes` (past it:
 * BodyTooLarge, for any status). `inner` replaces the network (tests); the bound still holds.
 */
export function idpFetch(maxBytes: number, inner?: typeof fetch): IdpFetch {
  return async (url, init) => bufferedResponse(await (inner ?? fetch)(url, init), maxBytes, { anyStatus: true });
}
