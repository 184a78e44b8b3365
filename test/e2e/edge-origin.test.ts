// Edge checks against DNS rebinding (transports.mdx "Security Warning"): the Origin check with
// its CORS answers and preflights, and the Host check, over raw HTTP so a test sets both headers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteSession, initializeRequest, INVALID_REQUEST, LATEST, ping } from '../helpers/edge.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { startSseUpstream, type SseUpstream } from '../helpers/sse-upstream.js';
import { expectRpcError, httpExchange as exchange, httpPost as post, openStream, POST_HEADERS, type HttpOptions } from '../helpers/raw-http.js';

describe('Origin validation', () => {
  const ALLOWED = 'https://app.example.com';
  let gw: TestGateway;

  beforeAll(async () => {
    gw = await startGateway({ listen: { port: 0, allowedOrigins: [ALLOWED], maxBodyBytes: 1024 }, upstreams: {} });
  });

  afterAll(async () => {
    await gw?.close();
  });

  const evil = { origin: 'https://evil.example' };

  it('refuses a foreign Origin with 403 and a JSON-RPC error without an id', async () => {
    const reply = await post(gw.url, ping(1), { headers: evil });
    expectRpcError(reply, 403, INVALID_REQUEST);
    expect(reply.text).toMatch(/Origin/);
    expect(reply.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('refuses a foreign Origin before anything else looks at the request', async () => {
    const cases: [string, HttpOptions][] = [
      ['an unknown session', { headers: { ...POST_HEADERS, ...evil, 'mcp-session-id': 'no-such-session' }, body: JSON.stringify(ping(2)) }],
      ['a malformed body', { headers: { ...POST_HEADERS, ...evil }, body: '{"jsonrpc": "2.0", ' }],
      ['a body over the limit', { headers: { ...POST_HEADERS, ...evil }, body: JSON.stringify({ ...ping(3), params: { pad: 'x'.repeat(4096) } }) }],
      ['wrong content headers', { headers: { ...evil, 'content-type': 'text/plain', accept: 'text/html' }, body: 'hello' }],
      ['a foreign Host as well', { headers: { ...POST_HEADERS, ...evil, host: 'evil.example' }, body: JSON.stringify(ping(4)) }],
      ['a GET', { method: 'GET', headers: { ...evil, accept: 'text/event-stream', 'mcp-session-id': 'no-such-session' } }],
      ['a DELETE', { method: 'DELETE', headers: { ...evil, 'mcp-session-id': 'no-such-session' } }],
      ['an unknown path', { path: '/nowhere', headers: { ...POST_HEADERS, ...evil }, body: '{}' }],
      ['the opaque origin "null"', { headers: { ...POST_HEADERS, origin: 'null' }, body: JSON.stringify(ping(5)) }],
    ];
    for (const [what, options] of cases) {
      const reply = await exchange(gw.url, options);
      expect(reply.status, what).toBe(403);
      expect(reply.text, what).toMatch(/Origin not allowed/);
    }
  });

  // BUG (issue 22 item 6; conformance dns-rebinding-protection/localhost-host-valid-accepted):
  // with no allowedOrigins, a page of the gateway's own origin, or any loopback page while the
  // gateway listens on loopback, was refused 403. A rebinding page's Origin names its own domain.
  it("accepts the gateway's own origin and loopback origins while it listens on loopback; foreign ones stay 403", async () => {
    const own = `http://${gw.url.host}`;
    for (const origin of [own, 'http://localhost:3000', 'http://127.0.0.1:6274', 'http://[::1]:8080', 'https://localhost']) {
      const reply = await post(gw.url, ping(20), { headers: { origin } });
      expect(reply.status, origin).toBe(200);
      expect(reply.headers['access-control-allow-origin'], origin).toBe(origin);
    }
    for (const origin of ['http://localhost.evil.example:3000', 'http://127.0.0.1.evil.example', 'file://localhost', 'http://localhost:3000/path', 'null']) {
      const reply = await post(gw.url, ping(21), { headers: { origin } });
      expect(reply.status, origin).toBe(403);
    }
    // A rebinding page names its own domain in both Origin and Host: refused.
    const rebound = await exchange(gw.url, { headers: { ...POST_HEADERS, origin: 'http://evil.example:8080', host: 'evil.example:8080' }, body: JSON.stringify(ping(22)) });
    expect(rebound.status).toBe(403);
  });

  it('answers an allowed Origin with 200 and CORS headers exposing the MCP headers', async () => {
    const reply = await post(gw.url, initializeRequest(7), { headers: { origin: ALLOWED } });
    expect(reply.status).toBe(200);
    expect(reply.json).toMatchObject({ jsonrpc: '2.0', id: 7, result: { protocolVersion: LATEST } });
    expect(reply.headers['access-control-allow-origin']).toBe(ALLOWED);
    expect(reply.headers.vary).toMatch(/Origin/i);
    const exposed = String(reply.headers['access-control-expose-headers']).split(/,\s*/).map((h) => h.toLowerCase());
    expect(exposed).toEqual(expect.arrayContaining(['mcp-session-id', 'mcp-protocol-version', 'www-authenticate', 'retry-after']));
    await deleteSession(gw.url, String(reply.headers['mcp-session-id']), { headers: { origin: ALLOWED } });
  });

  // A GET stream is written straight to Node's response (src/http/sse-sinks.ts): the edge's
  // headers, set on the response before, must still go out with the stream's own head.
  it('answers a GET stream from an allowed Origin with the SSE head, the CORS headers and the request id', async () => {
    const init = await post(gw.url, initializeRequest(8), { headers: { origin: ALLOWED } });
    const session = String(init.headers['mcp-session-id']);
    const res = await openStream(gw.url, { session, protocolVersion: LATEST, headers: { origin: ALLOWED, 'x-request-id': 'get-stream-1' }, signal: null });
    try {
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/event-stream');
      expect(res.headers.get('cache-control')).toBe('no-cache, no-transform');
      expect(res.headers.get('access-control-allow-origin')).toBe(ALLOWED);
      expect(res.headers.get('x-request-id')).toBe('get-stream-1');
      // A 2025-11-25 client's stream opens with its priming event.
      const { value } = await res.body!.getReader().read();
      expect(new TextDecoder().decode(value)).toMatch(/^id: [0-9a-f]{12}\.0\nretry: \d+\ndata: \n\n/);
    } finally {
      await res.body?.cancel().catch(() => {});
      await deleteSession(gw.url, session, { headers: { origin: ALLOWED } });
    }
  });

  it('answers a preflight from an allowed Origin with 204, the methods and the request headers MCP uses', async () => {
    const reply = await exchange(gw.url, {
      method: 'OPTIONS',
      headers: { origin: ALLOWED, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type, mcp-session-id, mcp-protocol-version' },
    });
    expect(reply.status).toBe(204);
    expect(reply.text).toBe('');
    expect(reply.headers['access-control-allow-origin']).toBe(ALLOWED);
    const methods = String(reply.headers['access-control-allow-methods']).split(/,\s*/);
    expect(methods).toEqual(expect.arrayContaining(['GET', 'POST', 'DELETE']));
    const allowed = String(reply.headers['access-control-allow-headers']).split(/,\s*/).map((h) => h.toLowerCase());
    expect(allowed).toEqual(expect.arrayContaining(['content-type', 'accept', 'authorization', 'mcp-session-id', 'mcp-protocol-version', 'last-event-id']));
  });

  it('refuses a preflight from a foreign Origin with 403 and no CORS headers', async () => {
    const reply = await exchange(gw.url, { method: 'OPTIONS', headers: { ...evil, 'access-control-request-method': 'POST' } });
    expect(reply.status).toBe(403);
    expect(reply.headers['access-control-allow-origin']).toBeUndefined();
    expect(reply.headers['access-control-allow-methods']).toBeUndefined();
  });
});

describe('Host validation', () => {
  let gw: TestGateway;

  beforeAll(async () => {
    gw = await startGateway({
      listen: { port: 0, allowedHosts: ['mcp.internal.example'], publicUrl: 'https://gateway.example.com/mcp' },
      upstreams: {},
    });
  });

  afterAll(async () => {
    await gw?.close();
  });

  const withHost = (host: string) => ({ headers: { host } });

  it('refuses a foreign Host on the MCP endpoint with 403, whatever the method', async () => {
    for (const host of ['evil.example', `evil.example:${gw.url.port}`, 'localhost.evil.example', '127.0.0.1.nip.io', 'gateway.example.com.evil.example', '[::1].evil.example', '[::1]evil', `[::1]x:${gw.url.port}`]) {
      const reply = await post(gw.url, ping(1), withHost(host));
      expectRpcError(reply, 403, INVALID_REQUEST);
      expect(reply.text, host).toMatch(/Host not allowed/);
    }
    const get = await exchange(gw.url, { method: 'GET', headers: { host: 'evil.example', accept: 'text/event-stream' } });
    expect(get.status).toBe(403);
    const del = await exchange(gw.url, { method: 'DELETE', headers: { host: 'evil.example', 'mcp-session-id': 'x' } });
    expect(del.status).toBe(403);
  });

  it('accepts loopback names with any port', async () => {
    for (const host of [`localhost:${gw.url.port}`, 'localhost', `127.0.0.1:${gw.url.port}`, `[::1]:${gw.url.port}`, 'LocalHost']) {
      const reply = await post(gw.url, ping(2), withHost(host));
      expect(reply.status, host).toBe(200);
    }
  });

  it('accepts a host listed in listen.allowedHosts and the host of listen.publicUrl, in any case', async () => {
    for (const host of ['mcp.internal.example', 'MCP.Internal.Example:8443', 'gateway.example.com', 'gateway.example.com:443']) {
      const reply = await post(gw.url, ping(3), withHost(host));
      expect(reply.status, host).toBe(200);
    }
  });

  // Under an IP literal only: a rebinding page's Host is its own DNS name (operational-host.test.ts).
  it('answers /healthz and /readyz under a pod address as Host (probes), not under a foreign name', async () => {
    const health = await exchange(gw.url, { method: 'GET', path: '/healthz', headers: { host: '10.1.2.3:8080' } });
    expect(health.status).toBe(200);
    expect(health.json).toMatchObject({ status: 'ok' });
    const ready = await exchange(gw.url, { method: 'GET', path: '/readyz', headers: { host: '10.1.2.3:8080' } });
    expect(ready.status).not.toBe(403);
    const foreign = await exchange(gw.url, { method: 'GET', path: '/readyz', headers: { host: 'evil.example' } });
    expect(foreign.status).toBe(403);
  });
});

// ---------------------------------------------------------------------------------------------
// Request limits, against the real CLI process so its memory can be read from /proc.

// A POST answered as a stream is written straight to Node's response too (the listener's direct
// path): the edge's headers go into the stream's one head.
describe('a POST answered as a stream, from an allowed Origin', () => {
  const ALLOWED = 'https://app.example.com';
  let upstream: SseUpstream;
  let gw: TestGateway;

  beforeAll(async () => {
    upstream = await startSseUpstream();
    gw = await startGateway({ listen: { port: 0, allowedOrigins: [ALLOWED] }, upstreams: { s: { http: { url: upstream.url } } } });
  });

  afterAll(async () => {
    await gw?.close();
    await upstream?.close();
  });

  it('carries the SSE head, the CORS headers and the request id, then the priming event and the answer', async () => {
    const init = await post(gw.url, initializeRequest(1), { headers: { origin: ALLOWED } });
    const headers = { origin: ALLOWED, 'mcp-session-id': String(init.headers['mcp-session-id']), 'mcp-protocol-version': LATEST };
    await post(gw.url, { jsonrpc: '2.0', method: 'notifications/initialized' }, { headers });
    const call = (id: number) => post(gw.url, { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 's__echo', arguments: {} } }, { headers: { ...headers, 'x-request-id': `call-${id}` } });
    // The gateway learns from the first answer that this upstream answers as a stream.
    expect((await call(2)).status).toBe(200);
    const reply = await call(3);
    expect(reply.status).toBe(200);
    expect(reply.headers['content-type']).toBe('text/event-stream');
    expect(reply.headers['cache-control']).toBe('no-cache, no-transform');
    expect(reply.headers['access-control-allow-origin']).toBe(ALLOWED);
    expect(reply.headers['x-request-id']).toBe('call-3');
    expect(reply.text).toMatch(/^id: ([0-9a-f]{12})\.0\nretry: \d+\ndata: \n\nid: \1\.1\nevent: message\ndata: \{"jsonrpc":"2\.0","id":3,"result":/);
    await deleteSession(gw.url, headers['mcp-session-id'], { headers: { origin: ALLOWED } });
  });
});
