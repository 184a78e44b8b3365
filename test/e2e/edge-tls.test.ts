// Edge security over TLS: HTTPS with certificate renewal (new connections get the renewed
// certificate, sessions and open connections carry on), its limits and teardown, and mutual TLS
// with a rotated CA bundle.
import { once } from 'node:events';
import { watch } from 'node:fs';
import { copyFile, mkdir, mkdtemp, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { Agent, fetch as undiciFetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { poll } from '../helpers/cli.js';
import { LATEST, openSession, ping } from '../helpers/edge.js';
import { startGateway, textOf, upstream, type TestGateway } from '../helpers/gateway.js';
import { httpExchange as exchange, httpPost as post, REQUEST_TIMEOUT_MS } from '../helpers/raw-http.js';
import { useScratch } from '../helpers/scratch.js';
import { certificateAuthority, clientSignedBy, makeTestPki, type Certificate, type TestPki } from '../helpers/tls.js';

const scratch = useScratch('switchyard-edge-tls-');


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
    live = join(scratch(), 'live-tls');
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
    const dir = await mkdtemp(join(scratch(), 'closing-tls-'));
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

  // The handshake completes without a valid certificate (a kubelet's probe presents none), and
  // every request on such a connection but a probe is refused 403 before it reaches anything.
  it('refuses every request of a client that presents no certificate with 403', async () => {
    expect(await outcomeOf(undefined)).toBe(403);
    const refused = await exchange(gw.url, { method: 'GET', path: '/mcp', tls: { ca: pki.server.certPem } });
    expect(refused.status).toBe(403);
    expect(refused.headers.connection).toBe('close');
  });

  it('refuses a client whose certificate the configured CA did not sign with 403', async () => {
    expect(await outcomeOf(pki.stranger)).toBe(403);
  });

  it("answers the probes without a certificate, with their status and no detail", async () => {
    const tls = { ca: pki.server.certPem };
    const healthz = await exchange(gw.url, { method: 'GET', path: '/healthz', tls });
    expect([healthz.status, healthz.json]).toEqual([200, { status: 'ok' }]);
    const readyz = await exchange(gw.url, { method: 'GET', path: '/readyz', tls });
    expect(readyz.json).toEqual({ ready: readyz.status === 200 });
    // With a certificate, the whole answer.
    const full = await exchange(gw.url, { method: 'GET', path: '/readyz', tls: { ...tls, cert: pki.client.certPem, key: pki.client.keyPem } });
    expect(full.json).toHaveProperty('upstreams');
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
    const live = await mkdtemp(join(scratch(), 'live-ca-'));
    await copyFile(pki.ca.certFile, join(live, 'ca.pem'));
    const nextCa = await certificateAuthority(pki.dir, 'next-ca');
    const nextClient = await clientSignedBy(nextCa, pki.dir, 'next-client');
    const rotating = await startGateway({ listen: { port: 0, tls: { cert: pki.server.certFile, key: pki.server.keyFile, ca: join(live, 'ca.pem') } }, upstreams: {} });
    const statusOf = (identity: Certificate): Promise<number | string> =>
      post(rotating.url, ping(1), { tls: { ca: pki.server.certPem, cert: identity.certPem, key: identity.keyPem } }).then(
        (reply) => reply.status,
        (err: NodeJS.ErrnoException) => err.code ?? err.message,
      );
    try {
      expect(await statusOf(pki.client)).toBe(200);
      expect(await statusOf(nextClient)).toBe(403);
      await replaceAtomically(join(live, 'ca.pem'), nextCa.certPem);
      await poll(async () => ((await statusOf(nextClient)) === 200 ? true : undefined), 'the rotated CA to vouch for its client', 10_000, 50);
      expect(await statusOf(pki.client)).toBe(403);
    } finally {
      await rotating.close();
    }
  });
});
