// What the authentication tests (test/e2e/auth-*.test.ts) share: the protected resource and its
// keys, raw requests and the exact challenges of a refusal, SDK clients with a credential, and
// the rig of a file: an authorization-server stand-in, good claims for it, and a protected
// gateway trusting it.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { JWTPayload } from 'jose';
import { expect } from 'vitest';
import { hashApiKey } from '../../src/auth/api-keys.js';
import { connectClient, startGateway, terminateSession, upstream, type TestGateway } from './gateway.js';
import { useAuthServer, type AuthServer } from './oauth.js';
import { postRaw } from './raw-http.js';

export const RESOURCE = 'https://mcp.example.test/mcp';
export const METADATA_URL = 'https://mcp.example.test/.well-known/oauth-protected-resource/mcp';
export const SCOPE = 'mcp:tools';
export const API_KEY = 'sk-switchyard-ci-5d0c1e7a9b3f42e8';
export const UNSCOPED_KEY = 'sk-switchyard-bare-0a8e2b7c91d4f3a6';
/** Bounds every wait for something that should happen soon. */
export const PROMPT_MS = 5_000;

export const INIT = { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } };
export const rpc = (id: number, method: string, params: Record<string, unknown> = {}) => ({ jsonrpc: '2.0', id, method, params });
export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** POSTs a JSON-RPC message with the headers a conforming client sends and `headers`; the body unread. */
export function post(url: URL | string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return postRaw(url, body, { headers });
}

/** A ping without a session: the cheapest request that still passes authentication. */
export async function probe(gw: TestGateway, headers: Record<string, string>): Promise<number> {
  const res = await post(gw.url, rpc(1, 'ping'), headers);
  await res.body?.cancel();
  return res.status;
}

/** The parameters of a `Bearer k="v", ...` challenge; fails on anything else. */
export function challenge(header: string | null): Record<string, string> {
  expect(header).toMatch(/^Bearer /);
  const rest = header!.slice('Bearer '.length);
  const params: Record<string, string> = {};
  const pattern = /\s*([a-z_]+)="([^"\\]*)"\s*(?:,|$)/gy;
  let match: RegExpExecArray | null;
  let end = 0;
  while ((match = pattern.exec(rest)) !== null && match[0] !== '') {
    expect(params[match[1]!], `repeated ${match[1]}`).toBeUndefined();
    params[match[1]!] = match[2]!;
    end = pattern.lastIndex;
  }
  expect(end, `unparsed challenge: ${header}`).toBe(rest.length);
  return params;
}

/** Status, exact challenge parameters, and a JSON-RPC error body without an id. */
export async function expectRefusal(res: Response, status: number, params: Record<string, string>): Promise<void> {
  expect(res.status).toBe(status);
  expect(challenge(res.headers.get('www-authenticate'))).toEqual(params);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  expect(await res.json()).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32600, message: expect.any(String) } });
}

export const invalidToken = (description: string) => ({ error: 'invalid_token', error_description: description, resource_metadata: METADATA_URL });

/** An SDK client with `headers` on every request; its session is ended and closed afterwards. */
export async function withClient<T>(gw: TestGateway, headers: Record<string, string>, run: (client: Client) => Promise<T>): Promise<T> {
  const client = await connectClient(gw.url, {}, undefined, headers);
  try {
    return await run(client);
  } finally {
    await terminateSession(client).catch(() => {});
    await client.close();
  }
}

export interface AuthRig {
  /** The authorization-server stand-in (started before the file's tests). */
  authServer(): AuthServer;
  /** Claims of a good token for the main gateway; an override of `undefined` removes the claim. */
  claims(overrides?: Record<string, unknown>): JWTPayload;
  /** auth.oauth trusting the stand-in, with `overrides`. */
  oauthConfig(overrides?: Record<string, unknown>): Record<string, unknown>;
  /** A gateway whose resource is RESOURCE, fronting the rogue fixture (and `extra` upstreams). */
  startProtected(oauth: Record<string, unknown>, extra?: Record<string, unknown>, more?: Record<string, unknown>): Promise<TestGateway>;
}

/** Registers the stand-in's hooks (call it at a file's top level) and returns the rig. */
export function useAuthRig(): AuthRig {
  const authServer = useAuthServer();

  return {
    authServer,
    claims(overrides = {}) {
      const now = Math.floor(Date.now() / 1_000);
      const all: Record<string, unknown> = { iss: authServer().issuer, aud: RESOURCE, sub: 'alice', scope: SCOPE, iat: now, exp: now + 300, ...overrides };
      for (const [key, value] of Object.entries(all)) if (value === undefined) delete all[key];
      return all as JWTPayload;
    },
    oauthConfig: (overrides = {}) => ({
      issuer: authServer().issuer,
      jwksUri: authServer().jwksUri,
      scopes: [SCOPE],
      algorithms: ['RS256', 'ES256'],
      jwksCooldown: '30s',
      ...overrides,
    }),
    startProtected(oauth, extra = {}, more = {}) {
      return startGateway({
        listen: { port: 0, publicUrl: RESOURCE },
        auth: {
          oauth,
          apiKeys: [
            { id: 'ci', hash: hashApiKey(API_KEY), team: 'platform', scopes: [SCOPE] },
            { id: 'bare', hash: hashApiKey(UNSCOPED_KEY), scopes: [] },
          ],
        },
        upstreams: { rogue: upstream.rogue(), ...extra },
        ...more,
      });
    },
  };
}
