// Token exchange's subjects come from the authenticator: a token the front door (Switchyard)
// issued itself is accepted as the user's credential but never handed over as a subject, so it
// can never be sent to the IdP. (An IdP token is handed over: test/e2e/token-exchange.test.ts.)
import { SignJWT } from 'jose';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Authenticator } from '../../src/auth/authenticator.js';
import { configSchema } from '../../src/config/schema.js';
import { openCredentialStore, type CredentialStore } from '../../src/credentials/store.js';
import { SigningKeys } from '../../src/frontdoor/keys.js';

const KEY = 'subject-source-unit-test-credentials-key-of-forty';
const ISSUER = 'https://mcp.example';
const IDP = 'https://login.example/';

let store: CredentialStore;

beforeEach(async () => {
  store = await openCredentialStore('memory', [KEY]);
});

afterEach(async () => {
  await store.close();
});

describe('subjects for token exchange', () => {
  it("never receive a token of the front door's own, first sight or known", async () => {
    const keys = new SigningKeys({ store });
    const config = configSchema.parse({
      listen: { publicUrl: `${ISSUER}/mcp` },
      auth: { oauth: { issuer: IDP, jwksUri: 'https://login.example/keys', login: { clientId: 'switchyard', clientSecret: 's' }, frontDoor: {} } },
      credentials: { key: KEY },
      upstreams: { wiki: { http: { url: 'https://wiki.internal/mcp', tokenExchange: { audience: 'api://wiki' } } } },
    });
    const handed: string[] = [];
    const authenticator = new Authenticator(config.auth!, config.listen, [], { issuer: ISSUER, keys, accept: async () => {} }, (_principal, token) => void handed.push(token));
    const { kid, key } = await keys.signer();
    const own = await new SignJWT({ client_id: 'dcr_x', sid: 'grant-1' })
      .setProtectedHeader({ alg: 'ES256', kid, typ: 'at+jwt' })
      .setIssuer(ISSUER)
      .setSubject('alice')
      .setAudience(`${ISSUER}/mcp`)
      .setIssuedAt()
      .setExpirationTime(Math.floor(Date.now() / 1_000) + 600)
      .sign(key);
    const credentials = { authorization: `Bearer ${own}`, apiKey: undefined, queryToken: false };
    expect((await authenticator.authenticate(credentials)).id).toBe(`${IDP}|alice`);
    // The second time it is found as verified before, without a promise.
    expect(authenticator.authenticateNow(credentials)?.id).toBe(`${IDP}|alice`);
    expect(handed).toEqual([]);
  });
});
