// Authenticates every request to the MCP endpoint (the MCP authorization spec, RFC 6750,
// RFC 9728): a bearer access token (JWT) or an API key; the answer when it fails, with the
// WWW-Authenticate challenge that points clients to the protected resource metadata.
import type { AuthConfig, Config } from '../config/schema.js';
import { ApiKeys } from './api-keys.js';
import { decodeJwt, type JWTPayload } from 'jose';
import { JwtVerifier, type KeySource } from './jwt.js';
import { AuthError, type Principal } from './principal.js';

export interface Credentials {
  authorization: string | undefined;
  apiKey: string | undefined;
  /** Whether the query string names `access_token` (refused: tokens never travel in URLs). */
  queryToken: boolean;
  /** The endpoint asked for beside the main one (its path): a front-door token must be for it. */
  endpoint?: string | undefined;
}

/**
 * The gateway's own authorization server (the front door), given by gateway.ts: its issuer, its
 * keys and the check that a token's grant still stands. Its tokens are accepted beside the IdP's,
 * each for exactly the endpoint it names, with the principal the IdP's token would have.
 */
export interface OwnIssuer {
  issuer: string;
  keys: KeySource;
  accept: (payload: JWTPayload) => Promise<void>;
}

/**
 * Why a request is refused, named as the HTTP layer's table of refusals names it (status and
 * message are the table's: http/refusals.ts), and what goes with it.
 */
export interface AuthRefusal {
  kind: 'tokenRequired' | 'invalidToken' | 'tokenInQuery' | 'insufficientScope' | 'keysUnavailable';
  /** What is wrong with the credential, for the message (tokenRequired and keysUnavailable say it alone). */
  detail: string;
  /** The WWW-Authenticate challenge; none for keysUnavailable (not the credential's fault). */
  challenge?: string;
}

/** The protected resource metadata (RFC 9728) of one endpoint, and where it is served. */
export interface ResourceMetadata {
  readonly document: Record<string, unknown>;
  /** As an absolute URL (for WWW-Authenticate). */
  readonly url: string;
  /** The path suffixed with the resource's path (RFC 9728 §3.1). */
  readonly path: string;
}

/** The usual spelling of the scheme; others take the parsing path (bearerOf). */
const BEARER = 'Bearer ';
const WELL_KNOWN = '/.well-known/oauth-protected-resource';
const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

export class Authenticator {
  readonly #verifier: JwtVerifier | undefined;
  /** The front door's tokens, and the resource of each endpoint (by path; '' is the main one). */
  readonly #own: { issuer: string; verifier: JwtVerifier; resources: ReadonlyMap<string, string> } | undefined;
  readonly #apiKeys: ApiKeys;
  readonly #scopes: readonly string[];
  /** The protected resource metadata document (RFC 9728), when OAuth is configured. */
  readonly metadata: Record<string, unknown> | undefined;
  /** Where that document is served, as an absolute URL (for WWW-Authenticate). */
  readonly metadataUrl: string | undefined;
  /** The paths serving it: the root form and the form suffixed with the resource's path. */
  readonly metadataPaths: readonly string[];
  /** By endpoint path beside the main one: each endpoint is a resource of its own. */
  readonly #endpoints = new Map<string, ResourceMetadata>();
  /** Told each IdP token a request authenticated with (token exchange's subject); never the front door's own. */
  readonly #onIdpToken: ((principal: Principal, token: string) => void) | undefined;

  /** `endpoints`: the paths of the endpoints served beside the main one. */
  constructor(auth: AuthConfig, listen: Config['listen'], endpoints: readonly string[] = [], own?: OwnIssuer, onIdpToken?: (principal: Principal, token: string) => void) {
    this.#onIdpToken = onIdpToken;
    this.#apiKeys = new ApiKeys(auth.apiKeys);
    this.#scopes = auth.oauth?.scopes ?? [];
    const oauth = auth.oauth;
    if (!oauth) {
      this.#verifier = undefined;
      this.metadata = undefined;
      this.metadataUrl = undefined;
      this.metadataPaths = [];
      this.#own = undefined;
      return;
    }
    // Never derived from a Host header: the configured URL is the resource.
    const resource = oauth.resource ?? listen.publicUrl!;
    const resourceUrl = new URL(resource);
    // An endpoint beside the main one is the same origin with its own path.
    const endpointResources = endpoints.map((path) => [path, new URL(path, resourceUrl.origin).href] as const);
    // A token for any of the gateway's endpoints is a token for the gateway (the same policy applies).
    const audience = oauth.audience === undefined ? [resource, ...endpointResources.map(([, url]) => url)] : ([] as string[]).concat(oauth.audience);
    this.#verifier = new JwtVerifier({
      issuer: oauth.issuer,
      jwksUri: oauth.jwksUri,
      audience,
      algorithms: oauth.algorithms,
      clockToleranceMs: oauth.clockTolerance,
      principalClaim: oauth.principalClaim,
      jwksCooldownMs: oauth.jwksCooldown,
      jwksMaxAgeMs: oauth.jwksMaxAge,
      ...(oauth.typ ? { typ: oauth.typ } : {}),
    });
    this.#own = own && {
      issuer: own.issuer,
      resources: new Map([['', resource], ...endpointResources]),
      verifier: new JwtVerifier({
        issuer: own.issuer,
        keys: own.keys,
        accept: own.accept,
        principalIssuer: oauth.issuer,
        audience: [resource, ...endpointResources.map(([, url]) => url)],
        algorithms: ['ES256'],
        typ: 'at+jwt',
        clockToleranceMs: oauth.clockTolerance,
        principalClaim: 'sub',
        jwksCooldownMs: oauth.jwksCooldown,
        jwksMaxAgeMs: oauth.jwksMaxAge,
      }),
    };
    const suffix = resourceUrl.pathname === '/' ? '' : resourceUrl.pathname.replace(/\/$/, '');
    this.metadataPaths = suffix === '' ? [WELL_KNOWN] : [`${WELL_KNOWN}${suffix}`, WELL_KNOWN];
    this.metadataUrl = new URL(`${WELL_KNOWN}${suffix}`, resourceUrl.origin).href;
    const documentFor = (url: string): Record<string, unknown> => ({
      resource: url,
      authorization_servers: own ? [own.issuer] : (oauth.authorizationServers ?? [oauth.issuer]),
      bearer_methods_supported: ['header'],
      ...(oauth.scopes.length > 0 ? { scopes_supported: oauth.scopes } : {}),
      resource_name: 'Switchyard MCP gateway',
    });
    this.metadata = documentFor(resource);
    for (const [path, url] of endpointResources) {
      const served = `${WELL_KNOWN}${path.replace(/\/$/, '')}`;
      this.#endpoints.set(path, { document: documentFor(url), url: new URL(served, resourceUrl.origin).href, path: served });
    }
  }

  /** The metadata of the endpoint at `path` beside the main one (undefined: none, or no OAuth). */
  metadataOf(path: string): ResourceMetadata | undefined {
    return this.#endpoints.get(path);
  }

  /** The principal behind a request, or an AuthError saying why there is none. */
  async authenticate(credentials: Credentials): Promise<Principal> {
    const now = this.authenticateNow(credentials);
    if (now) return now;
    const token = bearerOf(credentials.authorization)!;
    if (this.#own && issuerOf(token) === this.#own.issuer) return this.#scoped(this.#forEndpoint(await this.#own.verifier.verify(token), credentials.endpoint));
    return this.#fromIdp(this.#scoped(await this.#verifier!.verify(token)), token);
  }

  /** An IdP token that passed every check (scope included) is told on; a refused one never is. */
  #fromIdp(principal: Principal, token: string): Principal {
    this.#onIdpToken?.(principal, token);
    return principal;
  }

  /** A front-door token is good for the one endpoint it was issued for (RFC 8707); the IdP's keep their rule. */
  #forEndpoint(principal: Principal, endpoint: string | undefined): Principal {
    if (!this.#own || principal.claims.iss !== this.#own.issuer) return principal;
    if (principal.claims.aud !== this.#own.resources.get(endpoint ?? '')) throw new AuthError('audience', 'the token was not issued for this resource');
    return principal;
  }

  /** A token verified before, with every check of `authenticate` (endpoint, scope) made again. */
  #known(token: string, endpoint: string | undefined): Principal | undefined {
    const idp = this.#verifier!.known(token);
    if (idp) return this.#fromIdp(this.#scoped(idp), token);
    const known = this.#own?.verifier.known(token);
    return known && this.#scoped(this.#forEndpoint(known, endpoint));
  }

  /**
   * The same decision without a promise when it needs nothing fetched or verified (an API key,
   * a token verified before): undefined means `authenticate` must finish it. Throws AuthError.
   */
  authenticateNow(credentials: Credentials): Principal | undefined {
    if (credentials.queryToken) throw new AuthError('query_token', 'tokens in the query string are not accepted; send an Authorization header');
    // A session's every call presents the token it verified with: found as sent, not parsed again.
    const header = credentials.authorization;
    if (this.#verifier && header !== undefined && header.startsWith(BEARER)) {
      const known = this.#known(header.slice(BEARER.length), credentials.endpoint);
      if (known) return known;
    }
    const bearer = bearerOf(credentials.authorization);
    const presented = bearer ?? credentials.apiKey;
    if (presented === undefined) {
      if (credentials.authorization !== undefined) throw new AuthError('malformed', 'the Authorization header must use the Bearer scheme');
      throw new AuthError('missing', 'an access token is required');
    }
    const useJwt = this.#verifier && bearer !== undefined && (this.#apiKeys.size === 0 || JWT_SHAPE.test(bearer));
    if (!useJwt) return this.#scoped(this.#apiKey(presented));
    return this.#known(presented, credentials.endpoint);
  }

  #scoped(principal: Principal): Principal {
    if (this.#scopes.length === 0) return principal;
    const missing = this.#scopes.filter((scope) => !principal.scopes.includes(scope));
    if (missing.length > 0) throw new AuthError('insufficient_scope', `the token lacks scope ${missing.join(' ')}`);
    return principal;
  }

  #apiKey(presented: string): Principal {
    if (this.#apiKeys.size === 0) throw new AuthError('malformed', 'the token is malformed');
    return this.#apiKeys.verify(presented);
  }

  /** Which refusal a failed authentication gets, and its challenge (RFC 6750 §3, MCP authorization "Error Handling"). */
  refusal(err: AuthError, endpoint?: string): AuthRefusal {
    const metadataUrl = endpoint === undefined ? this.metadataUrl : (this.#endpoints.get(endpoint)?.url ?? this.metadataUrl);
    const params: string[] = [];
    const add = (name: string, value: string): void => void params.push(`${name}="${value.replace(/["\\]/g, '')}"`);
    const scope = this.#scopes.join(' ');
    const detail = err.message;
    switch (err.reason) {
      case 'missing':
        if (metadataUrl) add('resource_metadata', metadataUrl);
        if (scope) add('scope', scope);
        return { kind: 'tokenRequired', detail, challenge: challenge(params) };
      case 'query_token':
        add('error', 'invalid_request');
        add('error_description', err.message);
        if (metadataUrl) add('resource_metadata', metadataUrl);
        return { kind: 'tokenInQuery', detail, challenge: challenge(params) };
      case 'insufficient_scope':
        add('error', 'insufficient_scope');
        add('scope', scope);
        if (metadataUrl) add('resource_metadata', metadataUrl);
        add('error_description', err.message);
        return { kind: 'insufficientScope', detail, challenge: challenge(params) };
      case 'jwks_unavailable':
        return { kind: 'keysUnavailable', detail };
      default:
        add('error', 'invalid_token');
        add('error_description', err.message);
        if (metadataUrl) add('resource_metadata', metadataUrl);
        return { kind: 'invalidToken', detail, challenge: challenge(params) };
    }
  }
}

/** The unverified `iss` of a token, to choose its verifier (the chosen one checks everything). */
function issuerOf(token: string): unknown {
  try {
    return decodeJwt(token).iss;
  } catch {
    return undefined;
  }
}

function challenge(params: string[]): string {
  return params.length === 0 ? 'Bearer' : `Bearer ${params.join(', ')}`;
}

/** The credential of an `Authorization: Bearer <token>` header (the scheme is case-insensitive). */
function bearerOf(header: string | undefined): string | undefined {
  const match = header === undefined ? null : /^Bearer[ ]+([A-Za-z0-9\-._~+/]+=*)\s*$/i.exec(header);
  return match ? match[1] : undefined;
}
