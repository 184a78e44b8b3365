// What the front door refuses, each in a test, against real parts (an Entra-like oidc-provider,
// Chromium for the logins that need one, an https server for metadata documents that must never
// be fetched): redirect URIs not registered, CIMD URLs on private addresses or outside
// cimd.allow, PKCE plain, a reused code, a tampered token, a token for another endpoint, a DCR
// redirect outside `redirects`, a denied consent, too many registrations from one address; and a
// request made to fail, sent back only once the user signed in and had approved that redirect URI.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { followSignIn, startBrowser } from '../helpers/browser.js';
import { ACCOUNTS, answerConsent, frontDoorConfig, loginClient, pkce, reachConsent, startCallbackListener, startDocumentServer, startFrontDoorGateway, tokenRequest, type FrontDoorParts } from '../helpers/front-door.js';
import { upstream } from '../helpers/gateway.js';
import { startIdp } from '../helpers/oidc.js';
import { freePort } from '../helpers/redis.js';
import { selfSigned } from '../helpers/tls.js';

interface Harness extends FrontDoorParts {
  docs: Awaited<ReturnType<typeof startDocumentServer>>;
  dir: string;
  /** A client registered by DCR with the callback listener as its one redirect URI. */
  clientId: string;
}

let h: Harness;

async function register(redirectUris: string[]): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${h.origin}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ client_name: 'Refusals', redirect_uris: redirectUris, token_endpoint_auth_method: 'none' }) });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

beforeAll(async () => {
  const dir = await mkdtemp(join(tmpdir(), 'switchyard-frontdoor-refusals-'));
  const cert = await selfSigned(dir, 'docs');
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const idp = await startIdp({ entra: true, clients: [loginClient(origin)], accounts: ACCOUNTS });
  const callback = await startCallbackListener();
  const documents = new Map<string, { body: string }>();
  const docs = await startDocumentServer(cert, documents);
  documents.set('/client.json', { body: JSON.stringify({ client_id: `${docs.origin}/client.json`, client_name: 'Private', redirect_uris: [callback.url] }) });
  // Private addresses refused (the default): the document server on loopback must never be reached.
  const config = frontDoorConfig(idp.issuer, `${origin}/mcp`, { cimd: { allow: ['localhost', 'claude.ai'] } }, { upstreams: { everything: upstream.everything() }, endpoints: [{ path: '/eng', allow: ['everything__echo'] }] });
  const gateway = await startFrontDoorGateway(config, port, cert.certPem);
  h = { idp, gateway, browser: await startBrowser(), callback, docs, origin, dir, clientId: '' };
  const registered = await register([callback.url]);
  h.clientId = registered.body.client_id as string;
}, 60_000);

afterAll(async () => {
  await Promise.allSettled([h?.browser.close(), h?.gateway.close()]);
  await Promise.allSettled([h?.idp.close(), h?.callback.close(), h?.docs.close()]);
  if (h) await rm(h.dir, { recursive: true, force: true });
});

function authorizeUrl(params: Record<string, string>): string {
  const url = new URL(`${h.origin}/oauth/authorize`);
  url.search = new URLSearchParams({ response_type: 'code', client_id: h.clientId, redirect_uri: h.callback.url, code_challenge_method: 'S256', state: 'st', ...params }).toString();
  return url.href;
}

/** A browser sign-in as `user` up to the code (or the error) the client receives. */
async function browserAnswer(user: string, params: Record<string, string>, decision: 'approve' | 'deny' = 'approve'): Promise<URL> {
  const { page } = await reachConsent(h.browser, authorizeUrl(params), user);
  try {
    const answered = h.callback.next();
    await answerConsent(page, decision);
    return await answered;
  } finally {
    await page.context().close();
  }
}

/** Tokens for `user` and `resource` (default: the main endpoint). */
async function tokensFor(user: string, resource?: string): Promise<Record<string, unknown>> {
  const { verifier, challenge } = pkce();
  const answer = await browserAnswer(user, { code_challenge: challenge, ...(resource ? { resource } : {}) });
  const issued = await tokenRequest(h.origin, { grant_type: 'authorization_code', code: answer.searchParams.get('code')!, code_verifier: verifier, client_id: h.clientId, redirect_uri: h.callback.url });
  expect(issued.status).toBe(200);
  return issued.body;
}

async function ping(path: string, token: string): Promise<Response> {
  return fetch(`${h.origin}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'ping', version: '1' } } }),
  });
}

async function refusedPage(url: string): Promise<{ status: number; location: string | null; text: string }> {
  const response = await fetch(url, { redirect: 'manual' });
  return { status: response.status, location: response.headers.get('location'), text: await response.text() };
}

describe('the front door refuses', () => {
  it('a redirect URI the registration does not list: a page of its own, never a redirect', async () => {
    const page = await refusedPage(authorizeUrl({ code_challenge: pkce().challenge, redirect_uri: 'https://attacker.example/cb' }));
    expect(page).toMatchObject({ status: 400, location: null });
    expect(page.text).toContain('not one that Refusals registered');
  });

  it('a CIMD URL on a private address when allowPrivateAddresses is off, without fetching it', async () => {
    const page = await refusedPage(authorizeUrl({ client_id: `${h.docs.origin}/client.json`, code_challenge: pkce().challenge }));
    expect(page).toMatchObject({ status: 400, location: null });
    expect(page.text).toContain('non-public address');
    expect(h.docs.fetched).toEqual([]);
  });

  it('a CIMD host outside cimd.allow, and a CIMD URL of the wrong shape', async () => {
    const outside = await refusedPage(authorizeUrl({ client_id: 'https://elsewhere.example/client.json', code_challenge: pkce().challenge }));
    expect(outside).toMatchObject({ status: 400, location: null });
    expect(outside.text).toContain('elsewhere.example are not allowed');
    const dotted = await refusedPage(authorizeUrl({ client_id: 'https://claude.ai/a/../client.json', code_challenge: pkce().challenge }));
    expect(dotted.text).toContain('dot path segments');
  });

  it('code_challenge_method=plain, a missing challenge, a resource that is not an endpoint: the user signs in first, then gets a page, or the error at a redirect URI they approved', async () => {
    const wrong = [
      [{ code_challenge: pkce().verifier, code_challenge_method: 'plain' }, 'invalid_request', 'code_challenge_method must be S256'],
      [{}, 'invalid_request', 'code_challenge is required'],
      [{ code_challenge: pkce().challenge, resource: 'https://elsewhere.example/mcp' }, 'invalid_target', 'resource is not an endpoint'],
    ] as const;
    /** The browser's walk as `user` through the IdP login to where the request ends: its URL and text. */
    const walk = async (params: Record<string, string>, user: string, until: (url: string) => boolean): Promise<{ url: string; text: string }> => {
      const context = await h.browser.context();
      try {
        return await followSignIn(await context.newPage(), authorizeUrl(params), user, { until });
      } finally {
        await context.close();
      }
    };
    for (const [params, , description] of wrong) {
      // RFC 9700 §4.11.2: not to the client before anyone signed in.
      const first = await refusedPage(authorizeUrl(params));
      expect(first.status).toBe(302);
      expect(new URL(first.location!).origin).toBe(new URL(h.idp.issuer).origin);
      // alice never approved this client: a page of Switchyard's.
      const end = await walk(params, 'alice', (url) => url.startsWith(`${h.origin}/oauth/callback`));
      expect(end.text).toContain(description);
    }
    await browserAnswer('alice', { code_challenge: pkce().challenge });
    for (const [params, error] of wrong) {
      const arrived = h.callback.next();
      await walk(params, 'alice', (url) => url.startsWith(h.callback.url));
      const location = await arrived; // reached the client's listener
      expect(location.searchParams.get('error')).toBe(error);
      expect(location.searchParams.get('state')).toBe('st');
      expect(location.searchParams.get('iss')).toBe(h.origin);
    }
  }, 90_000);

  it('a reused code, and what the code gave the first time stops working', async () => {
    const { verifier, challenge } = pkce();
    const answer = await browserAnswer('alice', { code_challenge: challenge });
    const request = { grant_type: 'authorization_code', code: answer.searchParams.get('code')!, code_verifier: verifier, client_id: h.clientId, redirect_uri: h.callback.url };
    const first = await tokenRequest(h.origin, request);
    expect(first.status).toBe(200);
    expect((await ping('/mcp', first.body.access_token as string)).status).toBe(200);
    expect(await tokenRequest(h.origin, request)).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    expect(await tokenRequest(h.origin, { grant_type: 'refresh_token', refresh_token: first.body.refresh_token as string, client_id: h.clientId })).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    expect((await ping('/mcp', first.body.access_token as string)).status).toBe(401);
  }, 60_000);

  it('a code with the wrong code_verifier', async () => {
    const { challenge } = pkce();
    const answer = await browserAnswer('bob', { code_challenge: challenge });
    const wrong = await tokenRequest(h.origin, { grant_type: 'authorization_code', code: answer.searchParams.get('code')!, code_verifier: pkce().verifier, client_id: h.clientId, redirect_uri: h.callback.url });
    expect(wrong).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
  }, 60_000);

  it('a tampered token, and a token for another endpoint: 401 with the RFC 6750 challenge', async () => {
    const main = await tokensFor('alice');
    const eng = await tokensFor('alice', `${h.origin}/eng`);
    expect((await ping('/mcp', main.access_token as string)).status).toBe(200);
    expect((await ping('/eng', eng.access_token as string)).status).toBe(200);
    const [header, payload, signature] = (main.access_token as string).split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as Record<string, unknown>;
    const forged = `${header}.${Buffer.from(JSON.stringify({ ...claims, groups: ['admin'] })).toString('base64url')}.${signature}`;
    for (const [path, token] of [
      ['/mcp', forged],
      ['/mcp', eng.access_token as string],
      ['/eng', main.access_token as string],
    ] as const) {
      const refused = await ping(path, token);
      expect(refused.status, path).toBe(401);
      expect(refused.headers.get('www-authenticate')).toMatch(/^Bearer .*error="invalid_token"/);
    }
  }, 90_000);

  it('a DCR redirect URI outside `redirects` (and a confidential client)', async () => {
    for (const uris of [['myapp://callback'], ['http://attacker.example/cb'], ['javascript:alert(1)'], ['https://ok.example/cb#fragment']]) {
      expect(await register(uris)).toMatchObject({ status: 400, body: { error: 'invalid_redirect_uri' } });
    }
    const confidential = await fetch(`${h.origin}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ redirect_uris: [h.callback.url], token_endpoint_auth_method: 'client_secret_basic' }) });
    expect(confidential.status).toBe(400);
    expect(await register(['cursor://anysphere.cursor-mcp/oauth/callback'])).toMatchObject({ status: 201 });
  });

  it('a denied consent: access_denied goes back to the client, with state and iss', async () => {
    const answer = await browserAnswer('bob', { code_challenge: pkce().challenge }, 'deny');
    expect(answer.searchParams.get('error')).toBe('access_denied');
    expect(answer.searchParams.get('state')).toBe('st');
    expect(answer.searchParams.get('iss')).toBe(h.origin);
    expect(answer.searchParams.get('code')).toBeNull();
    expect(h.gateway.logs.some((line) => line.includes('"event":"consent_denied"'))).toBe(true);
  }, 60_000);

  it('a revoked refresh token (RFC 7009), and the grant\'s access token with it; never by another client', async () => {
    const tokens = await tokensFor('alice');
    const other = (await register([h.callback.url])).body.client_id as string;
    const refused = await fetch(`${h.origin}/oauth/revoke`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ token: tokens.refresh_token as string, client_id: other }).toString() });
    expect({ status: refused.status, body: await refused.json() }).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    const alive = await ping('/mcp', tokens.access_token as string);
    await alive.body?.cancel();
    expect(alive.status).toBe(200);
    const revoke = await fetch(`${h.origin}/oauth/revoke`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ token: tokens.refresh_token as string, client_id: h.clientId }).toString() });
    expect(revoke.status).toBe(200);
    expect(await tokenRequest(h.origin, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token as string, client_id: h.clientId })).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    expect((await ping('/mcp', tokens.access_token as string)).status).toBe(401);
    expect(h.gateway.logs.some((line) => line.includes('"event":"grant_revoked"'))).toBe(true);
  }, 60_000);

  it('browser origins: the back channel is open to any, the consent form to none but its own', async () => {
    const preflight = await fetch(`${h.origin}/oauth/token`, { method: 'OPTIONS', headers: { origin: 'https://vscode.dev', 'access-control-request-method': 'POST' } });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('*');
    const token = await fetch(`${h.origin}/oauth/token`, { method: 'POST', headers: { origin: 'https://vscode.dev', 'content-type': 'application/x-www-form-urlencoded' }, body: 'grant_type=refresh_token&refresh_token=x&client_id=y' });
    expect(token.status).toBe(400);
    expect(token.headers.get('access-control-allow-origin')).toBe('*');
    const metadata = await fetch(`${h.origin}/.well-known/oauth-authorization-server`, { headers: { origin: 'https://vscode.dev' } });
    expect(metadata.status).toBe(200);
    const consent = await fetch(`${h.origin}/oauth/consent`, { method: 'POST', headers: { origin: 'https://attacker.example', 'content-type': 'application/x-www-form-urlencoded' }, body: 'flow=x&csrf=y&decision=approve' });
    expect(consent.status).toBe(403);
  });

  it('more registrations from one address than the limit', async () => {
    let status = 0;
    for (let i = 0; i < 12 && status !== 429; i++) status = (await register([h.callback.url])).status;
    expect(status).toBe(429);
  });
});
