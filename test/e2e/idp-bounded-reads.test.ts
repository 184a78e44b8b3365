// The gateway's own reads at the company IdP (auth.oauth.issuer) and at an upstream's token
// endpoint (client credentials) are bounded: a discovery document past 1 MiB, a token answer past
// 64 KiB (success or error alike) fails as the IdP failing, the stream is dropped part-way (the
// fake IdP sees the connection close long before it wrote its 200 MiB), and nothing waits for it.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { ClientCredentials } from '../../src/auth/client-credentials.js';
import type { TokenExchangeConfig } from '../../src/config/token-exchange-schema.js';
import { IdpLogin } from '../../src/credentials/login.js';
import { Sealer } from '../../src/credentials/sealed.js';
import { MemoryCredentialStore } from '../../src/credentials/store.js';
import { TokenExchanger, TokenExchangeError } from '../../src/credentials/token-exchange.js';
import { createLogger } from '../../src/util/log.js';
import { frontDoorConfig, startFrontDoorGateway } from '../helpers/front-door.js';
import { freePort } from '../helpers/redis.js';

/** What a hostile answer would write if read to its end; it is written as read, never held. */
const PAD_BYTES = 200 * 1024 * 1024;
/** The most a bounded read may let the IdP write: the bound, plus socket buffers on loopback. */
const DROPPED_BY = 16 * 1024 * 1024;
/** How soon the failure must come: reading the whole answer would not be this prompt under load either. */
const PROMPT_MS = 5_000;
const CHUNK = Buffer.alloc(64 * 1024, 'A');

type Handler = (req: IncomingMessage, res: ServerResponse, base: string) => void;
/** One oversized answer being written: how far it got, and whether the reader hung up first. */
interface Stream { path: string; written: number; finished: boolean; closed: Promise<void> }
interface Idp { base: string; hits: string[]; streams: Stream[] }

const servers: Server[] = [];
const agents: Agent[] = [];
afterEach(async () => {
  await Promise.all(agents.splice(0).map((agent) => agent.close()));
  await Promise.all(servers.splice(0).map((server) => new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  })));
});

/** A fake IdP on 127.0.0.1: `routes` by path, 404 elsewhere. */
async function startIdp(routes: Record<string, Handler>): Promise<Idp> {
  const idp: Idp = { base: '', hits: [], streams: [] };
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    idp.hits.push(`${req.method} ${path}`);
    req.resume();
    const route = routes[path];
    if (!route) return void res.writeHead(404).end();
    route(req, res, idp.base);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  idp.base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return idp;
}

/** `{...head, "pad": "AAAA…"}` of PAD_BYTES, chunked (no Content-Length), written as fast as the reader takes it. */
function endless(idp: () => Idp, head: (base: string) => Record<string, unknown>, status = 200): Handler {
  return (req, res, base) => {
    let closed!: () => void;
    const stream: Stream = { path: req.url ?? '', written: 0, finished: false, closed: new Promise((resolve) => (closed = resolve)) };
    res.once('close', () => closed());
    idp().streams.push(stream);
    res.writeHead(status, { 'content-type': 'application/json' });
    res.write(`${JSON.stringify(head(base)).slice(0, -1)},"pad":"`);
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
  };
}

const json = (body: (base: string) => unknown, status = 200): Handler => (_req, res, base) =>
  void res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body(base)));
/** `body` padded to `bytes` and sent with its Content-Length. */
const sized = (body: (base: string) => Record<string, unknown>, bytes: number): Handler => (_req, res, base) => {
  const head = JSON.stringify(body(base));
  const padded = Buffer.from(`${head.slice(0, -1)},"pad":"${'A'.repeat(Math.max(0, bytes - head.length - 9))}"}`);
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(padded.length) }).end(padded);
};
const metadata = (base: string): Record<string, unknown> => ({
  issuer: base, authorization_endpoint: `${base}/authorize`, token_endpoint: `${base}/token`, jwks_uri: `${base}/jwks`, response_types_supported: ['code'],
});
const tokens = { access_token: 'an-access-token', token_type: 'Bearer', expires_in: 300 };

/** The oversized answer was dropped part-way: the reader hung up long before PAD_BYTES were written. */
async function droppedEarly(stream: Stream | undefined): Promise<void> {
  expect(stream).toBeDefined();
  await stream!.closed;
  expect(stream!.finished).toBe(false);
  expect(stream!.written).toBeLessThan(DROPPED_BY);
}

/** `attempt`'s rejection, and how long it took. */
async function failure(attempt: () => Promise<unknown>): Promise<{ err: unknown; ms: number }> {
  const started = Date.now();
  const err = await attempt().then(() => undefined, (e: unknown) => e);
  return { err, ms: Date.now() - started };
}

function login(idp: Idp): IdpLogin {
  const store = new MemoryCredentialStore(new Sealer(['an-idp-bounds-test-credentials-key-of-forty']));
  return new IdpLogin({ issuer: idp.base, principalClaim: 'sub', config: { clientId: 'switchyard', clientSecret: 'the-login-secret', scopes: [] }, redirectUri: () => 'http://127.0.0.1:1/oauth/callback', store });
}

describe("the login client's reads at the IdP", () => {
  it('refuses an endless discovery document part-way, as an IdP failure', async () => {
    let idp!: Idp;
    idp = await startIdp({ '/.well-known/openid-configuration': endless(() => idp, metadata) });
    const { err, ms } = await failure(() => login(idp).start());
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toMatch(/larger than 1048576 bytes/);
    expect(ms).toBeLessThan(PROMPT_MS);
    await droppedEarly(idp.streams[0]);
  });

  it('takes a discovery document of a big tenant (under 1 MiB)', async () => {
    const idp = await startIdp({ '/.well-known/openid-configuration': sized(metadata, 512 * 1024) });
    const { url } = await login(idp).start();
    expect(url.startsWith(`${idp.base}/authorize?`)).toBe(true);
  });

  it('refuses an endless token answer to a refresh part-way', async () => {
    let idp!: Idp;
    idp = await startIdp({ '/.well-known/openid-configuration': json(metadata), '/token': endless(() => idp, () => tokens) });
    const { err, ms } = await failure(() => login(idp).refreshSession('a-refresh-token'));
    expect((err as Error).message).toMatch(/larger than 65536 bytes/);
    expect(ms).toBeLessThan(PROMPT_MS);
    await droppedEarly(idp.streams[0]);
  });

  it('refuses a token answer declaring more than 64 KiB without reading it', async () => {
    const idp = await startIdp({ '/.well-known/openid-configuration': json(metadata), '/token': sized(() => tokens, 100 * 1024) });
    await expect(login(idp).refreshSession('a-refresh-token')).rejects.toThrow(/declares more than 65536 bytes/);
  });

  it('refuses an endless error answer to the code grant part-way', async () => {
    let idp!: Idp;
    idp = await startIdp({ '/.well-known/openid-configuration': json(metadata), '/token': endless(() => idp, () => ({ error: 'invalid_grant' }), 400) });
    const client = login(idp);
    const { pending } = await client.start();
    const callback = new URL(`http://127.0.0.1:1/oauth/callback?code=a-code&state=${pending.state}`);
    const { err, ms } = await failure(() => client.finishWithTokens(callback, pending));
    expect((err as Error).message).toMatch(/larger than 65536 bytes/);
    expect(ms).toBeLessThan(PROMPT_MS);
    await droppedEarly(idp.streams[0]);
  });
});

describe('token exchange reads at the IdP', () => {
  const logger = createLogger({ level: 'error', write: () => {} });
  const exchanger = (idp: Idp, config: Partial<TokenExchangeConfig> = {}): TokenExchanger =>
    new TokenExchanger({
      issuer: idp.base,
      login: { clientId: 'switchyard', clientSecret: 'the-login-secret' },
      config: () => ({ audience: 'api://wiki', scopes: [], client: 'login', variant: 'rfc8693', subjectTokenType: 'urn:ietf:params:oauth:token-type:access_token', ...config }),
      subjects: { subjectToken: () => Promise.resolve('the-users-idp-token') },
      logger,
    });

  it('an IdP answering 500 is unavailable (what an oversized answer must match)', async () => {
    const idp = await startIdp({ '/.well-known/openid-configuration': json(() => ({ error: 'server_error' }), 500) });
    const { err } = await failure(() => exchanger(idp).token('alice', 'wiki'));
    expect(err).toBeInstanceOf(TokenExchangeError);
    expect((err as TokenExchangeError).kind).toBe('unavailable');
  });

  it('refuses an endless discovery document part-way: the IdP is unavailable', async () => {
    let idp!: Idp;
    idp = await startIdp({ '/.well-known/openid-configuration': endless(() => idp, metadata), '/token': json(() => tokens) });
    const { err, ms } = await failure(() => exchanger(idp).token('alice', 'wiki'));
    expect(err).toBeInstanceOf(TokenExchangeError);
    expect((err as TokenExchangeError).kind).toBe('unavailable');
    expect((err as Error).message).toMatch(/larger than 1048576 bytes/);
    expect(ms).toBeLessThan(PROMPT_MS);
    await droppedEarly(idp.streams[0]);
    expect(idp.hits).not.toContain('POST /token');
  });

  it('refuses an endless token answer part-way: the IdP is unavailable', async () => {
    let idp!: Idp;
    idp = await startIdp({ '/token': endless(() => idp, () => ({ ...tokens, issued_token_type: 'urn:ietf:params:oauth:token-type:access_token' })) });
    const { err, ms } = await failure(() => exchanger(idp, { tokenUrl: `${idp.base}/token` }).token('alice', 'wiki'));
    expect(err).toBeInstanceOf(TokenExchangeError);
    expect((err as TokenExchangeError).kind).toBe('unavailable');
    expect((err as Error).message).toMatch(/larger than 65536 bytes/);
    expect(ms).toBeLessThan(PROMPT_MS);
    await droppedEarly(idp.streams[0]);
  });
});

describe("an upstream's client-credentials token endpoint", () => {
  it('refuses an endless token answer part-way', async () => {
    let idp!: Idp;
    idp = await startIdp({ '/token': endless(() => idp, () => tokens) });
    const dispatcher = new Agent();
    agents.push(dispatcher);
    const credentials = new ClientCredentials({ tokenUrl: `${idp.base}/token`, clientId: 'gateway', clientSecret: 'its-secret', dispatcher });
    const { err, ms } = await failure(() => credentials.authorization());
    expect((err as Error).message).toMatch(/larger than 65536 bytes/);
    expect(ms).toBeLessThan(PROMPT_MS);
    await droppedEarly(idp.streams[0]);
  });
});

describe("the front door's sign-in", () => {
  /** A gateway with the front door before `idp`; /oauth/authorize for a client it registered. */
  async function authorizeAt(idp: Idp): Promise<{ status: number; text: string; close: () => Promise<void> }> {
    const port = await freePort();
    const origin = `http://127.0.0.1:${port}`;
    const gateway = await startFrontDoorGateway(frontDoorConfig(idp.base, `${origin}/mcp`, {}, { upstreams: {} }), port);
    try {
      const registered = await fetch(`${origin}/oauth/register`, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ client_name: 'Bounds', redirect_uris: ['http://127.0.0.1:9/callback'], token_endpoint_auth_method: 'none' }),
      });
      expect(registered.status).toBe(201);
      const clientId = ((await registered.json()) as { client_id: string }).client_id;
      const url = new URL(`${origin}/oauth/authorize`);
      url.search = new URLSearchParams({ response_type: 'code', client_id: clientId, redirect_uri: 'http://127.0.0.1:9/callback', code_challenge_method: 'S256', code_challenge: 'A'.repeat(43), state: 'st' }).toString();
      const response = await fetch(url, { redirect: 'manual', signal: AbortSignal.timeout(30_000) });
      return { status: response.status, text: await response.text(), close: () => gateway.close() };
    } catch (err) {
      await gateway.close();
      throw err;
    }
  }

  it('answers an endless discovery document as it answers an IdP that answers 500', async () => {
    const down = await startIdp({ '/.well-known/openid-configuration': json(() => ({}), 500) });
    const downAnswer = await authorizeAt(down);
    await downAnswer.close();
    expect(downAnswer.status).toBe(502);

    let idp!: Idp;
    idp = await startIdp({ '/.well-known/openid-configuration': endless(() => idp, metadata) });
    const started = Date.now();
    const answer = await authorizeAt(idp);
    await answer.close();
    expect(answer.status).toBe(502);
    expect(answer.text).toBe(downAnswer.text);
    expect(Date.now() - started).toBeLessThan(PROMPT_MS * 2);
    await droppedEarly(idp.streams[0]);
  });
});
