// Two gateways behind one public URL, sharing one real redis-server as their credential store:
// a code issued by one is redeemed at the other, a token one signs is accepted by both, a
// refresh at one rotates for both, and a reuse detected at one revokes what the other remembered;
// with rateLimits.store in the same Redis, registrations from one address are limited across both.
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBrowser, type TestBrowser } from '../helpers/browser.js';
import { ACCOUNTS, answerConsent, frontDoorConfig, loginClient, reachConsent, startCallbackListener, startFrontDoorGateway, type CallbackListener } from '../helpers/front-door.js';
import { upstream, type TestGateway } from '../helpers/gateway.js';
import { startIdp, type TestIdp } from '../helpers/oidc.js';
import { freePort, startRedis, type TestRedis } from '../helpers/redis.js';

interface Harness {
  redis: TestRedis;
  idp: TestIdp;
  a: TestGateway;
  b: TestGateway;
  browser: TestBrowser;
  callback: CallbackListener;
  /** The public origin (gateway a's address; b serves the same URL behind the "load balancer"). */
  origin: string;
}

let h: Harness;

beforeAll(async () => {
  const redis = await startRedis();
  const [portA, portB] = [await freePort(), await freePort()];
  const origin = `http://127.0.0.1:${portA}`;
  const idp = await startIdp({ entra: true, clients: [loginClient(origin)], accounts: ACCOUNTS });
  const config = frontDoorConfig(idp.issuer, `${origin}/mcp`, {}, {
    upstreams: { everything: upstream.everything() },
    credentials: { key: 'front-door-test-credentials-key-of-forty-chars', store: { redis: { url: redis.url, prefix: `${redis.prefix}cred:` } } },
    rateLimits: { store: { redis: { url: redis.url, prefix: `${redis.prefix}limits:` } } },
  });
  const a = await startFrontDoorGateway(config, portA);
  const b = await startFrontDoorGateway(config, portB);
  h = { redis, idp, a, b, browser: await startBrowser(), callback: await startCallbackListener(), origin };
}, 60_000);

afterAll(async () => {
  await Promise.allSettled([h?.browser.close(), h?.a.close(), h?.b.close()]);
  await Promise.allSettled([h?.idp.close(), h?.callback.close()]);
  await h?.redis.close();
});

async function post(gateway: TestGateway, path: string, body: Record<string, string>): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(new URL(path, gateway.url), { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(body).toString() });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function initialize(gateway: TestGateway, token: string): Promise<number> {
  const response = await fetch(gateway.url, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'replicas', version: '1' } } }),
  });
  await response.body?.cancel();
  return response.status;
}

/** Resolves once `check` holds, checking every 50 ms; fails after `ms` (a message crossing Redis pub/sub). */
async function eventually(check: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('the front door on two replicas sharing Redis', () => {
  it('a code from one is redeemed at the other; tokens and refreshes are good at both; a reuse at one revokes at both', async () => {
    const register = await fetch(new URL('/oauth/register', h.a.url), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ client_name: 'Replicated', redirect_uris: [h.callback.url] }) });
    const clientId = ((await register.json()) as { client_id: string }).client_id;
    const verifier = randomBytes(32).toString('base64url');
    const authorize = new URL(`${h.origin}/oauth/authorize`);
    authorize.search = new URLSearchParams({ response_type: 'code', client_id: clientId, redirect_uri: h.callback.url, code_challenge: createHash('sha256').update(verifier).digest('base64url'), code_challenge_method: 'S256' }).toString();
    const { page } = await reachConsent(h.browser, authorize.href, 'alice');
    const answered = h.callback.next();
    await answerConsent(page, 'approve');
    const code = (await answered).searchParams.get('code')!;
    await page.context().close();

    // Issued at a, redeemed at b (the client registered at a is known at b too).
    const issued = await post(h.b, '/oauth/token', { grant_type: 'authorization_code', code, code_verifier: verifier, client_id: clientId, redirect_uri: h.callback.url });
    expect(issued.status).toBe(200);
    const first = issued.body as { access_token: string; refresh_token: string };
    expect(await initialize(h.a, first.access_token)).toBe(200);
    expect(await initialize(h.b, first.access_token)).toBe(200);
    expect(await (await fetch(new URL('/oauth/jwks', h.a.url))).json()).toEqual(await (await fetch(new URL('/oauth/jwks', h.b.url))).json());

    // Refreshed at a, the new refresh token works at b; the spent one is known as spent at both.
    const second = (await post(h.a, '/oauth/token', { grant_type: 'refresh_token', refresh_token: first.refresh_token, client_id: clientId })).body as { access_token: string; refresh_token: string };
    const third = await post(h.b, '/oauth/token', { grant_type: 'refresh_token', refresh_token: second.refresh_token, client_id: clientId });
    expect(third.status).toBe(200);
    const latest = third.body as { access_token: string; refresh_token: string };
    expect(await initialize(h.a, latest.access_token)).toBe(200);
    expect(await initialize(h.b, latest.access_token)).toBe(200);

    // The spent refresh token presented at b revokes the grant: a, which verified the latest token before, refuses it too.
    expect(await post(h.b, '/oauth/token', { grant_type: 'refresh_token', refresh_token: second.refresh_token, client_id: clientId })).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    await eventually(async () => (await initialize(h.a, latest.access_token)) === 401, 5_000, 'the revocation to reach replica a');
    expect(await initialize(h.b, latest.access_token)).toBe(401);
    expect(await post(h.a, '/oauth/token', { grant_type: 'refresh_token', refresh_token: latest.refresh_token, client_id: clientId })).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
  }, 90_000);

  it('registrations from one address are limited across both replicas (frontDoor.registrationsPerMinute)', async () => {
    const statuses: number[] = [];
    let retryAfter: string | null = null;
    for (let i = 0; i < 12 && !statuses.includes(429); i++) {
      const response = await fetch(new URL('/oauth/register', (i % 2 === 0 ? h.a : h.b).url), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ client_name: `Fleet ${i}`, redirect_uris: [h.callback.url] }) });
      await response.body?.cancel();
      statuses.push(response.status);
      retryAfter = response.headers.get('retry-after');
    }
    // Ten a minute from 127.0.0.1 in all (the test above registered one); each replica alone would allow twelve.
    expect(statuses.filter((status) => status === 201).length).toBeLessThanOrEqual(10);
    expect(statuses.at(-1)).toBe(429);
    expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
  });
});
