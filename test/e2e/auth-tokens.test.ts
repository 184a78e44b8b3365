// Authentication with other token settings and towards upstreams: typ at+jwt, JWKS rotation
// and an unreachable or failing JWKS, and the gateway's own client-credentials token towards an
// upstream (fetched once, renewed before expiry, retried on 401, a wrong secret reported).
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, challenge, expectRefusal, INIT, invalidToken, post, probe, PROMPT_MS, rpc, useAuthRig, withClient } from '../helpers/auth-rig.js';
import { startFlakyHttp, type FlakyHttp } from '../helpers/flaky-http.js';
import { startGateway, textOf, upstream } from '../helpers/gateway.js';

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

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

const { authServer, claims, oauthConfig, startProtected } = useAuthRig();

describe('gateways with other token settings', () => {
  it('requires typ at+jwt when configured', async () => {
    const gw = await startProtected(oauthConfig({ typ: 'at+jwt' }));
    try {
      const untyped = await authServer().sign(claims());
      await expectRefusal(await post(gw.url, rpc(1, 'initialize', INIT), bearer(untyped)), 401, invalidToken("the token's typ claim is invalid"));
      const plainJwt = await authServer().sign(claims(), { typ: 'JWT' });
      await expectRefusal(await post(gw.url, rpc(1, 'initialize', INIT), bearer(plainJwt)), 401, invalidToken("the token's typ claim is invalid"));
      const typed = await authServer().sign(claims(), { typ: 'at+jwt' });
      const pid = await withClient(gw, bearer(typed), async (client) => textOf(await client.callTool({ name: 'rogue__pid', arguments: {} })));
      expect(pid).toMatch(/^\d+$/);
      // RFC 9068 §2.1: "application/at+jwt" is the same type.
      expect(await probe(gw, bearer(await authServer().sign(claims(), { typ: 'application/at+jwt' })))).toBe(200);
    } finally {
      await gw.close();
    }
  });

  it('picks up a key added to the JWKS once the cooldown allows a refetch, and drops a removed one', async () => {
    const gw = await startProtected(oauthConfig({ jwksCooldown: '200ms' }));
    const rotated = await authServer().createKey('RS256', `rotated-${Date.now()}`);
    try {
      // Verified once and remembered: the same token string must still fall with its key.
      const old = await authServer().sign(claims());
      expect(await probe(gw, bearer(old))).toBe(200);
      expect(await probe(gw, bearer(old))).toBe(200);
      const fetched = authServer().jwksFetches;
      // Published after the gateway fetched the set: unknown to it until it refetches.
      authServer().publish(rotated);
      const fresh = await authServer().sign(claims({ sub: 'rotated-user' }), { key: rotated });
      await until(async () => (await probe(gw, bearer(fresh))) === 200, 'the rotated key to be accepted');
      expect(authServer().jwksFetches).toBeGreaterThan(fetched);
      const pid = await withClient(gw, bearer(fresh), async (client) => textOf(await client.callTool({ name: 'rogue__pid', arguments: {} })));
      expect(pid).toMatch(/^\d+$/);

      // The old key is retired. Tokens under new kids make the gateway refetch the set (at most
      // once per cooldown); after that the retired key no longer verifies.
      authServer().unpublish(authServer().rsa.kid);
      const stranger = await authServer().createKey('RS256', 'stranger-rotation');
      let attempt = 0;
      await until(async () => {
        await probe(gw, bearer(await authServer().sign(claims(), { key: stranger, kid: `next-${attempt++}` })));
        return (await probe(gw, bearer(old))) === 401;
      }, 'the retired key to be refused');
      await expectRefusal(await post(gw.url, rpc(1, 'ping'), bearer(old)), 401, invalidToken('the token is signed with an unknown key'));
      expect(await probe(gw, bearer(fresh))).toBe(200);
    } finally {
      authServer().publish(authServer().rsa);
      authServer().unpublish(rotated.kid);
      await gw.close();
    }
  });

  it('answers 503 with Retry-After when the JWKS is unreachable', async () => {
    const gw = await startProtected(oauthConfig({ jwksUri: `http://127.0.0.1:${await closedPort()}/jwks` }));
    try {
      const res = await post(gw.url, rpc(1, 'ping'), bearer(await authServer().sign(claims())));
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
    authServer().failJwks(500);
    try {
      const res = await post(gw.url, rpc(1, 'ping'), bearer(await authServer().sign(claims())));
      await res.body?.cancel();
      expect({ status: res.status, challenge: res.headers.get('www-authenticate'), retryAfter: res.headers.get('retry-after') }).toEqual({ status: 503, challenge: null, retryAfter: '5' });
    } finally {
      authServer().failJwks(undefined);
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

  const gateway = (clientSecret = authServer().client.secret) =>
    startGateway({
      upstreams: {
        rogue: upstream.rogue(),
        api: { http: { url: flaky.url, oauth: { tokenUrl: authServer().tokenUrl, clientId: authServer().client.id, clientSecret, scope: 'upstream:tools', resource: flaky.url } } },
      },
    });

  /** The Authorization header of the upstream's latest tools/call. */
  const lastAuthorization = async (): Promise<string | null> => (await flaky.stats()).toolCalls.at(-1)?.authorization ?? null;
  const echo = async (client: Client, message: string): Promise<string> => textOf(await client.callTool({ name: 'api__echo', arguments: { message } }));

  it('sends the issued token, fetched once for many calls and sessions', async () => {
    const requestsBefore = authServer().tokenRequests.length;
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
      const requests = authServer().tokenRequests.slice(requestsBefore);
      expect(requests).toHaveLength(1);
      expect(requests[0]).toMatchObject({ clientId: authServer().client.id, authenticated: true, form: { grant_type: 'client_credentials', scope: 'upstream:tools', resource: flaky.url } });
      const calls = (await flaky.stats()).toolCalls.slice(-6);
      expect(calls.map((c) => c.authorization)).toEqual(Array(6).fill(`Bearer ${requests[0]!.token}`));
    } finally {
      await gw.close();
    }
    // Upstream tokens learned at run time stay out of the logs.
    expect(gw.logs.join('').includes(authServer().issued().at(-1)!)).toBe(false);
  });

  it('fetches a new token before a short-lived one expires and never sends it expired', async () => {
    const lifetime = authServer().tokenLifetimeSeconds;
    authServer().tokenLifetimeSeconds = 2;
    const requestsBefore = authServer().tokenRequests.length;
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
        const [first, second] = authServer().tokenRequests.slice(requestsBefore);
        expect(first?.token).toBeDefined();
        expect(second?.token).toBeDefined();
        // Refreshed ahead of expiry, not after a failure.
        expect(second!.issuedAt).toBeLessThan(first!.expiresAt!);
        for (const { at, authorization } of sent) if (at >= first!.expiresAt!) expect(authorization).not.toBe(`Bearer ${first!.token}`);
        expect(sent.at(-1)!.authorization).toBe(`Bearer ${second!.token}`);
      });
    } finally {
      authServer().tokenLifetimeSeconds = lifetime;
      await gw.close();
    }
  });

  it('fetches a new token once and retries when the upstream answers 401', async () => {
    const gw = await gateway();
    try {
      await withClient(gw, {}, async (client) => {
        expect(await echo(client, 'warm')).toBe('echo: warm');
        const before = authServer().issued().length;
        await flaky.control({ fail: 1, status: 401 });
        expect(await echo(client, 'after 401')).toBe('echo: after 401');
        const issued = authServer().issued();
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
    const requestsBefore = authServer().tokenRequests.length;
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
      const requests = authServer().tokenRequests.slice(requestsBefore);
      expect(requests.length).toBeGreaterThan(0);
      expect(requests.every((r) => r.clientId === authServer().client.id && !r.authenticated && r.token === undefined)).toBe(true);
    } finally {
      await gw.close();
    }
    expect(gw.logs.join('').includes(wrongSecret)).toBe(false);
  });
});
