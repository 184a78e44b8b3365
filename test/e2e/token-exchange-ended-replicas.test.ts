// The end of a user's IdP session across replicas: two gateways sharing one real redis-server as
// their credential store. When one of them meets the IdP's invalid_grant, the user's exchanged
// tokens kept in Redis, for every upstream, are taken by neither replica again.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { decodeJwt } from 'jose';
import { startIdp, type TestIdp } from '../helpers/oidc.js';
import { EXCHANGE_LOGIN, exchangeClients } from '../helpers/oidc-exchange.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { startWikiUpstream, type WikiUpstream } from '../helpers/wiki-upstream.js';
import { connectClient, startGateway, textOf, type TestGateway } from '../helpers/gateway.js';

const GATEWAY = 'https://mcp.example.test/mcp';
const KEY = 'token-exchange-ended-replicas-key-of-forty-chars';

interface Harness {
  idp: TestIdp;
  wiki: WikiUpstream;
  intranet: WikiUpstream;
  redis: TestRedis;
  replicas: TestGateway[];
}

let h: Harness;

beforeAll(async () => {
  const idp = await startIdp({
    clients: [
      ...exchangeClients(),
    ],
    exchange: { subjectAudiences: [GATEWAY], targets: { 'api://wiki': { scope: 'wiki.read' }, 'api://intranet': { scope: 'intranet.read' } } },
  });
  const [wiki, intranet, redis] = await Promise.all([startWikiUpstream(idp.issuer, 'api://wiki'), startWikiUpstream(idp.issuer, 'api://intranet'), startRedis()]);
  const config = {
    auth: { oauth: { issuer: idp.issuer, jwksUri: `${idp.issuer}/jwks`, resource: GATEWAY, algorithms: ['RS256'], login: EXCHANGE_LOGIN } },
    credentials: { key: KEY, store: { redis: { url: redis.url, prefix: redis.prefix } } },
    upstreams: {
      wiki: { http: { url: wiki.url, tokenExchange: { audience: 'api://wiki', scopes: ['wiki.read'] } } },
      intranet: { http: { url: intranet.url, tokenExchange: { audience: 'api://intranet', scopes: ['intranet.read'] } } },
    },
  };
  const replicas = await Promise.all([startGateway(config), startGateway(config)]);
  h = { idp, wiki, intranet, redis, replicas };
}, 60_000);

afterAll(async () => {
  await Promise.allSettled((h?.replicas ?? []).map((replica) => replica.close()));
  await Promise.allSettled([h?.wiki.close(), h?.intranet.close(), h?.idp.close(), h?.redis.close()]);
});

function answerOf(client: Client, name: string): Promise<string> {
  return client.callTool({ name, arguments: {} }).then(textOf, (err: unknown) => (err instanceof Error ? err.message : String(err)));
}

describe("the end of a user's IdP session, with a Redis credential store", () => {
  it('the exchanged tokens kept in Redis are not taken by the other replica', async () => {
    const token = await h.idp.issueAccessToken({ sub: 'judy', clientId: 'host', resource: GATEWAY });
    const here = await connectClient(h.replicas[0]!.url, {}, undefined, { authorization: `Bearer ${token}` });
    try {
      expect(await answerOf(here, 'wiki__whoami')).toMatch(/"sub":"judy"/);
      expect(await answerOf(here, 'intranet__whoami')).toMatch(/"sub":"judy"/);
      await h.idp.revokeGrants('judy');
      // The wiki refuses its token: the next exchange meets the IdP's invalid_grant.
      const wikiTokens = (await h.wiki.headers()).map((r) => r.authorization?.replace(/^Bearer /, '')).filter((t): t is string => !!t && decodeJwt(t).sub === 'judy');
      await h.wiki.revoke(wikiTokens.at(-1)!);
      expect(await answerOf(here, 'wiki__whoami')).toMatch(/your sign-in at the identity provider has ended/);
    } finally {
      await here.close();
    }
    // The other replica holds nothing of hers: what Redis kept for the intranet is not taken.
    const there = await connectClient(h.replicas[1]!.url, {}, undefined, { authorization: `Bearer ${token}` });
    try {
      const answer = await answerOf(there, 'intranet__whoami');
      expect(answer).not.toMatch(/"sub"/);
      expect(answer).toMatch(/your sign-in at the identity provider has ended; sign in to Switchyard again to use intranet$/);
    } finally {
      await there.close();
    }
  });
});
