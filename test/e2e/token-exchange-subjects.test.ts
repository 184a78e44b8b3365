// Token exchange: which IdP token is the subject, and what the IdP's refusals mean. oidc-provider
// as the company IdP with the RFC 8693 grant, two internal MCP services that accept only its
// tokens for their own audience, the official SDK client sending each user's IdP token, and the
// authenticator told of the tokens it accepts.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { decodeJwt } from 'jose';
import { Authenticator, type Credentials } from '../../src/auth/authenticator.js';
import { AuthError } from '../../src/auth/principal.js';
import { configFromObject } from '../../src/config/load.js';
import { startIdp, type TestIdp } from '../helpers/oidc.js';
import { EXCHANGE_LOGIN, exchangeClients } from '../helpers/oidc-exchange.js';
import { startWikiUpstream, type WikiUpstream } from '../helpers/wiki-upstream.js';
import { connectClient, startGateway, textOf, type TestGateway } from '../helpers/gateway.js';

const GATEWAY = 'https://mcp.example.test/mcp';

interface Harness {
  idp: TestIdp;
  wiki: WikiUpstream;
  intranet: WikiUpstream;
  /** A token endpoint that answers every request 404 with an HTML page (no OAuth error body). */
  notFound: Server;
  gateway: TestGateway;
}

let h: Harness;

beforeAll(async () => {
  const idp = await startIdp({
    clients: [
      ...exchangeClients(),
    ],
    exchange: { subjectAudiences: [GATEWAY], targets: { 'api://wiki': { scope: 'wiki.read' }, 'api://intranet': { scope: 'intranet.read' } } },
  });
  const [wiki, intranet] = await Promise.all([startWikiUpstream(idp.issuer, 'api://wiki'), startWikiUpstream(idp.issuer, 'api://intranet')]);
  const notFound = createServer((req, res) => {
    req.resume();
    res.writeHead(404, { 'content-type': 'text/html' }).end('<html><body>Not Found</body></html>');
  });
  await new Promise<void>((resolve) => notFound.listen(0, '127.0.0.1', resolve));
  const notFoundUrl = `http://127.0.0.1:${(notFound.address() as AddressInfo).port}/token`;
  const gateway = await startGateway({
    auth: { oauth: { issuer: idp.issuer, jwksUri: `${idp.issuer}/jwks`, resource: GATEWAY, algorithms: ['RS256'], login: EXCHANGE_LOGIN } },
    upstreams: {
      wiki: { http: { url: wiki.url, tokenExchange: { audience: 'api://wiki', scopes: ['wiki.read'] } } },
      intranet: { http: { url: intranet.url, tokenExchange: { audience: 'api://intranet', scopes: ['intranet.read'] } } },
      // One failure would open these circuits: a refusal of the IdP's must not count.
      wrongsecret: { http: { url: intranet.url, tokenExchange: { audience: 'api://intranet', client: { clientId: 'switchyard', clientSecret: 'not-the-secret' } } }, circuit: { failures: 1 } },
      wrongurl: { http: { url: intranet.url, tokenExchange: { audience: 'api://intranet', tokenUrl: notFoundUrl } }, circuit: { failures: 1 } },
    },
  });
  h = { idp, wiki, intranet, notFound, gateway };
}, 60_000);

afterAll(async () => {
  await h?.gateway.close();
  h?.notFound.close();
  await Promise.allSettled([h?.wiki.close(), h?.intranet.close(), h?.idp.close()]);
});

const issue = (sub: string, ttlSeconds = 3_600): Promise<string> => h.idp.issueAccessToken({ sub, clientId: 'host', resource: GATEWAY, ttlSeconds });
const connectWith = (token: string): Promise<Client> => connectClient(h.gateway.url, {}, undefined, { authorization: `Bearer ${token}` });

/** A call's text, or its JSON-RPC error's message: what the model reads either way. */
function answerOf(client: Client, name: string): Promise<string> {
  return client.callTool({ name, arguments: {} }).then(textOf, (err: unknown) => (err instanceof Error ? err.message : String(err)));
}

async function circuitOf(name: string): Promise<string | undefined> {
  const health = (await (await fetch(new URL('/healthz', h.gateway.url))).json()) as { upstreams: Record<string, { circuit?: string }> };
  return health.upstreams[name]?.circuit;
}

/** Makes `service` refuse (401) the token it was last sent for `sub`: the next call exchanges anew. */
async function refuseLast(service: WikiUpstream, sub: string): Promise<void> {
  const sent = (await service.headers()).map((r) => r.authorization?.replace(/^Bearer /, '')).filter((t): t is string => !!t && decodeJwt(t).sub === sub);
  expect(sent.length).toBeGreaterThan(0);
  await service.revoke(sent.at(-1)!);
}

/** Until the IdP's clock (whole seconds) is past now: a token issued then is newer than a revocation made now. */
async function nextSecond(): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, 1_000 - (Date.now() % 1_000) + 20));
}

describe('the IdP refusing an exchange for the gateway\'s own settings', () => {
  it('a wrong client secret (401 with WWW-Authenticate, RFC 6749 §5.2) is a misconfiguration: logged once, the circuit untouched', async () => {
    const alice = await connectWith(await issue('alice'));
    try {
      const message = "MCP error -32005: Upstream wrongsecret is unavailable: upstream wrongsecret: the gateway's token exchange for wrongsecret is misconfigured (the IdP answered invalid_client; the gateway's log says more)";
      expect(await answerOf(alice, 'wrongsecret__whoami')).toBe(message);
      expect(await answerOf(alice, 'wrongsecret__whoami')).toBe(message);
      expect(await circuitOf('wrongsecret')).toBe('closed');
      const logged = h.gateway.logs.filter((line) => line.includes('token exchange misconfigured') && line.includes('"wrongsecret"'));
      expect(logged).toHaveLength(1);
      expect(JSON.parse(logged[0]!)).toMatchObject({ level: 'error', upstream: 'wrongsecret', error: 'invalid_client', status: 401 });
      expect(h.gateway.logs.filter((line) => line.includes('the IdP is unavailable'))).toEqual([]);
      expect(await answerOf(alice, 'intranet__whoami')).toMatch(/"sub":"alice"/);
    } finally {
      await alice.close();
    }
  });

  it('a 4xx without an OAuth error body (an HTML 404) is a misconfiguration too, not an unavailable IdP', async () => {
    const bob = await connectWith(await issue('bob'));
    try {
      expect(await answerOf(bob, 'wrongurl__whoami')).toBe(
        "MCP error -32005: Upstream wrongurl is unavailable: upstream wrongurl: the gateway's token exchange for wrongurl is misconfigured (the IdP answered HTTP 404; the gateway's log says more)",
      );
      expect(await circuitOf('wrongurl')).toBe('closed');
      const logged = h.gateway.logs.filter((line) => line.includes('token exchange misconfigured') && line.includes('"wrongurl"'));
      expect(logged).toHaveLength(1);
      expect(JSON.parse(logged[0]!)).toMatchObject({ level: 'error', upstream: 'wrongurl', error: 'HTTP 404', status: 404 });
      expect(h.gateway.logs.filter((line) => line.includes('the IdP is unavailable'))).toEqual([]);
    } finally {
      await bob.close();
    }
  });
});

describe('the subject: the IdP token last seen for the principal', () => {
  it('a user who signed in again is served with the new token, though the revoked one expires later', async () => {
    const before = await issue('gina', 3_600);
    const first = await connectWith(before);
    try {
      expect(await answerOf(first, 'wiki__whoami')).toMatch(/"sub":"gina"/);
    } finally {
      await first.close();
    }
    // Her IdP session is revoked (password reset), and she signs in again: a shorter-lived token.
    await h.idp.revokeGrants('gina');
    await nextSecond();
    const after = await issue('gina', 600);
    const second = await connectWith(after);
    try {
      // The wiki refuses the token exchanged from the old session: the next call exchanges with the subject.
      await refuseLast(h.wiki, 'gina');
      expect(await answerOf(second, 'wiki__whoami')).toMatch(/"sub":"gina"/);
      expect(h.gateway.logs.filter((line) => line.includes("the user's IdP session has ended"))).toEqual([]);
    } finally {
      await second.close();
    }
  });
});

describe("the end of a user's IdP session (invalid_grant)", () => {
  it("drops the user's exchanged tokens for every upstream, not only the one that met it", async () => {
    const judy = await connectWith(await issue('judy'));
    try {
      expect(await answerOf(judy, 'wiki__whoami')).toMatch(/"sub":"judy"/);
      expect(await answerOf(judy, 'intranet__whoami')).toMatch(/"sub":"judy"/);
      await h.idp.revokeGrants('judy');
      // The wiki's next exchange meets the IdP's refusal.
      await refuseLast(h.wiki, 'judy');
      expect(await answerOf(judy, 'wiki__whoami')).toMatch(/your sign-in at the identity provider has ended; sign in to Switchyard again to use wiki$/);
      // The intranet's token, exchanged before, no longer acts for her: it is exchanged anew, and refused.
      const intranet = await answerOf(judy, 'intranet__whoami');
      expect(intranet).toMatch(/your sign-in at the identity provider has ended; sign in to Switchyard again to use intranet$/);
      expect(intranet).not.toContain('"sub"');
    } finally {
      await judy.close();
    }
    // Signed in again, she is served everywhere.
    await nextSecond();
    const again = await connectWith(await issue('judy', 600));
    try {
      expect(await answerOf(again, 'intranet__whoami')).toMatch(/"sub":"judy"/);
      expect(await answerOf(again, 'wiki__whoami')).toMatch(/"sub":"judy"/);
    } finally {
      await again.close();
    }
  });
});

describe('the authenticator tells only of tokens it accepted', () => {
  function authenticator(remembered: string[]): Authenticator {
    const config = configFromObject(
      { upstreams: {}, auth: { oauth: { issuer: h.idp.issuer, jwksUri: `${h.idp.issuer}/jwks`, resource: GATEWAY, algorithms: ['RS256'], scopes: ['mcp'] } } },
      { file: 'gateway.yaml', env: {} },
    );
    return new Authenticator(config.auth!, config.listen, [], undefined, (_principal, token) => void remembered.push(token));
  }
  const bearer = (token: string): Credentials => ({ authorization: `Bearer ${token}`, apiKey: undefined, queryToken: false });
  const reasonOf = (run: () => unknown): Promise<string | undefined> =>
    Promise.resolve()
      .then(run)
      .then(
        () => undefined,
        (err: unknown) => (err instanceof AuthError ? err.reason : String(err)),
      );

  it('a token refused for insufficient scope never becomes a subject, verified or known', async () => {
    const remembered: string[] = [];
    const auth = authenticator(remembered);
    const refused = await h.idp.issueAccessToken({ sub: 'ivan', clientId: 'host', resource: GATEWAY, scope: 'other' });
    const accepted = await h.idp.issueAccessToken({ sub: 'ivan', clientId: 'host', resource: GATEWAY, scope: 'mcp' });
    // Verified (a promise), then known (decided from memory), each way refused.
    expect(await reasonOf(() => auth.authenticate(bearer(refused)))).toBe('insufficient_scope');
    expect(await reasonOf(() => auth.authenticateNow(bearer(refused)))).toBe('insufficient_scope');
    expect(await reasonOf(() => auth.authenticate(bearer(refused)))).toBe('insufficient_scope');
    expect(remembered).toEqual([]);
    expect((await auth.authenticate(bearer(accepted))).id).toBe(`${h.idp.issuer}|ivan`);
    expect(auth.authenticateNow(bearer(accepted))?.id).toBe(`${h.idp.issuer}|ivan`);
    expect(remembered).toEqual([accepted, accepted]);
  });
});
