// Access token verification against hostile input: time claims that never end (exp: 1e309 is
// Infinity after JSON.parse) or end absurdly late, the verified-token memory's own bound, and a
// key set too large to read (declared, or streamed without end).
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CompactSign, exportJWK, generateKeyPair, type CryptoKey, type JWK } from 'jose';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { boundedFetch, JwtVerifier, MAX_JWKS_BYTES, MAX_REMEMBER_MS, MAX_TOKEN_LIFETIME_MS } from '../../src/auth/jwt.js';
import { AuthError } from '../../src/auth/principal.js';
import { endlessJwks } from '../helpers/endless.js';

const ISSUER = 'https://issuer.example.test';
const AUDIENCE = 'https://mcp.example.test/mcp';
const KID = 'k1';

/** How the JWKS server answers: the key set, the key set padded past the bound, or an endless stream. */
type JwksMode = 'good' | 'padded' | 'endless';

let privateKey: CryptoKey;
let jwk: JWK;
let server: Server;
let jwksUri: string;
let mode: JwksMode = 'good';
/** Bytes the endless answer wrote before the client hung up, per request. */
const endlessWritten: number[] = [];

function endless(res: ServerResponse): void {
  endlessJwks(res, (written) => endlessWritten.push(written));
}

beforeAll(async () => {
  const pair = await generateKeyPair('RS256', { extractable: true });
  privateKey = pair.privateKey;
  jwk = { ...(await exportJWK(pair.publicKey)), kid: KID, use: 'sig' };
  server = createServer((_req, res) => {
    if (mode === 'endless') return endless(res);
    const body = JSON.stringify(mode === 'padded' ? { keys: [jwk], pad: 'x'.repeat(MAX_JWKS_BYTES) } : { keys: [jwk] });
    res.writeHead(200, { 'content-type': 'application/json' }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  jwksUri = `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks`;
});

afterAll(async () => {
  server?.closeAllConnections();
  await new Promise<void>((resolve) => server?.close(() => resolve()));
});

afterEach(() => {
  mode = 'good';
});

function verifier(now: () => number = Date.now): JwtVerifier {
  return new JwtVerifier(
    { issuer: ISSUER, jwksUri, audience: [AUDIENCE], algorithms: ['RS256'], clockToleranceMs: 0, principalClaim: 'sub', jwksCooldownMs: 30_000, jwksMaxAgeMs: 10 * MAX_REMEMBER_MS },
    now,
  );
}

/**
 * A token signed over exactly `payloadJson`: SignJWT refuses non-finite claims, but an attacker's
 * issuer (or a buggy one) need not, and 1e309 is valid JSON text.
 */
function signRaw(payloadJson: string): Promise<string> {
  return new CompactSign(new TextEncoder().encode(payloadJson)).setProtectedHeader({ alg: 'RS256', kid: KID }).sign(privateKey);
}

const nowSeconds = (): number => Math.floor(Date.now() / 1_000);
const base = (): string => `"iss":${JSON.stringify(ISSUER)},"aud":${JSON.stringify(AUDIENCE)},"sub":"alice"`;

async function refusal(verify: Promise<unknown>): Promise<AuthError> {
  const err: unknown = await verify.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AuthError);
  return err as AuthError;
}

describe('time claims', () => {
  it('a token whose exp is 1e309 (Infinity) is refused as invalid, not accepted forever', async () => {
    const err = await refusal(verifier().verify(await signRaw(`{${base()},"iat":${nowSeconds()},"exp":1e309}`)));
    expect(err.reason).toBe('claims');
    expect(err.message).toBe("the token's exp claim is not a finite number");
  });

  it('a token whose exp is further ahead than the lifetime bound is refused', async () => {
    const exp = nowSeconds() + Math.ceil(MAX_TOKEN_LIFETIME_MS / 1_000) + 3_600;
    const err = await refusal(verifier().verify(await signRaw(`{${base()},"exp":${exp}}`)));
    expect(err.reason).toBe('claims');
    expect(err.message).toBe("the token's exp claim is too far in the future");
  });

  it('a token whose iat or nbf is Infinity is refused', async () => {
    const exp = nowSeconds() + 300;
    expect((await refusal(verifier().verify(await signRaw(`{${base()},"iat":1e309,"exp":${exp}}`)))).message).toBe("the token's iat claim is not a finite number");
    // jose already refuses nbf in the future; Infinity is that, and stays refused.
    expect((await refusal(verifier().verify(await signRaw(`{${base()},"nbf":1e309,"exp":${exp}}`)))).reason).toMatch(/^(claims|not_yet_valid)$/);
  });

  it('a long-lived token is remembered no longer than the memory bound, then verified again', async () => {
    let now = Date.now();
    const v = verifier(() => now);
    const token = await signRaw(`{${base()},"exp":${nowSeconds() + 300 * 24 * 3_600}}`);
    expect((await v.verify(token)).id).toBe(`${ISSUER}|alice`);
    expect(v.known(token)?.id).toBe(`${ISSUER}|alice`);
    now += MAX_REMEMBER_MS;
    expect(v.known(token)).toBeUndefined();
    // Still a good token: verifying it again succeeds.
    expect((await v.verify(token)).id).toBe(`${ISSUER}|alice`);
  });
});

describe('key set size', () => {
  it('a key set larger than the bound is "keys unavailable", however good its keys', async () => {
    mode = 'padded';
    const token = await signRaw(`{${base()},"exp":${nowSeconds() + 300}}`);
    const err = await refusal(verifier().verify(token));
    expect(err.reason).toBe('jwks_unavailable');
    expect(err.message).toBe('the signing keys could not be fetched');
    // The same keys in a key set of ordinary size verify the same token.
    mode = 'good';
    expect((await verifier().verify(token)).id).toBe(`${ISSUER}|alice`);
  });

  it('an endless key set is abandoned soon after the bound, not read until the timeout', async () => {
    mode = 'endless';
    const started = Date.now();
    const err = await refusal(verifier().verify(await signRaw(`{${base()},"exp":${nowSeconds() + 300}}`)));
    expect(err.reason).toBe('jwks_unavailable');
    // jose's own timeout is 5 s; reading stops at the bound, long before it.
    expect(Date.now() - started).toBeLessThan(4_000);
    await expect.poll(() => endlessWritten.length, { timeout: 5_000 }).toBeGreaterThan(0);
    // What was written includes socket buffers; reading the 5 s through would be far more.
    expect(endlessWritten.at(-1)!).toBeLessThan(32 * MAX_JWKS_BYTES);
  });

  it('boundedFetch refuses a declared length past the bound without reading the body', async () => {
    let pulled = false;
    // highWaterMark 0: nothing is pulled until someone reads.
    const body = new ReadableStream<Uint8Array>(
      {
        pull() {
          pulled = true;
        },
      },
      { highWaterMark: 0 },
    );
    const fake = (async () => new Response(body, { status: 200, headers: { 'content-length': String(2 * MAX_JWKS_BYTES) } })) as typeof fetch;
    const fetchJwks = boundedFetch(MAX_JWKS_BYTES, fake);
    await expect(fetchJwks('https://issuer.example.test/jwks', { method: 'GET', redirect: 'manual', headers: new Headers(), signal: new AbortController().signal })).rejects.toThrow(/more than/);
    expect(pulled).toBe(false);
  });

  it('boundedFetch passes an answer within the bound through unchanged', async () => {
    const fake = (async () => new Response('{"keys":[]}', { status: 200 })) as typeof fetch;
    const res = await boundedFetch(MAX_JWKS_BYTES, fake)('https://issuer.example.test/jwks', { method: 'GET', redirect: 'manual', headers: new Headers(), signal: new AbortController().signal });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ keys: [] });
  });
});
