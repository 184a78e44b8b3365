// Authentication at the protected endpoint against a real authorization-server stand-in (MCP
// authorization spec, RFC 6750, RFC 9728): metadata, exact challenges for every refusal, the
// JWKS under a flood of unknown kids, sessions bound to principals, no token passthrough, and
// refusals counted by reason.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  API_KEY,
  bearer,
  expectRefusal,
  INIT,
  invalidToken,
  METADATA_URL,
  post,
  probe,
  PROMPT_MS,
  RESOURCE,
  rpc,
  SCOPE,
  UNSCOPED_KEY,
  useAuthRig,
  withClient,
} from '../helpers/auth-rig.js';
import { startFlakyHttp, type FlakyHttp } from '../helpers/flaky-http.js';
import { journal, textOf, upstream, type TestGateway } from '../helpers/gateway.js';
import { scrape } from '../helpers/metrics.js';
import { httpExchange, initializeRaw, messagesOf } from '../helpers/raw-http.js';

/** The flaky upstream's own credential, from the gateway's config. */
const UPSTREAM_AUTHORIZATION = 'Bearer static-upstream-credential-7f3a91';

function sessionOf(client: Client): string {
  return (client.transport as StreamableHTTPClientTransport).sessionId!;
}

const { authServer, claims, oauthConfig, startProtected } = useAuthRig();

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
    expect(await probe(gw, bearer(await authServer().sign(claims())))).toBe(200);
  }

  it('serves protected resource metadata naming the configured resource, whatever the Host', async () => {
    const expected = { resource: RESOURCE, authorization_servers: [authServer().issuer], scopes_supported: [SCOPE], bearer_methods_supported: ['header'], resource_name: expect.any(String) };
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
    ['a token for another audience', () => authServer().sign(claims({ aud: 'https://other.example.test/mcp' })), 'the token was not issued for this resource'],
    ['a token from another issuer', () => authServer().sign(claims({ iss: 'https://evil.example.test' })), 'the token was not issued by the expected issuer'],
    ['a token expired beyond the clock tolerance', () => authServer().sign(claims({ exp: Math.floor(Date.now() / 1_000) - 120 })), 'the token has expired'],
    ['a token without exp', () => authServer().sign(claims({ exp: undefined })), "the token's exp claim is missing"],
    ['a token not valid yet', () => authServer().sign(claims({ nbf: Math.floor(Date.now() / 1_000) + 600 })), 'the token is not yet valid'],
    ['a token without sub', () => authServer().sign(claims({ sub: undefined })), 'the token has no sub claim'],
    ['an unsigned token (alg none)', async () => authServer().unsigned(claims(), { kid: authServer().rsa.kid }), 'the token is signed with an algorithm that is not allowed'],
    ['HS256 keyed with the RSA public key PEM', () => authServer().hs256WithPublicKey(claims(), 'pem'), 'the token is signed with an algorithm that is not allowed'],
    ['HS256 keyed with the RSA public key DER', () => authServer().hs256WithPublicKey(claims(), 'der'), 'the token is signed with an algorithm that is not allowed'],
    ['PS256 with the published RSA key', () => authServer().sign(claims(), { alg: 'PS256' }), 'the token is signed with an algorithm that is not allowed'],
    ['RS512 with the published RSA key', () => authServer().sign(claims(), { alg: 'RS512' }), 'the token is signed with an algorithm that is not allowed'],
    [
      'a signature by another key under a published kid',
      async () => authServer().sign(claims(), { key: await authServer().createKey('RS256', 'impostor'), kid: authServer().rsa.kid }),
      'the token signature is invalid',
    ],
    ['a tampered payload', async () => {
      const [header, , signature] = (await authServer().sign(claims({ sub: 'alice' }))).split('.');
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
    const token = await authServer().sign(claims({ exp: Math.floor(Date.now() / 1_000) - 10 }));
    const pid = await withClient(gw, bearer(token), async (client) => textOf(await client.callTool({ name: 'rogue__pid', arguments: {} })));
    expect(pid).toMatch(/^\d+$/);
  });

  it('answers a token without the required scope 403 insufficient_scope naming the scope', async () => {
    const expected = { error: 'insufficient_scope', scope: SCOPE, resource_metadata: METADATA_URL, error_description: `the token lacks scope ${SCOPE}` };
    await expectRefusal(await post(gw.url, rpc(1, 'initialize', INIT), bearer(await authServer().sign(claims({ scope: 'mcp:read profile' })))), 403, expected);
    await expectRefusal(await post(gw.url, rpc(1, 'initialize', INIT), bearer(await authServer().sign(claims({ scope: undefined })))), 403, expected);
    await expectRefusal(await post(gw.url, rpc(1, 'initialize', INIT), bearer(UNSCOPED_KEY)), 403, expected);
    // The scope may also come as an `scp` array.
    expect(await probe(gw, bearer(await authServer().sign(claims({ scope: undefined, scp: ['profile', SCOPE] }))))).toBe(200);
  });

  it('refetches the JWKS at most once per cooldown under a flood of unknown kids', async () => {
    const stranger = await authServer().createKey('RS256', 'stranger');
    const tokens = await Promise.all(Array.from({ length: 50 }, (_, i) => authServer().sign(claims(), { key: stranger, kid: `unknown-${i}` })));
    // The gateway has its key set already; the flood comes on top of that.
    expect(await probe(gw, bearer(await authServer().sign(claims())))).toBe(200);
    const before = authServer().jwksFetches;
    expect(before).toBeGreaterThan(0);
    const flood = async (target: TestGateway): Promise<void> => {
      const answers = await Promise.all(tokens.map((token) => post(target.url, rpc(1, 'ping'), bearer(token))));
      for (const res of answers) await expectRefusal(res, 401, invalidToken('the token is signed with an unknown key'));
    };
    await flood(gw);
    await flood(gw);
    expect(authServer().jwksFetches - before).toBeLessThanOrEqual(1);
    await expectStillServing();
    // A gateway that has not fetched the set yet fetches it once for the whole flood.
    const fresh = await startProtected(oauthConfig());
    try {
      const start = authServer().jwksFetches;
      await flood(fresh);
      expect(authServer().jwksFetches - start).toBe(1);
    } finally {
      await fresh.close();
    }
  });

  it('refuses a token in the query string with 400 invalid_request, even beside a good header', async () => {
    const token = await authServer().sign(claims());
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
    const es = await authServer().sign(claims({ sub: 'carol' }), { key: authServer().ec });
    for (const headers of [bearer(es), bearer(API_KEY), { 'x-api-key': API_KEY }]) {
      const pid = await withClient(gw, headers, async (client) => textOf(await client.callTool({ name: 'rogue__pid', arguments: {} })));
      expect(pid, JSON.stringify(Object.keys(headers))).toMatch(/^\d+$/);
    }
    const wrong = `${API_KEY}x`;
    await expectRefusal(await post(gw.url, rpc(1, 'initialize', INIT), bearer(wrong)), 401, invalidToken('the API key is not valid'));
    await expectRefusal(await post(gw.url, rpc(1, 'initialize', INIT), { 'x-api-key': wrong }), 401, invalidToken('the API key is not valid'));
  });

  it('needs a token on every request, not only on initialize', async () => {
    const auth = bearer(await authServer().sign(claims()));
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
    await withClient(gw, bearer(await authServer().sign(claims({ sub: 'alice' }))), async (alice) => {
      const session = sessionOf(alice);
      const others = [bearer(await authServer().sign(claims({ sub: 'bob' }))), bearer(API_KEY)];
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
      const aliceAgain = bearer(await authServer().sign(claims({ sub: 'alice' }), { key: authServer().ec }));
      const same = await post(gw.url, rpc(8, 'tools/list'), { ...aliceAgain, 'mcp-session-id': session });
      expect(same.status).toBe(200);
      await same.body?.cancel();
    });
  });

  it("never passes the client's credential to an upstream", async () => {
    const token = await authServer().sign(claims({ sub: 'dave' }));
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
      ['expired', authServer().sign(claims({ exp: Math.floor(Date.now() / 1_000) - 120 })).then((t) => post(gw.url, rpc(1, 'ping'), bearer(t)))],
      ['audience', authServer().sign(claims({ aud: 'https://other.example.test/mcp' })).then((t) => post(gw.url, rpc(1, 'ping'), bearer(t)))],
      ['issuer', authServer().sign(claims({ iss: 'https://evil.example.test' })).then((t) => post(gw.url, rpc(1, 'ping'), bearer(t)))],
      ['algorithm', post(gw.url, rpc(1, 'ping'), bearer(authServer().unsigned(claims())))],
      ['algorithm', authServer().hs256WithPublicKey(claims()).then((t) => post(gw.url, rpc(1, 'ping'), bearer(t)))],
      ['claims', authServer().sign(claims({ exp: undefined })).then((t) => post(gw.url, rpc(1, 'ping'), bearer(t)))],
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
