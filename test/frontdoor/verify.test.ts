// The authenticator accepting the front door's own tokens beside the IdP's: the principal is the
// IdP's (`<idp issuer>|<sub>`), each token is good for its one endpoint, and an expired, tampered,
// untyped or revoked one is refused with the reason the RFC 6750 challenge names.
import { SignJWT } from 'jose';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Authenticator } from '../../src/auth/authenticator.js';
import { AuthError } from '../../src/auth/principal.js';
import { configSchema } from '../../src/config/schema.js';
import { openCredentialStore, type CredentialStore } from '../../src/credentials/store.js';
import { SigningKeys } from '../../src/frontdoor/keys.js';

const KEY = 'verify-unit-test-credentials-key-of-forty-chars';
const ISSUER = 'https://mcp.example';
const IDP = 'https://login.example/';

let store: CredentialStore;
let keys: SigningKeys;
let alive: Set<string>;
let authenticator: Authenticator;

beforeEach(async () => {
  store = await openCredentialStore('memory', [KEY]);
  keys = new SigningKeys({ store });
  alive = new Set(['grant-1']);
  const config = configSchema.parse({
    listen: { publicUrl: `${ISSUER}/mcp` },
    auth: { oauth: { issuer: IDP, jwksUri: 'https://login.example/keys', login: { clientId: 'switchyard' }, frontDoor: {} } },
    credentials: { key: KEY },
    endpoints: [{ path: '/eng' }],
    upstreams: {},
  });
  authenticator = new Authenticator(config.auth!, config.listen, ['/eng'], {
    issuer: ISSUER,
    keys,
    accept: async (payload) => {
      if (!alive.has(payload.sid as string)) throw new AuthError('claims', "the token's grant was revoked");
    },
  });
});

afterEach(async () => {
  await store.close();
});

async function token(claims: Record<string, unknown> = {}, options: { aud?: string; exp?: number; typ?: string } = {}): Promise<string> {
  const { kid, key } = await keys.signer();
  return new SignJWT({ client_id: 'dcr_x', sid: 'grant-1', groups: ['eng'], ...claims })
    .setProtectedHeader({ alg: 'ES256', kid, typ: options.typ ?? 'at+jwt' })
    .setIssuer(ISSUER)
    .setSubject('alice')
    .setAudience(options.aud ?? `${ISSUER}/mcp`)
    .setIssuedAt()
    .setExpirationTime(options.exp ?? Math.floor(Date.now() / 1_000) + 600)
    .sign(key);
}

async function reasonOf(bearer: string, endpoint?: string): Promise<string> {
  try {
    await authenticator.authenticate({ authorization: `Bearer ${bearer}`, apiKey: undefined, queryToken: false, endpoint });
    return 'accepted';
  } catch (err) {
    return (err as AuthError).reason;
  }
}

describe("the front door's tokens", () => {
  it("carry the IdP's principal and the copied claims, for the endpoint they name", async () => {
    const principal = await authenticator.authenticate({ authorization: `Bearer ${await token()}`, apiKey: undefined, queryToken: false });
    expect(principal.id).toBe(`${IDP}|alice`);
    expect(principal.claims.groups).toEqual(['eng']);
    expect(await reasonOf(await token({}, { aud: `${ISSUER}/eng` }), '/eng')).toBe('accepted');
  });

  it('are refused at another endpoint than their audience', async () => {
    expect(await reasonOf(await token(), '/eng')).toBe('audience');
    expect(await reasonOf(await token({}, { aud: `${ISSUER}/eng` }))).toBe('audience');
    expect(await reasonOf(await token({}, { aud: 'https://elsewhere.example/mcp' }))).toBe('audience');
  });

  it('are refused expired, tampered, without typ at+jwt, or once their grant is revoked', async () => {
    expect(await reasonOf(await token({}, { exp: Math.floor(Date.now() / 1_000) - 120 }))).toBe('expired');
    const [header, , signature] = (await token()).split('.');
    const forged = Buffer.from(JSON.stringify({ iss: ISSUER, sub: 'mallory', aud: `${ISSUER}/mcp`, exp: 9_999_999_999, sid: 'grant-1' })).toString('base64url');
    expect(await reasonOf(`${header}.${forged}.${signature}`)).toBe('signature');
    expect(await reasonOf(await token({}, { typ: 'JWT' }))).toBe('claims');
    const good = await token();
    expect(await reasonOf(good)).toBe('accepted');
    alive.delete('grant-1');
    // Remembered once verified, until a revocation is announced (the store's channel calls this).
    keys.invalidate();
    expect(await reasonOf(good)).toBe('claims');
  });
});
