// The front door's access tokens run out, against real parts (an Entra-like oidc-provider, a
// Chromium sign-in): a token the gateway issued works until its `exp`, and after it is refused
// 401 with the RFC 6750 challenge (error="invalid_token"), although the gateway verified it
// before and keeps verified tokens; the refresh token then gets a new one that works, and the
// refused request is counted among the authentication failures as `expired`.
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBrowser } from '../helpers/browser.js';
import { ACCOUNTS, frontDoorConfig, loginClient, startCallbackListener, startFrontDoorGateway, signInForTokens, tokenRequest, type FrontDoorParts } from '../helpers/front-door.js';
import { upstream } from '../helpers/gateway.js';
import { startIdp } from '../helpers/oidc.js';
import { freePort } from '../helpers/redis.js';

/** Long enough that a token is used well inside it on a busy machine; short enough to wait out. */
const TOKEN_TTL_S = 10;

interface Harness extends FrontDoorParts {
  clientId: string;
}

let h: Harness;

beforeAll(async () => {
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const idp = await startIdp({ entra: true, clients: [loginClient(origin)], accounts: ACCOUNTS });
  const callback = await startCallbackListener();
  const config = frontDoorConfig(idp.issuer, `${origin}/mcp`, { tokenTtl: `${TOKEN_TTL_S}s` }, { upstreams: { everything: upstream.everything() } });
  // No skew tolerated: the token is refused from its `exp` on.
  (config.auth as { oauth: Record<string, unknown> }).oauth.clockTolerance = 0;
  const gateway = await startFrontDoorGateway(config, port);
  h = { idp, gateway, browser: await startBrowser(), callback, origin, clientId: '' };
  const registered = await fetch(`${origin}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ client_name: 'Expiry', redirect_uris: [callback.url], token_endpoint_auth_method: 'none' }) });
  expect(registered.status).toBe(201);
  h.clientId = ((await registered.json()) as { client_id: string }).client_id;
}, 60_000);

afterAll(async () => {
  await Promise.allSettled([h?.browser.close(), h?.gateway.close()]);
  await Promise.allSettled([h?.idp.close(), h?.callback.close()]);
});

/** Signs `user` in with Chromium and trades the code for tokens. */
function signIn(user: string): Promise<Record<string, unknown>> {
  return signInForTokens(h, user);
}

async function initialize(token: string): Promise<Response> {
  return fetch(`${h.origin}/mcp`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'expiry', version: '1' } } }),
  });
}

/** The token's `exp`, in ms since the epoch. */
function expiryOf(token: string): number {
  const claims = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as { exp: number; iat: number };
  expect(claims.exp - claims.iat).toBe(TOKEN_TTL_S);
  return claims.exp * 1_000;
}

async function expiredFailures(): Promise<number> {
  const text = await (await fetch(`${h.origin}/metrics`)).text();
  return Number(/^switchyard_auth_failures_total\{reason="expired"\} (\d+)/m.exec(text)?.[1] ?? 0);
}

describe('the front door’s tokens', () => {
  it('work until their exp, are refused 401 invalid_token after it though verified before, and the refresh token gets a new one', async () => {
    const tokens = await signIn('alice');
    const access = tokens.access_token as string;
    expect(tokens.expires_in).toBe(TOKEN_TTL_S);
    const exp = expiryOf(access);
    // Verified now (and kept as verified), with seconds of its lifetime left (iat is whole seconds).
    expect((await initialize(access)).status).toBe(200);
    expect((await initialize(access)).status).toBe(200);
    expect(exp - Date.now(), 'the token was used within its lifetime').toBeGreaterThan(1_000);
    const failuresBefore = await expiredFailures();
    // The token's lifetime is the event: waited for as far as its exp, and a little past.
    await delay(Math.max(0, exp - Date.now()) + 50);
    const refused = await initialize(access);
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toMatch(/^Bearer .*error="invalid_token"/);
    expect(await expiredFailures()).toBe(failuresBefore + 1);
    const renewed = await tokenRequest(h.origin, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token as string, client_id: h.clientId });
    expect(renewed.status).toBe(200);
    expect(renewed.body.access_token).not.toBe(access);
    expect((await initialize(renewed.body.access_token as string)).status).toBe(200);
  }, 90_000);
});
