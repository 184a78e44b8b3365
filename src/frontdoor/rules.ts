// The front door's pure protocol rules, each with the RFC it comes from: redirect URI matching
// (exact, or any port for a loopback IP redirect), which redirect URIs a DCR client may
// register, what a Client ID Metadata Document URL may look like and which hosts are allowed,
// how long an authorization request's parameters may be, PKCE S256. Nothing here does I/O or
// keeps state.
import { createHash, timingSafeEqual } from 'node:crypto';

/** Host names that are the local machine (RFC 8252 §7.3 speaks of loopback IP literals; `localhost` is common in clients). */
export function isLoopbackHost(hostname: string): boolean {
  const bare = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  return bare === 'localhost' || bare === '::1' || /^127(?:\.\d{1,3}){3}$/.test(bare);
}

function parse(uri: string): URL | undefined {
  try {
    return new URL(uri);
  } catch {
    return undefined;
  }
}

/** A loopback redirect: plain http to a loopback host (RFC 8252 §7.3). */
function isLoopbackRedirect(url: URL): boolean {
  return url.protocol === 'http:' && isLoopbackHost(url.hostname);
}

/**
 * Whether `presented` (the authorization request's redirect_uri) is one of `registered`: an
 * exact string match (OAuth 2.1 §2.3.1), except that a loopback IP redirect may name any port
 * (RFC 8252 §7.3: "MUST allow any port to be specified at the time of the request").
 */
export function redirectMatches(presented: string, registered: readonly string[]): boolean {
  if (registered.includes(presented)) return true;
  const url = parse(presented);
  if (!url || !isLoopbackRedirect(url) || url.username || url.password || url.hash) return false;
  return registered.some((candidate) => {
    const known = parse(candidate);
    if (!known || !isLoopbackRedirect(known)) return false;
    return known.hostname === url.hostname && known.pathname === url.pathname && known.search === url.search;
  });
}

/** Schemes never used as a redirect: they would run or read something in the browser. */
const FORBIDDEN_SCHEMES = new Set(['javascript:', 'data:', 'file:', 'vbscript:', 'blob:', 'about:']);

/**
 * Why a DCR client may not register `uri` under the configured `redirects` patterns, or
 * undefined when it may. A pattern "scheme://*" allows any URI of the scheme; a loopback origin
 * ("http://127.0.0.1") any port and path there; anything else is a prefix that must end at a
 * path, query or end boundary (so "https://app.example" never admits "https://app.example.evil").
 */
export function redirectRefusal(uri: string, patterns: readonly string[]): string | undefined {
  const url = parse(uri);
  if (!url) return `${uri} is not a URI`;
  if (FORBIDDEN_SCHEMES.has(url.protocol)) return `${url.protocol} redirect URIs are never allowed`;
  if (url.hash || uri.includes('#')) return 'a redirect URI must not have a fragment (RFC 6749 §3.1.2)';
  if (url.username || url.password) return 'a redirect URI must not carry user information';
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname)) return 'plain http redirect URIs are only allowed to loopback addresses';
  const allowed = patterns.some((pattern) => {
    const wildcard = /^([a-z][a-z0-9+.-]*):\/\/\*$/.exec(pattern);
    if (wildcard) return url.protocol === `${wildcard[1]}:`;
    const base = parse(pattern);
    if (base && isLoopbackRedirect(base) && (base.pathname === '/' || base.pathname === '') && !base.port) {
      return isLoopbackRedirect(url) && url.hostname === base.hostname;
    }
    if (!uri.startsWith(pattern)) return false;
    const next = uri.charAt(pattern.length);
    return pattern.endsWith('/') || next === '' || next === '/' || next === '?';
  });
  return allowed ? undefined : `${uri} is not among the redirect URIs this gateway allows clients to register`;
}

/**
 * Why `clientId` cannot be a Client ID Metadata Document URL, or undefined (draft-ietf-oauth-
 * client-id-metadata-document §3: https, a path, no fragment, no user information, no single-
 * or double-dot path segments).
 */
export function cimdUrlRefusal(clientId: string): string | undefined {
  const url = parse(clientId);
  if (!url || url.protocol !== 'https:') return 'a URL client_id must use https';
  if (url.username || url.password) return 'a URL client_id must not carry user information';
  if (clientId.includes('#')) return 'a URL client_id must not have a fragment';
  const rawPath = clientId.slice(clientId.indexOf('//') + 2).replace(/^[^/?]*/, '').split('?')[0]!;
  if (rawPath.split('/').some((segment) => /^(\.|%2e){1,2}$/i.test(segment))) return 'a URL client_id must not have dot path segments';
  if (url.pathname === '/' || url.pathname === '') return 'a URL client_id must have a path';
  if (url.href !== clientId) return 'a URL client_id must be written in its normal form';
  return undefined;
}

/** Whether `host` is allowed by `cimd.allow`: an exact name, "*.example.com" (its subdomains), or "*". */
export function hostAllowed(host: string, allow: readonly string[]): boolean {
  const name = host.toLowerCase();
  return allow.some((entry) => {
    const rule = entry.toLowerCase();
    if (rule === '*') return true;
    if (rule.startsWith('*.')) return name.endsWith(rule.slice(1)) && name.length > rule.length - 1;
    return name === rule;
  });
}

/**
 * The longest each authorization request parameter may be (characters), checked before anything
 * is stored for the request. RFC 6749 bounds none: state is the client's own value (a random
 * one is tens of characters, 2 KiB leaves room for one that encodes a little), a URI may be as
 * long as DCR lets a client register one, a code_challenge as long as RFC 7636 §4.2 allows any.
 */
export const AUTHORIZE_PARAMETER_LIMITS: Readonly<Record<string, number>> = {
  client_id: 2_048,
  redirect_uri: 2_048,
  resource: 2_048,
  state: 2_048,
  scope: 1_024,
  code_challenge: 128,
  code_challenge_method: 32,
  response_type: 64,
};

/** The first authorization request parameter longer than AUTHORIZE_PARAMETER_LIMITS allows, or undefined. */
export function oversizedParameter(params: URLSearchParams): { name: string; limit: number } | undefined {
  for (const [name, limit] of Object.entries(AUTHORIZE_PARAMETER_LIMITS)) {
    if ((params.get(name)?.length ?? 0) > limit) return { name, limit };
  }
  return undefined;
}

/** RFC 7636 §4.1: 43 to 128 unreserved characters. */
const VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/;
/** RFC 7636 §4.2: BASE64URL(SHA256(verifier)) is 43 characters. */
const S256_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

export function isS256Challenge(challenge: string): boolean {
  return S256_CHALLENGE.test(challenge);
}

/** RFC 7636 §4.6: the verifier hashes to the challenge (compared in constant time). */
export function pkceMatches(verifier: string, challenge: string): boolean {
  if (!VERIFIER.test(verifier) || !isS256Challenge(challenge)) return false;
  const computed = Buffer.from(createHash('sha256').update(verifier, 'ascii').digest('base64url'));
  const expected = Buffer.from(challenge);
  return computed.length === expected.length && timingSafeEqual(computed, expected);
}

/** A one-way name for a secret (codes and refresh tokens are stored under it, never as they are). */
export function digest(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('base64url');
}

/** The origin (or `scheme:` for a custom scheme) a browser is sent to, for the consent page's form-action. */
export function formActionSource(redirectUri: string): string {
  const url = new URL(redirectUri);
  return url.protocol === 'http:' || url.protocol === 'https:' ? url.origin : url.protocol;
}
