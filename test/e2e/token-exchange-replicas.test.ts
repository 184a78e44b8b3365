// Token exchange across replicas: two gateways sharing one real redis-server as their credential
// store exchange once per (principal, upstream) between them, and what they keep there names
// neither the user nor a token.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { startIdp, type TestIdp } from '../helpers/oidc.js';
import { EXCHANGE_LOGIN, exchangeClients } from '../helpers/oidc-exchange.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { startWikiUpstream, type WikiUpstream } from '../helpers/wiki-upstream.js';
import { connectClient, startGateway, type TestGateway } from '../helpers/gateway.js';

const GATEWAY = 'https://mcp.example.test/mcp';
const KEY = 'token-exchange-replicas-test-key-of-forty-chars';

interface Harness {
  idp: TestIdp;
  wiki: WikiUpstream;
  redis: TestRedis;
  replicas: TestGateway[];
}

let h: Harness;

beforeAll(async () => {
  const idp = await startIdp({
    clients: [
      ...exchangeClients(),
    ],
    exchange: { subjectAudiences: [GATEWAY], targets: { 'api://wiki': { scope: 'wiki.read' } } },
  });
  const [wiki, redis] = await Promise.all([startWikiUpstream(idp.issuer, 'api://wiki'), startRedis()]);
  const config = {
    auth: { oauth: { issuer: idp.issuer, jwksUri: `${idp.issuer}/jwks`, resource: GATEWAY, algorithms: ['RS256'], login: EXCHANGE_LOGIN } },
    credentials: { key: KEY, store: { redis: { url: redis.url, prefix: redis.prefix } } },
    upstreams: { wiki: { http: { url: wiki.url, tokenExchange: { audience: 'api://wiki', scopes: ['wiki.read'] } } } },
  };
  const replicas = await Promise.all([startGateway(config), startGateway(config)]);
  h = { idp, wiki, redis, replicas };
}, 60_000);

afterAll(async () => {
  await Promise.allSettled((h?.replicas ?? []).map((replica) => replica.close()));
  await Promise.allSettled([h?.wiki.close(), h?.idp.close(), h?.redis.close()]);
});

async function whoamiAt(replica: TestGateway, token: string): Promise<string | undefined> {
  const client = await connectClient(replica.url, {}, undefined, { authorization: `Bearer ${token}` });
  try {
    const result = (await client.callTool({ name: 'wiki__whoami', arguments: {} })) as { content: Array<{ text?: string }> };
    return (JSON.parse(result.content[0]!.text!) as { sub?: string }).sub;
  } finally {
    await client.close();
  }
}

const exchangesOf = (sub: string): number => h.idp.exchanges.filter((r) => r.sub === sub).length;

describe('token exchange with a Redis credential store', () => {
  it('a token exchanged on one replica serves the other', async () => {
    const token = await h.idp.issueAccessToken({ sub: 'alice', clientId: 'host', resource: GATEWAY });
    expect(await whoamiAt(h.replicas[0]!, token)).toBe('alice');
    expect(await whoamiAt(h.replicas[1]!, token)).toBe('alice');
    expect(exchangesOf('alice')).toBe(1);
  });

  it('first sessions on both replicas at once make one exchange', async () => {
    const token = await h.idp.issueAccessToken({ sub: 'bob', clientId: 'host', resource: GATEWAY });
    const answers = await Promise.all([...h.replicas, ...h.replicas].map((replica) => whoamiAt(replica, token)));
    expect(answers).toEqual(['bob', 'bob', 'bob', 'bob']);
    expect(exchangesOf('bob')).toBe(1);
  });

  it('a token the upstream refuses is exchanged anew once, on whichever replica meets the 401, and the call goes through', async () => {
    const token = await h.idp.issueAccessToken({ sub: 'carol', clientId: 'host', resource: GATEWAY });
    expect(await whoamiAt(h.replicas[0]!, token)).toBe('carol');
    const first = (await h.wiki.headers()).at(-1)!.authorization!.replace(/^Bearer /, '');
    await h.wiki.revoke(first);
    expect(await whoamiAt(h.replicas[1]!, token)).toBe('carol');
    expect(exchangesOf('carol')).toBe(2);
    // The other replica takes the new one from the store, not the refused one.
    expect(await whoamiAt(h.replicas[0]!, token)).toBe('carol');
    expect(exchangesOf('carol')).toBe(2);
  });

  it('what is kept in Redis names neither the user nor a token', async () => {
    const redis = new Redis(h.redis.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
    try {
      await redis.connect();
      const keys = await redis.keys(`${h.redis.prefix}*`);
      const exchanged = keys.filter((key) => key.includes('exchange:wiki:'));
      expect(exchanged.length).toBeGreaterThanOrEqual(2);
      const tokens = (await h.wiki.headers()).map((r) => r.authorization?.replace(/^Bearer /, '')).filter((v): v is string => !!v);
      for (const key of exchanged) {
        expect(key).not.toMatch(/alice|bob|carol/);
        const value = (await redis.get(key)) ?? (await redis.hgetall(key)).toString();
        for (const token of tokens) expect(value).not.toContain(token);
      }
    } finally {
      redis.disconnect();
    }
  });
});
