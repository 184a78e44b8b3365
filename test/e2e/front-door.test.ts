// The front door with real parts: an Entra-like oidc-provider (no registration, no CIMD, refuses
// `resource`) as the company IdP, the official SDK client's auth() as the host (once with a
// Client ID Metadata Document served over https on loopback, once with DCR), Chromium signing
// alice (group eng) and bob (sales) in and answering the consent page; then tools are listed
// and called, refresh tokens rotate, and an IdP that stops honouring the user ends the grant.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auth } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startBrowser } from '../helpers/browser.js';
import {
  ACCOUNTS,
  answerConsent,
  frontDoorConfig,
  loginClient,
  reachConsent,
  startCallbackListener,
  startDocumentServer,
  startFrontDoorGateway,
  TestHost,
  tokenRequest,
  type FrontDoorParts,
} from '../helpers/front-door.js';
import { upstream } from '../helpers/gateway.js';
import { startIdp } from '../helpers/oidc.js';
import { freePort } from '../helpers/redis.js';
import { selfSigned } from '../helpers/tls.js';

interface Harness extends FrontDoorParts {
  docs: Awaited<ReturnType<typeof startDocumentServer>>;
  mcpUrl: URL;
  cimdUrl: string;
  dir: string;
}

let h: Harness;

beforeAll(async () => {
  const dir = await mkdtemp(join(tmpdir(), 'switchyard-frontdoor-'));
  const cert = await selfSigned(dir, 'docs');
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const idp = await startIdp({ entra: true, clients: [loginClient(origin)], accounts: ACCOUNTS });
  const callback = await startCallbackListener();
  const documents = new Map<string, { body: string; headers?: Record<string, string> }>();
  const docs = await startDocumentServer(cert, documents);
  const cimdUrl = `${docs.origin}/host/client.json`;
  documents.set('/host/client.json', {
    body: JSON.stringify({ client_id: cimdUrl, client_name: 'Test Host', redirect_uris: [callback.url], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none' }),
    headers: { 'cache-control': 'max-age=60' },
  });
  const config = frontDoorConfig(idp.issuer, `${origin}/mcp`, { cimd: { allow: ['localhost'], allowPrivateAddresses: true } }, { upstreams: { everything: upstream.everything() } });
  const gateway = await startFrontDoorGateway(config, port, cert.certPem);
  h = { idp, gateway, browser: await startBrowser(), callback, docs, origin, mcpUrl: new URL(`${origin}/mcp`), cimdUrl, dir };
}, 60_000);

afterAll(async () => {
  await Promise.allSettled([h?.browser.close(), h?.gateway.close()]);
  await Promise.allSettled([h?.idp.close(), h?.callback.close(), h?.docs.close()]);
  if (h) await rm(h.dir, { recursive: true, force: true });
});

/** The whole sign-in as a host runs it: auth() to the redirect, the browser, auth() with the code. */
async function signIn(host: TestHost, user: string): Promise<{ consent: string; answer: URL }> {
  expect(await auth(host, { serverUrl: h.mcpUrl })).toBe('REDIRECT');
  const { page, text } = await reachConsent(h.browser, host.authorizationUrl!.href, user);
  try {
    const answered = h.callback.next();
    await answerConsent(page, 'approve');
    const answer = await answered;
    expect(await auth(host, { serverUrl: h.mcpUrl, authorizationCode: answer.searchParams.get('code')! })).toBe('AUTHORIZED');
    return { consent: text, answer };
  } finally {
    await page.context().close();
  }
}

async function connect(host: TestHost): Promise<Client> {
  const client = new Client({ name: host.clientName, version: '1' });
  await client.connect(new StreamableHTTPClientTransport(h.mcpUrl, { authProvider: host }));
  return client;
}

async function toolNames(client: Client): Promise<string[]> {
  return (await client.listTools()).tools.map((tool) => tool.name).sort();
}

function textOf(result: unknown): string {
  return ((result as { content?: Array<{ text?: string }> }).content ?? []).map((part) => part.text ?? '').join('');
}

describe('the front door', () => {
  it('serves RFC 8414 metadata at every form hosts fetch, and names itself in each endpoint RFC 9728 metadata', async () => {
    const prm = (await (await fetch(`${h.origin}/.well-known/oauth-protected-resource/mcp`)).json()) as Record<string, unknown>;
    expect(prm.authorization_servers).toEqual([h.origin]);
    for (const path of ['/.well-known/oauth-authorization-server', '/.well-known/openid-configuration', '/.well-known/oauth-authorization-server/mcp', '/mcp/.well-known/openid-configuration']) {
      const response = await fetch(`${h.origin}${path}`);
      expect(response.status, path).toBe(200);
      const metadata = (await response.json()) as Record<string, unknown>;
      expect(metadata).toMatchObject({
        issuer: h.origin,
        authorization_endpoint: `${h.origin}/oauth/authorize`,
        token_endpoint: `${h.origin}/oauth/token`,
        registration_endpoint: `${h.origin}/oauth/register`,
        revocation_endpoint: `${h.origin}/oauth/revoke`,
        jwks_uri: `${h.origin}/oauth/jwks`,
        code_challenge_methods_supported: ['S256'],
        client_id_metadata_document_supported: true,
        authorization_response_iss_parameter_supported: true,
      });
    }
    const jwks = (await (await fetch(`${h.origin}/oauth/jwks`)).json()) as { keys: Array<Record<string, unknown>> };
    expect(jwks.keys.length).toBeGreaterThan(0);
    expect(jwks.keys.every((key) => key.kty === 'EC' && key.d === undefined)).toBe(true);
  });

  it('a host with a Client ID Metadata Document signs alice in through the Entra-like IdP, then lists and calls what team eng may', async () => {
    const host = new TestHost(h.callback.url, 'Test Host', h.cimdUrl);
    const { consent, answer } = await signIn(host, 'alice');
    expect(host.clientInformation()?.client_id).toBe(h.cimdUrl);
    expect(consent).toContain('Test Host');
    expect(consent).toContain('localhost');
    expect(consent).toContain('first time');
    expect(consent).toContain('alice@example.test');
    // RFC 9207: the issuer comes with the code.
    expect(answer.searchParams.get('iss')).toBe(h.origin);
    expect(h.docs.fetched).toContain('/host/client.json');
    const client = await connect(host);
    try {
      expect(await toolNames(client)).toEqual(['everything__echo', 'everything__get-sum']);
      expect(textOf(await client.callTool({ name: 'everything__echo', arguments: { message: 'through the front door' } }))).toContain('through the front door');
    } finally {
      await client.close();
    }
    // The IdP never saw a `resource`, and the token is Switchyard's own.
    expect(h.idp.refusedResources()).toBe(0);
    const [header, payload] = host.tokens()!.access_token.split('.').slice(0, 2).map((part) => JSON.parse(Buffer.from(part, 'base64url').toString()) as Record<string, unknown>);
    expect(header).toMatchObject({ alg: 'ES256', typ: 'at+jwt' });
    expect(payload).toMatchObject({ iss: h.origin, aud: `${h.origin}/mcp`, sub: 'alice', client_id: h.cimdUrl, groups: ['eng'] });
  }, 90_000);

  it('a host without one registers (DCR) and signs bob in: team sales sees only what it may, exactly as with an IdP token', async () => {
    const host = new TestHost(h.callback.url, 'DCR Host');
    const { consent } = await signIn(host, 'bob');
    expect(host.clientInformation()?.client_id).toMatch(/^dcr_/);
    expect(consent).toContain('unverified');
    const client = await connect(host);
    try {
      expect(await toolNames(client)).toEqual(['everything__get-sum']);
      expect(textOf(await client.callTool({ name: 'everything__get-sum', arguments: { a: 2, b: 3 } }))).toContain('5');
    } finally {
      await client.close();
    }
    // The same user with a token of the IdP itself: the same principal, the same team.
    const idpToken = await h.idp.issueAccessToken({ sub: 'bob', clientId: 'switchyard', resource: `${h.origin}/mcp` });
    const direct = new Client({ name: 'idp-token', version: '1' });
    await direct.connect(new StreamableHTTPClientTransport(h.mcpUrl, { requestInit: { headers: { authorization: `Bearer ${idpToken}` } } }));
    try {
      expect(await toolNames(direct)).toEqual(['everything__get-sum']);
    } finally {
      await direct.close();
    }
    const principals = h.gateway.logs.filter((line) => line.includes('"event":"token_issued"')).map((line) => (JSON.parse(line) as { principal: string }).principal);
    expect(principals).toContain(`${h.idp.issuer}|bob`);
  }, 90_000);

  it('refresh tokens rotate at every use; the spent one revokes the grant, and its newer tokens stop working', async () => {
    const host = new TestHost(h.callback.url, 'Rotating Host');
    await signIn(host, 'alice');
    const first = host.tokens()!;
    const clientId = host.clientInformation()!.client_id;
    // auth() with a refresh token in hand refreshes.
    expect(await auth(host, { serverUrl: h.mcpUrl })).toBe('AUTHORIZED');
    const second = host.tokens()!;
    expect(second.refresh_token).not.toBe(first.refresh_token);
    const client = await connect(host);
    expect(await toolNames(client)).toEqual(['everything__echo', 'everything__get-sum']);
    await client.close();
    const reused = await tokenRequest(h.origin, { grant_type: 'refresh_token', refresh_token: first.refresh_token!, client_id: clientId });
    expect(reused).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    expect(await tokenRequest(h.origin, { grant_type: 'refresh_token', refresh_token: second.refresh_token!, client_id: clientId })).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    const refused = await fetch(h.mcpUrl, { method: 'POST', headers: { authorization: `Bearer ${second.access_token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }) });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toContain('invalid_token');
    expect(h.gateway.logs.some((line) => line.includes('"event":"refresh_reuse_detected"'))).toBe(true);
  }, 90_000);

  it("keeps the user's IdP session: when the IdP stops honouring it, the host's refresh fails with invalid_grant", async () => {
    const host = new TestHost(h.callback.url, 'Kept Session Host');
    await signIn(host, 'bob');
    const clientId = host.clientInformation()!.client_id;
    const refreshed = await tokenRequest(h.origin, { grant_type: 'refresh_token', refresh_token: host.tokens()!.refresh_token!, client_id: clientId });
    expect(refreshed.status).toBe(200);
    await h.idp.revokeGrants('bob');
    const refused = await tokenRequest(h.origin, { grant_type: 'refresh_token', refresh_token: refreshed.body.refresh_token as string, client_id: clientId });
    expect(refused).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    expect(String(refused.body.error_description)).toContain('sign in again');
  }, 90_000);

  it('counts authorizations, tokens and clients, and writes no token, code or secret to the log', async () => {
    const metrics = await (await fetch(`${h.origin}/metrics`)).text();
    expect(metrics).toMatch(/switchyard_oauth_authorizations_total\{outcome="approved"\} [1-9]/);
    expect(metrics).toMatch(/switchyard_oauth_tokens_total\{grant_type="authorization_code",outcome="issued"\} [1-9]/);
    expect(metrics).toMatch(/switchyard_oauth_tokens_total\{grant_type="refresh_token",outcome="reused"\} 1/);
    expect(metrics).toMatch(/switchyard_oauth_clients\{kind="dcr"\} [1-9]/);
    expect(metrics).toMatch(/switchyard_oauth_clients\{kind="cimd"\} 1/);
    const log = h.gateway.logs.join('\n');
    expect(log).not.toMatch(/"(access_token|refresh_token|code)":"/);
    expect(log).not.toContain('eyJ');
    expect(log).not.toContain('switchyard-login-secret');
  });
});
