// Edge security over real sockets: HTTPS with certificate renewal and mutual TLS, the Origin and
// Host checks against DNS rebinding (transports.mdx "Security Warning"), request limits (body,
// JSON depth, headers, sessions), tools/call arguments checked before they reach an upstream,
// and the refusal to listen unauthenticated on a non-loopback address.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { watch } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { Agent, fetch as undiciFetch } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { alive, poll, startCli, type CliProcess } from '../helpers/cli.js';
import { connectClient, startGateway, textOf, upstream, type TestGateway } from '../helpers/gateway.js';
import { FIXTURES, NODE, ROOT } from '../helpers/paths.js';
import { stopChild, waitForExit, waitForLine } from '../helpers/processes.js';
import {
  expectRpcError,
  httpExchange as exchange,
  httpPost as post,
  initializeHttp,
  initializeMessage,
  openStream,
  POST_HEADERS,
  REQUEST_TIMEOUT_MS,
  type HttpOptions,
  type HttpReply,
  type HttpTransportOptions,
} from '../helpers/raw-http.js';
import { certificateAuthority, clientSignedBy, makeTestPki, type Certificate, type TestPki } from '../helpers/tls.js';

const LATEST = '2025-11-25';
// JSON-RPC 2.0 §5.1.
const INVALID_REQUEST = -32600;
const MiB = 1024 * 1024;

const strict = () => ({ stdio: { command: NODE, args: [join(FIXTURES, 'strict-server.mjs')] } });

let scratch: string;

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'switchyard-edge-'));
});

afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

// ---------------------------------------------------------------------------------------------
// Raw HTTP(S) exchanges (helpers/raw-http.ts over node:http): a test sets Host, streams a body
// and picks the socket.

const ping = (id: number | string) => ({ jsonrpc: '2.0', id, method: 'ping' });

const CLIENT_INFO = { name: 'edge-test', version: '1.0.0' };

function initializeRequest(id: number | string = 1) {
  return initializeMessage({ protocolVersion: LATEST, id, clientInfo: CLIENT_INFO });
}

/** Opens a session with a raw initialize (and notifications/initialized); returns its id. */
async function openSession(url: URL, http: HttpTransportOptions = {}): Promise<string> {
  return (await initializeHttp(url, { protocolVersion: LATEST, id: 1, clientInfo: CLIENT_INFO, http })).id;
}

function deleteSession(url: URL, session: string, options: HttpOptions = {}): Promise<HttpReply> {
  return exchange(url, { ...options, method: 'DELETE', session, protocolVersion: LATEST });
}

// ---------------------------------------------------------------------------------------------
// TLS helpers.

/** Opens a TLS connection and resolves once the handshake is done (the caller ends it). */
function openTls(url: URL, options: { ca?: string | string[] } = {}): Promise<TLSSocket> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({ host: url.hostname, port: Number(url.port), ...(options.ca ? { ca: options.ca } : { rejectUnauthorized: false }) });
    const timer = setTimeout(() => socket.destroy(new Error('TLS handshake timed out')), REQUEST_TIMEOUT_MS);
    socket.once('secureConnect', () => {
      clearTimeout(timer);
      resolve(socket);
    });
    socket.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

/** The SHA-256 fingerprint of the certificate a new TLS connection is presented. */
async function servedFingerprint(url: URL): Promise<string> {
  const socket = await openTls(url);
  try {
    return socket.getPeerCertificate().fingerprint256;
  } finally {
    socket.destroy();
  }
}

/** A fetch for the SDK transport that trusts (and, for mutual TLS, presents) test certificates. */
function fetchWith(dispatcher: Agent): FetchLike {
  return (url, init) => undiciFetch(url, { ...init, dispatcher } as Parameters<typeof undiciFetch>[1]) as unknown as Promise<Response>;
}

async function connectTlsClient(url: URL, dispatcher: Agent): Promise<Client> {
  const client = new Client({ name: 'edge-tls-test', version: '1.0.0' }, { capabilities: {} });
  await client.connect(new StreamableHTTPClientTransport(url, { fetch: fetchWith(dispatcher) }));
  return client;
}

/** Replaces a file by writing a sibling and renaming it over (what cert-manager and certbot do). */
async function replaceAtomically(file: string, content: string): Promise<void> {
  const temporary = `${file}.${process.pid}.tmp`;
  await writeFile(temporary, content);
  await rename(temporary, file);
}

function logMessages(gw: TestGateway): string[] {
  return gw.logs.map((line) => (JSON.parse(line) as { msg: string }).msg);
}

const RELOAD_FAILED = 'TLS certificate reload failed; keeping the current one';

describe('HTTPS', () => {
  let pki: TestPki;
  /** The directory the gateway's certificate files live in (and that it watches). */
  let live: string;
  let gw: TestGateway;
  let dispatcher: Agent;
  let client: Client | undefined;

  beforeAll(async () => {
    pki = await makeTestPki();
    live = join(scratch, 'live-tls');
    await mkdir(live);
    await copyFile(pki.server.certFile, join(live, 'tls.crt'));
    await copyFile(pki.server.keyFile, join(live, 'tls.key'));
    gw = await startGateway({ listen: { port: 0, tls: { cert: join(live, 'tls.crt'), key: join(live, 'tls.key') } }, upstreams: { paged: upstream.paged() } });
    // The client trusts both certificates: the one served now and its renewal.
    dispatcher = new Agent({ connect: { ca: [pki.server.certPem, pki.renewed.certPem] } });
  });

  afterAll(async () => {
    await client?.close();
    await dispatcher?.destroy();
    await gw?.close();
    await pki?.remove();
  });

  it('listens on an https URL and serves MCP to the SDK client over TLS', async () => {
    expect(gw.url.protocol).toBe('https:');
    expect(gw.url.href).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/mcp$/);
    client = await connectTlsClient(gw.url, dispatcher);
    const result = await client.callTool({ name: 'paged__echo', arguments: { message: 'over tls' } });
    expect(textOf(result)).toBe('echo {"message":"over tls"}');
    expect(await servedFingerprint(gw.url)).toBe(pki.server.fingerprint256);
  });

  it('refuses plain HTTP on the TLS port', async () => {
    const plain = new URL(gw.url.href.replace(/^https:/, 'http:'));
    const outcome = await post(plain, ping(1)).then(
      (reply) => reply.status,
      (err: NodeJS.ErrnoException) => err.code,
    );
    // Node's TLS server answers a cleartext request with 400 or just hangs up; never MCP.
    expect([400, 'ECONNRESET', 'EPIPE', 'HPE_INVALID_CONSTANT']).toContain(outcome);
  });

  it('serves a renewed certificate to new connections without a restart while sessions and open connections carry on', async () => {
    expect(pki.renewed.fingerprint256).not.toBe(pki.server.fingerprint256);
    expect(pki.renewed.serial).not.toBe(pki.server.serial);
    client ??= await connectTlsClient(gw.url, dispatcher);
    const session = await openSession(gw.url, { tls: { ca: pki.server.certPem } });
    // A connection opened before the renewal, held idle across it.
    const held = await openTls(gw.url, { ca: pki.server.certPem });
    try {
      expect(held.getPeerCertificate().fingerprint256).toBe(pki.server.fingerprint256);

      // Key first, then the certificate, each replaced atomically: in between the pair does not match.
      await replaceAtomically(join(live, 'tls.key'), pki.renewed.keyPem);
      await replaceAtomically(join(live, 'tls.crt'), pki.renewed.certPem);
      await poll(async () => ((await servedFingerprint(gw.url)) === pki.renewed.fingerprint256 ? true : undefined), 'the renewed certificate on a new connection', 10_000, 50);
      expect(logMessages(gw)).toContain('TLS certificate reloaded');

      // The connection opened before the renewal still works, with the certificate it started with.
      const overHeld = await post(gw.url, ping(2), { socket: held, headers: { 'mcp-session-id': session, 'mcp-protocol-version': LATEST } });
      expect(overHeld.status).toBe(200);
      expect(overHeld.json).toMatchObject({ jsonrpc: '2.0', id: 2, result: {} });
      expect(held.getPeerCertificate().fingerprint256).toBe(pki.server.fingerprint256);

      // The sessions opened before the renewal carry on, on new connections too.
      const onNew = await post(gw.url, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'paged__echo', arguments: { message: 'after renewal' } } }, {
        tls: { ca: pki.renewed.certPem },
        headers: { 'mcp-session-id': session, 'mcp-protocol-version': LATEST },
      });
      expect(onNew.status).toBe(200);
      expect(onNew.text).toContain('echo {\\"message\\":\\"after renewal\\"}');
      const viaSdk = await client.callTool({ name: 'paged__echo', arguments: { message: 'sdk after renewal' } });
      expect(textOf(viaSdk)).toBe('echo {"message":"sdk after renewal"}');
    } finally {
      held.destroy();
    }
  });

  it('ignores a half-written or mismatched certificate pair and keeps serving the current one', async () => {
    // Whatever the previous test left, make the renewed pair the one served.
    await replaceAtomically(join(live, 'tls.key'), pki.renewed.keyPem);
    await replaceAtomically(join(live, 'tls.crt'), pki.renewed.certPem);
    await poll(async () => ((await servedFingerprint(gw.url)) === pki.renewed.fingerprint256 ? true : undefined), 'the renewed certificate', 10_000, 50);
    const failures = (): number => logMessages(gw).filter((msg) => msg === RELOAD_FAILED).length;

    // Half a certificate (a writer caught mid-write), the key unchanged.
    let before = failures();
    const pem = pki.server.certPem;
    await writeFile(join(live, 'tls.crt'), pem.slice(0, Math.floor(pem.length / 2)));
    await poll(() => (failures() > before ? true : undefined), 'a rejected reload of a half-written certificate', 10_000, 20);
    expect(await servedFingerprint(gw.url)).toBe(pki.renewed.fingerprint256);

    // A whole certificate, but the key still the old one: a mismatched pair.
    before = failures();
    await writeFile(join(live, 'tls.crt'), pki.server.certPem);
    await poll(() => (failures() > before ? true : undefined), 'a rejected reload of a mismatched pair', 10_000, 20);
    expect(await servedFingerprint(gw.url)).toBe(pki.renewed.fingerprint256);
    const session = await openSession(gw.url, { tls: { ca: pki.renewed.certPem } });
    expect(session).toBeTruthy();

    // The matching key arrives: the pair is whole again and is served.
    await writeFile(join(live, 'tls.key'), pki.server.keyPem);
    await poll(async () => ((await servedFingerprint(gw.url)) === pki.server.fingerprint256 ? true : undefined), 'the completed pair', 10_000, 50);
  });
});

describe('HTTPS limits and teardown', () => {
  let pki: TestPki;

  beforeAll(async () => {
    pki = await makeTestPki();
  });

  afterAll(async () => {
    await pki?.remove();
  });

  it('applies the header limit over TLS too', async () => {
    const gw = await startGateway({ listen: { port: 0, maxHeaderBytes: 4096, tls: { cert: pki.server.certFile, key: pki.server.keyFile } }, upstreams: {} });
    try {
      const tls = { ca: pki.server.certPem };
      expect((await post(gw.url, ping(1), { tls, headers: { 'x-padding': 'a'.repeat(2048) } })).status).toBe(200);
      const outcome = await post(gw.url, ping(2), { tls, headers: { 'x-padding': 'a'.repeat(64 * 1024) } }).then(
        (reply) => reply.status,
        (err: NodeJS.ErrnoException) => err.code,
      );
      expect([431, 'ECONNRESET', 'EPIPE']).toContain(outcome);
      expect((await post(gw.url, ping(3), { tls })).status).toBe(200);
    } finally {
      await gw.close();
    }
  });

  // Regression for src/http/listener.ts: close() closes the watchers but not the pending
  // debounce timer, so a change seen just before close still reloads (and logs) afterwards.
  it('does not reload the certificate after close when a change arrived just before', async () => {
    const dir = await mkdtemp(join(scratch, 'closing-tls-'));
    await copyFile(pki.server.certFile, join(dir, 'tls.crt'));
    await copyFile(pki.server.keyFile, join(dir, 'tls.key'));
    const gw = await startGateway({ listen: { port: 0, tls: { cert: join(dir, 'tls.crt'), key: join(dir, 'tls.key') } }, upstreams: {} });
    // An own watcher on the same directory tells when the change event has been delivered.
    const watcher = watch(dir);
    try {
      const seen = once(watcher, 'change', { signal: AbortSignal.timeout(5_000) });
      await writeFile(join(dir, 'tls.crt'), pki.server.certPem);
      await seen;
    } finally {
      watcher.close();
      await gw.close();
    }
    const atClose = gw.logs.length;
    // The listener debounces changes by 100 ms; three times that is ample for a stray reload.
    const deadline = Date.now() + 300;
    while (Date.now() < deadline && gw.logs.length === atClose) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(gw.logs.slice(atClose).map((line) => (JSON.parse(line) as { msg: string }).msg)).toEqual([]);
  });
});

describe('mutual TLS', () => {
  let pki: TestPki;
  let gw: TestGateway;
  const agents: Agent[] = [];
  const clients: Client[] = [];

  beforeAll(async () => {
    pki = await makeTestPki();
    gw = await startGateway({ listen: { port: 0, tls: { cert: pki.server.certFile, key: pki.server.keyFile, ca: pki.ca.certFile } }, upstreams: { paged: upstream.paged() } });
  });

  afterAll(async () => {
    await Promise.allSettled(clients.map((c) => c.close()));
    await Promise.allSettled(agents.map((a) => a.destroy()));
    await gw?.close();
    await pki?.remove();
  });

  /** What a request presenting `identity` (or nothing) gets: an HTTP status or a connection error code. */
  function outcomeOf(identity: Certificate | undefined): Promise<number | string> {
    const tls = { ca: pki.server.certPem, ...(identity ? { cert: identity.certPem, key: identity.keyPem } : {}) };
    return post(gw.url, ping(1), { tls }).then(
      (reply) => reply.status,
      (err: NodeJS.ErrnoException) => err.code ?? err.message,
    );
  }

  // TLS 1.3 sends the refusal as an alert right after the client's Finished; TLS 1.2 fails the
  // handshake itself. Either way no HTTP exchange happens.
  const HANDSHAKE_REFUSAL = /^(ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED|ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE|ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE|ERR_SSL_TLSV1_ALERT_UNKNOWN_CA|ECONNRESET|EPIPE)$/;

  it('refuses a client that presents no certificate at the TLS handshake', async () => {
    expect(await outcomeOf(undefined)).toMatch(HANDSHAKE_REFUSAL);
  });

  it('refuses a client whose certificate the configured CA did not sign', async () => {
    expect(await outcomeOf(pki.stranger)).toMatch(HANDSHAKE_REFUSAL);
  });

  it('serves a client whose certificate the configured CA signed', async () => {
    expect(await outcomeOf(pki.client)).toBe(200);
    const agent = new Agent({ connect: { ca: pki.server.certPem, cert: pki.client.certPem, key: pki.client.keyPem } });
    agents.push(agent);
    const client = await connectTlsClient(gw.url, agent);
    clients.push(client);
    expect(textOf(await client.callTool({ name: 'paged__echo', arguments: { message: 'mtls' } }))).toBe('echo {"message":"mtls"}');
  });

  it('applies a rotated CA bundle to new connections without a restart', async () => {
    const live = await mkdtemp(join(scratch, 'live-ca-'));
    await copyFile(pki.ca.certFile, join(live, 'ca.pem'));
    const nextCa = await certificateAuthority(pki.dir, 'next-ca');
    const nextClient = await clientSignedBy(nextCa, pki.dir, 'next-client');
    const rotating = await startGateway({ listen: { port: 0, tls: { cert: pki.server.certFile, key: pki.server.keyFile, ca: join(live, 'ca.pem') } }, upstreams: {} });
    const statusOf = (identity: Certificate): Promise<number | string> =>
      exchange(rotating.url, { method: 'GET', path: '/healthz', tls: { ca: pki.server.certPem, cert: identity.certPem, key: identity.keyPem } }).then(
        (reply) => reply.status,
        (err: NodeJS.ErrnoException) => err.code ?? err.message,
      );
    try {
      expect(await statusOf(pki.client)).toBe(200);
      expect(await statusOf(nextClient)).toMatch(HANDSHAKE_REFUSAL);
      await replaceAtomically(join(live, 'ca.pem'), nextCa.certPem);
      await poll(async () => ((await statusOf(nextClient)) === 200 ? true : undefined), 'the rotated CA to vouch for its client', 10_000, 50);
      expect(await statusOf(pki.client)).toMatch(HANDSHAKE_REFUSAL);
    } finally {
      await rotating.close();
    }
  });
});

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
    for (const host of ['evil.example', `evil.example:${gw.url.port}`, 'localhost.evil.example', '127.0.0.1.nip.io', 'gateway.example.com.evil.example']) {
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

  it('answers /healthz and /readyz under a foreign Host (probes use pod addresses)', async () => {
    const health = await exchange(gw.url, { method: 'GET', path: '/healthz', headers: { host: '10.1.2.3:8080' } });
    expect(health.status).toBe(200);
    expect(health.json).toMatchObject({ status: 'ok' });
    const ready = await exchange(gw.url, { method: 'GET', path: '/readyz', headers: { host: 'evil.example' } });
    expect(ready.status).not.toBe(403);
  });
});

// ---------------------------------------------------------------------------------------------
// Request limits, against the real CLI process so its memory can be read from /proc.

interface StreamOutcome {
  /** Body bytes handed to the socket in all. */
  sent: number;
  /** Body bytes handed to the socket when the answer's head arrived (undefined: no answer). */
  sentAtAnswer?: number;
  status?: number;
  text: string;
  /** The connection error, if the gateway cut the connection. */
  error?: string;
}

/**
 * POSTs a body of `total` bytes in 64 KiB chunks, its length declared or chunked. With
 * `pauseAfter`, sending stops after that many bytes until the answer arrives (then the request
 * is dropped): a gateway that waits for the whole body never answers. Without it, everything is
 * sent whatever the gateway says, until it cuts the connection (a hostile client).
 */
function streamBody(url: URL, options: { declared: boolean; total: number; pauseAfter?: number }): Promise<StreamOutcome> {
  const { declared, total, pauseAfter } = options;
  const chunk = Buffer.alloc(64 * 1024, 0x20);
  const headers: Record<string, string> = { ...POST_HEADERS, ...(declared ? { 'content-length': String(total) } : {}) };
  return new Promise((resolve) => {
    const outcome: StreamOutcome = { sent: 0, text: '' };
    const req = httpRequest(url, { method: 'POST', headers, agent: false, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    req.on('response', (res) => {
      outcome.sentAtAnswer = outcome.sent;
      outcome.status = res.statusCode!;
      res.setEncoding('utf8');
      res.on('data', (text: string) => (outcome.text += text));
      res.on('end', () => {
        if (pauseAfter !== undefined) req.destroy();
      });
      res.on('error', () => undefined);
    });
    req.on('error', (err: NodeJS.ErrnoException) => (outcome.error = err.code ?? err.message));
    req.on('close', () => resolve(outcome));
    req.flushHeaders();
    const pump = (): void => {
      while (outcome.sent < Math.min(total, pauseAfter ?? total) && !req.destroyed) {
        outcome.sent += chunk.length;
        if (!req.write(chunk)) return void req.once('drain', pump);
      }
      if (outcome.sent >= total && !req.destroyed) req.end();
    };
    pump();
  });
}

async function rssBytes(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kib = /^VmRSS:\s+(\d+)\s+kB$/m.exec(status)?.[1];
  if (kib === undefined) throw new Error(`no VmRSS in /proc/${pid}/status`);
  return Number(kib) * 1024;
}

describe('request limits (the CLI process)', () => {
  let cli: CliProcess;
  const BODY = 64 * MiB;

  beforeAll(async () => {
    const file = join(scratch, 'limits.yaml');
    await writeFile(file, `${JSON.stringify({ listen: { maxBodyBytes: MiB }, upstreams: {} }, null, 2)}\n`);
    cli = await startCli(file);
  });

  afterAll(async () => {
    await cli?.stop();
  });

  /** The process is up and still answers MCP. */
  async function expectServing(id: number): Promise<void> {
    expect(alive(cli.gatewayPid)).toBe(true);
    const reply = await post(cli.url, ping(id));
    expect(reply.status).toBe(200);
    expect(reply.json).toEqual({ jsonrpc: '2.0', id, result: {} });
  }

  it('answers 413 to a declared 64 MiB body before any of it is sent', async () => {
    const outcome = await streamBody(cli.url, { declared: true, total: BODY, pauseAfter: 0 });
    expect(outcome.sentAtAnswer).toBe(0);
    expect(outcome.status).toBe(413);
    expect(JSON.parse(outcome.text)).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: INVALID_REQUEST, message: expect.stringMatching(/1048576/) } });
  });

  it('answers 413 to a chunked 64 MiB body once the limit is passed, without waiting for the rest', async () => {
    const outcome = await streamBody(cli.url, { declared: false, total: BODY, pauseAfter: MiB + 64 * 1024 });
    expect(outcome.sentAtAnswer).toBe(MiB + 64 * 1024);
    expect(outcome.status).toBe(413);
    expect(JSON.parse(outcome.text)).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: INVALID_REQUEST } });
  });

  it('cuts off a client that keeps sending a 64 MiB body, declared or chunked, and its memory stays flat', async () => {
    // Warm up the paths once so the baseline includes their code and buffers.
    // The client pauses past the limit and waits for the answer (sending on could meet the
    // connection's reset before the 413 is read).
    expect((await streamBody(cli.url, { declared: false, total: 2 * MiB, pauseAfter: MiB + 64 * 1024 })).status).toBe(413);
    const before = await rssBytes(cli.gatewayPid);

    for (const declared of [true, false, true, false]) {
      const outcome = await streamBody(cli.url, { declared, total: BODY });
      const what = `${declared ? 'declared' : 'chunked'}: ${JSON.stringify({ ...outcome, text: outcome.text.slice(0, 80) })}`;
      // The gateway answered and closed the connection (a client still writing may see only
      // the reset) with most of the body unsent; socket buffers hold a few MiB.
      expect(outcome.sent, what).toBeLessThan(16 * MiB);
      if (outcome.status !== undefined) expect(outcome.status, what).toBe(413);
      else expect(outcome.error, what).toMatch(/^(EPIPE|ECONNRESET)$/);
    }

    const growth = (await rssBytes(cli.gatewayPid)) - before;
    expect(growth, `RSS grew by ${(growth / MiB).toFixed(1)} MiB`).toBeLessThan(20 * MiB);
    await expectServing(1);
  });

  it('refuses JSON nested 100,000 deep with 400 and a JSON-RPC error, and keeps serving', async () => {
    const deep = '['.repeat(100_000) + ']'.repeat(100_000);
    const bare = await post(cli.url, deep);
    expectRpcError(bare, 400, INVALID_REQUEST);
    expect(bare.text).toMatch(/nested deeper than 64/);

    const inParams = await post(cli.url, `{"jsonrpc":"2.0","id":5,"method":"ping","params":{"deep":${deep}}}`);
    expectRpcError(inParams, 400, INVALID_REQUEST);

    const objects = await post(cli.url, '{"a":'.repeat(100_000) + '1' + '}'.repeat(100_000));
    expectRpcError(objects, 400, INVALID_REQUEST);
    await expectServing(2);
  });

  it('does not count brackets inside strings as nesting', async () => {
    const reply = await post(cli.url, { ...ping(6), params: { text: '['.repeat(100_000) } });
    expect(reply.status).toBe(200);
    expect(reply.json).toEqual({ jsonrpc: '2.0', id: 6, result: {} });
  });

  it('refuses a 64 KiB header with 431 (or a closed connection) and keeps serving', async () => {
    const outcome = await post(cli.url, ping(7), { headers: { 'x-padding': 'a'.repeat(64 * 1024) } }).then(
      (reply) => reply.status,
      (err: NodeJS.ErrnoException) => err.code,
    );
    expect([431, 'ECONNRESET', 'EPIPE']).toContain(outcome);
    await expectServing(3);
  });
});

describe('configured header limit', () => {
  it('applies listen.maxHeaderBytes', async () => {
    const gw = await startGateway({ listen: { port: 0, maxHeaderBytes: 4096 }, upstreams: {} });
    try {
      expect((await post(gw.url, ping(1), { headers: { 'x-padding': 'a'.repeat(2048) } })).status).toBe(200);
      const outcome = await post(gw.url, ping(2), { headers: { 'x-padding': 'a'.repeat(8192) } }).then(
        (reply) => reply.status,
        (err: NodeJS.ErrnoException) => err.code,
      );
      expect([431, 'ECONNRESET', 'EPIPE']).toContain(outcome);
    } finally {
      await gw.close();
    }
  });
});

describe('session limits', () => {
  let gw: TestGateway | undefined;

  afterEach(async () => {
    await gw?.close();
    gw = undefined;
  });

  it('answers the initialize beyond sessions.max with 503 and Retry-After, and accepts one again after a DELETE', async () => {
    gw = await startGateway({ sessions: { max: 3 }, upstreams: {} });
    const open = [await openSession(gw.url), await openSession(gw.url), await openSession(gw.url)];
    const refused = await post(gw.url, initializeRequest(4));
    expectRpcError(refused, 503, -32603, 4);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect(refused.headers['mcp-session-id']).toBeUndefined();

    expect((await deleteSession(gw.url, open[0]!)).status).toBe(200);
    expect(await openSession(gw.url)).toBeTruthy();
  });

  it('holds sessions.max under concurrent initializes', async () => {
    gw = await startGateway({ sessions: { max: 3 }, upstreams: { paged: upstream.paged() } });
    const url = gw.url;
    const replies = await Promise.all(Array.from({ length: 10 }, (_, i) => post(url, initializeRequest(i))));
    const statuses = replies.map((r) => r.status).sort();
    expect(statuses).toEqual([200, 200, 200, 503, 503, 503, 503, 503, 503, 503]);
    const health = await exchange(url, { method: 'GET', path: '/healthz' });
    expect(health.json).toMatchObject({ sessions: 3 });
  });

  it('answers the initialize beyond sessions.maxPerPrincipal with 429 and Retry-After (anonymous clients are one principal)', async () => {
    gw = await startGateway({ sessions: { maxPerPrincipal: 2 }, upstreams: {} });
    const open = [await openSession(gw.url), await openSession(gw.url)];
    const refused = await post(gw.url, initializeRequest(3));
    expectRpcError(refused, 429, INVALID_REQUEST, 3);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect(refused.text).toMatch(/DELETE/);

    expect((await deleteSession(gw.url, open[1]!)).status).toBe(200);
    expect(await openSession(gw.url)).toBeTruthy();
    expectRpcError(await post(gw.url, initializeRequest(5)), 429, INVALID_REQUEST, 5);
  });
});

describe('tools/call arguments checked at the edge', () => {
  const clients: Client[] = [];
  const gateways: TestGateway[] = [];

  afterAll(async () => {
    await Promise.allSettled(clients.map((c) => c.close()));
    await Promise.allSettled(gateways.map((g) => g.close()));
  });

  async function connectTo(upstreams: Record<string, unknown>): Promise<Client> {
    const gw = await startGateway({ upstreams });
    gateways.push(gw);
    const client = await connectClient(gw.url);
    clients.push(client);
    return client;
  }

  /** The tools/call requests the strict fixture received, without the `calls` calls themselves. */
  async function received(client: Client): Promise<{ name: string; arguments?: Record<string, unknown> }[]> {
    const calls = JSON.parse(textOf(await client.callTool({ name: 'strict__calls', arguments: {} }))) as { name: string; arguments?: Record<string, unknown> }[];
    return calls.filter((c) => c.name !== 'calls');
  }

  it('answers a wrongly typed argument with an isError result naming the field', async () => {
    const client = await connectTo({ paged: upstream.paged() });
    const result = await client.callTool({ name: 'paged__echo', arguments: { message: 5 } });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/\/message/);
    expect(textOf(result)).toMatch(/paged__echo/);
    // What the fixture would have answered had the call reached it.
    expect(textOf(result)).not.toMatch(/^echo /);
  });

  it('never forwards invalid arguments, names a missing required field, and forwards valid ones', async () => {
    const client = await connectTo({ strict: strict() });
    const wrongType = await client.callTool({ name: 'strict__echo', arguments: { message: 5 } });
    expect(wrongType.isError).toBe(true);
    expect(textOf(wrongType)).toMatch(/\/message/);

    const missing = await client.callTool({ name: 'strict__echo', arguments: { count: 1 } });
    expect(missing.isError).toBe(true);
    expect(textOf(missing)).toMatch(/\/message is required/);

    const outOfRange = await client.callTool({ name: 'strict__echo', arguments: { message: 'x', count: -1 } });
    expect(outOfRange.isError).toBe(true);
    expect(textOf(outOfRange)).toMatch(/\/count/);

    const noArguments = await client.callTool({ name: 'strict__echo' });
    expect(noArguments.isError).toBe(true);
    expect(textOf(noArguments)).toMatch(/\/message is required/);

    expect(await received(client)).toEqual([]);

    const valid = await client.callTool({ name: 'strict__echo', arguments: { message: 'fine', count: 2 } });
    expect(valid.isError).toBeFalsy();
    expect(textOf(valid)).toBe('echo {"message":"fine","count":2}');
    expect(await received(client)).toEqual([{ name: 'echo', arguments: { message: 'fine', count: 2 } }]);
  });

  it('forwards arguments unchecked to an upstream with validateArguments: false', async () => {
    const client = await connectTo({ strict: { ...strict(), validateArguments: false }, paged: { ...upstream.paged(), validateArguments: false } });
    const wrongType = await client.callTool({ name: 'strict__echo', arguments: { message: 5 } });
    expect(wrongType.isError).toBeFalsy();
    expect(textOf(wrongType)).toBe('echo {"message":5}');
    expect(await received(client)).toEqual([{ name: 'echo', arguments: { message: 5 } }]);
    expect(textOf(await client.callTool({ name: 'paged__echo', arguments: { message: 5 } }))).toBe('echo {"message":5}');
  });
});

// ---------------------------------------------------------------------------------------------
// The CLI refuses to listen unauthenticated beyond loopback.

function npmStart(args: string[]) {
  const child = spawn('npm', ['start', '--', ...args], { cwd: ROOT, stdio: 'pipe' });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return { child, output: () => ({ stdout, stderr }) };
}

describe('listening beyond loopback', () => {
  it.each(['0.0.0.0', '::', '192.0.2.10'])('exits 1 with one line naming listen.host when %s has no auth', async (host) => {
    const file = join(scratch, `open-${host.replace(/\W/g, '_')}.yaml`);
    await writeFile(file, `${JSON.stringify({ listen: { host }, upstreams: {} })}\n`);
    const { child, output } = npmStart(['--config', file, '--port', '0']);
    try {
      expect(await waitForExit(child, 20_000)).toBe(1);
      const { stdout, stderr } = output();
      expect(stdout).toBe('');
      expect(stderr.trimEnd().split('\n')).toHaveLength(1);
      expect(stderr).toMatch(/listen\.host/);
      expect(stderr).toContain(host);
      expect(stderr).not.toMatch(/\n\s+at /);
    } finally {
      await stopChild(child);
    }
  });

  it('starts on 0.0.0.0 without auth when listen.allowUnauthenticated is true', async () => {
    const file = join(scratch, 'open-allowed.yaml');
    await writeFile(file, `${JSON.stringify({ listen: { host: '0.0.0.0', allowUnauthenticated: true }, upstreams: {} })}\n`);
    const { child, output } = npmStart(['--config', file, '--port', '0']);
    try {
      const [, port] = await waitForLine(child, /^listening on http:\/\/0\.0\.0\.0:(\d+)\/mcp$/, 20_000);
      const reply = await post(new URL(`http://127.0.0.1:${port}/mcp`), ping(1));
      expect(reply.status).toBe(200);
      child.kill('SIGTERM');
      expect(await waitForExit(child)).toBe(0);
      expect(output().stdout.trimEnd().split('\n')).toHaveLength(1);
    } finally {
      await stopChild(child);
    }
  });

  it('prints an https URL when listen.tls is set', async () => {
    const pki = await makeTestPki();
    const file = join(scratch, 'tls.yaml');
    await writeFile(file, `${JSON.stringify({ listen: { tls: { cert: pki.server.certFile, key: pki.server.keyFile } }, upstreams: {} })}\n`);
    const { child } = npmStart(['--config', file, '--port', '0']);
    try {
      const [, url] = await waitForLine(child, /^listening on (https:\/\/127\.0\.0\.1:\d+\/mcp)$/, 20_000);
      const reply = await exchange(new URL(url!), { method: 'GET', path: '/healthz', tls: { ca: pki.server.certPem } });
      expect(reply.status).toBe(200);
    } finally {
      await stopChild(child);
      await pki.remove();
    }
  });
});
