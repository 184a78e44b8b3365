// Per-user sign-in discovery against a hostile upstream: every answer it (or the servers it names)
// gives is read within MAX_OAUTH_BYTES, and the URLs it names are held to the upstream's own
// address class: an upstream on loopback cannot steer the gateway at a private or link-local
// address, nor a public one at loopback, and a refused literal is never connected to.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  DiscoveryError, discoverAuthorization, refreshTokens, registerClient, RegistrationError,
  type AuthorizationServer, type RegisteredClient,
} from '../../src/credentials/oauth-client.js';

type Handler = (req: IncomingMessage, res: ServerResponse, base: string) => void;
interface Hostile { base: string; hits: string[]; streams: Stream[] }
/** One oversized answer being written: how far it got, and whether the reader hung up first. */
interface Stream { path: string; written: number; finished: boolean; closed: Promise<void> }

/** MAX_OAUTH_BYTES of src/credentials/reach.ts. */
const MAX_OAUTH_BYTES = 64 * 1024;
const PAD_BYTES = 64 * 1024 * 1024;
const CHUNK = Buffer.alloc(64 * 1024, 'A');

/** Writes `{...head, "pad": "AAAA…"}` of about PAD_BYTES, chunked (no Content-Length), minding backpressure. */
function streamJson(res: ServerResponse, head: Record<string, unknown>, stream: Stream, status = 200): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.write(`${JSON.stringify(head).slice(0, -1)},"pad":"`);
  const pump = (): void => {
    while (stream.written < PAD_BYTES) {
      if (res.destroyed) return;
      stream.written += CHUNK.length;
      if (!res.write(CHUNK)) return void res.once('drain', pump);
    }
    stream.finished = true;
    res.end('"}');
  };
  pump();
}

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  })));
});

/** An http server on 127.0.0.1: `routes` by path, 404 elsewhere; `big` paths answer PAD_BYTES of JSON. */
async function hostile(routes: Record<string, Handler>): Promise<Hostile> {
  const hits: string[] = [];
  const streams: Stream[] = [];
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    hits.push(`${req.method} ${path}`);
    req.resume();
    const route = routes[path];
    if (!route) return void res.writeHead(404).end();
    route(req, res, base);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { base, hits, streams };
}

function big(h: () => Hostile, head: (base: string) => Record<string, unknown>, status = 200): Handler {
  return (req, res, base) => {
    let closed!: () => void;
    const stream: Stream = { path: req.url ?? '', written: 0, finished: false, closed: new Promise((resolve) => (closed = resolve)) };
    res.once('close', () => closed());
    h().streams.push(stream);
    streamJson(res, head(base), stream, status);
  };
}

const json = (body: (base: string) => unknown, status = 200, headers: Record<string, string> = {}): Handler => (_req, res, base) =>
  void res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body(base)));
const challenge = (target: (base: string) => string): Handler => (_req, res, base) =>
  void res.writeHead(401, { 'www-authenticate': `Bearer resource_metadata="${target(base)}"` }).end();
const asMetadata = (issuer: string, extra: Record<string, unknown> = {}) => ({
  issuer, authorization_endpoint: `${issuer}/authorize`, token_endpoint: `${issuer}/token`, code_challenge_methods_supported: ['S256'], ...extra,
});
const prm = (base: string, servers = [base]) => ({ resource: `${base}/mcp`, authorization_servers: servers });

/** Asserts the oversized answer was dropped part-way: the reader hung up long before PAD_BYTES were written. */
async function droppedEarly(stream: Stream | undefined): Promise<void> {
  expect(stream).toBeDefined();
  await stream!.closed;
  expect(stream!.finished).toBe(false);
  // What was written includes socket buffers (about 4 MiB on loopback); reading it through would be PAD_BYTES.
  expect(stream!.written).toBeLessThan(PAD_BYTES / 4);
}

describe('discovery reads within a bound', () => {
  it('refuses an endless resource_metadata document part-way, not after reading it all', async () => {
    let h!: Hostile;
    h = await hostile({
      '/mcp': challenge((base) => `${base}/prm`),
      '/prm': big(() => h, prm),
      '/.well-known/oauth-authorization-server': json((base) => asMetadata(base)),
    });
    const err = await discoverAuthorization(`${h.base}/mcp`).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DiscoveryError);
    expect((err as Error).message).toMatch(new RegExp(`larger than ${MAX_OAUTH_BYTES} bytes`));
    await droppedEarly(h.streams[0]);
    expect(h.hits).not.toContain('GET /.well-known/oauth-authorization-server');
  });

  it('refuses a declared Content-Length past the bound without reading the body', async () => {
    const h = await hostile({
      '/mcp': challenge((base) => `${base}/prm`),
      '/prm': (_req, res, base) => {
        const body = Buffer.from(JSON.stringify({ ...prm(base), pad: 'A'.repeat(2 * MAX_OAUTH_BYTES) }));
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(body.length) }).end(body);
      },
    });
    await expect(discoverAuthorization(`${h.base}/mcp`)).rejects.toThrow(new RegExp(`declares more than ${MAX_OAUTH_BYTES} bytes`));
  });

  it('refuses oversized authorization server metadata part-way', async () => {
    let h!: Hostile;
    h = await hostile({
      '/mcp': challenge((base) => `${base}/prm`),
      '/prm': json(prm),
      '/.well-known/oauth-authorization-server': big(() => h, (base) => asMetadata(base)),
      '/.well-known/openid-configuration': big(() => h, (base) => asMetadata(base)),
    });
    await expect(discoverAuthorization(`${h.base}/mcp`)).rejects.toThrow(/no authorization server metadata found \(.*larger than 65536 bytes/);
    for (const stream of h.streams) await droppedEarly(stream);
  });

  it('refuses an oversized registration answer and an oversized token answer part-way', async () => {
    let h!: Hostile;
    h = await hostile({
      '/register': big(() => h, () => ({ client_id: 'dyn-1', token_endpoint_auth_method: 'none' }), 201),
      '/token': big(() => h, () => ({ access_token: 'at', token_type: 'bearer', expires_in: 60 })),
    });
    const server = asMetadata(h.base, { registration_endpoint: `${h.base}/register` }) as unknown as AuthorizationServer;
    await expect(registerClient(server, { redirectUri: 'https://gw.example.test/cb', clientName: 'Switchyard' })).rejects.toBeInstanceOf(RegistrationError);
    await droppedEarly(h.streams[0]);
    const client: RegisteredClient = { clientId: 'gw', method: 'configured', tokenEndpointAuthMethod: 'none' };
    const err = await refreshTokens({ resource: `${h.base}/mcp`, scopes: [], server }, client, 'rt').catch((e: unknown) => e);
    expect((err as Error).message).toMatch(/refresh at .* failed: the answer is larger than 65536 bytes/);
    await droppedEarly(h.streams[1]);
  });

  it('keeps the challenge of a 401 whose error body is oversized, and does not read the probe body at all', async () => {
    let h!: Hostile;
    h = await hostile({
      '/mcp': (req, res, base) => {
        res.setHeader('www-authenticate', `Bearer resource_metadata="${base}/prm"`);
        big(() => h, () => ({ error: 'unauthorized' }), 401)(req, res, base);
      },
      '/prm': json(prm),
      '/.well-known/oauth-authorization-server': json((base) => asMetadata(base)),
    });
    const auth = await discoverAuthorization(`${h.base}/mcp`);
    expect(auth.server.issuer).toBe(h.base);
    await droppedEarly(h.streams[0]);
  });
});

describe('discovery goes only where the upstream may send it', () => {
  /** A fetch that records every URL and answers from `table` (the network never used); anything else is a 404. */
  function spy(table: Record<string, () => Response>): { fetch: typeof fetch; seen: string[] } {
    const seen: string[] = [];
    const fetchImpl = (async (input: string | URL | Request, init?: RequestInit) => {
      const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
      seen.push(`${init?.method ?? 'GET'} ${url}`);
      return table[url]?.() ?? new Response(null, { status: 404 });
    }) as typeof fetch;
    return { fetch: fetchImpl, seen };
  }
  const body = (value: unknown) => () => new Response(JSON.stringify(value), { headers: { 'content-type': 'application/json' } });
  const unauthorized = (target: string) => () => new Response(null, { status: 401, headers: { 'www-authenticate': `Bearer resource_metadata="${target}"` } });

  it.each([
    ['a private address', 'https://10.0.0.1/prm', /10\.0\.0\.1 is a private address/],
    ['the link-local metadata address', 'http://169.254.169.254/latest/meta-data', /it is plain http to a host that is not loopback/],
    ['a link-local address over https', 'https://169.254.169.254/prm', /169\.254\.169\.254 is a link-local address/],
  ])('an upstream on loopback pointing resource_metadata at %s is refused without a connection', async (_label, target, why) => {
    const h = await hostile({ '/mcp': challenge(() => target) });
    const started = Date.now();
    const err = await discoverAuthorization(`${h.base}/mcp`).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DiscoveryError);
    expect((err as Error).message).toMatch(/points resource_metadata at .* which is refused/);
    expect((err as Error).message).toMatch(why);
    // A connection attempt to an unroutable address would take the request timeout, or fail otherwise.
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(h.hits).toEqual(['GET /mcp']);
  });

  it('an upstream on loopback listing a private authorization server, or naming private endpoints, is refused', async () => {
    const h = await hostile({
      '/mcp': challenge((base) => `${base}/prm`),
      '/prm': json((base) => prm(base, ['https://192.168.1.10', base])),
      '/.well-known/oauth-authorization-server': json((base) => asMetadata(base, { registration_endpoint: 'https://10.0.0.1/internal/admin/create' })),
    });
    const err = await discoverAuthorization(`${h.base}/mcp`).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DiscoveryError);
    expect((err as Error).message).toMatch(/issuer at https:\/\/192\.168\.1\.10\/ that is refused: 192\.168\.1\.10 is a private address/);
    expect((err as Error).message).toMatch(/registration_endpoint https:\/\/10\.0\.0\.1\/internal\/admin\/create is refused: 10\.0\.0\.1 is a private address/);
  });

  it('an https upstream on a public address cannot steer the gateway at loopback: neither the GET nor the registration POST goes out', async () => {
    const upstream = 'https://93.184.216.34';
    const { fetch: fetchImpl, seen } = spy({
      [`${upstream}/mcp`]: unauthorized('http://127.0.0.1:9/internal/get-me'),
    });
    await expect(discoverAuthorization(`${upstream}/mcp`, { fetch: fetchImpl })).rejects.toThrow(/which is refused: it is not https/);

    const steered = spy({
      [`${upstream}/mcp`]: unauthorized(`${upstream}/prm`),
      [`${upstream}/prm`]: body({ resource: `${upstream}/mcp`, authorization_servers: ['https://as.example.test'] }),
      'https://as.example.test/.well-known/oauth-authorization-server': body(asMetadata('https://as.example.test', {
        registration_endpoint: 'https://127.0.0.1:9/internal/admin/create',
      })),
    });
    await expect(discoverAuthorization(`${upstream}/mcp`, { fetch: steered.fetch })).rejects.toThrow(/registration_endpoint .* 127\.0\.0\.1 is a loopback address/);
    expect([...seen, ...steered.seen].filter((line) => /127\.0\.0\.1/.test(line))).toEqual([]);
  });

  it('a name that resolves to a refused address is refused at connect time, before any byte is sent', async () => {
    const { oauthFetch } = await import('../../src/credentials/reach.js');
    const internal = await hostile({ '/prm': json(() => ({})) });
    const port = new URL(internal.base).port;
    // A reach that allows plain http to a loopback name but not loopback addresses: only the lookup can refuse it.
    const guarded = oauthFetch({ origin: 'https://mcp.example.test', also: [], http: true });
    await expect(guarded(`http://localhost:${port}/prm`, { method: 'GET' })).rejects.toThrow(/localhost resolves to .*, a non-public address/);
    expect(internal.hits).toEqual([]);
    const local = oauthFetch({ origin: 'http://127.0.0.1:1', also: ['loopback'], http: true });
    expect((await local(`http://localhost:${port}/prm`, { method: 'GET' })).status).toBe(200);
    expect(internal.hits).toEqual(['GET /prm']);
  });
});
