// Proves the per-user credential test infrastructure end to end with real parts: oidc-provider,
// headless Chromium signing in, oauth4webapi as the client, and the token-checking MCP upstream.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as oauth from 'oauth4webapi';
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { followSignIn, startBrowser, type TestBrowser } from '../helpers/browser.js';
import { startIdp, type TestIdp } from '../helpers/oidc.js';
import { startUserAuthUpstream, type UserAuthUpstream } from '../helpers/user-auth-upstream.js';

const insecure = { [oauth.allowInsecureRequests]: true } as const;
const CLIENT_ID = 'gateway-public';

interface Harness {
  idp: TestIdp;
  upstream: UserAuthUpstream;
  browser: TestBrowser;
  callback: Server;
  redirectUri: string;
  as: oauth.AuthorizationServer;
}

/** Where the browser lands after authorizing: a page that shows the code came back, or a hop to `hops[path]`. */
async function startCallbackServer(hops: Map<string, string>): Promise<Server> {
  const server = createServer((req, res) => {
    const hop = hops.get(new URL(req.url ?? '/', 'http://127.0.0.1').pathname);
    if (hop) {
      res.writeHead(302, { location: hop }).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(`<!doctype html><title>callback</title><p id="done">callback ${req.url?.includes('code=') ? 'with code' : 'without code'}</p>`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

function closeCallback(server: Server | undefined): Promise<void> {
  if (!server) return Promise.resolve();
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

async function whoami(url: string, accessToken: string): Promise<string> {
  const client = new Client({ name: 'selftest', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${accessToken}` } } });
  try {
    await client.connect(transport);
    const result = await client.callTool({ name: 'whoami', arguments: {} });
    const [first] = result.content as Array<{ type: string; text?: string }>;
    return first?.text ?? '';
  } finally {
    await client.close();
  }
}

describe('test IdP, browser and user-auth upstream', () => {
  const h = {} as Harness;
  const hops = new Map<string, string>();

  beforeAll(async () => {
    h.callback = await startCallbackServer(hops);
    h.redirectUri = `http://127.0.0.1:${(h.callback.address() as AddressInfo).port}/callback`;
    // The upstream needs the issuer and the IdP the upstream's URL: `resources` is read live.
    const resources: Record<string, { scope: string }> = {};
    h.idp = await startIdp({
      clients: [{ client_id: CLIENT_ID, token_endpoint_auth_method: 'none', redirect_uris: [h.redirectUri, `${h.redirectUri}/hop`], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'] }],
      resources,
    });
    h.upstream = await startUserAuthUpstream(h.idp.issuer);
    resources[h.upstream.url] = { scope: 'repo' };
    h.as = await oauth.processDiscoveryResponse(new URL(h.idp.issuer), await oauth.discoveryRequest(new URL(h.idp.issuer), { algorithm: 'oidc', ...insecure }));
    h.browser = await startBrowser();
  }, 60_000);

  afterAll(async () => {
    try {
      await h.browser?.close();
    } finally {
      await Promise.allSettled([h.upstream?.close(), h.idp?.close(), closeCallback(h.callback)]);
    }
  });

  /** A whole authorization code + PKCE round in a fresh browser context, then the code exchange. */
  async function signIn(username: string, clientId = CLIENT_ID): Promise<oauth.TokenEndpointResponse> {
    const client: oauth.Client = { client_id: clientId, token_endpoint_auth_method: 'none' };
    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const authorize = new URL(h.as.authorization_endpoint!);
    authorize.search = new URLSearchParams({
      client_id: clientId,
      response_type: 'code',
      redirect_uri: h.redirectUri,
      scope: 'repo',
      resource: h.upstream.url,
      state,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    }).toString();
    const context = await h.browser.context();
    try {
      const landed = await followSignIn(await context.newPage(), authorize.href, username, { until: /\/callback\?/ });
      expect(landed.text).toContain('callback with code');
      const params = oauth.validateAuthResponse(h.as, client, new URL(landed.url), state);
      const response = await oauth.authorizationCodeGrantRequest(h.as, client, oauth.None(), params, h.redirectUri, verifier, {
        additionalParameters: { resource: h.upstream.url },
        ...insecure,
      });
      return await oauth.processAuthorizationCodeResponse(h.as, client, response);
    } finally {
      await context.close();
    }
  }

  it('signs in through the browser and issues a JWT for the resource and a refresh token', async () => {
    const tokens = await signIn('alice');
    expect(tokens.refresh_token).toEqual(expect.any(String));
    const { payload } = await jwtVerify(tokens.access_token, createRemoteJWKSet(new URL(h.as.jwks_uri!)), { issuer: h.idp.issuer, audience: h.upstream.url });
    expect(payload).toMatchObject({ sub: 'alice', client_id: CLIENT_ID, scope: 'repo' });
    expect(decodeProtectedHeader(tokens.access_token)).toMatchObject({ alg: 'RS256', typ: 'at+jwt' });
    expect(h.idp.requests.some((r) => r.method === 'POST' && r.path === '/token')).toBe(true);
  });

  it('followSignIn signs in at every IdP on a chain of redirects between two servers', async () => {
    const second = await startIdp({ clients: [{ client_id: 'second', token_endpoint_auth_method: 'none', redirect_uris: [h.redirectUri], response_types: ['code'], grant_types: ['authorization_code'] }] });
    const logins = (idp: TestIdp) => idp.requests.filter((r) => r.method === 'POST' && /^\/interaction\/[^/]+\/login$/.test(r.path)).length;
    const firstLogins = logins(h.idp);
    const context = await h.browser.context();
    try {
      const challenge = await oauth.calculatePKCECodeChallenge(oauth.generateRandomCodeVerifier());
      const authorize = (endpoint: string, params: Record<string, string>) => `${endpoint}?${new URLSearchParams({ response_type: 'code', code_challenge: challenge, code_challenge_method: 'S256', ...params })}`;
      hops.set('/callback/hop', authorize(`${second.issuer}/auth`, { client_id: 'second', redirect_uri: h.redirectUri, scope: 'openid' }));
      const first = authorize(h.as.authorization_endpoint!, { client_id: CLIENT_ID, redirect_uri: `${h.redirectUri}/hop`, scope: 'repo', resource: h.upstream.url });
      const landed = await followSignIn(await context.newPage(), first, 'erin', { until: /\/callback\?/ });
      expect(new URL(landed.url).searchParams.get('iss')).toBe(second.issuer);
      expect(landed.text).toContain('callback with code');
      expect([logins(h.idp) - firstLogins, logins(second)]).toEqual([1, 1]);
    } finally {
      hops.clear();
      await context.close();
      await second.close();
    }
  });

  it('the login page names the port of its issuer', async () => {
    const context = await h.browser.context();
    try {
      const page = await context.newPage();
      const url = `${h.as.authorization_endpoint}?${new URLSearchParams({ client_id: CLIENT_ID, response_type: 'code', redirect_uri: h.redirectUri, scope: 'repo', resource: h.upstream.url, code_challenge: 'x'.repeat(43), code_challenge_method: 'S256' })}`;
      await page.goto(url, { timeout: 15_000 });
      const port = new URL(h.idp.issuer).port;
      expect(await page.title()).toContain(port);
      expect(await page.locator('h1').innerText({ timeout: 5_000 })).toContain(port);
    } finally {
      await context.close();
    }
  });

  it('the upstream answers whoami with the subject of a token from its own authorization server', async () => {
    const tokens = await signIn('alice');
    expect(await whoami(h.upstream.url, tokens.access_token)).toBe('alice');
    const seen = await h.upstream.headers();
    expect(seen.some((headers) => headers.authorization === `Bearer ${tokens.access_token}`)).toBe(true);
  });

  it('issueAccessToken makes tokens the upstream accepts for its audience and refuses for another', async () => {
    const bob = await h.idp.issueAccessToken({ sub: 'bob', clientId: CLIENT_ID, resource: h.upstream.url, scope: 'repo' });
    expect(await whoami(h.upstream.url, bob)).toBe('bob');

    const foreign = await h.idp.issueAccessToken({ sub: 'alice', clientId: CLIENT_ID, resource: 'http://127.0.0.1:9/other/mcp' });
    await jwtVerify(foreign, createRemoteJWKSet(new URL(h.as.jwks_uri!)), { issuer: h.idp.issuer, audience: 'http://127.0.0.1:9/other/mcp' });
    const res = await fetch(h.upstream.url, {
      method: 'POST',
      headers: { authorization: `Bearer ${foreign}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } }),
    });
    expect(res.status).toBe(401);
    const metadataUrl = `${new URL(h.upstream.url).origin}/.well-known/oauth-protected-resource/mcp`;
    expect(res.headers.get('www-authenticate')).toBe(`Bearer error="invalid_token", resource_metadata="${metadataUrl}"`);
  });

  it('the upstream challenges a request without a token and publishes its protected resource metadata', async () => {
    const res = await fetch(h.upstream.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(res.status).toBe(401);
    const challenge = res.headers.get('www-authenticate') ?? '';
    expect(challenge).not.toContain('error=');
    const metadataUrl = /resource_metadata="([^"]+)"/.exec(challenge)?.[1];
    const metadata = await (await fetch(metadataUrl!)).json();
    expect(metadata).toEqual({ resource: h.upstream.url, authorization_servers: [h.idp.issuer], scopes_supported: ['repo'], bearer_methods_supported: ['header'] });
  });

  it('a refresh works until the user\'s grants are revoked, then fails with invalid_grant', async () => {
    const client: oauth.Client = { client_id: CLIENT_ID, token_endpoint_auth_method: 'none' };
    const refresh = async (token: string) =>
      oauth.processRefreshTokenResponse(h.as, client, await oauth.refreshTokenGrantRequest(h.as, client, oauth.None(), token, { additionalParameters: { resource: h.upstream.url }, ...insecure }));
    const first = await signIn('alice');
    const refreshed = await refresh(first.refresh_token!);
    expect(refreshed.refresh_token).toEqual(expect.any(String));
    expect(await whoami(h.upstream.url, refreshed.access_token)).toBe('alice');

    await h.idp.revokeGrants('alice');
    const error = await refresh(refreshed.refresh_token!).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(oauth.ResponseBodyError);
    expect((error as oauth.ResponseBodyError).error).toBe('invalid_grant');
  });

  it('counts RFC 7009 revocations', async () => {
    const client: oauth.Client = { client_id: CLIENT_ID, token_endpoint_auth_method: 'none' };
    const tokens = await signIn('carol');
    const before = h.idp.revocations();
    await oauth.processRevocationResponse(await oauth.revocationRequest(h.as, client, oauth.None(), tokens.refresh_token!, insecure));
    expect(h.idp.revocations()).toBe(before + 1);
  });

  it('registers a client dynamically (RFC 7591) that can then sign a user in', async () => {
    const registered = await oauth.processDynamicClientRegistrationResponse(
      await oauth.dynamicClientRegistrationRequest(
        h.as,
        { redirect_uris: [h.redirectUri], token_endpoint_auth_method: 'none', grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], client_name: 'switchyard' },
        insecure,
      ),
    );
    expect(registered.client_id).toEqual(expect.any(String));
    const tokens = await signIn('dave', registered.client_id);
    expect(await whoami(h.upstream.url, tokens.access_token)).toBe('dave');
  });
});
