// The authorization endpoint is no open redirector (RFC 9700 §4.11.2), in-process with a
// stand-in IdP: a request made to fail sends the browser to the IdP login first, never to the
// client; once the user has signed in, the error goes back only to a redirect URI this user
// approved for this client (a loopback one on any port), else the user gets a page; a failed IdP
// login gets a page; the user's own answer on the consent page (allow or deny) still goes back.
import { createHash } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { IdpLogin, PendingLogin } from '../../src/credentials/login.js';
import { openCredentialStore, type CredentialStore } from '../../src/credentials/store.js';
import { Authorization, BROWSER_COOKIE } from '../../src/frontdoor/authorize.js';
import type { ClientInfo } from '../../src/frontdoor/cimd.js';
import type { ClientRegistry } from '../../src/frontdoor/clients.js';
import { Grants } from '../../src/frontdoor/grants.js';
import { silentLogger } from '../../src/util/log.js';

const KEY = 'authorize-redirects-unit-test-key-0123456789';
const ISSUER = 'https://mcp.example';
const RESOURCE = 'https://mcp.example/mcp';
const IDP = 'https://idp.example';
const EVIL = 'https://evil.example/landing';
const OTHER = 'https://evil.example/other';
const LOOPBACK = 'http://127.0.0.1:4321/cb';
const CHALLENGE = createHash('sha256').update('dBjftJeZ4CVP-mJ92K1qUeWzpkaA6DsN10hJZfsRiPM').digest('base64url');
/** A client anyone could register by DCR under the default `redirects` (https://*, loopback). */
const CLIENT: ClientInfo = { clientId: 'dcr_client', kind: 'dcr', name: 'Totally Legit', redirectUris: [EVIL, OTHER, LOOPBACK] };

let store: CredentialStore;
let authorization: Authorization;
/** Who the stand-in IdP signs in next. */
let user = 'alice';
let outcomes: string[];

/** A stand-in for the company IdP: every login finishes as `user`. */
function idpLogin(): IdpLogin {
  let logins = 0;
  const login = {
    async start(): Promise<{ url: string; pending: PendingLogin }> {
      const state = `state-${++logins}`;
      return { url: `${IDP}/authorize?state=${state}`, pending: { state, nonce: 'n', codeVerifier: 'v' } };
    },
    async finishWithTokens() {
      return { principal: `${IDP}|${user}`, subject: user, claims: {}, refreshToken: undefined };
    },
  };
  return login as unknown as IdpLogin;
}

beforeEach(async () => {
  user = 'alice';
  outcomes = [];
  store = await openCredentialStore('memory', [KEY]);
  const grants = new Grants({ store, refreshTtlMs: 3_600_000, onRevoked: async () => {} });
  const clients = { resolve: async () => CLIENT } as unknown as ClientRegistry;
  authorization = new Authorization({ issuer: ISSUER, resources: [RESOURCE], scopes: [], claims: [], clients, grants, login: idpLogin(), store, logger: silentLogger, onAuthorization: (outcome) => outcomes.push(outcome) });
});

afterEach(async () => {
  await store.close();
});

function authorizeUrl(params: Record<string, string>): URL {
  const url = new URL(`${ISSUER}/oauth/authorize`);
  url.search = new URLSearchParams({ response_type: 'code', client_id: CLIENT.clientId, redirect_uri: EVIL, code_challenge: CHALLENGE, code_challenge_method: 'S256', state: 'st', ...params }).toString();
  return url;
}

/** /oauth/authorize, then (when it sent the browser to the IdP) the IdP's answer at /oauth/callback. */
async function request(params: Record<string, string>, idpAnswer = 'code=idp-code'): Promise<{ first: Response; last: Response; cookies: Record<string, string>; state: string }> {
  const first = await authorization.authorize({ url: authorizeUrl(params), cookies: {} });
  const location = first.headers.get('location');
  if (first.status !== 302 || !location?.startsWith(IDP)) return { first, last: first, cookies: {}, state: '' };
  const cookies = { [BROWSER_COOKIE]: /^switchyard_frontdoor=([^;]+)/.exec(first.headers.get('set-cookie') ?? '')![1]! };
  const state = new URL(location).searchParams.get('state')!;
  const last = await authorization.callback({ url: new URL(`${ISSUER}/oauth/callback?state=${state}&${idpAnswer}`), cookies });
  return { first, last, cookies, state };
}

/** The user's answer on the consent page of a good request at `redirectUri`. */
async function answerConsent(redirectUri: string, decision: 'approve' | 'deny'): Promise<Response> {
  const { last, cookies, state } = await request({ redirect_uri: redirectUri });
  const csrf = /name="csrf" value="([^"]+)"/.exec(await last.text())![1]!;
  return authorization.consent(new URLSearchParams({ flow: state, csrf, decision }), { url: new URL(`${ISSUER}/oauth/consent`), cookies });
}

/** Each way a request can be wrong once its client and redirect URI are good. */
const WRONG: Array<[Record<string, string>, string, string]> = [
  [{ response_type: 'x' }, 'unsupported_response_type', 'response_type must be code'],
  [{ code_challenge: '' }, 'invalid_request', 'code_challenge is required'],
  [{ code_challenge_method: 'plain' }, 'invalid_request', 'code_challenge_method must be S256'],
  [{ code_challenge: 'short' }, 'invalid_request', 'not an S256 challenge'],
  [{ resource: 'https://elsewhere.example/mcp' }, 'invalid_target', 'resource is not an endpoint'],
];

describe('a request made to fail', () => {
  it('by a client this user never approved: the browser goes to the IdP login, then gets a page, never a redirect', async () => {
    for (const [params, , description] of WRONG) {
      const { first, last } = await request(params);
      expect(first.status, description).toBe(302);
      expect(first.headers.get('location')!.startsWith(`${IDP}/`), description).toBe(true);
      expect(last.status, description).toBe(400);
      expect(last.headers.get('location'), description).toBeNull();
      const page = await last.text();
      expect(page).toContain(description);
      expect(page).toContain('Totally Legit');
    }
    expect(outcomes).toEqual(WRONG.map(() => 'invalid_request'));
  });

  it('after this user approved the client at that redirect URI: the error goes back there, with state and iss', async () => {
    expect((await answerConsent(EVIL, 'approve')).status).toBe(303);
    for (const [params, error] of WRONG) {
      const { last } = await request(params);
      expect(last.status).toBe(302);
      const back = new URL(last.headers.get('location')!);
      expect(`${back.origin}${back.pathname}`).toBe(EVIL);
      expect(Object.fromEntries(back.searchParams)).toMatchObject({ error, state: 'st', iss: ISSUER });
    }
  });

  it('approved at another redirect URI of the client, or by another user, or denied: a page', async () => {
    await answerConsent(OTHER, 'approve');
    expect((await request({ response_type: 'x' })).last.headers.get('location')).toBeNull();
    user = 'bob';
    await answerConsent(EVIL, 'approve');
    user = 'alice';
    expect((await request({ response_type: 'x' })).last.headers.get('location')).toBeNull();
    const denied = await answerConsent(EVIL, 'deny');
    expect(new URL(denied.headers.get('location')!).searchParams.get('error')).toBe('access_denied');
    expect((await request({ response_type: 'x' })).last.status).toBe(400);
  });

  it('at a loopback redirect URI approved on another port: the error goes back (RFC 8252 §7.3)', async () => {
    await answerConsent(LOOPBACK, 'approve');
    const { last } = await request({ redirect_uri: 'http://127.0.0.1:5555/cb', resource: 'https://elsewhere.example/mcp' });
    expect(last.status).toBe(302);
    expect(last.headers.get('location')).toMatch(/^http:\/\/127\.0\.0\.1:5555\/cb\?error=invalid_target&/);
  });
});

describe('a login that did not finish at the IdP', () => {
  it('gets a page, not a redirect, even for a good request', async () => {
    const { first, last } = await request({}, 'error=access_denied');
    expect(first.headers.get('location')!.startsWith(`${IDP}/`)).toBe(true);
    expect(last.status).toBe(400);
    expect(last.headers.get('location')).toBeNull();
    expect(await last.text()).toContain('did not finish');
  });
});
