// Token exchange for users who signed in through the front door, with real parts: an Entra-like
// oidc-provider as the company IdP (its login client's tokens are JWTs for the gateway, and it
// answers RFC 8693 exchanges), an internal MCP service on the official SDK that records every
// header, the official SDK client's auth() as each host (DCR), and Chromium signing alice and bob
// in. The subject is the IdP access token the front door gets with the grant's kept IdP refresh
// token; the front door's own tokens never leave the gateway.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auth } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { decodeJwt } from 'jose';
import { startBrowser, type TestBrowser } from '../helpers/browser.js';
import { ACCOUNTS, answerConsent, frontDoorConfig, loginClient, reachConsent, startCallbackListener, startFrontDoorGateway, TestHost, tokenRequest, type CallbackListener } from '../helpers/front-door.js';
import type { TestGateway } from '../helpers/gateway.js';
import { startIdp, type TestIdp } from '../helpers/oidc.js';
import { TOKEN_EXCHANGE_GRANT } from '../helpers/oidc-exchange.js';
import { freePort } from '../helpers/redis.js';
import { startWikiUpstream, type WikiUpstream } from '../helpers/wiki-upstream.js';

interface Harness {
  idp: TestIdp;
  wiki: WikiUpstream;
  gateway: TestGateway;
  browser: TestBrowser;
  callback: CallbackListener;
  origin: string;
  mcpUrl: URL;
  dir: string;
}

let h: Harness;

beforeAll(async () => {
  const dir = await mkdtemp(join(tmpdir(), 'switchyard-exchange-frontdoor-'));
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const mcp = `${origin}/mcp`;
  const idp = await startIdp({
    entra: true,
    // Switchyard's login client may also exchange tokens (`client: login`).
    clients: [{ ...loginClient(origin), grant_types: ['authorization_code', 'refresh_token', TOKEN_EXCHANGE_GRANT] }],
    accounts: ACCOUNTS,
    // Its tokens are for the gateway, as an Entra app's are for the API its scopes name.
    resources: { [mcp]: { scope: '' } },
    defaultResources: { switchyard: mcp },
    exchange: { subjectAudiences: [mcp], targets: { 'api://wiki': { scope: 'wiki.read' } } },
  });
  const wiki = await startWikiUpstream(idp.issuer, 'api://wiki');
  const callback = await startCallbackListener();
  const teams = [
    { name: 'eng', match: { claim: 'groups', value: 'eng' }, allow: ['wiki__whoami'] },
    { name: 'sales', match: { claim: 'groups', value: 'sales' }, allow: ['wiki__whoami'] },
  ];
  const upstreams = { wiki: { http: { url: wiki.url, tokenExchange: { audience: 'api://wiki', scopes: ['wiki.read'] } } } };
  const gateway = await startFrontDoorGateway(frontDoorConfig(idp.issuer, mcp, {}, { teams, upstreams }), port);
  h = { idp, wiki, gateway, browser: await startBrowser(), callback, origin, mcpUrl: new URL(mcp), dir };
}, 60_000);

afterAll(async () => {
  await Promise.allSettled([h?.browser.close(), h?.gateway.close()]);
  await Promise.allSettled([h?.wiki.close(), h?.idp.close(), h?.callback.close()]);
  if (h) await rm(h.dir, { recursive: true, force: true });
});

/** The whole sign-in as a host runs it: auth() to the redirect, the browser, auth() with the code. */
async function signIn(host: TestHost, user: string): Promise<void> {
  expect(await auth(host, { serverUrl: h.mcpUrl })).toBe('REDIRECT');
  const { page } = await reachConsent(h.browser, host.authorizationUrl!.href, user);
  try {
    const answered = h.callback.next();
    await answerConsent(page, 'approve');
    const answer = await answered;
    expect(await auth(host, { serverUrl: h.mcpUrl, authorizationCode: answer.searchParams.get('code')! })).toBe('AUTHORIZED');
  } finally {
    await page.context().close();
  }
}

async function connect(host: TestHost): Promise<Client> {
  const client = new Client({ name: host.clientName, version: '1' });
  await client.connect(new StreamableHTTPClientTransport(h.mcpUrl, { authProvider: host }));
  return client;
}

function textOf(result: unknown): string {
  return ((result as { content?: Array<{ text?: string }> }).content ?? []).map((part) => part.text ?? '').join('');
}

async function whoami(client: Client): Promise<{ sub?: string; act?: { sub?: string } }> {
  return JSON.parse(textOf(await client.callTool({ name: 'wiki__whoami', arguments: {} }))) as { sub?: string; act?: { sub?: string } };
}

/** A call's text, or its error's message: what the model reads either way. */
async function answerOf(client: Client, name: string): Promise<string> {
  return client.callTool({ name, arguments: {} }).then(textOf, (err: unknown) => (err instanceof Error ? err.message : String(err)));
}

async function ping(accessToken: string): Promise<number> {
  const response = await fetch(h.mcpUrl, { method: 'POST', headers: { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }) });
  await response.body?.cancel();
  return response.status;
}

/** The wiki's bearer tokens (every one it received), decoded. */
async function wikiTokens(): Promise<Array<{ token: string; claims: Record<string, unknown> }>> {
  return (await h.wiki.headers())
    .map((record) => record.authorization?.replace(/^Bearer /, ''))
    .filter((token): token is string => !!token)
    .map((token) => ({ token, claims: decodeJwt(token) as Record<string, unknown> }));
}

const exchangesOf = (sub: string): number => h.idp.exchanges.filter((r) => r.sub === sub).length;

describe('token exchange for front-door users', () => {
  let alice: TestHost | undefined;
  let bob: TestHost | undefined;
  let aliceClient: Client | undefined;
  let bobClient: Client | undefined;

  afterAll(async () => {
    await Promise.allSettled([aliceClient?.close(), bobClient?.close()]);
  });

  it('alice and bob, signed in through the front door, reach the wiki as themselves; the wiki never sees a front-door token or an IdP refresh token', async () => {
    alice = new TestHost(h.callback.url, 'Alice Host');
    bob = new TestHost(h.callback.url, 'Bob Host');
    await signIn(alice, 'alice');
    await signIn(bob, 'bob');
    aliceClient = await connect(alice);
    bobClient = await connect(bob);
    expect(await whoami(aliceClient)).toEqual({ sub: 'alice', act: { sub: 'switchyard' } });
    expect(await whoami(bobClient)).toEqual({ sub: 'bob', act: { sub: 'switchyard' } });
    // Two calls at once share the one exchanged token.
    const again = await Promise.all([whoami(aliceClient), whoami(aliceClient)]);
    expect(again.map((answer) => answer.sub)).toEqual(['alice', 'alice']);
    expect(exchangesOf('alice')).toBe(1);
    expect(exchangesOf('bob')).toBe(1);

    const forbidden = [alice.tokens()!.access_token, alice.tokens()!.refresh_token!, bob.tokens()!.access_token, bob.tokens()!.refresh_token!, ...h.idp.refreshTokens];
    expect(h.idp.refreshTokens.length).toBeGreaterThan(0);
    const records = await h.wiki.headers();
    expect(records.length).toBeGreaterThan(0);
    for (const record of records) for (const value of Object.values(record)) for (const token of forbidden) expect(value).not.toContain(token);
    const seen = await wikiTokens();
    expect(seen.map((entry) => entry.claims.sub)).toEqual(expect.arrayContaining(['alice', 'bob']));
    // Only exchanged tokens: the IdP's, for the wiki (the subject was for the gateway).
    for (const { claims } of seen) expect(claims).toMatchObject({ iss: h.idp.issuer, aud: 'api://wiki' });
  }, 90_000);

  it("alice's IdP session revoked: her call says to sign in again, her grant is ended (the host's refresh fails with invalid_grant), and bob goes on", async () => {
    if (!alice || !bob || !aliceClient || !bobClient) throw new Error('the sign-ins of the test before did not finish');
    await h.idp.revokeGrants('alice');
    // The wiki refuses her exchanged token (401): the gateway exchanges anew, and the IdP says invalid_grant.
    for (const { token, claims } of await wikiTokens()) if (claims.sub === 'alice') await h.wiki.revoke(token);
    expect(await answerOf(aliceClient, 'wiki__whoami')).toMatch(/your sign-in at the identity provider has ended; sign in to Switchyard again to use wiki/);

    // Ended by the exchange itself, before the host refreshes: her access token is refused already.
    expect(await ping(alice.tokens()!.access_token)).toBe(401);
    const refused = await tokenRequest(h.origin, { grant_type: 'refresh_token', refresh_token: alice.tokens()!.refresh_token!, client_id: alice.clientInformation()!.client_id });
    expect(refused).toMatchObject({ status: 400, body: { error: 'invalid_grant', error_description: 'the refresh token is unknown, expired or revoked' } });
    expect(h.gateway.logs.some((line) => line.includes('"event":"grant_revoked"') && line.includes('idp_session_ended'))).toBe(true);

    expect((await whoami(bobClient)).sub).toBe('bob');
    // Bob's host refreshes: the IdP refresh token the gateway rotated for his exchange was kept.
    const refreshed = await tokenRequest(h.origin, { grant_type: 'refresh_token', refresh_token: bob.tokens()!.refresh_token!, client_id: bob.clientInformation()!.client_id });
    expect(refreshed.status).toBe(200);
    bob.saveTokens(refreshed.body as unknown as OAuthTokens);
    const again = await connect(bob);
    try {
      expect((await whoami(again)).sub).toBe('bob');
    } finally {
      await again.close();
    }
  }, 90_000);

  it('writes no token of any kind to the log', () => {
    const log = h.gateway.logs.join('\n');
    for (const token of [alice?.tokens()?.access_token, bob?.tokens()?.access_token, ...h.idp.refreshTokens]) if (token) expect(log).not.toContain(token);
    expect(log).not.toContain('eyJ');
  });
});
