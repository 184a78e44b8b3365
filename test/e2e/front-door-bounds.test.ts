// The front door's bounds against real parts (an Entra-like oidc-provider, Chromium sign-ins):
// an access token the gateway verified and remembers stops working when its grant ends at
// grantMaxAge, its exp no later than that end; /oauth/authorize answers an oversized parameter
// with a page before any IdP login or stored flow; DCR takes the IPv6 loopback redirect by default
// and it matches on any port (RFC 8252 §7.3); a refresh asking for a scope beyond its grant is
// invalid_scope (RFC 6749 §6), a token request without grant_type invalid_request (§5.2).
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBrowser } from '../helpers/browser.js';
import { ACCOUNTS, frontDoorConfig, loginClient, pkce, startCallbackListener, startFrontDoorGateway, signInForTokens, tokenRequest, type FrontDoorParts } from '../helpers/front-door.js';
import { upstream } from '../helpers/gateway.js';
import { startIdp } from '../helpers/oidc.js';
import { freePort } from '../helpers/redis.js';

/** A grant's whole life: long enough for a sign-in and a few refreshes on a busy machine, short enough to wait out. */
const GRANT_MAX_AGE_S = 12;

interface Harness extends FrontDoorParts {
  clientId: string;
}

let h: Harness;

async function register(redirectUris: string[]): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${h.origin}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ client_name: 'Bounds', redirect_uris: redirectUris, token_endpoint_auth_method: 'none' }) });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

beforeAll(async () => {
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const idp = await startIdp({ entra: true, clients: [loginClient(origin)], accounts: ACCOUNTS });
  const callback = await startCallbackListener();
  const config = frontDoorConfig(idp.issuer, `${origin}/mcp`, { grantMaxAge: `${GRANT_MAX_AGE_S}s`, tokenTtl: '1h' }, { upstreams: { everything: upstream.everything() } });
  const oauth = (config.auth as { oauth: Record<string, unknown> }).oauth;
  oauth.scopes = ['mcp', 'tools'];
  // No skew tolerated: a token is refused from its `exp` on.
  oauth.clockTolerance = 0;
  const gateway = await startFrontDoorGateway(config, port);
  h = { idp, gateway, browser: await startBrowser(), callback, origin, clientId: '' };
  const registered = await register([callback.url]);
  expect(registered.status).toBe(201);
  h.clientId = registered.body.client_id as string;
}, 60_000);

afterAll(async () => {
  await Promise.allSettled([h?.browser.close(), h?.gateway.close()]);
  await Promise.allSettled([h?.idp.close(), h?.callback.close()]);
});

function authorizeUrl(params: Record<string, string>): string {
  const url = new URL(`${h.origin}/oauth/authorize`);
  url.search = new URLSearchParams({ response_type: 'code', client_id: h.clientId, redirect_uri: h.callback.url, code_challenge_method: 'S256', state: 'st', ...params }).toString();
  return url.href;
}

/** Signs `user` in with Chromium and trades the code for tokens. */
function signIn(user: string): Promise<Record<string, unknown>> {
  return signInForTokens(h, user);
}

async function initialize(token: string): Promise<number> {
  const response = await fetch(`${h.origin}/mcp`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bounds', version: '1' } } }),
  });
  await response.text();
  return response.status;
}

function claimsOf(token: unknown): { exp: number; iat: number; scope?: string } {
  return JSON.parse(Buffer.from((token as string).split('.')[1]!, 'base64url').toString()) as { exp: number; iat: number; scope?: string };
}

async function post(body: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${h.origin}/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

describe('the token endpoint', () => {
  it('refuses a refresh asking for a scope beyond the grant (invalid_scope) and spends nothing; a narrower one is issued narrower', async () => {
    const tokens = await signIn('alice');
    expect(tokens.scope).toBe('mcp tools');
    const refresh = (refreshToken: unknown, scope?: string) => tokenRequest(h.origin, { grant_type: 'refresh_token', refresh_token: refreshToken as string, client_id: h.clientId, ...(scope !== undefined ? { scope } : {}) });
    expect(await refresh(tokens.refresh_token, 'mcp admin')).toMatchObject({ status: 400, body: { error: 'invalid_scope' } });
    const narrower = await refresh(tokens.refresh_token, 'mcp');
    expect(narrower).toMatchObject({ status: 200, body: { scope: 'mcp' } });
    expect(claimsOf(narrower.body.access_token).scope).toBe('mcp');
    const whole = await refresh(narrower.body.refresh_token);
    expect(whole).toMatchObject({ status: 200, body: { scope: 'mcp tools' } });
    expect(await initialize(whole.body.access_token as string)).toBe(200);
  }, 60_000);

  it('answers a request without grant_type (or an empty body) invalid_request, an unknown one unsupported_grant_type', async () => {
    expect(await post('code=x')).toMatchObject({ status: 400, body: { error: 'invalid_request' } });
    expect(await post('')).toMatchObject({ status: 400, body: { error: 'invalid_request' } });
    expect(await post('grant_type=password&username=a&password=b')).toMatchObject({ status: 400, body: { error: 'unsupported_grant_type' } });
  });
});

describe('/oauth/authorize', () => {
  it('answers an oversized state with a page: no redirect, no IdP login, no cookie for a stored flow', async () => {
    const { challenge } = pkce();
    const refused = await fetch(authorizeUrl({ code_challenge: challenge, state: 's'.repeat(12_000) }), { redirect: 'manual' });
    expect(refused.status).toBe(400);
    expect(refused.headers.get('location')).toBeNull();
    expect(refused.headers.get('set-cookie')).toBeNull();
    expect(await refused.text()).toContain('state');
    const taken = await fetch(authorizeUrl({ code_challenge: challenge, state: 's'.repeat(2_048) }), { redirect: 'manual' });
    await taken.arrayBuffer();
    expect(taken.status).toBe(302);
    expect(taken.headers.get('location')!.startsWith(h.idp.issuer)).toBe(true);
  });

  it('counts the sign-ins one client address starts (authorizationsPerMinute): the next gets a 429 page, nothing stored', async () => {
    const port = await freePort();
    const origin = `http://127.0.0.1:${port}`;
    const limited = await startFrontDoorGateway(frontDoorConfig(h.idp.issuer, `${origin}/mcp`, { authorizationsPerMinute: 2 }, { upstreams: {} }), port);
    try {
      const response = await fetch(`${origin}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ client_name: 'Limited', redirect_uris: [h.callback.url], token_endpoint_auth_method: 'none' }) });
      const clientId = ((await response.json()) as { client_id: string }).client_id;
      const statuses: number[] = [];
      for (let i = 0; i < 3; i++) {
        const url = new URL(`${origin}/oauth/authorize`);
        url.search = new URLSearchParams({ response_type: 'code', client_id: clientId, redirect_uri: h.callback.url, code_challenge_method: 'S256', code_challenge: pkce().challenge, state: `s${i}` }).toString();
        const answer = await fetch(url, { redirect: 'manual' });
        await answer.arrayBuffer();
        statuses.push(answer.status);
        if (answer.status === 429) {
          expect(answer.headers.get('retry-after')).toMatch(/^\d+$/);
          expect(answer.headers.get('location')).toBeNull();
        }
      }
      expect(statuses).toEqual([302, 302, 429]);
    } finally {
      await limited.close();
    }
  });
});

describe('DCR with the default redirects', () => {
  it('registers the IPv6 loopback redirect, which then matches on any port (RFC 8252 §7.3)', async () => {
    const registered = await register(['http://[::1]:49152/cb']);
    expect(registered.status, JSON.stringify(registered.body)).toBe(201);
    const url = new URL(authorizeUrl({ client_id: registered.body.client_id as string, redirect_uri: 'http://[::1]:5555/cb', code_challenge: pkce().challenge }));
    const started = await fetch(url, { redirect: 'manual' });
    await started.arrayBuffer();
    expect(started.status).toBe(302);
    expect(started.headers.get('location')!.startsWith(h.idp.issuer)).toBe(true);
  });
});

describe("a grant's end", () => {
  it('ends its access tokens, verified before or not: exp is no later than grantMaxAge after the sign-in', async () => {
    const signedIn = Date.now();
    const tokens = await signIn('alice');
    const issued = Date.now();
    // Verified now, and remembered as verified.
    expect(await initialize(tokens.access_token as string)).toBe(200);
    const other = await signIn('alice');
    const made = Date.now();
    // The grants' end is the event: waited for as far as grantMaxAge after the later one was made, and a little past.
    await delay(Math.max(0, made + GRANT_MAX_AGE_S * 1_000 - Date.now()) + 1_000);
    expect(await tokenRequest(h.origin, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token as string, client_id: h.clientId })).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    expect(await initialize(tokens.access_token as string)).toBe(401);
    expect(await initialize(other.access_token as string)).toBe(401);
    const claims = claimsOf(tokens.access_token);
    expect(claims.exp * 1_000).toBeLessThanOrEqual(issued + GRANT_MAX_AGE_S * 1_000);
    expect(claims.exp * 1_000).toBeGreaterThan(signedIn);
    expect(tokens.expires_in).toBe(claims.exp - claims.iat);
  }, 90_000);
});
