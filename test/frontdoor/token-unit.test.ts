// The token endpoint in-process, its sign-in reached through the authorization endpoint with a
// stand-in IdP: a code is redeemed with the redirect_uri its authorization request sent (and only
// then may omit it), a code redeemed twice at once gives no grant that lasts, and a client revokes
// only its own tokens (RFC 7009).
import { createHash } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { IdpLogin, PendingLogin } from '../../src/credentials/login.js';
import { openCredentialStore, type CredentialStore } from '../../src/credentials/store.js';
import { Authorization, BROWSER_COOKIE } from '../../src/frontdoor/authorize.js';
import type { ClientInfo } from '../../src/frontdoor/cimd.js';
import type { ClientRegistry } from '../../src/frontdoor/clients.js';
import { Grants } from '../../src/frontdoor/grants.js';
import { SigningKeys } from '../../src/frontdoor/keys.js';
import { TokenEndpoint } from '../../src/frontdoor/token.js';
import { createLogger } from '../../src/util/log.js';

const KEY = 'token-unit-test-credentials-key-0123456789';
const ISSUER = 'https://mcp.example';
const RESOURCE = 'https://mcp.example/mcp';
const CALLBACK = 'http://127.0.0.1:4321/cb';
const VERIFIER = 'dBjftJeZ4CVP-mJ92K1qUeWzpkaA6DsN10hJZfsRiPM';
const CHALLENGE = createHash('sha256').update(VERIFIER).digest('base64url');
const CLIENT: ClientInfo = { clientId: 'dcr_client', kind: 'dcr', name: 'Test client', redirectUris: [CALLBACK] };

let now = 1_000_000;
let store: CredentialStore;
let grants: Grants;
let authorization: Authorization;
let tokens: TokenEndpoint;
/** The audit lines written, as their fields. */
let audits: Array<Record<string, unknown>>;

/** A stand-in for the company IdP: every login finishes as alice, with or without an IdP refresh token. */
function idpLogin(idpRefresh: string | undefined): IdpLogin {
  let logins = 0;
  const login = {
    async start(): Promise<{ url: string; pending: PendingLogin }> {
      const state = `state-${++logins}`;
      return { url: `https://idp.example/authorize?state=${state}`, pending: { state, nonce: 'n', codeVerifier: 'v' } };
    },
    async finishWithTokens() {
      return { principal: 'https://idp.example|alice', subject: 'alice', claims: { email: 'alice@example.com' }, refreshToken: idpRefresh };
    },
    async refresh(): Promise<string | undefined> {
      return undefined;
    },
  };
  return login as unknown as IdpLogin;
}

async function build(options: { idpRefresh?: string; grantMaxAgeMs?: number } = {}): Promise<void> {
  store = await openCredentialStore('memory', [KEY], undefined, { now: () => now });
  audits = [];
  const logger = createLogger({ level: 'info', write: (line) => audits.push(JSON.parse(line) as Record<string, unknown>) });
  grants = new Grants({ store, refreshTtlMs: 24 * 3_600_000, ...(options.grantMaxAgeMs ? { grantMaxAgeMs: options.grantMaxAgeMs } : {}), now: () => now, onRevoked: async () => {} });
  const clients = { resolve: async () => CLIENT } as unknown as ClientRegistry;
  const login = idpLogin(options.idpRefresh);
  authorization = new Authorization({ issuer: ISSUER, resources: [RESOURCE], scopes: [], claims: ['email'], clients, grants, login, store, logger, onAuthorization: () => {} });
  tokens = new TokenEndpoint({ issuer: ISSUER, tokenTtlMs: 3_600_000, grants, keys: new SigningKeys({ store, now: () => now }), clients, login, logger, onToken: () => {} });
}

beforeEach(() => {
  now = 1_000_000;
});

afterEach(async () => {
  await store.close();
});

/** Signs alice in through /oauth/authorize, the IdP's callback and the consent form: the code the client receives. */
async function signIn(params: Record<string, string>): Promise<string> {
  const url = new URL(`${ISSUER}/oauth/authorize`);
  url.search = new URLSearchParams({ response_type: 'code', client_id: CLIENT.clientId, code_challenge: CHALLENGE, code_challenge_method: 'S256', state: 'st', ...params }).toString();
  const started = await authorization.authorize({ url, cookies: {} });
  expect(started.status).toBe(302);
  const browser = /^switchyard_frontdoor=([^;]+)/.exec(started.headers.get('set-cookie') ?? '')![1]!;
  const cookies = { [BROWSER_COOKIE]: browser };
  const state = new URL(started.headers.get('location')!).searchParams.get('state')!;
  const consent = await authorization.callback({ url: new URL(`${ISSUER}/oauth/callback?state=${state}&code=idp-code`), cookies });
  const csrf = /name="csrf" value="([^"]+)"/.exec(await consent.text())![1]!;
  const answered = await authorization.consent(new URLSearchParams({ flow: state, csrf, decision: 'approve' }), { url: new URL(`${ISSUER}/oauth/consent`), cookies });
  expect(answered.status).toBe(303);
  return new URL(answered.headers.get('location')!).searchParams.get('code')!;
}

async function redeem(code: string, extra: Record<string, string> = {}): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await tokens.token(new URLSearchParams({ grant_type: 'authorization_code', code, code_verifier: VERIFIER, client_id: CLIENT.clientId, ...extra }));
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function refresh(refreshToken: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await tokens.token(new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refreshToken, client_id: CLIENT.clientId }));
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

const refusals = (): unknown[] => audits.filter((line) => line.event === 'token_refused' || line.event === 'refresh_reuse_detected').map((line) => line.reason);

describe('the redirect_uri of a code (RFC 6749 §4.1.3)', () => {
  beforeEach(async () => {
    await build();
  });

  it('must be sent again when the authorization request sent it', async () => {
    const code = await signIn({ redirect_uri: CALLBACK });
    expect(await redeem(code)).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    expect(refusals()).toEqual(['redirect_uri']);
  });

  it('must be the one the authorization request sent', async () => {
    const code = await signIn({ redirect_uri: CALLBACK });
    expect(await redeem(code, { redirect_uri: 'http://127.0.0.1:4321/other' })).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    expect(refusals()).toEqual(['redirect_uri']);
  });

  it('may be left out when the authorization request left it out (the client registered one)', async () => {
    expect((await redeem(await signIn({}))).status).toBe(200);
    expect((await redeem(await signIn({}), { redirect_uri: CALLBACK })).status).toBe(200);
    expect((await redeem(await signIn({ redirect_uri: CALLBACK }), { redirect_uri: CALLBACK })).status).toBe(200);
  });
});

describe('a code redeemed twice at once (RFC 6749 §4.1.2)', () => {
  beforeEach(async () => {
    await build();
  });

  it('is refused as reused, and whatever grant it gave is revoked', async () => {
    const code = await signIn({ redirect_uri: CALLBACK });
    const answers = await Promise.all([redeem(code, { redirect_uri: CALLBACK }), redeem(code, { redirect_uri: CALLBACK })]);
    expect(answers.filter((answer) => answer.status === 400 && answer.body.error === 'invalid_grant').length).toBeGreaterThanOrEqual(1);
    expect(refusals()).toContain('reused');
    expect(refusals()).not.toContain('unknown');
    for (const issued of answers.filter((answer) => answer.status === 200)) {
      expect((await refresh(issued.body.refresh_token as string)).body.error).toBe('invalid_grant');
    }
    expect(await store.count('frontdoor:grant:')).toBe(0);
  });
});

describe('a grant whose IdP gave no refresh token', () => {
  it('renews until grantMaxAge after the sign-in, then is refused: the host signs in again', async () => {
    const hour = 3_600_000;
    await build({ grantMaxAgeMs: 48 * hour });
    let refreshToken = (await redeem(await signIn({}))).body.refresh_token as string;
    for (let hours = 12; hours < 48; hours += 12) {
      now += 12 * hour;
      const renewed = await refresh(refreshToken);
      expect(renewed.status, `a refresh ${hours} h after the sign-in`).toBe(200);
      refreshToken = renewed.body.refresh_token as string;
    }
    now += 12 * hour;
    expect(await refresh(refreshToken)).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    // The store forgets the grant at that age ('unknown'); a replica whose clock runs ahead finds it 'expired'.
    expect(refusals()).toHaveLength(1);
    expect(['expired', 'unknown']).toContain(refusals()[0]);
  });
});

describe('revocation (RFC 7009)', () => {
  beforeEach(async () => {
    await build();
  });

  async function revoke(fields: Record<string, string>): Promise<{ status: number; body: string }> {
    const response = await tokens.revoke(new URLSearchParams(fields));
    return { status: response.status, body: await response.text() };
  }

  it("refuses another client's token (invalid_grant, §2.1), which keeps working", async () => {
    const issued = (await redeem(await signIn({}))).body;
    const refused = await revoke({ token: issued.refresh_token as string, client_id: 'dcr_other' });
    expect(refused.status).toBe(400);
    expect(JSON.parse(refused.body)).toMatchObject({ error: 'invalid_grant' });
    expect(refusals()).toEqual(['client']);
    expect(audits.some((line) => line.event === 'grant_revoked')).toBe(false);
    expect((await refresh(issued.refresh_token as string)).status).toBe(200);
  });

  it('needs the client to name itself: without client_id nothing is revoked', async () => {
    const issued = (await redeem(await signIn({}))).body;
    const refused = await revoke({ token: issued.refresh_token as string });
    expect(refused.status).toBe(400);
    expect(JSON.parse(refused.body)).toMatchObject({ error: 'invalid_request' });
    expect((await refresh(issued.refresh_token as string)).status).toBe(200);
  });

  it("revokes the client's own grant, and answers 200 for a token that names nothing (§2.2)", async () => {
    const issued = (await redeem(await signIn({}))).body;
    expect(await revoke({ token: issued.refresh_token as string, client_id: CLIENT.clientId })).toEqual({ status: 200, body: '' });
    expect(await refresh(issued.refresh_token as string)).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    expect(await revoke({ token: issued.refresh_token as string, client_id: CLIENT.clientId })).toEqual({ status: 200, body: '' });
    expect(await revoke({ token: 'not-a-token', client_id: 'dcr_other' })).toEqual({ status: 200, body: '' });
  });
});
