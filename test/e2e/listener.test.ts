// The listener: the direct handler is tried first and anything it leaves goes to the fetch
// handler; an error of the server after it started listening is logged and it keeps serving;
// draining, it answers new requests 503 unread and closes each connection after its answer.
import { Agent, request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { startListener, type Listener } from '../../src/http/listener.js';
import { isWebResponse, JsonReply, writeReply } from '../../src/http/reply.js';
import { createLogger } from '../../src/util/log.js';

let listener: Listener | undefined;

afterEach(async () => {
  await listener?.close();
  listener = undefined;
});

describe('startListener', () => {
  it('tries the direct handler first and leaves the rest to fetch', async () => {
    listener = await startListener({
      fetch: () => new Response('from fetch'),
      direct: (incoming, outgoing) => {
        if (incoming.url !== '/direct') return false;
        outgoing.writeHead(200, { 'content-type': 'text/plain' }).end('from direct');
        return true;
      },
      host: '127.0.0.1',
      port: 0,
      path: '/mcp',
      logger: createLogger({ level: 'silent', write: () => {} }),
    });
    expect(await (await fetch(new URL('/direct', listener.url))).text()).toBe('from direct');
    expect(await (await fetch(new URL('/other', listener.url))).text()).toBe('from fetch');
  });

  it('logs an error of the server after listening and keeps serving', async () => {
    const lines: string[] = [];
    listener = await startListener({
      fetch: () => new Response('ok'),
      host: '127.0.0.1',
      port: 0,
      path: '/mcp',
      logger: createLogger({ level: 'error', write: (line) => lines.push(line) }),
    });
    // What Node emits when accept() fails, e.g. out of file descriptors.
    listener.server.emit('error', Object.assign(new Error('accept EMFILE'), { code: 'EMFILE' }));
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: 'error', msg: 'listener error' });
    expect(await (await fetch(listener.url)).text()).toBe('ok');
  });

  it('knows a Response from anything else, also once the adapter replaced the global Response', async () => {
    const platform = new Response('before');
    listener = await startListener({ fetch: () => new Response('ok'), host: '127.0.0.1', port: 0, path: '/mcp', logger: createLogger({ level: 'silent', write: () => {} }) });
    const adapters = new Response('after');
    expect(Object.prototype.hasOwnProperty.call(globalThis.Response, Symbol.hasInstance)).toBe(true);
    expect([platform, adapters].map(isWebResponse)).toEqual([true, true]);
    expect([JsonReply.empty(202), { status: 200 }, undefined, null].map(isWebResponse)).toEqual([false, false, false, false]);
  });

  it('writes a JSON reply with its length in bytes and an empty one with length 0, never chunked', async () => {
    const replies: Record<string, JsonReply> = {
      '/json': JsonReply.json({ text: 'déjà vu ✓' }),
      '/headed': JsonReply.json({ ok: true }, { 'mcp-session-id': 's1' }),
      '/empty': JsonReply.empty(202),
    };
    listener = await startListener({
      fetch: () => new Response('not here', { status: 404 }),
      direct: (incoming, outgoing) => {
        void writeReply(replies[incoming.url!]!, outgoing, { 'x-request-id': 'r1' });
        return true;
      },
      host: '127.0.0.1',
      port: 0,
      path: '/mcp',
      logger: createLogger({ level: 'silent', write: () => {} }),
    });
    const get = (path: string): Promise<{ status: number; headers: Record<string, unknown>; body: Buffer }> =>
      new Promise((resolve, reject) => {
        request(new URL(path, listener!.url), (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
        })
          .on('error', reject)
          .end();
      });
    const json = await get('/json');
    expect(json.body.toString('utf8')).toBe('{"text":"déjà vu ✓"}');
    expect(json.headers).toMatchObject({ 'content-type': 'application/json', 'content-length': String(json.body.length), 'x-request-id': 'r1' });
    expect(json.body.length).toBeGreaterThan('{"text":"déjà vu ✓"}'.length);
    const headed = await get('/headed');
    expect(headed.headers).toMatchObject({ 'content-length': String(headed.body.length), 'mcp-session-id': 's1', 'x-request-id': 'r1' });
    const empty = await get('/empty');
    expect(empty).toMatchObject({ status: 202, headers: { 'content-length': '0', 'x-request-id': 'r1' } });
    for (const answer of [json, headed, empty]) expect(answer.headers['transfer-encoding']).toBeUndefined();
  });

  it('draining: a new request is answered 503 unread (its handler never runs), probes are served, a response not yet begun closes its connection', async () => {
    let release: () => void = () => {};
    const released = new Promise<void>((resolve) => (release = resolve));
    let started: () => void = () => {};
    const holding = new Promise<void>((resolve) => (started = resolve));
    const handled: string[] = [];
    listener = await startListener({
      fetch: async (req) => {
        const path = new URL(req.url).pathname;
        handled.push(`${req.method} ${path}`);
        if (path === '/slow') {
          started();
          await released;
        }
        return new Response(path);
      },
      host: '127.0.0.1',
      port: 0,
      path: '/mcp',
      servedWhileDraining: (path) => path === '/readyz',
      logger: createLogger({ level: 'silent', write: () => {} }),
    });
    const agent = new Agent({ keepAlive: true });
    const send = (method: string, path: string): Promise<{ status: number; connection?: string; retryAfter?: string; body: string }> =>
      new Promise((resolve, reject) => {
        request(new URL(path, listener!.url), { method, agent, signal: AbortSignal.timeout(10_000) }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => resolve({ status: res.statusCode!, connection: res.headers.connection, retryAfter: res.headers['retry-after'], body: Buffer.concat(chunks).toString('utf8') }));
        })
          .on('error', reject)
          .end(method === 'POST' ? '{}' : undefined);
      });
    try {
      expect(await send('POST', '/mcp')).toMatchObject({ status: 200, connection: 'keep-alive' });
      const slow = send('POST', '/slow');
      await holding;
      listener.drain();
      expect(listener.unanswered).toBe(1);
      const refused = await send('POST', '/mcp');
      expect(refused).toMatchObject({ status: 503, connection: 'close', retryAfter: '1' });
      expect(JSON.parse(refused.body)).toMatchObject({ jsonrpc: '2.0', id: null, error: { message: 'Service Unavailable: the gateway is shutting down' } });
      expect(await send('GET', '/readyz')).toMatchObject({ status: 200, body: '/readyz', connection: 'close' });
      release();
      expect(await slow).toMatchObject({ status: 200, body: '/slow', connection: 'close' });
      expect(handled).toEqual(['POST /mcp', 'POST /slow', 'GET /readyz']);
      expect(listener.unanswered).toBe(0);
    } finally {
      release();
      agent.destroy();
    }
  });
});
