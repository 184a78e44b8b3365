// A real OAuth 2.1 / OpenID authorization server for tests (oidc-provider 8) on 127.0.0.1: JWT
// access tokens per RFC 8707 resource, refresh, RFC 7009 revocation, RFC 7591 registration, a login form.
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parse as parseQuery } from 'node:querystring';
import { exportJWK, generateKeyPair } from 'jose';
import { registerExchangeGrants, type ExchangeOptions, type ExchangeRecord } from './oidc-exchange.js';

export interface IdpOptions {
  /** Pre-registered clients (oidc-provider ClientMetadata: client_id, client_secret?, redirect_uris, grant_types, token_endpoint_auth_method ...). */
  clients?: Array<Record<string, unknown>>;
  /**
   * Resource indicators (RFC 8707) it issues JWT access tokens for: audience = the resource URL.
   * A request for any other resource fails with invalid_target. A code obtained without a
   * resource gets an opaque access token that is only good at the userinfo endpoint (/me), and
   * an authorization request without a resource and without `openid` is denied (nothing granted).
   * Read on every request, so a test may add one after start (an upstream that needs the issuer first).
   */
  resources?: Record<string, { scope: string; accessTokenTtlSeconds?: number }>;
  /** Dynamic client registration (RFC 7591) open to anyone (default true). */
  registration?: boolean;
  /** Access token lifetime when the resource does not say (default 600 s). */
  accessTokenTtlSeconds?: number;
  /**
   * Behave like Entra ID towards clients it does not know: no registration endpoint, no Client ID
   * Metadata Documents, any authorization or token request carrying `resource` refused
   * (AADSTS9010010), and the granted scopes' claims (groups, email) in the ID token itself.
   */
  entra?: boolean;
  /** Claims of each account besides sub, name and email (e.g. `{ alice: { groups: ['eng'] } }`), under the `groups` scope. */
  accounts?: Record<string, Record<string, unknown>>;
  /**
   * Token exchange: the RFC 8693 grant and an Entra-like on-behalf-of grant (jwt-bearer) are
   * registered (test/helpers/oidc-exchange.ts). Clients need the grant types in grant_types.
   */
  exchange?: ExchangeOptions;
  /**
   * The resource (a key of `resources`) each client's tokens are for when it names none, at
   * authorization and at every refresh: as Entra decides a token's audience by the scopes asked,
   * so that a login client without `resource` still gets a JWT access token (token exchange's subject).
   */
  defaultResources?: Record<string, string>;
}

export interface TestIdp {
  /** e.g. http://127.0.0.1:PORT (no trailing slash). */
  issuer: string;
  /** Every request the server received: method, path (without the query), headers (lower-case) — for assertions. */
  requests: Array<{ method: string; path: string; headers: Record<string, string | string[] | undefined> }>;
  /** An access token (JWT, signed by this server's own keys, aud = resource) issued by the provider itself for `sub`, without a browser. Any resource is allowed here. */
  issueAccessToken(options: { sub: string; clientId: string; resource: string; scope?: string; ttlSeconds?: number }): Promise<string>;
  /** Revokes every refresh token / grant of `sub` (so a refresh fails with invalid_grant). */
  revokeGrants(sub: string): Promise<void>;
  /** How many token revocations (RFC 7009 /token/revocation) it answered with 200. */
  revocations(): number;
  /** How many requests it refused for carrying `resource` (entra mode). */
  refusedResources(): number;
  /** Every token exchange it answered (either grant), in order, with what it issued for whom. */
  exchanges: ExchangeRecord[];
  /** Every refresh token it issued (opaque values), for checks that none travels further. */
  refreshTokens: string[];
  close(): Promise<void>;
}

// The slice of oidc-provider 8 used here; the package ships no type declarations.
interface InteractionDetails {
  uid: string;
  prompt: { name: string; details: { missingOIDCScope?: string[]; missingOIDCClaims?: string[]; missingResourceScopes?: Record<string, string[]> } };
  params: Record<string, unknown>;
  session?: { accountId?: string };
  grantId?: string;
}
interface GrantModel {
  addOIDCScope(scope: string): void;
  addOIDCClaims(claims: string[]): void;
  addResourceScope(resource: string, scope: string): void;
  save(): Promise<string>;
}
interface ResourceServerInfo {
  scope: string;
  audience: string;
  accessTokenTTL: number;
  accessTokenFormat: 'jwt';
  jwt: { sign: { alg: 'RS256' } };
}
interface OidcProvider {
  callback(): (req: IncomingMessage, res: ServerResponse) => void;
  interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<InteractionDetails>;
  interactionFinished(req: IncomingMessage, res: ServerResponse, result: Record<string, unknown>, options?: { mergeWithLastSubmission?: boolean }): Promise<void>;
  Client: { find(clientId: string): Promise<object | undefined> };
  Grant: { new (init: { accountId: string; clientId: string }): GrantModel; find(id: string): Promise<GrantModel | undefined> };
  AccessToken: new (init: Record<string, unknown>) => { save(): Promise<string> };
  ResourceServer: new (identifier: string, info: ResourceServerInfo) => object;
  on(event: string, listener: (...args: unknown[]) => void): unknown;
  use(middleware: (ctx: KoaContext, next: () => Promise<void>) => Promise<void>): void;
}
interface KoaContext {
  path: string;
  query: Record<string, unknown>;
  status: number;
  body: unknown;
  type: string;
  oidc?: { params?: Record<string, unknown> };
}
interface OidcProviderModule {
  default: new (issuer: string, configuration: Record<string, unknown>) => OidcProvider;
  errors: { InvalidTarget: new (description?: string) => Error } & Record<string, unknown>;
}
interface ClientModel {
  grantTypeAllowed(type: string): boolean;
}

// A non-literal specifier: the import stays untyped and is narrowed by the interfaces above.
const OIDC_PROVIDER: string = 'oidc-provider';
const DEFAULT_TTL_SECONDS = 600;
const DAY_SECONDS = 24 * 60 * 60;

export async function startIdp(options: IdpOptions = {}): Promise<TestIdp> {
  const { default: Provider, errors } = (await import(OIDC_PROVIDER)) as OidcProviderModule;
  const server = createServer();
  await listen(server);
  try {
    const port = (server.address() as AddressInfo).port;
    const issuer = `http://127.0.0.1:${port}`;
    const store = new ModelStore();
    const defaultTtl = options.accessTokenTtlSeconds ?? DEFAULT_TTL_SECONDS;
    const resourceInfo = (resource: string, scope?: string): ResourceServerInfo | undefined => {
      const configured = options.resources?.[resource];
      if (!configured && scope === undefined) return undefined;
      return {
        scope: scope ?? configured?.scope ?? '',
        audience: resource,
        accessTokenTTL: configured?.accessTokenTtlSeconds ?? defaultTtl,
        accessTokenFormat: 'jwt',
        jwt: { sign: { alg: 'RS256' } },
      };
    };
    const key = await signingKey();
    // Claims a token exchange adds to the one token it issues (act, azp).
    const exchangeClaims = new WeakMap<object, Record<string, unknown>>();
    const provider = new Provider(issuer, {
      clients: options.clients ?? [],
      jwks: { keys: [key] },
      adapter: (model: string) => store.adapter(model),
      // Per-port names: servers on 127.0.0.1 share cookies across ports.
      cookies: {
        keys: [randomBytes(32).toString('hex')],
        names: { session: `_session_${port}`, interaction: `_interaction_${port}`, resume: `_interaction_resume_${port}` },
        long: { httpOnly: true, signed: true, sameSite: 'lax' },
        short: { httpOnly: true, signed: true, sameSite: 'lax' },
      },
      claims: { openid: ['sub'], profile: ['name'], email: ['email'], groups: ['groups'] },
      findAccount: (_ctx: unknown, sub: string) => ({ accountId: sub, claims: () => ({ sub, name: sub, email: `${sub}@example.test`, ...options.accounts?.[sub] }) }),
      // Entra puts the granted claims in the ID token; oidc-provider's default keeps them for userinfo.
      conformIdTokenClaims: !options.entra,
      // An account's own claims (groups) ride in its JWT access tokens too, as teams[].match reads them.
      extraTokenClaims: (_ctx: unknown, token: { accountId?: string }) => ({ ...((token.accountId ? options.accounts?.[token.accountId] : undefined) ?? {}), ...exchangeClaims.get(token) }),
      interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
      features: {
        devInteractions: { enabled: false },
        clientCredentials: { enabled: true },
        revocation: { enabled: true },
        registration: { enabled: options.entra ? false : (options.registration ?? true) },
        resourceIndicators: {
          enabled: true,
          defaultResource: (_ctx: unknown, client: { clientId: string }, oneOf?: string[]) => oneOf ?? options.defaultResources?.[client.clientId],
          useGrantedResource: (_ctx: unknown, model: { clientId?: string }) => model.clientId !== undefined && options.defaultResources?.[model.clientId] !== undefined,
          getResourceServerInfo: (_ctx: unknown, resource: string) => {
            const info = resourceInfo(resource);
            if (!info) throw new errors.InvalidTarget(`unknown resource ${resource}`);
            return info;
          },
        },
      },
      // Stricter than the default (public clients only): every authorization request needs S256.
      pkce: { methods: ['S256'], required: () => true },
      // The default also asks for offline_access; a gateway acting for users should not need it.
      issueRefreshToken: (_ctx: unknown, client: ClientModel) => client.grantTypeAllowed('refresh_token'),
      // Tokens outlive the browser session, so a refresh works after the user's tab is gone.
      expiresWithSession: () => false,
      // Every refresh rotates; reusing a spent refresh token revokes the grant (reuse detection).
      rotateRefreshToken: true,
      clientBasedCORS: () => true,
      ttl: {
        AccessToken: (_ctx: unknown, token: { resourceServer?: { accessTokenTTL?: number } }) => token.resourceServer?.accessTokenTTL ?? defaultTtl,
        ClientCredentials: (_ctx: unknown, token: { resourceServer?: { accessTokenTTL?: number } }) => token.resourceServer?.accessTokenTTL ?? defaultTtl,
        AuthorizationCode: 60,
        IdToken: 3600,
        Interaction: 600,
        RefreshToken: DAY_SECONDS,
        Session: DAY_SECONDS,
        Grant: DAY_SECONDS,
      },
      renderError: (ctx: { type: string; body: string }, out: Record<string, unknown>) => {
        ctx.type = 'html';
        ctx.body = page(port, 'Error', `<pre id="error">${escapeHtml(JSON.stringify(out))}</pre>`);
      },
    });
    provider.on('server_error', (_ctx: unknown, err: unknown) => console.error(`test IdP ${port}:`, err));
    const exchanges: ExchangeRecord[] = [];
    if (options.exchange) registerExchangeGrants(provider, { issuer, key, options: options.exchange, claims: exchangeClaims, records: exchanges, revokedAt: store.revokedAt, errors });
    const refusedResources = { count: 0 };
    if (options.entra) {
      // Entra's AADSTS9010010: a `resource` beside the v2 endpoint's scopes is refused.
      const refuse = (ctx: KoaContext): void => {
        refusedResources.count++;
        ctx.status = 400;
        ctx.type = 'json';
        ctx.body = { error: 'invalid_request', error_description: 'AADSTS9010010: The resource parameter provided in the request does not match with the requested scopes.' };
      };
      provider.use(async (ctx, next) => {
        if (ctx.path === '/auth' && ctx.query.resource !== undefined) return refuse(ctx);
        await next();
        if (ctx.path === '/token' && ctx.oidc?.params?.resource !== undefined) refuse(ctx);
      });
    }

    const requests: TestIdp['requests'] = [];
    const revocations = { count: 0 };
    const providerCallback = provider.callback();
    server.on('request', function testIdp(req: IncomingMessage, res: ServerResponse) {
      const path = new URL(req.url ?? '/', issuer).pathname;
      requests.push({ method: req.method ?? 'GET', path, headers: { ...req.headers } });
      if (path === '/token/revocation') {
        res.once('finish', () => {
          if (res.statusCode === 200) revocations.count++;
        });
      }
      if (path.startsWith('/interaction/')) {
        interaction(provider, port, path, req, res).catch((err: unknown) => {
          if (!res.headersSent) res.writeHead(400, { 'content-type': 'text/html' });
          res.end(page(port, 'Error', `<pre id="error">${escapeHtml(String(err))}</pre>`));
        });
        return;
      }
      providerCallback(req, res);
    });

    return {
      issuer,
      requests,
      async issueAccessToken({ sub, clientId, resource, scope, ttlSeconds }) {
        const client = await provider.Client.find(clientId);
        if (!client) throw new Error(`test IdP: no client ${clientId}`);
        const info = resourceInfo(resource, scope ?? options.resources?.[resource]?.scope ?? '')!;
        const token = new provider.AccessToken({
          accountId: sub,
          client,
          scope: info.scope || undefined,
          gty: 'authorization_code',
          resourceServer: new provider.ResourceServer(resource, info),
          expiresIn: ttlSeconds ?? info.accessTokenTTL,
        });
        // For the jwt format save() stores nothing and returns the signed JWT itself.
        return token.save();
      },
      async revokeGrants(sub) {
        store.revokeAccount(sub);
      },
      revocations: () => revocations.count,
      refusedResources: () => refusedResources.count,
      exchanges,
      refreshTokens: store.refreshTokens,
      close: () => closeServer(server),
    };
  } catch (err) {
    await closeServer(server);
    throw err;
  }
}

/** The login form (prompt login) or an automatic consent to everything asked (prompt consent). */
async function interaction(provider: OidcProvider, port: number, path: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const match = /^\/interaction\/([^/]+)(\/login)?$/.exec(path);
  if (!match) throw new Error(`no interaction route ${path}`);
  const details = await provider.interactionDetails(req, res);
  if (details.uid !== match[1]) throw new Error('interaction cookie does not match the page');
  if (req.method === 'POST' && match[2]) {
    const username = parseQuery(await readBody(req)).username;
    if (details.prompt.name !== 'login' || typeof username !== 'string' || !username) throw new Error('login needs a username');
    await provider.interactionFinished(req, res, { login: { accountId: username } }, { mergeWithLastSubmission: false });
    return;
  }
  if (req.method !== 'GET' || match[2]) throw new Error(`${req.method} ${path} is not an interaction route`);
  if (details.prompt.name === 'login') {
    const form =
      `<form method="post" action="/interaction/${escapeHtml(details.uid)}/login">` +
      `<label for="username">Username</label> <input name="username" id="username" autofocus> ` +
      `<button id="submit" type="submit">Sign in</button></form>`;
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
    res.end(page(port, 'Sign in', form));
    return;
  }
  if (details.prompt.name !== 'consent') throw new Error(`unsupported prompt ${details.prompt.name}`);
  await provider.interactionFinished(req, res, { consent: { grantId: await grantAll(provider, details) } }, { mergeWithLastSubmission: true });
}

/** Grants what the consent prompt found missing, the way oidc-provider's own example does. */
async function grantAll(provider: OidcProvider, details: InteractionDetails): Promise<string> {
  const accountId = details.session?.accountId;
  const clientId = details.params.client_id;
  if (!accountId || typeof clientId !== 'string') throw new Error('consent without a signed-in user or client');
  const grant = (details.grantId ? await provider.Grant.find(details.grantId) : undefined) ?? new provider.Grant({ accountId, clientId });
  const { missingOIDCScope, missingOIDCClaims, missingResourceScopes } = details.prompt.details;
  if (missingOIDCScope) grant.addOIDCScope(missingOIDCScope.join(' '));
  if (missingOIDCClaims) grant.addOIDCClaims(missingOIDCClaims);
  for (const [resource, scopes] of Object.entries(missingResourceScopes ?? {})) grant.addResourceScope(resource, scopes.join(' '));
  return grant.save();
}

interface Stored {
  payload: Record<string, unknown>;
  expiresAt: number;
}

/** The provider's storage (one per server, so servers share nothing): models by key, tokens by grant. */
class ModelStore {
  private readonly entries = new Map<string, Stored>();
  private readonly byGrant = new Map<string, Set<string>>();
  private readonly bySessionUid = new Map<string, string>();
  private readonly byUserCode = new Map<string, string>();
  /** When each account's grants were last revoked (ms): subject tokens issued before are refused by the exchanges. */
  readonly revokedAt = new Map<string, number>();
  /** Every refresh token saved, by value. */
  readonly refreshTokens: string[] = [];

  adapter(model: string) {
    const key = (id: string): string => `${model}:${id}`;
    return {
      upsert: async (id: string, payload: Record<string, unknown>, expiresIn?: number) => {
        this.entries.set(key(id), { payload, expiresAt: expiresIn ? Date.now() + expiresIn * 1000 : Infinity });
        if (typeof payload.grantId === 'string' && model !== 'Grant') {
          const keys = this.byGrant.get(payload.grantId) ?? new Set<string>();
          keys.add(key(id));
          this.byGrant.set(payload.grantId, keys);
        }
        if (model === 'Session' && typeof payload.uid === 'string') this.bySessionUid.set(payload.uid, id);
        if (typeof payload.userCode === 'string') this.byUserCode.set(payload.userCode, id);
        // An opaque token's value is its id.
        if (model === 'RefreshToken') this.refreshTokens.push(id);
      },
      find: async (id: string) => this.get(key(id)),
      findByUid: async (uid: string) => {
        const id = this.bySessionUid.get(uid);
        return id === undefined ? undefined : this.get(key(id));
      },
      findByUserCode: async (userCode: string) => {
        const id = this.byUserCode.get(userCode);
        return id === undefined ? undefined : this.get(key(id));
      },
      consume: async (id: string) => {
        const stored = this.get(key(id));
        if (stored) stored.consumed = Math.floor(Date.now() / 1000);
      },
      destroy: async (id: string) => {
        this.entries.delete(key(id));
      },
      revokeByGrantId: async (grantId: string) => this.revokeGrant(grantId, false),
    };
  }

  /** Drops every grant of the account and everything issued under them. */
  revokeAccount(accountId: string): void {
    this.revokedAt.set(accountId, Date.now());
    for (const [key, { payload }] of [...this.entries]) {
      if (key.startsWith('Grant:') && payload.accountId === accountId) this.revokeGrant(key.slice('Grant:'.length), true);
      else if (payload.accountId === accountId && /^(RefreshToken|AuthorizationCode|AccessToken):/.test(key)) this.entries.delete(key);
    }
  }

  private revokeGrant(grantId: string, withGrant: boolean): void {
    for (const key of this.byGrant.get(grantId) ?? []) this.entries.delete(key);
    this.byGrant.delete(grantId);
    if (withGrant) this.entries.delete(`Grant:${grantId}`);
  }

  private get(key: string): Record<string, unknown> | undefined {
    const stored = this.entries.get(key);
    if (!stored) return undefined;
    if (stored.expiresAt <= Date.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return stored.payload;
  }
}

async function signingKey(): Promise<Record<string, unknown>> {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  return { ...(await exportJWK(privateKey)), kid: `test-${randomBytes(6).toString('hex')}`, alg: 'RS256', use: 'sig' };
}

function page(port: number, title: string, body: string): string {
  return `<!doctype html><html><head><meta charset="utf-8"><title>${title} — test IdP ${port}</title></head>` + `<body><h1>${title} at test IdP on port ${port}</h1>${body}</body></html>`;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function listen(server: Server): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
}

function closeServer(server: Server): Promise<void> {
  if (!server.listening) return Promise.resolve();
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
