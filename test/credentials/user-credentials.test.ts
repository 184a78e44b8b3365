// UserCredentials against a real authorization server (oidc-provider) and the token-checking
// upstream: the gateway's client there is registered once, however many sign-ins start at once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Sealer } from '../../src/credentials/sealed.js';
import { MemoryCredentialStore } from '../../src/credentials/store.js';
import { UserCredentials } from '../../src/credentials/user-credentials.js';
import { silentLogger } from '../../src/util/log.js';
import { startIdp, type TestIdp } from '../helpers/oidc.js';
import { startUserAuthUpstream, type UserAuthUpstream } from '../helpers/user-auth-upstream.js';

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
});
