// Token exchange with real parts: oidc-provider as the company IdP with the RFC 8693 grant and an
// Entra-like on-behalf-of grant, two internal MCP services on the official SDK that accept only
// that IdP's tokens for their own audience (wiki by RFC 8693, intranet by on-behalf-of), a
// stdio server beside them, and the official SDK client sending each user's IdP token.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { decodeJwt } from 'jose';
import { startIdp, type TestIdp } from '../helpers/oidc.js';
import { EXCHANGE_LOGIN, exchangeClients, JWT_BEARER_GRANT } from '../helpers/oidc-exchange.js';
import { startWikiUpstream, type WikiUpstream } from '../helpers/wiki-upstream.js';
import { connectClient, startGateway, upstream, type TestGateway } from '../helpers/gateway.js';
import { messagesOf, postRpc } from '../helpers/raw-http.js';

const GATEWAY = 'https://mcp.example.test/mcp';
/** Exchanged wiki tokens live 4 s: renewed after 3.2 s. */
const WIKI_TTL_S = 4;

interface Harness {
  idp: TestIdp;
  wiki: WikiUpstream;
  intranet: WikiUpstream;
  gateway: TestGateway;
  /** Every IdP token the test sent as a client (none may reach an upstream or a log). */
  sent: string[];
  /** The audit file (token.exchange records). */
  auditFile: string;
  dir: string;
}

let h: Harness;

beforeAll(async () => {
  const idp = await startIdp({
    clients: [
      ...exchangeClients(),
      { client_id: 'switchyard-obo', client_secret: 'switchyard-obo-secret', token_endpoint_auth_method: 'client_secret_post', grant_types: [JWT_BEARER_GRANT], response_types: [], redirect_uris: [] },
    ],
    exchange: {
      subjectAudiences: [GATEWAY],
      targets: {
        'api://wiki': { scope: 'wiki.read wiki.write', ttlSeconds: WIKI_TTL_S, resource: 'https://wiki.internal/mcp' },
        'api://intranet': { scope: 'intranet.read' },
      },
    },
  });
  const [wiki, intranet] = await Promise.all([startWikiUpstream(idp.issuer, 'api://wiki'), startWikiUpstream(idp.issuer, 'api://intranet')]);
  const dir = await mkdtemp(join(tmpdir(), 'switchyard-token-exchange-'));
  const auditFile = join(dir, 'audit.jsonl');
  const gateway = await startGateway({
    audit: { sink: { file: { path: auditFile } } },
    auth: { oauth: { issuer: idp.issuer, jwksUri: `${idp.issuer}/jwks`, resource: GATEWAY, algorithms: ['RS256'], login: EXCHANGE_LOGIN } },
    upstreams: {
      // One failure opens its circuit: the IdP's unavailability counts there, a user's ended session does not.
      wiki: { http: { url: wiki.url, tokenExchange: { audience: 'api://wiki', resource: 'https://wiki.internal/mcp', scopes: ['wiki.read'] } }, circuit: { failures: 1 } },
      intranet: { http: { url: intranet.url, tokenExchange: { audience: 'api://intranet', variant: 'entra-obo', client: { clientId: 'switchyard-obo', clientSecret: 'switchyard-obo-secret' } } } },
      nowhere: { http: { url: intranet.url, tokenExchange: { audience: 'api://nowhere' } } },
      everything: upstream.everything(),
    },
  });
  h = { idp, wiki, intranet, gateway, sent: [], auditFile, dir };
}, 60_000);

afterAll(async () => {
  await h?.gateway.close();
  await Promise.allSettled([h?.wiki.close(), h?.intranet.close(), h?.idp.close()]);
  if (h?.dir) await rm(h.dir, { recursive: true, force: true });
});

/** An SDK client of `user`, sending a fresh IdP token of theirs (for the gateway's audience). */
async function connectAs(user: string): Promise<Client> {
  const token = await h.idp.issueAccessToken({ sub: user, clientId: 'host', resource: GATEWAY });
  h.sent.push(token);
  return connectClient(h.gateway.url, {}, undefined, { authorization: `Bearer ${token}` });
}

function textOf(result: unknown): string {
  const content = (result as { content?: Array<{ type: string; text?: string }> }).content ?? [];
  return content.map((part) => part.text ?? '').join('');
}

/** A call's text, or its JSON-RPC error's message: what the model reads either way. */
async function answerOf(client: Client, name: string): Promise<string> {
  return client.callTool({ name, arguments: {} }).then(textOf, (err: unknown) => (err instanceof Error ? err.message : String(err)));
}

async function whoami(client: Client, upstreamName = 'wiki'): Promise<{ sub?: string; act?: { sub?: string }; azp?: string }> {
  return JSON.parse(textOf(await client.callTool({ name: `${upstreamName}__whoami`, arguments: {} }))) as { sub?: string; act?: { sub?: string }; azp?: string };
}

async function circuitOf(name: string): Promise<string | undefined> {
  const health = (await (await fetch(new URL('/healthz', h.gateway.url))).json()) as { upstreams: Record<string, { circuit?: string }> };
  return health.upstreams[name]?.circuit;
}

const exchangesOf = (sub: string, audience: string): number => h.idp.exchanges.filter((r) => r.sub === sub && r.audience === audience).length;

describe('token exchange (upstreams.<name>.http.tokenExchange)', () => {
  it('alice and bob each reach the wiki as themselves (RFC 8693) and the intranet (on-behalf-of); the upstreams see only exchanged tokens', async () => {
    const [alice, bob] = await Promise.all([connectAs('alice'), connectAs('bob')]);
    try {
      expect((await alice.listTools()).tools.map((t) => t.name)).toEqual(expect.arrayContaining(['wiki__whoami', 'intranet__whoami']));
      expect(await whoami(alice)).toEqual({ sub: 'alice', act: { sub: 'switchyard' } });
      expect(await whoami(bob)).toEqual({ sub: 'bob', act: { sub: 'switchyard' } });
      expect(await whoami(alice, 'intranet')).toEqual({ sub: 'alice', azp: 'switchyard-obo' });
      expect(await whoami(bob, 'intranet')).toEqual({ sub: 'bob', azp: 'switchyard-obo' });
      expect(h.idp.exchanges).toEqual(
        expect.arrayContaining([
          { grant: 'rfc8693', clientId: 'switchyard', sub: 'alice', audience: 'api://wiki' },
          { grant: 'entra-obo', clientId: 'switchyard-obo', sub: 'bob', audience: 'api://intranet' },
        ]),
      );
      for (const [service, audience] of [[h.wiki, 'api://wiki'], [h.intranet, 'api://intranet']] as const) {
        const seen = (await service.headers()).map((headers) => headers.authorization).filter((value): value is string => value !== undefined);
        expect(seen.length).toBeGreaterThan(0);
        for (const value of seen) {
          const token = value.replace(/^Bearer /, '');
          expect(h.sent).not.toContain(token);
          expect(decodeJwt(token)).toMatchObject({ iss: h.idp.issuer, aud: audience });
        }
      }
    } finally {
      await Promise.allSettled([alice.close(), bob.close()]);
    }
  });

  it('eight sessions of one user opened at once make one exchange per upstream', async () => {
    const clients = await Promise.all(Array.from({ length: 8 }, () => connectAs('carol')));
    try {
      const answers = await Promise.all(clients.map((client) => whoami(client)));
      for (const answer of answers) expect(answer.sub).toBe('carol');
      expect(exchangesOf('carol', 'api://wiki')).toBe(1);
      expect(exchangesOf('carol', 'api://intranet')).toBe(1);
    } finally {
      await Promise.allSettled(clients.map((client) => client.close()));
    }
  });

  it('an exchanged token about to expire is replaced before use, without the user noticing', async () => {
    const dave = await connectAs('dave');
    try {
      expect((await whoami(dave)).sub).toBe('dave');
      expect(exchangesOf('dave', 'api://wiki')).toBe(1);
      const first = (await h.wiki.headers()).at(-1)!.authorization!;
      // Past the renewal point (80 % of its 4 s), before its end.
      await new Promise((resolve) => setTimeout(resolve, WIKI_TTL_S * 800 + 300));
      expect((await whoami(dave)).sub).toBe('dave');
      expect(exchangesOf('dave', 'api://wiki')).toBe(2);
      const records = await h.wiki.headers();
      expect(records.at(-1)!.authorization).not.toBe(first);
      // Renewed ahead of time: the wiki never had to refuse one.
      expect(records.filter((r) => r[':status'] === '401')).toEqual([]);
    } finally {
      await dave.close();
    }
  }, 20_000);

  it("a user whose IdP session was revoked is told to sign in again; the others' calls go on", async () => {
    const alice = await connectAs('alice');
    const erinToken = await h.idp.issueAccessToken({ sub: 'erin', clientId: 'host', resource: GATEWAY });
    h.sent.push(erinToken);
    await h.idp.revokeGrants('erin');
    const erin = await connectClient(h.gateway.url, {}, undefined, { authorization: `Bearer ${erinToken}` });
    try {
      expect(await answerOf(erin, 'wiki__whoami')).toMatch(/^MCP error -32005: Upstream wiki is unavailable: upstream wiki: your sign-in at the identity provider has ended; sign in to Switchyard again to use wiki$/);
      expect((await whoami(alice)).sub).toBe('alice');
      expect(await circuitOf('wiki')).toBe('closed');
    } finally {
      await Promise.allSettled([alice.close(), erin.close()]);
    }
  });

  it('an exchange the IdP refuses as misconfigured (invalid_target) is refused, and logged once with the IdP\'s error', async () => {
    const frank = await connectAs('frank');
    try {
      expect(await answerOf(frank, 'nowhere__whoami')).toBe("MCP error -32005: Upstream nowhere is unavailable: upstream nowhere: the gateway's token exchange for nowhere is misconfigured (the IdP answered invalid_target; the gateway's log says more)");
      expect(await answerOf(frank, 'nowhere__whoami')).toMatch(/misconfigured/);
      const logged = h.gateway.logs.filter((line) => line.includes('token exchange misconfigured'));
      expect(logged).toHaveLength(1);
      expect(JSON.parse(logged[0]!)).toMatchObject({ level: 'error', upstream: 'nowhere', error: 'invalid_target' });
      expect((await whoami(frank)).sub).toBe('frank');
    } finally {
      await frank.close();
    }
  });

  it('a 2026-07-28 client reaches the wiki as itself too, through the session the gateway keeps for it', async () => {
    const token = await h.idp.issueAccessToken({ sub: 'heidi', clientId: 'host', resource: GATEWAY });
    h.sent.push(token);
    const meta = {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientInfo': { name: 'stateless-exchange-test', version: '1' },
      'io.modelcontextprotocol/clientCapabilities': {},
    };
    const message = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'wiki__whoami', arguments: {}, _meta: meta } };
    const reply = await postRpc(h.gateway.url, message, { protocolVersion: '2026-07-28', headers: { authorization: `Bearer ${token}`, 'mcp-method': 'tools/call', 'mcp-name': 'wiki__whoami' } });
    const body = reply.sse ? messagesOf<Record<string, unknown>>(reply).at(-1)! : (JSON.parse(reply.text) as Record<string, unknown>);
    expect(JSON.parse(textOf(body.result))).toEqual({ sub: 'heidi', act: { sub: 'switchyard' } });
  });

  it('every exchange is an audit record (token.exchange), and no token of any kind reaches the log or the audit', async () => {
    const records = async (): Promise<Array<Record<string, unknown>>> =>
      (await readFile(h.auditFile, 'utf8').catch(() => ''))
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Record<string, unknown>)
        .filter((record) => record.event === 'token.exchange');
    // The sink writes in the background: read until the refusal (the last exchange so far) is there.
    const deadline = Date.now() + 10_000;
    while (!(await records()).some((r) => r.upstream === 'nowhere') && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    const exchanges = await records();
    expect(exchanges).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ decision: 'allow', outcome: 'ok', principal: `${h.idp.issuer}|alice`, upstream: 'wiki', detail: { variant: 'rfc8693' } }),
        expect.objectContaining({ decision: 'allow', outcome: 'ok', principal: `${h.idp.issuer}|bob`, upstream: 'intranet', detail: { variant: 'entra-obo' } }),
        expect.objectContaining({ decision: 'deny', outcome: 'sign_in', principal: `${h.idp.issuer}|erin`, upstream: 'wiki', reason: 'invalid_grant' }),
        expect.objectContaining({ decision: 'deny', outcome: 'config', principal: `${h.idp.issuer}|frank`, upstream: 'nowhere', reason: 'invalid_target' }),
      ]),
    );
    const exchanged = [...(await h.wiki.headers()), ...(await h.intranet.headers())].map((r) => r.authorization?.replace(/^Bearer /, '')).filter((v): v is string => !!v);
    const written = `${h.gateway.logs.join('\n')}\n${await readFile(h.auditFile, 'utf8')}`;
    for (const token of [...h.sent, ...exchanged]) expect(written).not.toContain(token);
  });

  // Last: it stops the IdP.
  it('the IdP stopped: the token-exchange upstream says it is unavailable while the others work', async () => {
    const token = await h.idp.issueAccessToken({ sub: 'grace', clientId: 'host', resource: GATEWAY });
    h.sent.push(token);
    await h.idp.close();
    // Her first exchange comes after the IdP went (the gateway knows its keys from before).
    const grace = await connectClient(h.gateway.url, {}, undefined, { authorization: `Bearer ${token}` });
    try {
      expect(await answerOf(grace, 'wiki__whoami')).toMatch(/^MCP error -32005: Upstream wiki is unavailable: upstream wiki: the identity provider could not issue a token for wiki \(unreachable \(ECONNREFUSED\)\)$/);
      expect(textOf(await grace.callTool({ name: 'everything__echo', arguments: { message: 'still here' } }))).toContain('still here');
      // The wiki's own circuit counted it (one failure opens it here).
      expect(await circuitOf('wiki')).toBe('open');
    } finally {
      await grace.close();
    }
  });
});
