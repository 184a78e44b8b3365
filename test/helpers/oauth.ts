// A stand-in authorization server on 127.0.0.1 for auth tests: RS256 and ES256 signing keys
// published as a JWKS that tests can rotate (fetches counted), a signer for good and forged
// tokens, and a client-credentials token endpoint (RFC 6749 §4.4) that counts its calls.
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll } from 'vitest';
import { exportJWK, exportPKCS8, exportSPKI, generateKeyPair, importPKCS8, SignJWT, type CryptoKey, type JWK, type JWTHeaderParameters, type JWTPayload } from 'jose';

export type SigningAlgorithm = 'RS256' | 'ES256';

/** A key pair of the server, with what a test needs to forge tokens from it. */
export interface SigningKey {
  kid: string;
  /** The algorithm the key was made for. */
  alg: SigningAlgorithm;
  privateKey: CryptoKey;
  /** As published in the JWKS. */
  jwk: JWK;
  /** The public key as PEM (SPKI), for key-confusion forgeries. */
  spkiPem: string;
  /** The private key as PEM (PKCS #8), to sign with the same key under another algorithm. */
  pkcs8Pem: string;
}

export interface SignOptions {
  /** Defaults to the key's own algorithm; another one re-imports the same key material for it. */
  alg?: string;
  /** Defaults to the key's kid; `null` leaves the header without one. */
  kid?: string | null;
  /** Defaults to the RS256 key. */
  key?: SigningKey;
  typ?: string;
  /** Extra or overriding protected header parameters. */
  header?: Record<string, unknown>;
}

/** A client-credentials request the token endpoint answered. */
export interface TokenRequest {
  clientId: string | undefined;
  /** Whether the client id and secret were the right ones. */
  authenticated: boolean;
  form: Record<string, string>;
  /** The token issued, when one was. */
  token?: string;
  /** When it was issued and when it expires (ms since the epoch, this process's clock). */
  issuedAt: number;
  expiresAt?: number;
}

export interface AuthServer {
  /** The issuer identifier (this server's base URL). */
  issuer: string;
  jwksUri: string;
  tokenUrl: string;
  rsa: SigningKey;
  ec: SigningKey;
  /** GET /jwks requests answered so far (failed ones included). */
  readonly jwksFetches: number;
  /** Makes a new key pair; it is published only if `publish` is true. */
  createKey(alg: SigningAlgorithm, kid: string, publish?: boolean): Promise<SigningKey>;
  publish(key: SigningKey): void;
  unpublish(kid: string): void;
  /** Kids currently in the JWKS. */
  published(): string[];
  /** Answer /jwks with this HTTP status (and no key set) until called with undefined. */
  failJwks(status: number | undefined): void;
  /** Signs exactly `claims` (no defaults are added). */
  sign(claims: JWTPayload, options?: SignOptions): Promise<string>;
  /** An unsecured JWT (alg "none", empty signature) of `claims`. */
  unsigned(claims: JWTPayload, header?: Record<string, unknown>): string;
  /**
   * The key-confusion forgery: HS256 with the RSA public key's bytes as the HMAC secret, as a
   * verifier that trusts the header's alg would check it. `pem` uses the SPKI PEM text, `der`
   * its DER bytes.
   */
  hs256WithPublicKey(claims: JWTPayload, encoding?: 'pem' | 'der', key?: SigningKey): Promise<string>;
  /** The client the token endpoint accepts (HTTP Basic, RFC 6749 §2.3.1). */
  client: { id: string; secret: string };
  /** expires_in of tokens issued from now on, in seconds. */
  tokenLifetimeSeconds: number;
  /** Every request to /token, answered or refused. */
  readonly tokenRequests: readonly TokenRequest[];
  /** Tokens issued so far, oldest first. */
  issued(): string[];
  close(): Promise<void>;
}

export interface AuthServerOptions {
  clientId?: string;
  clientSecret?: string;
  tokenLifetimeSeconds?: number;
}

function base64url(value: unknown): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');
}

async function makeKey(alg: SigningAlgorithm, kid: string): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  // No "alg" member: the key set then names the key type only, so an algorithm outside the
  // verifier's allow-list finds a usable key and only the allow-list can refuse it.
  const jwk: JWK = { ...(await exportJWK(publicKey)), kid, use: 'sig' };
  return { kid, alg, privateKey, jwk, spkiPem: await exportSPKI(publicKey), pkcs8Pem: await exportPKCS8(privateKey) };
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

function json(res: ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers }).end(JSON.stringify(value));
}

/** The client id and secret of an HTTP Basic header, form-urlencoded inside (RFC 6749 §2.3.1). */
function basicCredentials(header: string | undefined): { id: string; secret: string } | undefined {
  const match = header === undefined ? null : /^Basic\s+([A-Za-z0-9+/=]+)$/i.exec(header);
  if (!match) return undefined;
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return undefined;
  const unescape = (s: string): string => decodeURIComponent(s.replace(/\+/g, ' '));
  try {
    return { id: unescape(decoded.slice(0, colon)), secret: unescape(decoded.slice(colon + 1)) };
  } catch {
    return undefined;
  }
}

export async function startAuthServer(options: AuthServerOptions = {}): Promise<AuthServer> {
  const rsa = await makeKey('RS256', 'rsa-1');
  const ec = await makeKey('ES256', 'ec-1');
  const keys = new Map<string, JWK>([
    [rsa.kid, rsa.jwk],
    [ec.kid, ec.jwk],
  ]);
  const tokenRequests: TokenRequest[] = [];
  let jwksFetches = 0;
  let jwksStatus: number | undefined;

  async function token(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const form = Object.fromEntries(new URLSearchParams(await readBody(req)));
    const presented = basicCredentials(req.headers.authorization);
    const issuedAt = Date.now();
    const authenticated = presented?.id === server.client.id && presented.secret === server.client.secret;
    const record: TokenRequest = { clientId: presented?.id, authenticated, form, issuedAt };
    tokenRequests.push(record);
    if (!authenticated) {
      // RFC 6749 §5.2: a failed client authentication is 401 invalid_client.
      json(res, 401, { error: 'invalid_client', error_description: 'client authentication failed' }, { 'www-authenticate': 'Basic realm="token"' });
      return;
    }
    if (form.grant_type !== 'client_credentials') {
      json(res, 400, { error: 'unsupported_grant_type' });
      return;
    }
    const lifetime = server.tokenLifetimeSeconds;
    record.token = `cc-${randomBytes(24).toString('hex')}`;
    record.expiresAt = issuedAt + lifetime * 1_000;
    json(res, 200, { access_token: record.token, token_type: 'Bearer', expires_in: lifetime });
  }

  const http = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    if (path === '/jwks' && req.method === 'GET') {
      jwksFetches++;
      if (jwksStatus !== undefined) return json(res, jwksStatus, { error: 'unavailable' });
      return json(res, 200, { keys: [...keys.values()] });
    }
    if (path === '/token' && req.method === 'POST') {
      token(req, res).catch(() => {
        if (!res.headersSent) res.writeHead(500);
        res.end();
      });
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(0, '127.0.0.1', () => resolve());
  });
  const issuer = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;

  const server: AuthServer = {
    issuer,
    jwksUri: `${issuer}/jwks`,
    tokenUrl: `${issuer}/token`,
    rsa,
    ec,
    get jwksFetches() {
      return jwksFetches;
    },
    async createKey(alg, kid, publish = false) {
      const key = await makeKey(alg, kid);
      if (publish) keys.set(kid, key.jwk);
      return key;
    },
    publish(key) {
      keys.set(key.kid, key.jwk);
    },
    unpublish(kid) {
      keys.delete(kid);
    },
    published: () => [...keys.keys()],
    failJwks(status) {
      jwksStatus = status;
    },
    async sign(claims, options = {}) {
      const key = options.key ?? rsa;
      const alg = options.alg ?? key.alg;
      const signingKey = alg === key.alg ? key.privateKey : await importPKCS8(key.pkcs8Pem, alg);
      const kid = options.kid === undefined ? key.kid : options.kid;
      const header = { alg, ...(kid === null ? {} : { kid }), ...(options.typ ? { typ: options.typ } : {}), ...options.header } as JWTHeaderParameters;
      return new SignJWT(claims).setProtectedHeader(header).sign(signingKey);
    },
    unsigned(claims, header = {}) {
      return `${base64url({ alg: 'none', typ: 'JWT', ...header })}.${base64url(claims)}.`;
    },
    async hs256WithPublicKey(claims, encoding = 'pem', key = rsa) {
      const secret =
        encoding === 'pem'
          ? new TextEncoder().encode(key.spkiPem)
          : new Uint8Array(Buffer.from(key.spkiPem.replace(/-----[^-]+-----|\s/g, ''), 'base64'));
      return new SignJWT(claims).setProtectedHeader({ alg: 'HS256', kid: key.kid }).sign(secret);
    },
    client: { id: options.clientId ?? 'switchyard-gateway', secret: options.clientSecret ?? `secret-${randomBytes(12).toString('hex')}` },
    tokenLifetimeSeconds: options.tokenLifetimeSeconds ?? 3_600,
    tokenRequests,
    issued: () => tokenRequests.flatMap((r) => (r.token === undefined ? [] : [r.token])),
    async close() {
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
  return server;
}

/**
 * Starts the stand-in before a file's tests and closes it after them (call it at a file's top
 * level); the accessor throws when used before its beforeAll.
 */
export function useAuthServer(options: AuthServerOptions = {}): () => AuthServer {
  let as: AuthServer | undefined;
  beforeAll(async () => {
    as = await startAuthServer(options);
  });
  afterAll(async () => {
    await as?.close();
  });
  return () => {
    if (as === undefined) throw new Error('the authorization server is used before its beforeAll');
    return as;
  };
}
