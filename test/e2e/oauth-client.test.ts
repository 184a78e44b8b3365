// The gateway's OAuth client steps towards an upstream: discovery order, registration choice and the
// authorization request against small metadata servers, then the whole flow against a real oidc-provider.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { decodeJwt, exportJWK, generateKeyPair } from 'jose';
import * as oauth from 'oauth4webapi';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  AuthorizationDeniedError, clientMetadataDocument, DiscoveryError, discoverAuthorization, finishAuthorization,
  refreshTokens, RefreshRejectedError, registerClient, RegistrationError, revokeToken, startAuthorization,
  type AuthorizationServer, type RegisteredClient, type UpstreamAuthorization,
} from '../../src/credentials/oauth-client.js';

interface Route { status?: number; headers?: Record<string, string>; json?: unknown }
type Handler = (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;
interface TestServer { base: string; hits: string[]; bodies: string[]; close(): Promise<void> }

const REDIRECT_URI = 'https://gateway.example.test/oauth/callback';

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/** An http server on 127.0.0.1 port 0; `handler` is built once the base URL is known. */
async function listen(handlerFor: (base: string, bodies: string[]) => Handler): Promise<TestServer> {
  const hits: string[] = [];
  const bodies: string[] = [];
  let handler: Handler = (_req, res) => void res.writeHead(503).end();
  const server = createServer((req, res) => {
    hits.push(`${req.method} ${new URL(req.url ?? '/', 'http://x').pathname}`);
    Promise.resolve(handler(req, res)).catch(() => res.headersSent ? res.destroy() : res.writeHead(500).end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  handler = handlerFor(base, bodies);
  return {
    base, hits, bodies,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}

/** A server answering fixed JSON routes by path, 404 elsewhere. */
function routes(table: (base: string) => Record<string, Route>): (base: string, bodies: string[]) => Handler {
  return (base, bodies) => {
    const byPath = table(base);
    return async (req, res) => {
      bodies.push(await readBody(req));
      const route = byPath[new URL(req.url ?? '/', base).pathname];
      if (!route) return void res.writeHead(404).end();
      res.writeHead(route.status ?? 200, { ...(route.json !== undefined && { 'content-type': 'application/json' }), ...route.headers });
      res.end(route.json === undefined ? undefined : JSON.stringify(route.json));
    };
  };
}

function asMetadata(issuer: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { issuer, authorization_endpoint: `${issuer}/authorize`, token_endpoint: `${issuer}/token`, code_challenge_methods_supported: ['S256'], ...extra };
}

const unauthorized = (challenge: string): Route => ({ status: 401, headers: { 'www-authenticate': challenge } });

describe('the gateway as an OAuth client (small metadata servers)', () => {
  const servers: TestServer[] = [];
  const serve = async (handlerFor: (base: string, bodies: string[]) => Handler): Promise<TestServer> => {
    const server = await listen(handlerFor);
    servers.push(server);
    return server;
  };
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.close()));
  });

  it('follows the 401 challenge to resource_metadata and prefers its scope over scopes_supported', async () => {
    const s = await serve(routes((base) => ({
      '/mcp': unauthorized(`Bearer resource_metadata="${base}/meta/prm", scope="files:read"`),
      '/meta/prm': { json: { resource: `${base}/mcp`, authorization_servers: [base], scopes_supported: ['files:read', 'files:write'] } },
      '/.well-known/oauth-authorization-server': { json: asMetadata(base) },
    })));
    const auth = await discoverAuthorization(`${s.base}/mcp#frag`, {});
    expect(auth.resource).toBe(`${s.base}/mcp`);
    expect(auth.scopes).toEqual(['files:read']);
    expect(auth.server.issuer).toBe(s.base);
    expect(s.hits).toEqual(['GET /mcp', 'GET /meta/prm', 'GET /.well-known/oauth-authorization-server']);
  });

  it('without resource_metadata, reads the path-inserted well-known metadata and its scopes_supported', async () => {
    const s = await serve(routes((base) => ({
      '/mcp': unauthorized('Bearer realm="upstream"'),
      '/.well-known/oauth-protected-resource/mcp': { json: { resource: `${base}/mcp`, authorization_servers: [base], scopes_supported: ['a', 'b'] } },
      '/.well-known/oauth-protected-resource': { json: { resource: base, authorization_servers: ['https://wrong.example'] } },
      '/.well-known/oauth-authorization-server': { json: asMetadata(base) },
    })));
    const auth = await discoverAuthorization(`${s.base}/mcp`, {});
    expect(auth.scopes).toEqual(['a', 'b']);
    expect(s.hits).toEqual(['GET /mcp', 'GET /.well-known/oauth-protected-resource/mcp', 'GET /.well-known/oauth-authorization-server']);
  });

  it('falls back to the root well-known metadata, whose resource may be the origin', async () => {
    const s = await serve(routes((base) => ({
      '/.well-known/oauth-protected-resource': { json: { resource: base, authorization_servers: [base] } },
      '/.well-known/oauth-authorization-server': { json: asMetadata(base) },
    })));
    const auth = await discoverAuthorization(`${s.base}/public/mcp`, {});
    expect(auth.resource).toBe(s.base);
    expect(auth.scopes).toEqual([]);
    expect(s.hits.slice(0, 3)).toEqual(['GET /public/mcp', 'GET /.well-known/oauth-protected-resource/public/mcp', 'GET /.well-known/oauth-protected-resource']);
  });

  it('tries RFC 8414 path insertion, then OpenID path insertion, then OpenID path appending for an issuer with a path', async () => {
    const s = await serve(routes((base) => ({
      '/.well-known/oauth-protected-resource/mcp': { json: { resource: `${base}/mcp`, authorization_servers: [`${base}/tenant1`] } },
      '/tenant1/.well-known/openid-configuration': { json: asMetadata(`${base}/tenant1`) },
    })));
    const auth = await discoverAuthorization(`${s.base}/mcp`, {});
    expect(auth.server.issuer).toBe(`${s.base}/tenant1`);
    expect(s.hits.slice(2)).toEqual([
      'GET /.well-known/oauth-authorization-server/tenant1',
      'GET /.well-known/openid-configuration/tenant1',
      'GET /tenant1/.well-known/openid-configuration',
    ]);
  });

  it('falls back from RFC 8414 to OpenID discovery for an issuer without a path', async () => {
    const s = await serve(routes((base) => ({
      '/.well-known/oauth-protected-resource/mcp': { json: { resource: `${base}/mcp`, authorization_servers: [base] } },
      '/.well-known/openid-configuration': { json: asMetadata(base) },
    })));
    await discoverAuthorization(`${s.base}/mcp`, {});
    expect(s.hits.slice(2)).toEqual(['GET /.well-known/oauth-authorization-server', 'GET /.well-known/openid-configuration']);
  });

  it.each([
    ['another path', (base: string) => `${base}/other`],
    ['a path that is only a string prefix', (base: string) => `${base}/mc`],
    ['another origin', () => 'https://elsewhere.example/mcp'],
  ])('refuses protected resource metadata for %s (RFC 9728 §3.3)', async (_label, resourceOf) => {
    const s = await serve(routes((base) => ({
      '/mcp': unauthorized(`Bearer resource_metadata="${base}/prm"`),
      '/prm': { json: { resource: resourceOf(base), authorization_servers: [base] } },
      '/.well-known/oauth-authorization-server': { json: asMetadata(base) },
    })));
    await expect(discoverAuthorization(`${s.base}/mcp`, {})).rejects.toThrow(/RFC 9728 §3\.3/);
    expect(s.hits).not.toContain('GET /.well-known/oauth-authorization-server');
  });

  it('asks for the configured scopes over the challenge and the metadata', async () => {
    const s = await serve(routes((base) => ({
      '/mcp': unauthorized(`Bearer resource_metadata="${base}/prm", scope="x"`),
      '/prm': { json: { resource: `${base}/mcp`, authorization_servers: [base], scopes_supported: ['y'] } },
      '/.well-known/oauth-authorization-server': { json: asMetadata(base) },
    })));
    expect((await discoverAuthorization(`${s.base}/mcp`, { scopes: ['configured'] })).scopes).toEqual(['configured']);
  });

  it('names what is missing in one line, without the URL query, when nothing is published', async () => {
    const s = await serve(routes(() => ({})));
    const err = await discoverAuthorization(`${s.base}/mcp?key=s3cr3t-value`, {}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DiscoveryError);
    expect((err as Error).message).toMatch(/no protected resource metadata/);
    expect((err as Error).message).not.toMatch(/s3cr3t|\n/);
  });

  it('refuses authorization server metadata whose issuer is not the one listed', async () => {
    const s = await serve(routes((base) => ({
      '/.well-known/oauth-protected-resource/mcp': { json: { resource: `${base}/mcp`, authorization_servers: [base] } },
      '/.well-known/oauth-authorization-server': { json: asMetadata('https://impostor.example') },
      '/.well-known/openid-configuration': { json: asMetadata('https://impostor.example') },
    })));
    await expect(discoverAuthorization(`${s.base}/mcp`, {})).rejects.toThrow(DiscoveryError);
  });

  const server = (extra: Record<string, unknown> = {}): AuthorizationServer => asMetadata('https://as.example', extra) as unknown as AuthorizationServer;
  const register = { redirectUri: REDIRECT_URI, clientName: 'Switchyard' };

  it('uses a configured client: public without a secret, client_secret_basic with one', async () => {
    const as = server({ registration_endpoint: 'https://as.example/register', client_id_metadata_document_supported: true });
    expect(await registerClient(as, { ...register, configured: { clientId: 'pub' }, metadataUrl: 'https://gw.example/client.json' }))
      .toEqual({ clientId: 'pub', method: 'configured', tokenEndpointAuthMethod: 'none' });
    expect(await registerClient(as, { ...register, configured: { clientId: 'conf', clientSecret: 'shh' } }))
      .toEqual({ clientId: 'conf', clientSecret: 'shh', method: 'configured', tokenEndpointAuthMethod: 'client_secret_basic' });
  });

  it('uses a Client ID Metadata Document only when the server says so and the URL is https', async () => {
    const metadataUrl = 'https://gw.example/oauth/client.json';
    expect(await registerClient(server({ client_id_metadata_document_supported: true }), { ...register, metadataUrl }))
      .toEqual({ clientId: metadataUrl, method: 'metadata-document', tokenEndpointAuthMethod: 'none' });
    await expect(registerClient(server({ client_id_metadata_document_supported: true }), { ...register, metadataUrl: 'http://gw.example/client.json' }))
      .rejects.toThrow(RegistrationError);
    await expect(registerClient(server(), { ...register, metadataUrl })).rejects.toThrow(RegistrationError);
    expect(clientMetadataDocument(metadataUrl, REDIRECT_URI, 'Switchyard')).toEqual({
      client_id: metadataUrl, client_name: 'Switchyard', redirect_uris: [REDIRECT_URI],
      grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none',
    });
  });

  it('falls back to dynamic client registration with the gateway metadata', async () => {
    const s = await serve(routes(() => ({ '/register': { status: 201, json: { client_id: 'dyn-1', token_endpoint_auth_method: 'none' } } })));
    const as = asMetadata(s.base, { registration_endpoint: `${s.base}/register` }) as unknown as AuthorizationServer;
    expect(await registerClient(as, { ...register, metadataUrl: 'https://gw.example/client.json' }))
      .toEqual({ clientId: 'dyn-1', method: 'dynamic', tokenEndpointAuthMethod: 'none' });
    expect(JSON.parse(s.bodies[0]!)).toEqual({
      client_name: 'Switchyard', redirect_uris: [REDIRECT_URI], grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'], token_endpoint_auth_method: 'none',
    });
  });

  it('says to configure a client id when the server offers no registration', async () => {
    await expect(registerClient(server(), register)).rejects.toThrow(/neither .* configure userAuth\.clientId/);
  });

  const publicClient: RegisteredClient = { clientId: 'gw', method: 'configured', tokenEndpointAuthMethod: 'none' };
  const authFor = (as: AuthorizationServer): UpstreamAuthorization => ({ resource: 'https://up.example/mcp', scopes: ['repo', 'read'], server: as });

  it('builds the authorization request with PKCE S256, state, resource and scope', async () => {
    const { url, state, codeVerifier } = await startAuthorization(authFor(server()), publicClient, REDIRECT_URI);
    const params = new URL(url).searchParams;
    expect(url.startsWith('https://as.example/authorize?')).toBe(true);
    expect(Object.fromEntries(params)).toEqual({
      response_type: 'code', client_id: 'gw', redirect_uri: REDIRECT_URI, code_challenge_method: 'S256', state,
      code_challenge: await oauth.calculatePKCECodeChallenge(codeVerifier), resource: 'https://up.example/mcp', scope: 'repo read',
    });
  });

  it.each([[['plain']], [undefined]])('refuses to proceed when code_challenge_methods_supported is %j', async (methods) => {
    const as = server({ code_challenge_methods_supported: methods });
    await expect(startAuthorization(authFor(as), publicClient, REDIRECT_URI)).rejects.toThrow(/PKCE S256/);
  });

  it('reports a denial with the error code only, and refuses a callback with another state', async () => {
    const auth = authFor(server());
    const pending = { state: 'st-1', codeVerifier: 'v'.repeat(43), redirectUri: REDIRECT_URI };
    const denied = new URL(`${REDIRECT_URI}?error=access_denied&error_description=private+words&state=st-1`);
    const err = await finishAuthorization(auth, publicClient, denied, pending).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AuthorizationDeniedError);
    expect((err as AuthorizationDeniedError).error).toBe('access_denied');
    expect((err as Error).message).not.toMatch(/private/);
    const forged = new URL(`${REDIRECT_URI}?code=the-code-123&state=other`);
    await expect(finishAuthorization(auth, publicClient, forged, pending)).rejects.toThrow(/state/);
  });

  it('rejects a token that is not Bearer, naming neither the token nor the code', async () => {
    const s = await serve(routes(() => ({ '/token': { json: { access_token: 'secret-access-token', token_type: 'DPoP', expires_in: 60 } } })));
    const auth = authFor(asMetadata(s.base) as unknown as AuthorizationServer);
    const callback = new URL(`${REDIRECT_URI}?code=the-code-123&state=st-1`);
    const err = await finishAuthorization(auth, publicClient, callback, { state: 'st-1', codeVerifier: 'v'.repeat(43), redirectUri: REDIRECT_URI })
      .catch((e: unknown) => e);
    expect((err as Error).message).toMatch(/only Bearer/);
    expect((err as Error).message).not.toMatch(/secret-access-token|the-code-123/);
    expect(new URLSearchParams(s.bodies[0]).get('resource')).toBe('https://up.example/mcp');
  });

  it('refresh keeps an unrotated refresh token, and tells invalid_grant from other failures', async () => {
    const s = await serve(() => async (req, res) => {
      const grant = new URLSearchParams(await readBody(req)).get('refresh_token');
      const [status, body] = grant === 'good' ? [200, { access_token: 'at-2', token_type: 'bearer', expires_in: 10 }]
        : grant === 'revoked' ? [400, { error: 'invalid_grant' }] : [500, { error: 'server_error' }];
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    });
    const auth = authFor(asMetadata(s.base) as unknown as AuthorizationServer);
    expect(await refreshTokens(auth, publicClient, 'good', { now: () => 5_000 }))
      .toEqual({ accessToken: 'at-2', tokenType: 'Bearer', refreshToken: 'good', expiresAt: 15_000 });
    await expect(refreshTokens(auth, publicClient, 'revoked')).rejects.toBeInstanceOf(RefreshRejectedError);
    const other = await refreshTokens(auth, publicClient, 'broken').catch((e: unknown) => e);
    expect(other).not.toBeInstanceOf(RefreshRejectedError);
    expect((other as Error).message).not.toMatch(/broken/);
  });

  it('revocation answers false without an endpoint and on a server error', async () => {
    expect(await revokeToken(authFor(server()), publicClient, 'tok', 'refresh_token')).toBe(false);
    const s = await serve(routes(() => ({ '/revoke': { status: 503 } })));
    const auth = authFor(asMetadata(s.base, { revocation_endpoint: `${s.base}/revoke` }) as unknown as AuthorizationServer);
    expect(await revokeToken(auth, publicClient, 'tok', 'refresh_token')).toBe(false);
    expect(s.hits).toEqual(['POST /revoke']);
  });
});

// ---- A real oidc-provider 8.8.1, driven without a browser ----

/** The slice of oidc-provider's API this test uses (the package ships no types). */
interface InteractionDetails {
  uid: string;
  prompt: { name: string; details: { missingOIDCScope?: string[]; missingResourceScopes?: Record<string, string[]> } };
  params: Record<string, unknown>;
  session?: { accountId: string };
  grantId?: string;
}
interface Grant { addOIDCScope(scope: string): void; addResourceScope(resource: string, scope: string): void; save(): Promise<string> }
interface OidcProvider {
  callback(): (req: IncomingMessage, res: ServerResponse) => void;
  interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<InteractionDetails>;
  interactionFinished(req: IncomingMessage, res: ServerResponse, result: Record<string, unknown>, options: { mergeWithLastSubmission: boolean }): Promise<void>;
  Grant: { new (init: { accountId: string; clientId: string }): Grant; find(id: string): Promise<Grant | undefined> };
}
type ProviderClass = new (issuer: string, configuration: Record<string, unknown>) => OidcProvider;
interface ProviderClient { grantTypeAllowed(grant: string): boolean }

/** Logs in any `username` from the form and grants whatever consent is missing, resource scopes included. */
async function interact(provider: OidcProvider, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const details = await provider.interactionDetails(req, res);
  if (details.prompt.name === 'login') {
    if (req.method !== 'POST') {
      res.writeHead(200, { 'content-type': 'text/html' });
      return void res.end(`<form method="post" action="/interaction/${details.uid}"><input name="username"></form>`);
    }
    const accountId = new URLSearchParams(await readBody(req)).get('username') ?? 'nobody';
    return provider.interactionFinished(req, res, { login: { accountId } }, { mergeWithLastSubmission: false });
  }
  const accountId = details.session?.accountId ?? 'nobody';
  const grant = (details.grantId ? await provider.Grant.find(details.grantId) : undefined)
    ?? new provider.Grant({ accountId, clientId: String(details.params.client_id) });
  const { missingOIDCScope, missingResourceScopes } = details.prompt.details;
  if (missingOIDCScope) grant.addOIDCScope(missingOIDCScope.join(' '));
  for (const [resource, scopes] of Object.entries(missingResourceScopes ?? {})) grant.addResourceScope(resource, scopes.join(' '));
  await provider.interactionFinished(req, res, { consent: { grantId: await grant.save() } }, { mergeWithLastSubmission: true });
}

async function startProvider(): Promise<TestServer> {
  // A variable specifier: the package has no type declarations for a literal import to find.
  const specifier = 'oidc-provider';
  const { default: Provider } = (await import(specifier)) as { default: ProviderClass };
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk = { ...(await exportJWK(privateKey)), kid: 'test-rs256', alg: 'RS256', use: 'sig' };
  return listen((issuer) => {
    const provider = new Provider(issuer, {
      jwks: { keys: [jwk] },
      cookies: { keys: ['oauth-client-test-cookie-key'] },
      findAccount: (_ctx: unknown, sub: string) => ({ accountId: sub, claims: () => ({ sub }) }),
      interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
      issueRefreshToken: (_ctx: unknown, client: ProviderClient) => client.grantTypeAllowed('refresh_token'),
      // Set so the provider keeps quiet. A number for AccessToken would beat the resource server's
      // accessTokenTTL: only the default function (mimicked here) consults it.
      ttl: {
        Interaction: 300, Session: 3_600, Grant: 3_600, RefreshToken: 3_600,
        AccessToken: (_ctx: unknown, token: { resourceServer?: { accessTokenTTL?: number } }) => token.resourceServer?.accessTokenTTL ?? 30,
      },
      features: {
        devInteractions: { enabled: false },
        registration: { enabled: true },
        revocation: { enabled: true },
        resourceIndicators: {
          enabled: true,
          getResourceServerInfo: (_ctx: unknown, resource: string) => ({
            scope: 'repo', audience: resource, accessTokenFormat: 'jwt', accessTokenTTL: 60, jwt: { sign: { alg: 'RS256' } },
          }),
        },
      },
    });
    const callback = provider.callback();
    return (req, res) => (req.url?.startsWith('/interaction/') ? interact(provider, req, res) : callback(req, res));
  });
}

/** Follows the authorization request like a browser would (cookies, redirects, the login form) until it lands on redirectUri. */
async function authorizeWithoutBrowser(start: string, redirectUri: string, username: string): Promise<URL> {
  const jar = new Map<string, string>();
  let request: { url: URL; form?: URLSearchParams } = { url: new URL(start) };
  for (let hop = 0; hop < 20; hop++) {
    const response = await fetch(request.url, {
      method: request.form ? 'POST' : 'GET',
      body: request.form,
      redirect: 'manual',
      headers: { cookie: [...jar].map(([name, value]) => `${name}=${value}`).join('; ') },
      signal: AbortSignal.timeout(5_000),
    });
    for (const line of response.headers.getSetCookie()) {
      const [pair = '', ...attributes] = line.split(';');
      const [name = '', value = ''] = pair.trim().split(/=(.*)/s);
      const expired = attributes.some((a) => /^\s*expires=/i.test(a) && Date.parse(a.split('=')[1] ?? '') <= Date.now());
      if (expired || value === '') jar.delete(name);
      else jar.set(name, value);
    }
    const location = response.headers.get('location');
    const text = await response.text();
    if (location !== null) {
      const next = new URL(location, request.url);
      if (next.href.startsWith(redirectUri)) return next;
      request = { url: next };
      continue;
    }
    const action = /<form method="post" action="([^"]+)"/.exec(text)?.[1];
    if (response.status !== 200 || !action) throw new Error(`authorization stopped at HTTP ${response.status}: ${text.slice(0, 300)}`);
    request = { url: new URL(action, request.url), form: new URLSearchParams({ username }) };
  }
  throw new Error('authorization did not reach the redirect URI within 20 hops');
}

describe('against a real oidc-provider', () => {
  let provider: TestServer;
  let upstream: TestServer;
  beforeAll(async () => {
    provider = await startProvider();
    upstream = await listen(routes((base) => ({
      '/mcp': unauthorized(`Bearer resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"`),
      '/.well-known/oauth-protected-resource/mcp': { json: { resource: `${base}/mcp`, authorization_servers: [provider.base], scopes_supported: ['repo'] } },
    })));
  });
  afterAll(async () => {
    await Promise.all([provider?.close(), upstream?.close()]);
  });

  it('discovers an upstream whose protected resource metadata points at the provider', async () => {
    const auth = await discoverAuthorization(`${upstream.base}/mcp`, {});
    expect(auth.resource).toBe(`${upstream.base}/mcp`);
    expect(auth.scopes).toEqual(['repo']);
    expect(auth.server.issuer).toBe(provider.base);
    expect(auth.server.code_challenge_methods_supported).toContain('S256');
    // oidc-provider publishes only OpenID discovery: the RFC 8414 URL was tried first and missed.
    expect(provider.hits.slice(0, 2)).toEqual(['GET /.well-known/oauth-authorization-server', 'GET /.well-known/openid-configuration']);
  });

  it('registers the gateway by dynamic client registration', async () => {
    const auth = await discoverAuthorization(`${upstream.base}/mcp`, {});
    const client = await registerClient(auth.server, { redirectUri: REDIRECT_URI, clientName: 'Switchyard' });
    expect(client).toMatchObject({ method: 'dynamic', tokenEndpointAuthMethod: 'none' });
    expect(client.clientId).toMatch(/\S/);
    expect(client.clientSecret).toBeUndefined();
  });

  it('runs the code flow to a JWT for the resource, refreshes it, and revokes the refresh token', async () => {
    const auth = await discoverAuthorization(`${upstream.base}/mcp`, {});
    const client = await registerClient(auth.server, { redirectUri: REDIRECT_URI, clientName: 'Switchyard' });
    const pending = await startAuthorization(auth, client, REDIRECT_URI);
    const callback = await authorizeWithoutBrowser(pending.url, REDIRECT_URI, 'alice');
    const now = () => 1_000_000;
    const tokens = await finishAuthorization(auth, client, callback, { ...pending, redirectUri: REDIRECT_URI }, { now });
    expect(tokens).toMatchObject({ tokenType: 'Bearer', scope: 'repo', expiresAt: 1_000_000 + 60_000 });
    const claims = decodeJwt(tokens.accessToken);
    expect(claims.aud).toBe(auth.resource);
    expect(claims.sub).toBe('alice');
    expect(tokens.refreshToken).toMatch(/\S/);

    const refreshed = await refreshTokens(auth, client, tokens.refreshToken!);
    expect(decodeJwt(refreshed.accessToken).aud).toBe(auth.resource);
    // A public client's refresh token is rotated (authorization.mdx "Token Theft").
    expect(refreshed.refreshToken).toMatch(/\S/);
    expect(refreshed.refreshToken).not.toBe(tokens.refreshToken);

    expect(await revokeToken(auth, client, refreshed.refreshToken!, 'refresh_token')).toBe(true);
    await expect(refreshTokens(auth, client, refreshed.refreshToken!)).rejects.toBeInstanceOf(RefreshRejectedError);
  });
});
