// Small hostile inputs against a real gateway, each answered with a clear error and never a 500,
// a silent loss or a leak: malformed percent-encoding in the URL, time claims that never end,
// a request id reused while in flight, integer ids past 2^53, a JWKS too large to read, and
// short or URL-borne secrets from ${VAR} in log lines.
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { CompactSign } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/auth/api-keys.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { startAuthServer, type AuthServer } from '../helpers/oauth.js';
import { FIXTURES, NODE } from '../helpers/paths.js';
import { endlessJwks } from '../helpers/endless.js';
import { exchange, initializeMessage, initializeRaw, messagesOf, POST_HEADERS, readReply, type RawReply } from '../helpers/raw-http.js';

const RESOURCE = 'https://mcp.example.test/mcp';
const API_KEY = 'sk-switchyard-hostile-6b1f0c2e9d7a4358';
const JSON_HEADERS = POST_HEADERS;
const KEY_HEADERS = { ...JSON_HEADERS, 'x-api-key': API_KEY };
// JSON-RPC 2.0 §5.1.
const INVALID_REQUEST = -32600;
/** Bounds every single HTTP exchange; the test timeout bounds the whole test. */
const FETCH_TIMEOUT_MS = 10_000;
const MiB = 1024 * 1024;

const rogue = (env: Record<string, string> = {}) => ({ stdio: { command: NODE, args: [join(FIXTURES, 'rogue-server.mjs')], env } });

/** One exchange with exactly `headers` (KEY_HEADERS unless given), read to the end. */
function send(url: URL | string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<RawReply> {
  return exchange(url, { method: init.method, defaults: init.headers ?? KEY_HEADERS, body: init.body, timeoutMs: FETCH_TIMEOUT_MS });
}

/** A raw session of `protocolVersion`, initialized: the headers its requests carry. */
async function openSession(url: URL, protocolVersion = '2025-11-25'): Promise<Record<string, string>> {
  const session = await initializeRaw(url, { protocolVersion, headers: { 'x-api-key': API_KEY }, timeoutMs: FETCH_TIMEOUT_MS });
  return { ...JSON_HEADERS, ...session.headers };
}

let as: AuthServer;

beforeAll(async () => {
  as = await startAuthServer();
});

afterAll(async () => {
  await as?.close();
});

const oauthFor = (jwksUri: string) => ({ issuer: as.issuer, jwksUri, algorithms: ['RS256', 'ES256'], jwksCooldown: '30s' });

function startProtected(jwksUri: string, upstreams: Record<string, unknown> = {}, env: Record<string, string> = {}): Promise<TestGateway> {
  return startGateway(
    { listen: { port: 0, publicUrl: RESOURCE }, auth: { oauth: oauthFor(jwksUri), apiKeys: [{ id: 'ci', hash: hashApiKey(API_KEY) }] }, upstreams },
    { env },
  );
}

/** A token signed over exactly `claimsJson` (SignJWT refuses non-finite claims; JSON text allows 1e309). */
function signRaw(claimsJson: string): Promise<string> {
  return new CompactSign(new TextEncoder().encode(claimsJson)).setProtectedHeader({ alg: 'RS256', kid: as.rsa.kid }).sign(as.rsa.privateKey);
}

const claimsWith = (timeClaims: string): string => `{"iss":${JSON.stringify(as.issuer)},"aud":${JSON.stringify(RESOURCE)},"sub":"mallory",${timeClaims}}`;
const ping = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });
const nowSeconds = (): number => Math.floor(Date.now() / 1_000);

describe('one gateway with auth and a slow upstream', () => {
  let gw: TestGateway;

  beforeAll(async () => {
    gw = await startProtected(as.jwksUri, { rogue: rogue() });
  });

  afterAll(async () => {
    await gw?.close();
  });

  const at = (target: string): string => `${gw.url.origin}${target}`;

  it('a POST whose query has a malformed percent-escape is a 400 with a JSON-RPC error, never a 500', async () => {
    for (const target of ['/mcp?%', '/mcp?access_token%=x', '/mcp?%E0%A4%A', '/mcp?x=%FF']) {
      const reply = await send(at(target), { body: ping });
      expect(reply.status, target).toBe(400);
      expect(reply.headers.get('content-type')).toMatch(/^application\/json/);
      expect(JSON.parse(reply.text)).toEqual({ jsonrpc: '2.0', id: null, error: { code: INVALID_REQUEST, message: 'Bad Request: the URL has malformed percent-encoding' } });
    }
  });

  it('a GET, a chunked POST and another path with a malformed escape are 400 too', async () => {
    expect((await send(at('/mcp?%'), { method: 'GET', headers: { accept: 'text/event-stream', 'x-api-key': API_KEY } })).status).toBe(400);
    expect((await send(at('/mc%p'), { body: ping })).status).toBe(400);
    // No content-length: the Hono path rather than the direct one.
    const chunked = await fetch(at('/mcp?%'), {
      method: 'POST',
      headers: KEY_HEADERS,
      body: new Blob([ping]).stream(),
      duplex: 'half',
      signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
    } as RequestInit);
    expect(chunked.status).toBe(400);
    await chunked.body?.cancel();
    expect((await send(at('/healthz'), { method: 'GET', headers: {} })).status).toBe(200);
  });

  it('a signed token whose exp is 1e309 (Infinity) is an invalid_token 401, and stays one', async () => {
    const token = await signRaw(claimsWith(`"iat":${nowSeconds()},"exp":1e309`));
    for (let i = 0; i < 2; i++) {
      const reply = await send(gw.url, { headers: { ...JSON_HEADERS, authorization: `Bearer ${token}` }, body: ping });
      expect(reply.status).toBe(401);
      expect(reply.headers.get('www-authenticate')).toContain('error="invalid_token"');
      expect(reply.headers.get('www-authenticate')).toContain("the token's exp claim is not a finite number");
    }
  });

  it('a signed token valid for ten years, or with iat 1e309, is an invalid_token 401', async () => {
    for (const timeClaims of [`"exp":${nowSeconds() + 10 * 366 * 24 * 3_600}`, `"iat":1e309,"exp":${nowSeconds() + 300}`]) {
      const reply = await send(gw.url, { headers: { ...JSON_HEADERS, authorization: `Bearer ${await signRaw(claimsWith(timeClaims))}` }, body: ping });
      expect(reply.status, timeClaims).toBe(401);
      expect(reply.headers.get('www-authenticate')).toContain('error="invalid_token"');
    }
    // The same signer with an ordinary exp is let in.
    const good = await signRaw(claimsWith(`"exp":${nowSeconds() + 300}`));
    expect((await send(gw.url, { headers: { ...JSON_HEADERS, authorization: `Bearer ${good}` }, body: ping })).status).toBe(200);
  });

  it('a request id reused while the first is in flight is refused; the first completes normally', async () => {
    const headers = await openSession(gw.url);
    const slow = JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'rogue__slow', arguments: { ms: 1_500 } } });
    // The answer's headers come once the call has been running a while (the SSE upgrade): it is in flight.
    const first = await fetch(gw.url, { method: 'POST', headers, body: slow, signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
    expect(first.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const second = await send(gw.url, { headers, body: JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tools/list' }) });
    expect(second.status).toBe(200);
    expect(messagesOf(second)).toEqual([{ jsonrpc: '2.0', id: 5, error: { code: INVALID_REQUEST, message: 'Request id 5 is already in use by a request in flight' } }]);
    const answers = (await readReply(first)).messages.filter((m) => 'id' in m);
    expect(answers).toEqual([{ jsonrpc: '2.0', id: 5, result: { content: [{ type: 'text', text: 'slow done' }] } }]);
    // Once answered, the id may be used again.
    const again = await send(gw.url, { headers, body: JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'ping' }) });
    expect(messagesOf(again)).toEqual([{ jsonrpc: '2.0', id: 5, result: {} }]);
  });

  it('an integer id past 2^53 is refused with id null, never echoed altered', async () => {
    // 2^53 + 1: JSON.parse reads it as 2^53, so an echo would name another request.
    const sessionless = await send(gw.url, { body: '{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}' });
    expect(sessionless.status).toBe(400);
    expect(sessionless.text).not.toContain('9007199254740992');
    expect(JSON.parse(sessionless.text)).toEqual({ jsonrpc: '2.0', id: null, error: { code: INVALID_REQUEST, message: expect.stringMatching(/safe integer/) } });
    const headers = await openSession(gw.url);
    const inSession = await send(gw.url, { headers, body: '{"jsonrpc":"2.0","id":18446744073709551617,"method":"tools/list"}' });
    expect(inSession.status).toBe(400);
    expect(JSON.parse(inSession.text)).toMatchObject({ id: null, error: { code: INVALID_REQUEST } });
    // The largest safe integer comes back exactly.
    const safe = await send(gw.url, { headers, body: `{"jsonrpc":"2.0","id":${Number.MAX_SAFE_INTEGER},"method":"ping"}` });
    expect(messagesOf(safe)).toEqual([{ jsonrpc: '2.0', id: Number.MAX_SAFE_INTEGER, result: {} }]);
  });

  it('in a batch, an item with an id past 2^53 gets its own error with id null; the others are answered', async () => {
    const headers = await openSession(gw.url, '2025-03-26');
    const reply = await send(gw.url, { headers, body: '[{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]' });
    expect(reply.status).toBe(200);
    expect(reply.text).not.toContain('9007199254740992');
    const answers = messagesOf(reply);
    expect(answers).toHaveLength(2);
    expect(answers).toContainEqual({ jsonrpc: '2.0', id: 2, result: {} });
    expect(answers).toContainEqual({ jsonrpc: '2.0', id: null, error: { code: INVALID_REQUEST, message: expect.stringMatching(/safe integer/) } });
  });
});

describe('a JWKS too large to read', () => {
  let jwks: Server;
  let base: string;
  /** Bytes each endless answer wrote before the gateway hung up. */
  const endlessWritten: number[] = [];

  function endless(res: ServerResponse): void {
    endlessJwks(res, (written) => endlessWritten.push(written));
  }

  beforeAll(async () => {
    jwks = createServer((req, res) => {
      if (req.url === '/endless') return endless(res);
      // Good keys, padded past 1 MiB: only the size is wrong.
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [as.rsa.jwk], pad: 'x'.repeat(2 * MiB) }));
    });
    await new Promise<void>((resolve) => jwks.listen(0, '127.0.0.1', () => resolve()));
    base = `http://127.0.0.1:${(jwks.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    jwks?.closeAllConnections();
    await new Promise<void>((resolve) => jwks?.close(() => resolve()));
  });

  it('an oversized key set is "keys unavailable" (503), and the gateway stays up', async () => {
    const gw = await startProtected(`${base}/padded`);
    try {
      const token = await signRaw(claimsWith(`"exp":${nowSeconds() + 300}`));
      const reply = await send(gw.url, { headers: { ...JSON_HEADERS, authorization: `Bearer ${token}` }, body: ping });
      expect(reply.status).toBe(503);
      expect(reply.headers.get('retry-after')).toBe('5');
      expect(JSON.parse(reply.text)).toMatchObject({ id: null, error: { message: 'Service Unavailable: tokens cannot be verified right now' } });
      expect((await send(`${gw.url.origin}/healthz`, { method: 'GET', headers: {} })).status).toBe(200);
      expect((await send(gw.url, { body: ping })).status).toBe(200);
    } finally {
      await gw.close();
    }
  });

  it('an endless key set is abandoned at the bound: a prompt 503, not a read until the timeout', async () => {
    const gw = await startProtected(`${base}/endless`);
    try {
      const token = await signRaw(claimsWith(`"exp":${nowSeconds() + 300}`));
      const started = Date.now();
      const reply = await send(gw.url, { headers: { ...JSON_HEADERS, authorization: `Bearer ${token}` }, body: ping });
      expect(reply.status).toBe(503);
      // The key set fetch times out after 5 s; stopping at the bound comes far sooner.
      expect(Date.now() - started).toBeLessThan(4_000);
      await expect.poll(() => endlessWritten.length, { timeout: 5_000 }).toBeGreaterThan(0);
      // Socket buffers included, far below what 5 s of reading would take in.
      expect(endlessWritten.at(-1)!).toBeLessThan(32 * MiB);
    } finally {
      await gw.close();
    }
  });
});

describe('secrets from ${VAR} in log lines', () => {
  it('a value substituted into http.url and a short one into stdio env are redacted where they appear', async () => {
    const env = { URL_KEY: 'urlsecret42', SHORT: 'k9x' };
    const gw = await startGateway(
      {
        upstreams: {
          rogue: rogue({ LEVEL: '${SHORT}' }),
          // Never reached (nothing listens there): only its URL matters.
          remote: { http: { url: 'http://127.0.0.1:9/mcp?key=${URL_KEY}' } },
        },
      },
      { env },
    );
    try {
      const headers = { ...JSON_HEADERS };
      // initialize only: this test sends no notifications/initialized.
      const init = await send(gw.url, { headers, body: JSON.stringify(initializeMessage()) });
      const session = { ...headers, 'mcp-session-id': init.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-11-25' };
      const marker = `marker-${Date.now()}`;
      const text = `${marker} key=urlsecret42 short=k9x word=k9xyz`;
      const call = await send(gw.url, { headers: session, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'rogue__stderr', arguments: { text } } }) });
      expect(messagesOf(call)[0]).toMatchObject({ id: 1, result: { content: [{ type: 'text', text: 'after stderr' }] } });
      // stderr and stdout are separate pipes: the line may land just after the answer.
      await expect.poll(() => gw.logs.some((line) => line.includes(marker) && line.includes('upstream stderr')), { timeout: 5_000 }).toBe(true);
      const line = gw.logs.find((l) => l.includes(marker) && l.includes('upstream stderr'))!;
      expect(line).toContain('key=[redacted] short=[redacted] word=k9xyz');
      for (const logged of gw.logs) {
        expect(logged).not.toContain('urlsecret42');
        expect(logged).not.toMatch(/(?<![A-Za-z0-9_])k9x(?![A-Za-z0-9_])/);
      }
    } finally {
      await gw.close();
    }
  });
});
