// The small POST bodies of the front door (/oauth/token, /oauth/register, ...) and /admin/pins are
// read within their 16 KiB bound as they arrive: a chunked body declares no length, and reading
// it whole before refusing it let any client, signed in or not, make the process hold all of it.
import { once } from 'node:events';
import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getRequestListener } from '@hono/node-server';
import { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configSchema } from '../../src/config/schema.js';
import { openCredentialStore, type CredentialStore } from '../../src/credentials/store.js';
import { FrontDoor } from '../../src/frontdoor/front-door.js';
import type { AppEnv } from '../../src/http/app.js';
import { mountAdminPins } from '../../src/http/admin-pins.js';
import { mountConnect } from '../../src/http/connect.js';
import type { ConnectFlows } from '../../src/credentials/connect-flow.js';
import { mountFrontDoor } from '../../src/http/front-door.js';
import type { PinOperations } from '../../src/pinning/setup.js';
import { silentLogger } from '../../src/util/log.js';

const KEY = 'bounded-bodies-test-credentials-key-of-forty-chars';
const LIMIT = 16 * 1024;
const CHUNK = Buffer.alloc(64 * 1024, 'a');
/** Far over the limit: what the process would have held had it read the body whole. */
const HUGE = 64 * 1024 * 1024;
/** Room for the socket's and the parser's buffers past the limit, still a small part of HUGE. */
const NEAR_LIMIT = 1024 * 1024;

const FORM = 'application/x-www-form-urlencoded';
const ROUTES = [
  ['/oauth/token', FORM],
  ['/oauth/revoke', FORM],
  ['/oauth/consent', FORM],
  ['/oauth/register', 'application/json'],
  ['/admin/pins', 'application/json'],
  ['/connect/secret', FORM],
] as const;

let store: CredentialStore;
let frontDoor: FrontDoor;
let app: Hono<AppEnv>;
let server: Server;
let origin: string;
/** Bytes the server had read from each connection (one a request) when its answer was written. */
const readWhenAnswered: number[] = [];

beforeAll(async () => {
  store = await openCredentialStore('memory', [KEY]);
  const config = configSchema.parse({
    listen: { publicUrl: 'http://127.0.0.1/mcp' },
    auth: { oauth: { issuer: 'https://login.example/', jwksUri: 'https://login.example/keys', login: { clientId: 'switchyard' }, frontDoor: {} } },
    credentials: { key: KEY },
    upstreams: {},
  });
  frontDoor = new FrontDoor({ config, store, logger: silentLogger });
  app = new Hono<AppEnv>();
  mountFrontDoor(app, frontDoor);
  // The operator is signed in; nothing is waiting, so a decision that gets read finds nothing.
  const operations = { decide: async () => 'nothing waiting under that name', list: async () => [] } as unknown as PinOperations;
  mountAdminPins(app, { operations, scopes: () => ['admin'], authenticate: () => ({ id: 'apikey:ops', kind: 'apikey', scopes: ['admin'], claims: {} }) });
  // The secret form of a per-user upstream: nobody is signed in, nothing would be taken.
  mountConnect(app, { flows: { secret: async () => ({ status: 400, html: 'no sign-in' }) } as unknown as ConnectFlows, upstreams: () => ['vault'], base: () => origin });
  // As the listener serves it (src/http/listener.ts): the Node request reaches the app beside the Request.
  const served = getRequestListener(app.fetch);
  server = createServer((incoming, outgoing) => {
    outgoing.once('finish', () => readWhenAnswered.push(incoming.socket.bytesRead));
    void served(incoming, outgoing);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await frontDoor.close();
  await store.close();
});

/** `total` bytes, in chunks of 64 KiB. */
function* bytes(total: number): Generator<Buffer> {
  for (let sent = 0; sent < total; sent += CHUNK.length) yield CHUNK;
}

/**
 * POSTs `parts` chunked (no Content-Length), writing as fast as the server takes them and
 * stopping once the answer arrives; resolves with the answer's status and body.
 */
async function postChunked(path: string, contentType: string, parts: Iterable<Buffer>): Promise<{ status: number; body: string }> {
  const req = httpRequest(`${origin}${path}`, { method: 'POST', headers: { 'content-type': contentType }, agent: false });
  req.on('error', () => {});
  const answered = once(req, 'response') as Promise<[IncomingMessage]>;
  let answer: IncomingMessage | undefined;
  void answered.then(([response]) => (answer = response));
  for (const part of parts) {
    if (answer !== undefined) break;
    if (!req.write(part)) await Promise.race([once(req, 'drain'), answered]);
  }
  if (answer === undefined) req.end();
  const [response] = await answered;
  const chunks: Buffer[] = [];
  for await (const chunk of response) chunks.push(chunk as Buffer);
  req.destroy();
  return { status: response.statusCode!, body: Buffer.concat(chunks).toString() };
}

describe('POST bodies of the front door, /admin/pins and the connect page', () => {
  it.each(ROUTES)('%s: a chunked body far over the limit gets 413 once the limit is passed, not after all of it was read', async (path, type) => {
    readWhenAnswered.length = 0;
    const { status, body } = await postChunked(path, type, bytes(HUGE));
    expect(status).toBe(413);
    expect(body).toContain(`${LIMIT}`);
    expect(readWhenAnswered).toHaveLength(1);
    expect(readWhenAnswered[0]).toBeLessThan(NEAR_LIMIT);
  });

  it('a chunked body within the limit is read to its end', async () => {
    const form = await postChunked('/oauth/token', 'application/x-www-form-urlencoded', [Buffer.from('grant_type=pass'), Buffer.from('word&username=x')]);
    expect(form.status).toBe(400);
    expect(JSON.parse(form.body)).toMatchObject({ error: 'unsupported_grant_type' });
    const decision = await postChunked('/admin/pins', 'application/json', [Buffer.from('{"action":"approve",'), Buffer.from('"upstream":"wiki","name":"search"}')]);
    expect(decision.status).toBe(404);
    expect(JSON.parse(decision.body)).toMatchObject({ error: 'not_decided' });
  });

  it.each(ROUTES)('%s in process (app.request): the body stream is cancelled once the limit is passed', async (path, type) => {
    let pulled = 0;
    let cancelled = false;
    const body = new ReadableStream<Uint8Array>(
      {
        pull(controller) {
          if (pulled >= HUGE) return controller.close();
          pulled += CHUNK.length;
          controller.enqueue(new Uint8Array(CHUNK));
        },
        cancel() {
          cancelled = true;
        },
      },
      { highWaterMark: 0 },
    );
    const response = await app.request(`http://127.0.0.1${path}`, { method: 'POST', headers: { 'content-type': type }, body, duplex: 'half' } as RequestInit);
    expect(response.status).toBe(413);
    expect(pulled).toBeLessThanOrEqual(LIMIT + CHUNK.length);
    expect(cancelled).toBe(true);
  });
});
