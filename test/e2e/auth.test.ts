// Authentication at the edge against a real authorization-server stand-in (MCP authorization
// spec, RFC 6750, RFC 9728): metadata, exact challenges for every refusal, the JWKS under floods
// and rotation, sessions bound to principals, no token passthrough, and the gateway's own
// client-credentials token towards an upstream.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { createServer } from 'node:net';
import type { JWTPayload } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/auth/api-keys.js';
import { startFlakyHttp, type FlakyHttp } from '../helpers/flaky-http.js';
import { connectClient, journal, startGateway, terminateSession, textOf, upstream, type TestGateway } from '../helpers/gateway.js';
import { startAuthServer, type AuthServer } from '../helpers/oauth.js';
import { scrape } from '../helpers/metrics.js';
import { httpExchange, initializeRaw, messagesOf, postRaw } from '../helpers/raw-http.js';

const RESOURCE = 'https://mcp.example.test/mcp';
const METADATA_URL = 'https://mcp.example.test/.well-known/oauth-protected-resource/mcp';
const SCOPE = 'mcp:tools';
const API_KEY = 'sk-switchyard-ci-5d0c1e7a9b3f42e8';
const UNSCOPED_KEY = 'sk-switchyard-bare-0a8e2b7c91d4f3a6';
/** The flaky upstream's own credential, from the gateway's config. */
const UPSTREAM_AUTHORIZATION = 'Bearer static-upstream-credential-7f3a91';
/** Bounds every wait for something that should happen soon. */
const PROMPT_MS = 5_000;

const INIT = { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } };
const rpc = (id: number, method: string, params: Record<string, unknown> = {}) => ({ jsonrpc: '2.0', id, method, params });
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Polls `check` until it returns true, bounded. */
async function until(check: () => Promise<boolean>, what: string, timeoutMs = PROMPT_MS): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(25);
  }
}

/** POSTs a JSON-RPC message with the headers a conforming client sends and `headers`; the body unread. */
function post(url: URL | string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return postRaw(url, body, { headers });
}

/** A ping without a session: the cheapest request that still passes authentication. */
async function probe(gw: TestGateway, headers: Record<string, string>): Promise<number> {
  const res = await post(gw.url, rpc(1, 'ping'), headers);
  await res.body?.cancel();
  return res.status;
}

/** The parameters of a `Bearer k="v", ...` challenge; fails on anything else. */
function challenge(header: string | null): Record<string, string> {
  expect(header).toMatch(/^Bearer /);
  const rest = header!.slice('Bearer '.length);
  const params: Record<string, string> = {};
  const pattern = /\s*([a-z_]+)="([^"\\]*)"\s*(?:,|$)/gy;
  let match: RegExpExecArray | null;
  let end = 0;
  while ((match = pattern.exec(rest)) !== null && match[0] !== '') {
    expect(params[match[1]!], `repeated ${match[1]}`).toBeUndefined();
    params[match[1]!] = match[2]!;
    end = pattern.lastIndex;
  }
  expect(end, `unparsed challenge: ${header}`).toBe(rest.length);
  return params;
}

/** Status, exact challenge parameters, and a JSON-RPC error body without an id. */
async function expectRefusal(res: Response, status: number, params: Record<string, string>): Promise<void> {
  expect(res.status).toBe(status);
  expect(challenge(res.headers.get('www-authenticate'))).toEqual(params);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  expect(await res.json()).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32600, message: expect.any(String) } });
}

const invalidToken = (description: string) => ({ error: 'invalid_token', error_description: description, resource_metadata: METADATA_URL });

/** An SDK client with `headers` on every request; its session is ended and closed afterwards. */
async function withClient<T>(gw: TestGateway, headers: Record<string, string>, run: (client: Client) => Promise<T>): Promise<T> {
  const client = await connectClient(gw.url, {}, undefined, headers);
  try {
    return await run(client);
  } finally {
    await terminateSession(client).catch(() => {});
    await client.close();
  }
}

function sessionOf(client: Client): string {
  return (client.transport as StreamableHTTPClientTransport).sessionId!;
}


/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

let as: AuthServer;

beforeAll(async () => {
  as = await startAuthServer();
});

afterAll(async () => {
  await as?.close();
});

/** Claims of a good token for the main gateway; an override of `undefined` removes the claim. */
function claims(overrides: Record<string, unknown> = {}): JWTPayload {
  const now = Math.floor(Date.now() / 1_000);
  const all: Record<string, unknown> = { iss: as.issuer, aud: RESOURCE, sub: 'alice', scope: SCOPE, iat: now, exp: now + 300, ...overrides };
  for (const [key, value] of Object.entries(all)) if (value === undefined) delete all[key];
  return all as JWTPayload;
}

const oauthConfig = (overrides: Record<string, unknown> = {}) => ({
  issuer: as.issuer,
  jwksUri: as.jwksUri,
  scopes: [SCOPE],
  algorithms: ['RS256', 'ES256'],
  jwksCooldown: '30s',
  ...overrides,
});

/** A gateway whose resource is RESOURCE, fronting the rogue fixture (and `extra` upstreams). */
function startProtected(oauth: Record<string, unknown>, extra: Record<string, unknown> = {}, more: Record<string, unknown> = {}): Promise<TestGateway> {
  return startGateway({
    listen: { port: 0, publicUrl: RESOURCE },
    auth: {
      oauth,
      apiKeys: [
        { id: 'ci', hash: hashApiKey(API_KEY), team: 'platform', scopes: [SCOPE] },
        { id: 'bare', hash: hashApiKey(UNSCOPED_KEY), scopes: [] },
      ],
    },
    upstreams: { rogue: upstream.rogue(), ...extra },
    ...more,
  });
}

describe('the protected endpoint', () => {
  let flaky: FlakyHttp;
  let gw: TestGateway;

  beforeAll(async () => {
    flaky = await startFlakyHttp();
    gw = await startProtected(oauthConfig(), { remote: { http: { url: flaky.url, headers: { Authorization: UPSTREAM_AUTHORIZATION } } } }, { metrics: { enabled: true } });
  });

  afterAll(async () => {
    await gw?.close();
    await flaky?.close();
  });

  /** The gateway still answers health checks and good tokens. */
  async function expectStillServing(): Promise<void> {
    expect((await fetch(new URL('/healthz', gw.url))).status).toBe(200);
    expect(await probe(gw, bearer(await as.sign(claims())))).toBe(200);
  }

  it('serves protected resource metadata naming the configured resource, whatever the Host', async () => {
    const expected = { resource: RESOURCE, authorization_servers: [as.issuer], scopes_supported: [SCOPE], bearer_methods_supported: ['header'], resource_name: expect.any(String) };
    for (const path of ['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource']) {
      const url = new URL(path, gw.url);
      for (const host of [url.host, `localhost:${url.port}`, 'mcp.example.test']) {
        // An explicit Host header: fetch does not let a caller choose it.
        const res = await httpExchange(url, { method: 'GET', headers: { host }, timeoutMs: PROMPT_MS });
        expect(res.status, `${path} with Host ${host}`).toBe(200);
        expect(JSON.parse(res.text), `${path} with Host ${host}`).toEqual(expected);
      }
      // A foreign Host is refused outright; it is never reflected into the document.
      expect((await httpExchange(url, { method: 'GET', headers: { host: 'attacker.example' }, timeoutMs: PROMPT_MS })).status).toBe(403);
    }
  });

  it('challenges a request without a token with resource_metadata and scope', async () => {
    const expected = `Bearer resource_metadata="${METADATA_URL}", scope="${SCOPE}"`;
    const init = await post(gw.url, rpc(1, 'initialize', INIT));
    expect(init.headers.get('www-authenticate')).toBe(expected);
    await expectRefusal(init, 401, { resource_metadata: METADATA_URL, scope: SCOPE });
    for (const method of ['GET', 'DELETE']) {
      const res = await fetch(gw.url, { method, headers: { accept: 'text/event-stream', 'mcp-session-id': 'whatever' } });
      expect(res.headers.get('www-authenticate'), method).toBe(expected);
      await expectRefusal(res, 401, { resource_metadata: METADATA_URL, scope: SCOPE });
    }
  });

  const bad: [string, () => Promise<string>, string][] = [
    ['a token for another audience', () => as.sign(claims({ aud: 'https://other.example.test/mcp' })), 'the token was not issued for this resource'],
    ['a token from another issuer', () => as.sign(claims({ iss: 'https://evil.example.test' })), 'the token was not issued by the expected issuer'],
    ['a token expired beyond the clock tolerance', () => as.sign(claims({ exp: Math.floor(Date.now() / 1_000) - 120 })), 'the token has expired'],
    ['a token without exp', () => as.sign(claims({ exp: undefined })), "the token's exp claim is missing"],
    ['a token not valid yet', () => as.sign(claims({ nbf: Math.floor(Date.now() / 1_000) + 600 })), 'the token is not yet valid'],
    ['a token without sub', () => as.sign(claims({ sub: undefined })), 'the token has no sub claim'],
    ['an unsigned token (alg none)', async () => as.unsigned(claims(), { kid: as.rsa.kid }), 'the token is signed with an algorithm that is not allowed'],
    ['HS256 keyed with the RSA public key PEM', () => as.hs256WithPublicKey(claims(), 'pem'), 'the token is signed with an algorithm that is not allowed'],
    ['HS256 keyed with the RSA public key DER', () => as.hs256WithPublicKey(claims(), 'der'), 'the token is signed with an algorithm that is not allowed'],
    ['PS256 with the published RSA key', () => as.sign(claims(), { alg: 'PS256' }), 'the token is signed with an algorithm that is not allowed'],
    ['RS512 with the published RSA key', () => as.sign(claims(), { alg: 'RS512' }), 'the token is signed with an algorithm that is not allowed'],
    [
      'a signature by another key under a published kid',
      async () => as.sign(claims(), { key: await as.createKey('RS256', 'impostor'), kid: as.rsa.kid }),
      'the token signature is invalid',
    ],
    ['a tampered payload', async () => {
      const [header, , signature] = (await as.sign(claims({ sub: 'alice' }))).split('.');
      return `${header}.${Buffer.from(JSON.stringify(claims({ sub: 'admin' }))).toString('base64url')}.${signature}`;
    }, 'the token signature is invalid'],
    ['a JWT-shaped garbage token', async () => 'eyJub3QiOiJqc29uIn0.Z2FyYmFnZQ.Z2FyYmFnZQ', 'the token is malformed'],
    ['a garbage opaque token', async () => 'definitely-not-a-token', 'the API key is not valid'],
  ];

  it.each(bad)('refuses %s with 401 invalid_token, and keeps serving', async (_name, make, description) => {
    const res = await post(gw.url, rpc(1, 'initialize', INIT), bearer(await make()));
    await expectRefusal(res, 401, invalidToken(description));
    await expectStillServing();
  });

  it('accepts a token expired only within the clock tolerance', async () => {
    const token = await as.sign(claims({ exp: Math.floor(Date.now() / 1_000) - 10 }));
    const pid = await withClient(gw, bearer(token), async (client) => textOf(await client.callTool({ name: 'rogue__pid', arguments: {} })));
    expect(pid).toMatch(/^\d+$/);
  });

  it('answers a token without the required scope 403 insufficient_scope naming the scope', async () => {
    const expected = { error: 'insufficient_scope', scope: SCOPE, resource_metadata: METADATA_URL, error_description: `the token lacks scope ${SCOPE}` };
    await expectRefusal(await post(gw.url, rpc(1, 'initialize', INIT), bearer(await as.sign(claims({ scope: 'mcp:read profile' })))), 403, expected);
    await expectRefusal(await post(gw.url, rpc(1, 'initialize', INIT), bearer(await as.sign(claims({ scope: undefined })))), 403, expected);
    await expectRefusal(await post(gw.url, rpc(1, 'initialize', INIT), bearer(UNSCOPED_KEY)), 403, expected);
    // The scope may also come as an `scp` array.
    expect(await probe(gw, bearer(await as.sign(claims({ scope: undefined, scp: ['profile', SCOPE] }))))).toBe(200);
  });

  it('refetches the JWKS at most once per cooldown under a flood of unknown kids', async () => {
    const stranger = await as.createKey('RS256', 'stranger');
    const tokens = await Promise.all(Array.from({ length: 50 }, (_, i) => as.sign(claims(), { key: stranger, kid: `unknown-${i}` })));
    // The gateway has its key set already; the flood comes on top of that.
    expect(await probe(gw, bearer(await as.sign(claims())))).toBe(200);
    const before = as.jwksFetches;
    expect(before).toBeGreaterThan(0);
    const flood = async (target: TestGateway): Promise<void> => {
      const answers = await Promise.all(tokens.map((token) => post(target.url, rpc(1, 'ping'), bearer(token))));
      for (const res of answers) await expectRefusal(res, 401, invalidToken('the token is signed with an unknown key'));
    };
    await flood(gw);
    await flood(gw);
    expect(as.jwksFetches - before).toBeLessThanOrEqual(1);
    await expectStillServing();
    // A gateway that has not fetched the set yet fetches it once for the whole flood.
    const fresh = await startProtected(oauthConfig());
    try {
      const start = as.jwksFetches;
      await flood(fresh);
      expect(as.jwksFetches - start).toBe(1);
    } finally {
      await fresh.close();
    }
  });

  it('refuses a token in the query string with 400 invalid_request, even beside a good header', async () => {
    const token = await as.sign(claims());
    const expected = {
      error: 'invalid_request',
      error_description: 'tokens in the query string are not accepted; send an Authorization header',
      resource_metadata: METADATA_URL,
    };
    const inQuery = new URL(gw.url);
    inQuery.searchParams.set('access_token', token);
    await expectRefusal(await post(inQuery, rpc(1, 'initialize', INIT)), 400, expected);
    await expectRefusal(await post(inQuery, rpc(1, 'initialize', INIT), bearer(token)), 400, expected);
  });

  it('accepts an ES256 token and API keys as bearer or x-api-key; refuses an unknown key', async () => {
    const es = await as.sign(claims({ sub: 'carol' }), { key: as.ec });
    for (const headers of [bearer(es), bearer(API_KEY), { 'x-api-key': API_KEY }]) {
      const pid = await withClient(gw, headers, async (client) => textOf(await client.callTool({ name: 'rogue__pid', arguments: {} })));
      expect(pid, JSON.stringify(Object.keys(headers))).toMatch(/^\d+$/);
    }
    const wrong = `${API_KEY}x`;
    await expectRefusal(await post(gw.url, rpc(1, 'initialize', INIT), bearer(wrong)), 401, invalidToken('the API key is not valid'));
    await expectRefusal(await post(gw.url, rpc(1, 'initialize', INIT), { 'x-api-key': wrong }), 401, invalidToken('the API key is not valid'));
  });

  it('needs a token on every request, not only on initialize', async () => {
    const auth = bearer(await as.sign(claims()));
    // initialize and notifications/initialized (202), both with the token.
    const { id: session } = await initializeRaw(gw.url, { id: 1, headers: auth });
    try {
      const sessionHeaders = { 'mcp-session-id': session, 'mcp-protocol-version': INIT.protocolVersion };
      const missing = { resource_metadata: METADATA_URL, scope: SCOPE };
      await expectRefusal(await post(gw.url, rpc(2, 'tools/list'), sessionHeaders), 401, missing);
      await expectRefusal(await fetch(gw.url, { headers: { ...sessionHeaders, accept: 'text/event-stream' } }), 401, missing);
      await expectRefusal(await fetch(gw.url, { method: 'DELETE', headers: sessionHeaders }), 401, missing);
      // None of that ended or harmed the session.
      const listed = await post(gw.url, rpc(3, 'tools/list'), { ...auth, ...sessionHeaders });
      expect(listed.status).toBe(200);
      // JSON, or SSE where an upstream answers as a stream (the gateway answers as it would).
      const [answer] = messagesOf<{ result: { tools: unknown[] } }>({ headers: listed.headers, text: await listed.text() });
      expect(answer!.result.tools.length).toBeGreaterThan(0);
    } finally {
      await fetch(gw.url, { method: 'DELETE', headers: { ...auth, 'mcp-session-id': session } });
    }
  });

  it("answers another principal's session id 404 and leaves the owner's session working", async () => {
    await withClient(gw, bearer(await as.sign(claims({ sub: 'alice' }))), async (alice) => {
      const session = sessionOf(alice);
      const others = [bearer(await as.sign(claims({ sub: 'bob' }))), bearer(API_KEY)];
      for (const headers of others) {
        const sessionHeaders = { ...headers, 'mcp-session-id': session };
        const call = await post(gw.url, rpc(7, 'tools/call', { name: 'rogue__pid', arguments: {} }), sessionHeaders);
        expect(call.status).toBe(404);
        expect(await call.json()).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Session not found' } });
        expect((await fetch(gw.url, { headers: { ...sessionHeaders, accept: 'text/event-stream' } })).status).toBe(404);
        expect((await fetch(gw.url, { method: 'DELETE', headers: sessionHeaders })).status).toBe(404);
      }
      expect(textOf(await alice.callTool({ name: 'rogue__pid', arguments: {} }))).toMatch(/^\d+$/);
      // Alice with a fresh token under another key is still alice: same issuer and sub.
      const aliceAgain = bearer(await as.sign(claims({ sub: 'alice' }), { key: as.ec }));
      const same = await post(gw.url, rpc(8, 'tools/list'), { ...aliceAgain, 'mcp-session-id': session });
      expect(same.status).toBe(200);
      await same.body?.cancel();
    });
  });

  it("never passes the client's credential to an upstream", async () => {
    const token = await as.sign(claims({ sub: 'dave' }));
    const signature = token.split('.')[2]!;
    const seen: string[] = [];
    for (const headers of [bearer(token), { 'x-api-key': API_KEY }]) {
      await withClient(gw, headers, async (client) => {
        for (let i = 0; i < 3; i++) expect(textOf(await client.callTool({ name: 'remote__echo', arguments: { message: `m${i}` } }))).toBe(`echo: m${i}`);
        seen.push(JSON.stringify(await journal(client, 'rogue__journal')));
      });
    }
    const calls = (await flaky.stats()).toolCalls;
    expect(calls.length).toBe(6);
    for (const call of calls) expect(call.authorization).toBe(UPSTREAM_AUTHORIZATION);
    for (const text of seen) {
      expect(text).toContain('"method":"tools/call"');
      for (const secret of [token, signature, API_KEY]) expect(text.includes(secret)).toBe(false);
    }
  });

  it('counts refusals by reason in switchyard_auth_failures_total, scraped without a token', async () => {
    const metrics = new URL('/metrics', gw.url);
    const count = (m: Map<string, number>, reason: string): number => m.get(`switchyard_auth_failures_total{reason="${reason}"}`) ?? 0;
    const before = await scrape(metrics);
    const inQuery = new URL(gw.url);
    inQuery.searchParams.set('access_token', 'x');
    const refusals: [string, Promise<Response>][] = [
      ['missing', post(gw.url, rpc(1, 'ping'))],
      ['query_token', post(inQuery, rpc(1, 'ping'))],
      ['expired', as.sign(claims({ exp: Math.floor(Date.now() / 1_000) - 120 })).then((t) => post(gw.url, rpc(1, 'ping'), bearer(t)))],
      ['audience', as.sign(claims({ aud: 'https://other.example.test/mcp' })).then((t) => post(gw.url, rpc(1, 'ping'), bearer(t)))],
      ['issuer', as.sign(claims({ iss: 'https://evil.example.test' })).then((t) => post(gw.url, rpc(1, 'ping'), bearer(t)))],
      ['algorithm', post(gw.url, rpc(1, 'ping'), bearer(as.unsigned(claims())))],
      ['algorithm', as.hs256WithPublicKey(claims()).then((t) => post(gw.url, rpc(1, 'ping'), bearer(t)))],
      ['claims', as.sign(claims({ exp: undefined })).then((t) => post(gw.url, rpc(1, 'ping'), bearer(t)))],
      ['malformed', post(gw.url, rpc(1, 'ping'), bearer('eyJub3QiOiJqc29uIn0.Z2FyYmFnZQ.Z2FyYmFnZQ'))],
      ['unknown_api_key', post(gw.url, rpc(1, 'ping'), { 'x-api-key': 'nope-nope-nope' })],
      ['insufficient_scope', post(gw.url, rpc(1, 'ping'), bearer(UNSCOPED_KEY))],
    ];
    const expected = new Map<string, number>();
    for (const [reason, pending] of refusals) {
      const res = await pending;
      expect(res.status, reason).toBeGreaterThanOrEqual(400);
      await res.body?.cancel();
      expected.set(reason, (expected.get(reason) ?? 0) + 1);
    }
    expect(await probe(gw, bearer(API_KEY))).toBe(200);
    const after = await scrape(metrics);
    for (const [reason, delta] of expected) expect(count(after, reason) - count(before, reason), reason).toBe(delta);
    const total = (m: Map<string, number>): number => [...m].filter(([k]) => k.startsWith('switchyard_auth_failures_total{')).reduce((sum, [, v]) => sum + v, 0);
    expect(total(after) - total(before)).toBe(refusals.length);
  });
});

describe('gateways with other token settings', () => {
  it('requires typ at+jwt when configured', async () => {
    const gw = await startProtected(oauthConfig({ typ: 'at+jwt' }));
    try {
      const untyped = await as.sign(claims());
      await expectRefusal(await post(gw.url, rpc(1, 'initialize', INIT), bearer(untyped)), 401, invalidToken("the token's typ claim is invalid"));
      const plainJwt = await as.sign(claims(), { typ: 'JWT' });
      await expectRefusal(await post(gw.url, rpc(1, 'initialize', INIT), bearer(plainJwt)), 401, invalidToken("the token's typ claim is invalid"));
      const typed = await as.sign(claims(), { typ: 'at+jwt' });
      const pid = await withClient(gw, bearer(typed), async (client) => textOf(await client.callTool({ name: 'rogue__pid', arguments: {} })));
      expect(pid).toMatch(/^\d+$/);
      // RFC 9068 §2.1: "application/at+jwt" is the same type.
      expect(await probe(gw, bearer(await as.sign(claims(), { typ: 'application/at+jwt' })))).toBe(200);
    } finally {
      await gw.close();
    }
  });

  it('picks up a key added to the JWKS once the cooldown allows a refetch, and drops a removed one', async () => {
    const gw = await startProtected(oauthConfig({ jwksCooldown: '200ms' }));
    const rotated = await as.createKey('RS256', `rotated-${Date.now()}`);
    try {
      // Verified once and remembered: the same token string must still fall with its key.
      const old = await as.sign(claims());
      expect(await probe(gw, bearer(old))).toBe(200);
      expect(await probe(gw, bearer(old))).toBe(200);
      const fetched = as.jwksFetches;
      // Published after the gateway fetched the set: unknown to it until it refetches.
      as.publish(rotated);
      const fresh = await as.sign(claims({ sub: 'rotated-user' }), { key: rotated });
      await until(async () => (await probe(gw, bearer(fresh))) === 200, 'the rotated key to be accepted');
      expect(as.jwksFetches).toBeGreaterThan(fetched);
      const pid = await withClient(gw, bearer(fresh), async (client) => textOf(await client.callTool({ name: 'rogue__pid', arguments: {} })));
      expect(pid).toMatch(/^\d+$/);

      // The old key is retired. Tokens under new kids make the gateway refetch the set (at most
      // once per cooldown); after that the retired key no longer verifies.
      as.unpublish(as.rsa.kid);
      const stranger = await as.createKey('RS256', 'stranger-rotation');
      let attempt = 0;
      await until(async () => {
        await probe(gw, bearer(await as.sign(claims(), { key: stranger, kid: `next-${attempt++}` })));
        return (await probe(gw, bearer(old))) === 401;
      }, 'the retired key to be refused');
      await expectRefusal(await post(gw.url, rpc(1, 'ping'), bearer(old)), 401, invalidToken('the token is signed with an unknown key'));
      expect(await probe(gw, bearer(fresh))).toBe(200);
    } finally {
      as.publish(as.rsa);
      as.unpublish(rotated.kid);
      await gw.close();
    }
  });

  it('answers 503 with Retry-After when the JWKS is unreachable', async () => {
    const gw = await startProtected(oauthConfig({ jwksUri: `http://127.0.0.1:${await closedPort()}/jwks` }));
    try {
      const res = await post(gw.url, rpc(1, 'ping'), bearer(await as.sign(claims())));
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('5');
      expect(res.headers.get('www-authenticate')).toBeNull();
      await res.body?.cancel();
    } finally {
      await gw.close();
    }
  });

  // Regression: jwt.ts maps the generic JOSEError that jose throws for a non-200 JWKS answer to
  // "malformed", so a good token is called invalid and the client throws it away.
  it('answers 503, not invalid_token, when the JWKS endpoint answers an HTTP error', async () => {
    const gw = await startProtected(oauthConfig());
    as.failJwks(500);
    try {
      const res = await post(gw.url, rpc(1, 'ping'), bearer(await as.sign(claims())));
      await res.body?.cancel();
      expect({ status: res.status, challenge: res.headers.get('www-authenticate'), retryAfter: res.headers.get('retry-after') }).toEqual({ status: 503, challenge: null, retryAfter: '5' });
    } finally {
      as.failJwks(undefined);
      await gw.close();
    }
  });
});

describe("the gateway's own client-credentials token towards an upstream", () => {
  let flaky: FlakyHttp;

  beforeAll(async () => {
    flaky = await startFlakyHttp();
  });

  afterAll(async () => {
    await flaky?.close();
  });

  const gateway = (clientSecret = as.client.secret) =>
    startGateway({
      upstreams: {
        rogue: upstream.rogue(),
        api: { http: { url: flaky.url, oauth: { tokenUrl: as.tokenUrl, clientId: as.client.id, clientSecret, scope: 'upstream:tools', resource: flaky.url } } },
      },
    });

  /** The Authorization header of the upstream's latest tools/call. */
  const lastAuthorization = async (): Promise<string | null> => (await flaky.stats()).toolCalls.at(-1)?.authorization ?? null;
  const echo = async (client: Client, message: string): Promise<string> => textOf(await client.callTool({ name: 'api__echo', arguments: { message } }));

  it('sends the issued token, fetched once for many calls and sessions', async () => {
    const requestsBefore = as.tokenRequests.length;
    const gw = await gateway();
    try {
      await withClient(gw, {}, async (first) => {
        await withClient(gw, {}, async (second) => {
          for (let i = 0; i < 3; i++) {
            expect(await echo(first, `a${i}`)).toBe(`echo: a${i}`);
            expect(await echo(second, `b${i}`)).toBe(`echo: b${i}`);
          }
        });
      });
      const requests = as.tokenRequests.slice(requestsBefore);
      expect(requests).toHaveLength(1);
      expect(requests[0]).toMatchObject({ clientId: as.client.id, authenticated: true, form: { grant_type: 'client_credentials', scope: 'upstream:tools', resource: flaky.url } });
      const calls = (await flaky.stats()).toolCalls.slice(-6);
      expect(calls.map((c) => c.authorization)).toEqual(Array(6).fill(`Bearer ${requests[0]!.token}`));
    } finally {
      await gw.close();
    }
    // Upstream tokens learned at run time stay out of the logs.
    expect(gw.logs.join('').includes(as.issued().at(-1)!)).toBe(false);
  });

  it('fetches a new token before a short-lived one expires and never sends it expired', async () => {
    const lifetime = as.tokenLifetimeSeconds;
    as.tokenLifetimeSeconds = 2;
    const requestsBefore = as.tokenRequests.length;
    const gw = await gateway();
    try {
      await withClient(gw, {}, async (client) => {
        const sent: { at: number; authorization: string | null }[] = [];
        await until(
          async () => {
            const at = Date.now();
            await echo(client, 'tick');
            sent.push({ at, authorization: await lastAuthorization() });
            return new Set(sent.map((s) => s.authorization)).size >= 2;
          },
          'a second token to be used',
          6_000,
        );
        const [first, second] = as.tokenRequests.slice(requestsBefore);
        expect(first?.token).toBeDefined();
        expect(second?.token).toBeDefined();
        // Refreshed ahead of expiry, not after a failure.
        expect(second!.issuedAt).toBeLessThan(first!.expiresAt!);
        for (const { at, authorization } of sent) if (at >= first!.expiresAt!) expect(authorization).not.toBe(`Bearer ${first!.token}`);
        expect(sent.at(-1)!.authorization).toBe(`Bearer ${second!.token}`);
      });
    } finally {
      as.tokenLifetimeSeconds = lifetime;
      await gw.close();
    }
  });

  it('fetches a new token once and retries when the upstream answers 401', async () => {
    const gw = await gateway();
    try {
      await withClient(gw, {}, async (client) => {
        expect(await echo(client, 'warm')).toBe('echo: warm');
        const before = as.issued().length;
        await flaky.control({ fail: 1, status: 401 });
        expect(await echo(client, 'after 401')).toBe('echo: after 401');
        const issued = as.issued();
        expect(issued.length).toBe(before + 1);
        const [refused, retried] = (await flaky.stats()).toolCalls.slice(-2);
        expect(refused?.authorization).toBe(`Bearer ${issued.at(-2)}`);
        expect(retried?.authorization).toBe(`Bearer ${issued.at(-1)}`);
      });
    } finally {
      await gw.close();
    }
  });

  it('fails calls with a clear JSON-RPC error when the client secret is wrong, and stays up', async () => {
    const requestsBefore = as.tokenRequests.length;
    const wrongSecret = 'wrong-secret-3e1f5a';
    const gw = await gateway(wrongSecret);
    try {
      await withClient(gw, {}, async (client) => {
        const callsBefore = (await flaky.stats()).calls;
        const failed = echo(client, 'x');
        await expect(failed).rejects.toBeInstanceOf(McpError);
        await expect(failed).rejects.toMatchObject({ code: -32005, message: expect.stringMatching(/^MCP error -32005: Upstream api is unavailable: .*token endpoint answered HTTP 401/) });
        // The other upstream is unaffected, and so is the gateway.
        expect(textOf(await client.callTool({ name: 'rogue__pid', arguments: {} }))).toMatch(/^\d+$/);
        expect((await flaky.stats()).calls).toBe(callsBefore);
      });
      const health = (await (await fetch(new URL('/healthz', gw.url))).json()) as { upstreams: Record<string, { state: string; lastError?: string }> };
      expect(health.upstreams.api).toMatchObject({ state: 'down', lastError: expect.stringContaining('token endpoint answered HTTP 401') });
      expect(health.upstreams.rogue?.state).toBe('up');
      const requests = as.tokenRequests.slice(requestsBefore);
      expect(requests.length).toBeGreaterThan(0);
      expect(requests.every((r) => r.clientId === as.client.id && !r.authenticated && r.token === undefined)).toBe(true);
    } finally {
      await gw.close();
    }
    expect(gw.logs.join('').includes(wrongSecret)).toBe(false);
  });
});
