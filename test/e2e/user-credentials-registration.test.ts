// UserCredentials against a real authorization server (oidc-provider) and the token-checking
// upstream: the gateway's client there is registered once, however many sign-ins start at once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Sealer } from '../../src/credentials/sealed.js';
import { MemoryCredentialStore } from '../../src/credentials/store.js';
import { UserCredentials } from '../../src/credentials/user-credentials.js';
import { silentLogger } from '../../src/util/log.js';
import { startIdp, type TestIdp } from '../helpers/oidc.js';
import { startUserAuthUpstream, type UserAuthUpstream } from '../helpers/user-auth-upstream.js';
import { startGateway } from '../helpers/gateway.js';

let idp: TestIdp;
let upstream: UserAuthUpstream;

beforeAll(async () => {
  const resources: Record<string, { scope: string }> = {};
  idp = await startIdp({ resources });
  upstream = await startUserAuthUpstream(idp.issuer);
  resources[upstream.url] = { scope: 'repo' };
}, 30_000);

afterAll(async () => {
  await Promise.allSettled([upstream?.close(), idp?.close()]);
});

describe('UserCredentials', () => {
  it('registers its client at the upstream authorization server once for sign-ins that start together', async () => {
    const store = new MemoryCredentialStore(new Sealer(['a-unit-test-credentials-key-of-forty-chars']));
    const credentials = new UserCredentials({
      store,
      upstreams: () => new Map([['github', { url: upstream.url, userAuth: { type: 'oauth' as const } }]]),
      logger: silentLogger,
      redirectUri: () => 'http://127.0.0.1:1/connect/callback',
    });
    try {
      const registrations = () => idp.requests.filter((r) => r.method === 'POST' && r.path === '/reg').length;
      const before = registrations();
      const all = await Promise.all([credentials.authorization('github'), credentials.authorization('github'), credentials.authorization('github')]);
      expect(new Set(all.map(({ client }) => client.clientId)).size).toBe(1);
      expect(all[0]!.client.method).toBe('dynamic');
      expect(registrations() - before).toBe(1);
      // Kept: a later sign-in uses the same client.
      expect((await credentials.authorization('github')).client.clientId).toBe(all[0]!.client.clientId);
      expect(registrations() - before).toBe(1);
    } finally {
      credentials.close();
      await store.close();
    }
  });

  it('uses a token until shortly before it expires, then refreshes it ahead of expiry (a refused refresh asks for a new sign-in)', async () => {
    const store = new MemoryCredentialStore(new Sealer(['a-unit-test-credentials-key-of-forty-chars']));
    let now = 1_000_000_000_000;
    const outcomes: string[] = [];
    const credentials = new UserCredentials({
      store,
      upstreams: () => new Map([['github', { url: upstream.url, userAuth: { type: 'oauth' as const } }]]),
      logger: silentLogger,
      redirectUri: () => 'http://127.0.0.1:1/connect/callback',
      onRefresh: (_upstream, outcome) => outcomes.push(outcome),
      now: () => now,
    });
    const changes: boolean[] = [];
    credentials.onChange((change) => changes.push(change.signedIn));
    try {
      const { auth } = await credentials.authorization('github');
      // A 10-minute token: used as it is until a minute before it expires.
      await credentials.save('alice', 'github', { kind: 'oauth', issuer: auth.server.issuer, obtainedAt: now, accessToken: 'token-one', tokenType: 'Bearer', refreshToken: 'not-a-real-refresh-token', expiresAt: now + 600_000 });
      const requests = () => idp.requests.filter((r) => r.path === '/token').length;
      const before = requests();
      now += 530_000;
      expect(await credentials.credential('alice', 'github').authorization()).toBe('Bearer token-one');
      expect(requests()).toBe(before);
      // Within the last minute: refreshed before use. The server refuses this refresh token,
      // so the credential goes and the user is asked to sign in again.
      now += 15_000;
      await expect(credentials.credential('alice', 'github').authorization()).rejects.toMatchObject({ code: 'consent_required' });
      expect(requests()).toBe(before + 1);
      expect(outcomes).toEqual(['rejected']);
      expect(await credentials.has('alice', 'github')).toBe(false);
      expect(changes).toEqual([true, false]);
    } finally {
      credentials.close();
      await store.close();
    }
  });

  it('serves the Client ID Metadata Document of each upstream under an https publicUrl', async () => {
    const gateway = await startGateway({
      listen: { port: 0, publicUrl: 'https://gw.example.test/mcp' },
      upstreams: { github: { http: { url: upstream.url, userAuth: { type: 'oauth' } } } },
      credentials: { key: 'a-unit-test-credentials-key-of-forty-chars' },
    });
    try {
      const response = await gateway.gateway.app.request('https://gw.example.test/connect/client/github.json');
      expect(response.status).toBe(200);
      expect(await response.json()).toMatchObject({
        client_id: 'https://gw.example.test/connect/client/github.json',
        redirect_uris: ['https://gw.example.test/connect/callback'],
        grant_types: ['authorization_code', 'refresh_token'],
        token_endpoint_auth_method: 'none',
      });
      expect((await gateway.gateway.app.request('https://gw.example.test/connect/client/nope.json')).status).toBe(404);
    } finally {
      await gateway.close();
    }
  });
});
