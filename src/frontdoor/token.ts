// The front door's back channel: /oauth/token (the authorization_code grant with PKCE, and the
// refresh_token grant that rotates on every use), /oauth/revoke (RFC 7009) and /oauth/register
// (RFC 7591). Access tokens are Switchyard's own JWTs (RFC 9068: ES256, typ at+jwt, aud the
// endpoint's resource), never outliving their grant. Every answer is JSON with `Cache-Control:
// no-store` (RFC 6749 §5.1).
import { randomBytes } from 'node:crypto';
import { SignJWT } from 'jose';
import { LoginRefused, type IdpLogin } from '../credentials/login.js';
import type { SecurityEvents } from '../audit/events.js';
import type { Logger } from '../util/log.js';
import { audit } from './audit.js';
import { RegistrationLimited, RegistrationRefused, type ClientRegistry } from './clients.js';
import type { Grant, Grants } from './grants.js';
import type { SigningKeys } from './keys.js';
import { ALGORITHM } from './keys.js';
import { pkceMatches } from './rules.js';

export interface TokenDeps {
  issuer: string;
  tokenTtlMs: number;
  grants: Grants;
  keys: SigningKeys;
  clients: ClientRegistry;
  login: IdpLogin;
  logger: Logger;
  /** The gateway's audit records and spans (token.issued, token.refused). */
  events?: SecurityEvents | undefined;
  onToken: (grantType: string, outcome: string) => void;
  now?: () => number;
}

/** The scope tokens a refresh asks for (RFC 6749 §3.3: space-delimited); undefined when it names none (§6: the grant's). */
function requestedScope(scope: string | null): Set<string> | undefined {
  const tokens = (scope ?? '').split(' ').filter(Boolean);
  return tokens.length > 0 ? new Set(tokens) : undefined;
}

/** The grant's scope tokens that were asked for, in the grant's order. */
function narrowedScope(granted: string, asked: ReadonlySet<string>): string {
  return granted.split(' ').filter((token) => token !== '' && asked.has(token)).join(' ');
}

/** Claims Switchyard sets itself: an IdP claim of the same name is never copied over them. */
export const RESERVED_CLAIMS = new Set(['iss', 'sub', 'aud', 'exp', 'iat', 'nbf', 'jti', 'client_id', 'scope', 'sid', 'cnf', 'auth_time', 'azp', 'nonce', 'at_hash', 'c_hash']);

type TokenError = 'invalid_request' | 'invalid_grant' | 'invalid_target' | 'invalid_scope' | 'unsupported_grant_type' | 'invalid_client' | 'server_error';

function json(status: number, body: unknown, extra: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', 'cache-control': 'no-store', pragma: 'no-cache', ...extra } });
}

function tokenError(error: TokenError, description: string): Response {
  return json(error === 'server_error' ? 500 : 400, { error, error_description: description });
}

export class TokenEndpoint {
  readonly #deps: TokenDeps;
  readonly #now: () => number;

  constructor(deps: TokenDeps) {
    this.#deps = deps;
    this.#now = deps.now ?? Date.now;
  }

  async token(form: URLSearchParams): Promise<Response> {
    const grantType = form.get('grant_type');
    const label = grantType === 'authorization_code' || grantType === 'refresh_token' ? grantType : 'other';
    const repeated = [...new Set(form.keys())].find((name) => form.getAll(name).length > 1);
    // RFC 6749 §5.2: a missing parameter is invalid_request; unsupported_grant_type is for a grant type named.
    const answer = repeated
      ? { response: tokenError('invalid_request', `the parameter ${repeated} is sent more than once`), outcome: 'invalid_request' }
      : !grantType
        ? { response: tokenError('invalid_request', 'grant_type is required'), outcome: 'invalid_request' }
        : grantType === 'authorization_code'
          ? await this.#code(form)
          : grantType === 'refresh_token'
            ? await this.#refresh(form)
            : { response: tokenError('unsupported_grant_type', 'grant_type must be authorization_code or refresh_token'), outcome: 'unsupported_grant_type' };
    this.#deps.onToken(label, answer.outcome);
    // Refusals of a malformed request; those of a grant are audited where their reason is known.
    if (answer.outcome === 'invalid_request' || answer.outcome === 'unsupported_grant_type') {
      const clientId = form.get('client_id');
      audit(this.#deps, 'token_refused', { grantType: label, reason: answer.outcome, ...(clientId ? { clientId } : {}) });
    }
    return answer.response;
  }

  async #code(form: URLSearchParams): Promise<{ response: Response; outcome: string }> {
    const deps = this.#deps;
    const [code, verifier, clientId, redirectUri] = ['code', 'code_verifier', 'client_id', 'redirect_uri'].map((name) => form.get(name));
    if (!code || !verifier || !clientId) return { response: tokenError('invalid_request', 'code, code_verifier and client_id are required'), outcome: 'invalid_request' };
    // The audited reason is a word (reused, unknown, client, redirect_uri, code_verifier); the client reads the sentence.
    const refused = (reason: string, why: string, principal?: string): { response: Response; outcome: string } => {
      audit(deps, 'token_refused', { clientId, grantType: 'authorization_code', reason, ...(principal ? { principal } : {}) });
      return { response: tokenError('invalid_grant', `the authorization code is ${why}`), outcome: 'invalid_grant' };
    };
    const redeemed = await deps.grants.redeemCode(code);
    if (redeemed === 'reused') return refused('reused', 'already used (the tokens it gave are revoked)');
    if (!redeemed) return refused('unknown', 'unknown or expired');
    const { record } = redeemed;
    // RFC 6749 §4.1.3 and RFC 7636 §4.6: the code's client, redirect URI and challenge.
    if (record.clientId !== clientId) return refused('client', 'for another client', record.identity.principal);
    // redirect_uri may be left out only when the authorization request left it out.
    if (redirectUri === null ? record.redirectUriSent !== false : redirectUri !== record.redirectUri) {
      return refused('redirect_uri', redirectUri === null ? 'for a redirect_uri this request does not repeat' : 'for another redirect URI', record.identity.principal);
    }
    if (!pkceMatches(verifier, record.challenge)) return refused('code_verifier', 'not for this code_verifier', record.identity.principal);
    const resource = form.get('resource');
    if (resource !== null && resource !== record.resource) {
      audit(deps, 'token_refused', { clientId, principal: record.identity.principal, grantType: 'authorization_code', reason: 'invalid_target', resource });
      return { response: tokenError('invalid_target', 'resource is not the one the code was issued for'), outcome: 'invalid_target' };
    }
    const created = await deps.grants.createGrant(code, redeemed);
    if (created === 'reused') return refused('reused', 'already used (the tokens it gave are revoked)', record.identity.principal);
    return { response: await this.#issue(created.grant, created.refreshToken, 'authorization_code'), outcome: 'issued' };
  }

  async #refresh(form: URLSearchParams): Promise<{ response: Response; outcome: string }> {
    const deps = this.#deps;
    const refreshToken = form.get('refresh_token');
    const clientId = form.get('client_id');
    if (!refreshToken || !clientId) return { response: tokenError('invalid_request', 'refresh_token and client_id are required'), outcome: 'invalid_request' };
    const resource = form.get('resource');
    const scope = requestedScope(form.get('scope'));
    const outcome = await deps.grants.rotate(refreshToken, clientId, resource, (grant) => this.#refreshIdp(grant), scope);
    if ('refused' in outcome) {
      if (outcome.refused === 'target') {
        audit(deps, 'token_refused', { clientId, grantType: 'refresh_token', reason: 'invalid_target', ...(resource !== null ? { resource } : {}) });
        return { response: tokenError('invalid_target', 'resource is not the one the grant is for'), outcome: 'invalid_target' };
      }
      if (outcome.refused === 'scope') {
        audit(deps, 'token_refused', { clientId, grantType: 'refresh_token', reason: 'invalid_scope' });
        return { response: tokenError('invalid_scope', 'scope names a scope the grant does not have'), outcome: 'invalid_scope' };
      }
      const event = outcome.refused === 'reused' ? 'refresh_reuse_detected' : 'token_refused';
      audit(deps, event, { clientId, grantType: 'refresh_token', reason: outcome.refused });
      const why = {
        unknown: 'unknown, expired or revoked',
        reused: 'already used: the grant is revoked',
        client: 'issued to another client',
        idp: 'no longer good: the company IdP refused; sign in again',
        expired: 'older than a sign-in may last here; sign in again',
      }[outcome.refused];
      return { response: tokenError('invalid_grant', `the refresh token is ${why}`), outcome: outcome.refused === 'reused' ? 'reused' : 'invalid_grant' };
    }
    return { response: await this.#issue(outcome.grant, outcome.refreshToken, 'refresh_token', scope && narrowedScope(outcome.grant.scope, scope)), outcome: 'issued' };
  }

  /** The user's IdP session, refreshed with the host's token: the refresh token to keep, or false when the IdP refused. */
  async #refreshIdp(grant: Grant): Promise<string | undefined | false> {
    if (!grant.idpRefresh) return undefined;
    try {
      return await this.#deps.login.refresh(grant.idpRefresh);
    } catch (err) {
      if (err instanceof LoginRefused) return false;
      throw err;
    }
  }

  /**
   * An access token for the grant (for `scope`, a part of the grant's, when the refresh asked for
   * less), expiring tokenTtl from now or when the grant ends, whichever is first: the grant's end
   * only ever moves later (a refresh), so a token never outlives it, remembered as verified or not.
   */
  async #issue(grant: Grant, refreshToken: string, grantType: string, scope = grant.scope): Promise<Response> {
    const deps = this.#deps;
    const { kid, key } = await deps.keys.signer();
    const now = this.#now();
    const issuedAt = Math.floor(now / 1_000);
    const expiresAt = Math.floor(Math.min(now + deps.tokenTtlMs, grant.expiresAt ?? Infinity) / 1_000);
    const claims: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(grant.identity.claims)) if (!RESERVED_CLAIMS.has(name)) claims[name] = value;
    const accessToken = await new SignJWT({ ...claims, client_id: grant.clientId, sid: grant.id, ...(scope ? { scope } : {}) })
      .setProtectedHeader({ alg: ALGORITHM, kid, typ: 'at+jwt' })
      .setIssuer(deps.issuer)
      .setAudience(grant.resource)
      .setSubject(grant.identity.subject)
      .setIssuedAt(issuedAt)
      .setExpirationTime(expiresAt)
      .setJti(randomBytes(16).toString('base64url'))
      .sign(key);
    audit(deps, 'token_issued', { principal: grant.identity.principal, clientId: grant.clientId, grantId: grant.id, grantType, resource: grant.resource });
    return json(200, { access_token: accessToken, token_type: 'Bearer', expires_in: expiresAt - issuedAt, refresh_token: refreshToken, ...(scope ? { scope } : {}) });
  }

  /**
   * RFC 7009: the client names itself (public clients: client_id, RFC 6749 §2.3) and may revoke
   * only its own tokens (§2.1); another client's is refused (§2.2.1, RFC 6749 §5.2 invalid_grant)
   * and keeps working. 200 for a token revoked or one that names nothing (§2.2); an access token
   * is left to expire.
   */
  async revoke(form: URLSearchParams): Promise<Response> {
    const deps = this.#deps;
    const [token, clientId] = [form.get('token'), form.get('client_id')];
    if (!token || !clientId) return tokenError('invalid_request', 'token and client_id are required');
    const revoked = await deps.grants.revokeRefreshToken(token, clientId);
    if (revoked === 'client') {
      audit(deps, 'token_refused', { clientId, grantType: 'revocation', reason: 'client' });
      return tokenError('invalid_grant', 'the token was issued to another client');
    }
    if (revoked) audit(deps, 'grant_revoked', { principal: revoked.identity.principal, clientId: revoked.clientId, grantId: revoked.id, reason: 'revocation' });
    return new Response(null, { status: 200, headers: { 'cache-control': 'no-store' } });
  }

  /** RFC 7591 §3: 201 with the client's information, or 400 with its error. */
  async register(body: unknown, address: string): Promise<Response> {
    try {
      return json(201, await this.#deps.clients.register(body, address));
    } catch (err) {
      if (err instanceof RegistrationRefused) return json(400, { error: err.error, error_description: err.message });
      if (err instanceof RegistrationLimited) {
        const seconds = Math.max(1, Math.ceil(err.retryAfterMs / 1_000));
        return json(429, { error: 'invalid_request', error_description: `too many registrations from this address; try again in ${seconds} s` }, { 'retry-after': String(seconds) });
      }
      throw err;
    }
  }
}
