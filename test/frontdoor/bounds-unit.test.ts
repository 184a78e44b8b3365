// The front door's bounds, in-process with a stand-in IdP: an access token never outlives its
// grant (grantMaxAge, or the refresh lifetime when the host stops refreshing); /oauth/authorize
// refuses oversized parameters with a page before anything is stored, counts the sign-ins each
// address starts (authorizationsPerMinute) and all of them (pending flows), and keeps no copy of
// the client's redirect URIs in a flow; the IPv6 loopback redirect is registrable by default
// (RFC 8252 §7.3); the token endpoint answers a refresh asking for more than its grant with
// invalid_scope (RFC 6749 §6), and a request without grant_type with invalid_request (§5.2).
import { createHash } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_REDIRECTS } from '../../src/config/front-door-schema.js';
import type { IdpLogin, PendingLogin } from '../../src/credentials/login.js';
import { openCredentialStore, type CredentialStore } from '../../src/credentials/store.js';
import { Authorization, BROWSER_COOKIE, type AuthorizeDeps } from '../../src/frontdoor/authorize.js';
import type { ClientInfo } from '../../src/frontdoor/cimd.js';
import type { ClientRegistry } from '../../src/frontdoor/clients.js';
import { Grants } from '../../src/frontdoor/grants.js';
import { SigningKeys } from '../../src/frontdoor/keys.js';
import { redirectMatches, redirectRefusal } from '../../src/frontdoor/rules.js';
import { TokenEndpoint } from '../../src/frontdoor/token.js';
import { MemoryBucketStore } from '../../src/ratelimit/memory-store.js';
import { silentLogger } from '../../src/util/log.js';

const KEY = 'bounds-unit-test-credentials-key-0123456789';
const ISSUER = 'https://mcp.example';
const RESOURCE = 'https://mcp.example/mcp';
const CALLBACK = 'http://127.0.0.1:4321/cb';
const VERIFIER = 'dBjftJeZ4CVP-mJ92K1qUeWzpkaA6DsN10hJZfsRiPM';
const CHALLENGE = createHash('sha256').update(VERIFIER).digest('base64url');
const MINUTE = 60_000;
/** A client registered with as many redirect URIs, as long, as DCR lets it. */
const CLIENT: ClientInfo = { clientId: 'dcr_client', kind: 'dcr', name: 'Test client', redirectUris: [CALLBACK, ...Array.from({ length: 19 }, (_, i) => `https://app.example/${i}/${'p'.repeat(2_000)}`)] };

let now: number;
let store: CredentialStore;
let grants: Grants;
let authorization: Authorization;
let tokens: TokenEndpoint;
let outcomes: string[];
let logins: number;

/** A stand-in for the company IdP: every login finishes as alice; `logins` counts the logins started. */
function idpLogin(): IdpLogin {
  const login = {
    async start(): Promise<{ url: string; pending: PendingLogin }> {
      const state = `state-${++logins}`;
      return { url: `https://idp.example/authorize?state=${state}`, pending: { state, nonce: 'n', codeVerifier: 'v' } };
    },
    async finishWithTokens() {
      return { principal: 'https://idp.example|alice', subject: 'alice', claims: {}, refreshToken: undefined };
    },
    async refresh(): Promise<string | undefined> {
      return undefined;
    },
  };
  return login as unknown as IdpLogin;
}

interface Options {
  refreshTtlMs?: number;
  grantMaxAgeMs?: number;
  authorize?: Partial<AuthorizeDeps> & Record<string, unknown>;
}

async function build(options: Options = {}): Promise<void> {
  store = await openCredentialStore('memory', [KEY], undefined, { now: () => now });
  grants = new Grants({ store, refreshTtlMs: options.refreshTtlMs ?? 24 * 60 * MINUTE, ...(options.grantMaxAgeMs ? { grantMaxAgeMs: options.grantMaxAgeMs } : {}), now: () => now, onRevoked: async () => {} });
  const clients = { resolve: async () => CLIENT } as unknown as ClientRegistry;
  const login = idpLogin();
  authorization = new Authorization({ issuer: ISSUER, resources: [RESOURCE], scopes: ['mcp', 'tools'], claims: [], clients, grants, login, store, logger: silentLogger, onAuthorization: (outcome) => outcomes.push(outcome), ...options.authorize });
  const deps = { issuer: ISSUER, tokenTtlMs: 60 * MINUTE, grants, keys: new SigningKeys({ store, now: () => now }), clients, login, logger: silentLogger, onToken: () => {}, now: () => now };
  tokens = new TokenEndpoint(deps);
}

beforeEach(() => {
  // The real time: before the fix the token endpoint read the clock itself.
  now = Date.now();
  outcomes = [];
  logins = 0;
});

afterEach(async () => {
  await store?.close();
});

function authorizeUrl(params: Record<string, string>): URL {
  const url = new URL(`${ISSUER}/oauth/authorize`);
  url.search = new URLSearchParams({ response_type: 'code', client_id: CLIENT.clientId, redirect_uri: CALLBACK, code_challenge: CHALLENGE, code_challenge_method: 'S256', state: 'st', ...params }).toString();
  return url;
}

/** Signs alice in through /oauth/authorize, the IdP's callback and the consent form: the code. */
async function signIn(): Promise<string> {
  const started = await authorization.authorize({ url: authorizeUrl({}), cookies: {} });
  expect(started.status).toBe(302);
  const cookies = { [BROWSER_COOKIE]: /^switchyard_frontdoor=([^;]+)/.exec(started.headers.get('set-cookie') ?? '')![1]! };
  const state = new URL(started.headers.get('location')!).searchParams.get('state')!;
  const consent = await authorization.callback({ url: new URL(`${ISSUER}/oauth/callback?state=${state}&code=idp-code`), cookies });
  const csrf = /name="csrf" value="([^"]+)"/.exec(await consent.text())![1]!;
  const answered = await authorization.consent(new URLSearchParams({ flow: state, csrf, decision: 'approve' }), { url: new URL(`${ISSUER}/oauth/consent`), cookies });
  return new URL(answered.headers.get('location')!).searchParams.get('code')!;
}

async function token(fields: Record<string, string>): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await tokens.token(new URLSearchParams(fields));
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function issue(): Promise<Record<string, unknown>> {
  const issued = await token({ grant_type: 'authorization_code', code: await signIn(), code_verifier: VERIFIER, client_id: CLIENT.clientId, redirect_uri: CALLBACK });
  expect(issued.status).toBe(200);
  return issued.body;
}

const refresh = (refreshToken: string, extra: Record<string, string> = {}) => token({ grant_type: 'refresh_token', refresh_token: refreshToken, client_id: CLIENT.clientId, ...extra });

function claimsOf(accessToken: unknown): { exp: number; iat: number; scope?: string } {
  return JSON.parse(Buffer.from((accessToken as string).split('.')[1]!, 'base64url').toString()) as { exp: number; iat: number; scope?: string };
}

describe("an access token's lifetime", () => {
  it('ends no later than its grant, at grantMaxAge after the sign-in (expires_in says so)', async () => {
    await build({ grantMaxAgeMs: 30 * MINUTE });
    const end = Math.floor((now + 30 * MINUTE) / 1_000);
    const first = await issue();
    expect(claimsOf(first.access_token).exp).toBeLessThanOrEqual(end);
    expect(first.expires_in).toBe(claimsOf(first.access_token).exp - claimsOf(first.access_token).iat);
    now += 20 * MINUTE;
    const renewed = await refresh(first.refresh_token as string);
    expect(renewed.status).toBe(200);
    expect(claimsOf(renewed.body.access_token).exp).toBeLessThanOrEqual(end);
    expect(renewed.body.expires_in).toBeLessThanOrEqual(10 * 60);
    expect(renewed.body.expires_in).toBe(claimsOf(renewed.body.access_token).exp - claimsOf(renewed.body.access_token).iat);
  });

  it('ends no later than the grant lapses unrefreshed (refreshTtl), and each refresh moves that on', async () => {
    await build({ refreshTtlMs: 10 * MINUTE });
    const first = await issue();
    expect(first.expires_in).toBeLessThanOrEqual(10 * 60);
    now += 5 * MINUTE;
    const renewed = await refresh(first.refresh_token as string);
    expect(claimsOf(renewed.body.access_token).exp).toBeLessThanOrEqual(Math.floor((now + 10 * MINUTE) / 1_000));
    expect(renewed.body.expires_in).toBeGreaterThan(9 * 60);
  });

  it('is tokenTtl when the grant lasts longer', async () => {
    await build();
    expect((await issue()).expires_in).toBe(3_600);
  });
});

describe('/oauth/authorize before the sign-in', () => {
  const TOO_LONG: Array<[string, number]> = [
    ['state', 2_048],
    ['code_challenge', 128],
    ['code_challenge_method', 32],
    ['response_type', 64],
    ['scope', 1_024],
    ['resource', 2_048],
    ['redirect_uri', 2_048],
    ['client_id', 2_048],
  ];

  it('refuses a parameter over its bound with a page: no IdP login, nothing stored', async () => {
    await build();
    for (const [name, bound] of TOO_LONG) {
      const refused = await authorization.authorize({ url: authorizeUrl({ [name]: 'x'.repeat(bound + 1) }), cookies: {} });
      expect(refused.status, name).toBe(400);
      expect(refused.headers.get('location'), name).toBeNull();
      expect(await refused.text(), name).toContain(name);
    }
    expect(logins).toBe(0);
    expect(await store.count('frontdoor:flow:')).toBe(0);
    // At its bound, a state is taken.
    expect((await authorization.authorize({ url: authorizeUrl({ state: 's'.repeat(2_048) }), cookies: {} })).status).toBe(302);
  });

  it('keeps no copy of the client\'s registered redirect URIs in the flow', async () => {
    await build();
    const started = await authorization.authorize({ url: authorizeUrl({}), cookies: {} });
    const state = new URL(started.headers.get('location')!).searchParams.get('state')!;
    expect(JSON.stringify(await store.get(`frontdoor:flow:${state}`)).length).toBeLessThan(2_000);
  });

  it('limits the sign-ins one address starts (an IPv6 one by its /64) to authorizationsPerMinute', async () => {
    const limits = new MemoryBucketStore(1_000, () => now);
    await build({ authorize: { limits, authorizationsPerMinute: 3 } });
    const from = async (address: string) => authorization.authorize({ url: authorizeUrl({}), cookies: {}, address } as Parameters<Authorization['authorize']>[0]);
    for (let i = 0; i < 3; i++) expect((await from('192.0.2.1')).status).toBe(302);
    const limited = await from('192.0.2.1');
    expect(limited.status).toBe(429);
    expect(limited.headers.get('location')).toBeNull();
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect((await from('::ffff:192.0.2.1')).status).toBe(429);
    expect((await from('192.0.2.2')).status).toBe(302);
    for (let i = 0; i < 3; i++) expect((await from(`2001:db8::${i + 1}`)).status).toBe(302);
    expect((await from('2001:db8::ff')).status).toBe(429);
    expect(logins).toBe(7);
    expect(await store.count('frontdoor:flow:')).toBe(7);
    expect(outcomes.filter((outcome) => outcome === 'limited')).toHaveLength(3);
    now += 20_000;
    expect((await from('192.0.2.1')).status).toBe(302);
  });

  it('keeps at most pendingFlows flows pending, whatever their addresses; the others get a page saying when to retry', async () => {
    const limits = new MemoryBucketStore(1_000, () => now);
    await build({ authorize: { limits, pendingFlows: 4 } });
    const from = async (address: string) => authorization.authorize({ url: authorizeUrl({}), cookies: {}, address } as Parameters<Authorization['authorize']>[0]);
    const statuses: number[] = [];
    for (let minute = 0; minute < 30; minute++) {
      for (let i = 0; i < 3; i++) {
        const answer = await from(`198.51.100.${minute * 3 + i}`);
        statuses.push(answer.status);
        if (answer.status === 503) expect(Number(answer.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      }
      expect(await store.count('frontdoor:flow:'), `minute ${minute}`).toBeLessThanOrEqual(4);
      now += MINUTE;
    }
    expect(statuses.slice(0, 2)).toEqual([302, 302]);
    expect(statuses.filter((status) => status === 302).length).toBeGreaterThanOrEqual(6);
    expect(new Set(statuses)).toEqual(new Set([302, 503]));
  });
});

describe('the IPv6 loopback redirect (RFC 8252 §7.3)', () => {
  it('is registrable by default, on any port, and matched on any port', () => {
    for (const uri of ['http://[::1]:49152/cb', 'http://[::1]/cb', 'http://[0:0:0:0:0:0:0:1]:8080/cb']) expect(redirectRefusal(uri, DEFAULT_REDIRECTS), uri).toBeUndefined();
    expect(redirectRefusal('http://[::2]:49152/cb', DEFAULT_REDIRECTS)).toBeDefined();
    expect(redirectMatches('http://[::1]:5555/cb', ['http://[::1]:49152/cb'])).toBe(true);
    expect(redirectMatches('http://[::1]:5555/other', ['http://[::1]:49152/cb'])).toBe(false);
  });
});

describe('the token endpoint (RFC 6749 §5.2, §6)', () => {
  beforeEach(async () => {
    await build();
  });

  it('answers a request without grant_type, or an empty one, invalid_request; an unknown grant_type unsupported_grant_type', async () => {
    expect(await token({})).toMatchObject({ status: 400, body: { error: 'invalid_request' } });
    expect(await token({ code: 'x' })).toMatchObject({ status: 400, body: { error: 'invalid_request' } });
    expect(await token({ grant_type: '' })).toMatchObject({ status: 400, body: { error: 'invalid_request' } });
    expect(await token({ grant_type: 'password' })).toMatchObject({ status: 400, body: { error: 'unsupported_grant_type' } });
  });

  it('refuses a refresh asking for a scope the grant lacks (invalid_scope), and the refresh token stays good', async () => {
    const issued = await issue();
    expect(issued.scope).toBe('mcp tools');
    for (const scope of ['mcp admin', 'admin']) {
      expect(await refresh(issued.refresh_token as string, { scope })).toMatchObject({ status: 400, body: { error: 'invalid_scope' } });
    }
    const renewed = await refresh(issued.refresh_token as string);
    expect(renewed).toMatchObject({ status: 200, body: { scope: 'mcp tools' } });
  });

  it('issues a narrower access token when asked; the refresh token keeps the whole grant', async () => {
    const issued = await issue();
    const narrower = await refresh(issued.refresh_token as string, { scope: 'tools' });
    expect(narrower).toMatchObject({ status: 200, body: { scope: 'tools' } });
    expect(claimsOf(narrower.body.access_token).scope).toBe('tools');
    const same = await refresh(narrower.body.refresh_token as string, { scope: 'tools mcp' });
    expect(same.body.scope).toBe('mcp tools');
    const whole = await refresh(same.body.refresh_token as string);
    expect(whole).toMatchObject({ status: 200, body: { scope: 'mcp tools' } });
    expect(claimsOf(whole.body.access_token).scope).toBe('mcp tools');
  });
});
