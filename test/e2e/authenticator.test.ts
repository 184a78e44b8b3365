// The remembered-token path of authentication, against a real JWKS server and real signed
// tokens: a session's every call is decided from memory, with the same outcome as parsing.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Authenticator, type Credentials } from '../../src/auth/authenticator.js';
import { JwtVerifier, VerifiedTokens } from '../../src/auth/jwt.js';
import { AuthError } from '../../src/auth/principal.js';
import { configFromObject } from '../../src/config/load.js';
import { startAuthServer, type AuthServer } from '../helpers/oauth.js';

const RESOURCE = 'http://127.0.0.1/mcp';
let as: AuthServer;

beforeAll(async () => {
  as = await startAuthServer();
});
afterAll(async () => {
  await as?.close();
});

function goodClaims(lifetimeSeconds = 300) {
  const now = Math.floor(Date.now() / 1_000);
  return { iss: as.issuer, aud: RESOURCE, sub: 'alice', iat: now, exp: now + lifetimeSeconds };
}

function authenticator(apiKeys: unknown[] = []): Authenticator {
  const config = configFromObject(
    { upstreams: {}, auth: { apiKeys, oauth: { issuer: as.issuer, jwksUri: as.jwksUri, resource: RESOURCE } } },
    { file: 'gateway.yaml', env: {} },
  );
  return new Authenticator(config.auth!, config.listen);
}

const credentials = (authorization: string | undefined, queryToken = false): Credentials => ({ authorization, apiKey: undefined, queryToken });

function refusalOf(run: () => unknown): string | undefined {
  try {
    run();
    return undefined;
  } catch (err) {
    if (err instanceof AuthError) return err.reason;
    throw err;
  }
}

describe('a token verified before', () => {
  it('is decided without a promise and without the JWKS, however the scheme is spelled', async () => {
    const auth = authenticator();
    const token = await as.sign(goodClaims());
    expect(auth.authenticateNow(credentials(`Bearer ${token}`))).toBeUndefined();
    const principal = await auth.authenticate(credentials(`Bearer ${token}`));
    expect(principal.id).toBe(`${as.issuer}|alice`);
    const fetches = as.jwksFetches;
    for (const header of [`Bearer ${token}`, `bearer ${token}`, `BEARER   ${token}`, `Bearer ${token} `]) {
      expect(auth.authenticateNow(credentials(header))?.id).toBe(principal.id);
    }
    expect(as.jwksFetches).toBe(fetches);
  });

  it('is still refused in the query string, and another token in the header is still verified', async () => {
    const auth = authenticator();
    const token = await as.sign(goodClaims());
    await auth.authenticate(credentials(`Bearer ${token}`));
    expect(refusalOf(() => auth.authenticateNow(credentials(`Bearer ${token}`, true)))).toBe('query_token');
    // The same token with its signature changed is not the remembered one.
    const forged = `${token.slice(0, token.lastIndexOf('.') + 1)}${'A'.repeat(86)}`;
    expect(auth.authenticateNow(credentials(`Bearer ${forged}`))).toBeUndefined();
    await expect(auth.authenticate(credentials(`Bearer ${forged}`))).rejects.toMatchObject({ reason: 'signature' });
    expect(refusalOf(() => auth.authenticateNow(credentials(`Basic ${token}`)))).toBe('malformed');
  });

  it('keeps API keys apart: a key is never looked up as a remembered token', async () => {
    const key = 'k'.repeat(32);
    const auth = authenticator([{ id: 'ci', hash: `sha256:${createHash('sha256').update(key).digest('hex')}` }]);
    expect(auth.authenticateNow(credentials(`Bearer ${key}`))?.kind).toBe('apikey');
    const token = await as.sign(goodClaims());
    await auth.authenticate(credentials(`Bearer ${token}`));
    expect(auth.authenticateNow(credentials(`Bearer ${token}`))?.kind).toBe('oauth');
  });

  it('is forgotten at its exp', async () => {
    let now = Date.now();
    const verifier = new JwtVerifier(
      { issuer: as.issuer, jwksUri: as.jwksUri, audience: [RESOURCE], algorithms: ['RS256', 'ES256'], clockToleranceMs: 0, principalClaim: 'sub', jwksCooldownMs: 30_000, jwksMaxAgeMs: 600_000 },
      () => now,
    );
    const claims = goodClaims(60);
    const token = await as.sign(claims);
    await verifier.verify(token);
    expect(verifier.known(token)?.id).toBe(`${as.issuer}|alice`);
    now = claims.exp * 1_000;
    expect(verifier.known(token)).toBeUndefined();
    // Gone for good, even if the clock went back.
    now = Date.now();
    expect(verifier.known(token)).toBeUndefined();
  });
});

describe('VerifiedTokens', () => {
  it('holds at most maxEntries, dropping the oldest first; a lookup changes no order', () => {
    const tokens = new VerifiedTokens<number>({ maxEntries: 3, maxBytes: 1_000_000 });
    for (const [i, token] of ['a', 'b', 'c'].entries()) tokens.set(token, i);
    expect(tokens.get('a')).toBe(0);
    tokens.set('d', 3);
    expect([...tokens.keys()]).toEqual(['b', 'c', 'd']);
    expect(tokens.get('a')).toBeUndefined();
    // Setting a held token again makes it the newest.
    tokens.set('b', 4);
    tokens.set('e', 5);
    expect([...tokens.keys()]).toEqual(['d', 'b', 'e']);
    expect(tokens.get('b')).toBe(4);
  });

  it('holds at most maxBytes, counting each token by its length', () => {
    // Each token costs its length + 256: three of 744 characters fill 3,000 bytes.
    const tokens = new VerifiedTokens<string>({ maxEntries: 100, maxBytes: 3_000 });
    const long = (c: string): string => c.repeat(744);
    for (const c of ['x', 'y', 'z']) tokens.set(long(c), c);
    expect([...tokens.keys()].map((t) => t[0])).toEqual(['x', 'y', 'z']);
    tokens.set(long('w'), 'w');
    expect([...tokens.keys()].map((t) => t[0])).toEqual(['y', 'z', 'w']);
    // Deleting gives its bytes back: a short token then fits beside the other three.
    tokens.delete(long('y'));
    tokens.set('s', 's');
    tokens.set('t', 't');
    expect([...tokens.keys()].map((t) => t[0])).toEqual(['z', 'w', 's', 't']);
  });
});
