// Token exchange at the test IdP (test/helpers/oidc.ts): the RFC 8693 grant, and a grant that
// behaves like Entra ID's on-behalf-of (jwt-bearer with requested_token_use=on_behalf_of and the
// scope `<audience>/.default`; its form fields checked exactly). Both take a subject token this
// IdP issued for one of `subjectAudiences`, and issue a JWT access token for a known target.
import { createLocalJWKSet, jwtVerify, type JWK } from 'jose';

export const TOKEN_EXCHANGE_GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange';
export const JWT_BEARER_GRANT = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';

/** The gateway's client at the test IdP for token exchange (auth.oauth.login), and its secret. */
export const EXCHANGE_LOGIN = { clientId: 'switchyard', clientSecret: 'switchyard-secret-of-the-login' };

/** The IdP's clients of a token exchange test: a host signing users in, and the gateway exchanging their tokens. */
export function exchangeClients(): Record<string, unknown>[] {
  return [
    { client_id: 'host', token_endpoint_auth_method: 'none', grant_types: ['authorization_code'], redirect_uris: ['http://127.0.0.1/callback'] },
    { client_id: EXCHANGE_LOGIN.clientId, client_secret: EXCHANGE_LOGIN.clientSecret, token_endpoint_auth_method: 'client_secret_basic', grant_types: [TOKEN_EXCHANGE_GRANT], response_types: [], redirect_uris: [] },
  ];
}

export interface ExchangeOptions {
  /** Audiences a subject token must be for (the gateway's resource). */
  subjectAudiences: string[];
  /** What may be asked for, by audience: its scopes (space-separated), its token lifetime, the resource naming it too. */
  targets: Record<string, { scope: string; ttlSeconds?: number; resource?: string }>;
}

export interface ExchangeRecord {
  grant: 'rfc8693' | 'entra-obo';
  clientId: string;
  sub: string;
  audience: string;
}

// The slice of oidc-provider 8 the grants use.
interface GrantContext {
  oidc: { params: Record<string, unknown>; body?: Record<string, unknown>; client: { clientId: string } };
  body: unknown;
}
interface ProviderSlice {
  registerGrantType(name: string, handler: (ctx: GrantContext, next: () => Promise<void>) => Promise<void>, params: string[], dupes?: string[]): void;
  AccessToken: new (init: Record<string, unknown>) => { save(): Promise<string> };
  ResourceServer: new (identifier: string, info: Record<string, unknown>) => object;
}
type OidcError = new (error: string, description?: string) => Error;

export interface ExchangeSetup {
  issuer: string;
  /** The IdP's signing key (private JWK): its public half verifies subject tokens. */
  key: Record<string, unknown>;
  options: ExchangeOptions;
  /** Claims to add to an issued token (read by the provider's extraTokenClaims). */
  claims: WeakMap<object, Record<string, unknown>>;
  records: ExchangeRecord[];
  /** When each account's grants were revoked (ms): subject tokens issued before are refused (invalid_grant). */
  revokedAt: ReadonlyMap<string, number>;
  errors: Record<string, unknown>;
}

export function registerExchangeGrants(provider: unknown, setup: ExchangeSetup): void {
  const oidc = provider as ProviderSlice;
  const fail = setup.errors.CustomOIDCProviderError as OidcError;
  const { d: _d, p: _p, q: _q, dp: _dp, dq: _dq, qi: _qi, ...publicKey } = setup.key;
  const keys = createLocalJWKSet({ keys: [publicKey as JWK] });

  /** The subject token's account, or invalid_grant. */
  const subjectOf = async (token: unknown): Promise<string> => {
    if (typeof token !== 'string') throw new fail('invalid_request', 'the subject token is missing');
    let payload;
    try {
      ({ payload } = await jwtVerify(token, keys, { issuer: setup.issuer, audience: setup.options.subjectAudiences }));
    } catch (err) {
      throw new fail('invalid_grant', `the subject token is not valid here: ${err instanceof Error ? err.message : String(err)}`);
    }
    const sub = String(payload.sub ?? '');
    const revoked = setup.revokedAt.get(sub);
    if (revoked !== undefined && (payload.iat ?? 0) * 1_000 <= revoked) throw new fail('invalid_grant', "the user's session has been revoked");
    return sub;
  };

  const issue = async (ctx: GrantContext, sub: string, audience: string, scope: string, claims: Record<string, unknown>, grant: ExchangeRecord['grant']): Promise<void> => {
    const target = setup.options.targets[audience]!;
    const ttl = target.ttlSeconds ?? 600;
    const token = new oidc.AccessToken({
      accountId: sub,
      client: ctx.oidc.client,
      scope: scope || undefined,
      gty: grant,
      resourceServer: new oidc.ResourceServer(audience, { scope: target.scope, audience, accessTokenTTL: ttl, accessTokenFormat: 'jwt', jwt: { sign: { alg: 'RS256' } } }),
      expiresIn: ttl,
    });
    setup.claims.set(token, claims);
    const accessToken = await token.save();
    setup.records.push({ grant, clientId: ctx.oidc.client.clientId, sub, audience });
    ctx.body = { access_token: accessToken, issued_token_type: ACCESS_TOKEN_TYPE, token_type: 'Bearer', expires_in: ttl, ...(scope ? { scope } : {}) };
  };

  const allowed = (requested: string[], audience: string): string => {
    const offered = new Set(setup.options.targets[audience]!.scope.split(' ').filter(Boolean));
    const unknown = requested.filter((scope) => !offered.has(scope));
    if (unknown.length > 0) throw new fail('invalid_scope', `scope ${unknown.join(' ')} is not offered by ${audience}`);
    return requested.join(' ');
  };

  // RFC 8693 §2.1: subject_token (+ type), audience and/or resource, scope; act names the client (§4.1).
  oidc.registerGrantType(
    TOKEN_EXCHANGE_GRANT,
    async (ctx, next) => {
      const params = ctx.oidc.params;
      if (params.subject_token_type !== ACCESS_TOKEN_TYPE) throw new fail('invalid_request', 'subject_token_type must be an access token');
      if (params.requested_token_type !== undefined && params.requested_token_type !== ACCESS_TOKEN_TYPE) throw new fail('invalid_request', 'only access tokens are issued');
      if (params.actor_token !== undefined) throw new fail('invalid_request', 'actor tokens are not taken');
      const byResource = Object.entries(setup.options.targets).find(([, target]) => target.resource !== undefined && target.resource === params.resource)?.[0];
      const audience = typeof params.audience === 'string' ? params.audience : byResource;
      if (audience === undefined || !setup.options.targets[audience]) throw new fail('invalid_target', 'unknown audience');
      if (params.resource !== undefined && setup.options.targets[audience]!.resource !== params.resource) throw new fail('invalid_target', 'the resource is not the audience\'s');
      const sub = await subjectOf(params.subject_token);
      const scope = allowed(typeof params.scope === 'string' ? params.scope.split(' ').filter(Boolean) : [], audience);
      await issue(ctx, sub, audience, scope, { act: { sub: ctx.oidc.client.clientId } }, 'rfc8693');
      await next();
    },
    ['subject_token', 'subject_token_type', 'audience', 'resource', 'scope', 'requested_token_type', 'actor_token', 'actor_token_type'],
  );

  // Entra's on-behalf-of: exactly these fields, the client's secret in the form, scope `<audience>/.default`.
  const OBO_FIELDS = ['assertion', 'client_id', 'client_secret', 'grant_type', 'requested_token_use', 'scope'].join(',');
  oidc.registerGrantType(
    JWT_BEARER_GRANT,
    async (ctx, next) => {
      const fields = Object.keys(ctx.oidc.body ?? {}).sort().join(',');
      if (fields !== OBO_FIELDS) throw new fail('invalid_request', `AADSTS900144: the request body must hold exactly ${OBO_FIELDS}; it held ${fields}`);
      const params = ctx.oidc.params;
      if (params.requested_token_use !== 'on_behalf_of') throw new fail('invalid_request', 'requested_token_use must be on_behalf_of');
      const scope = typeof params.scope === 'string' ? params.scope : '';
      const audience = scope.endsWith('/.default') ? scope.slice(0, -'/.default'.length) : undefined;
      if (scope.includes(' ') || audience === undefined || !setup.options.targets[audience]) throw new fail('invalid_scope', `AADSTS70011: the scope ${scope} is not valid`);
      const sub = await subjectOf(params.assertion);
      await issue(ctx, sub, audience, setup.options.targets[audience]!.scope, { azp: ctx.oidc.client.clientId }, 'entra-obo');
      await next();
    },
    ['assertion', 'requested_token_use', 'scope'],
  );
}
