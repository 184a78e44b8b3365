// An SSE connection written straight to Node's response and its socket (src/http/sse-sinks.ts,
// NodeSseSink: how the gateway serves every GET stream), on a real node:http server and raw
// client sockets: the bytes on the wire are HTTP/1.1 chunks, keep-alives included, and the
// response ends with its last chunk so the connection serves the next request; a response
// waiting behind another on a pipelined connection follows it; an HTTP/1.0 client gets the body
// unframed; a client that does not read meets the bounded queue, never the
// socket's unbounded buffer; a client that leaves ends the connection.
import { createServer, type Server, type ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { KeepAlives } from '../../src/http/keep-alives.js';
import { SseConnection, type QueueBounds } from '../../src/http/sse-connection.js';
import { encodeSseEvent } from '../../src/util/sse.js';

const servers: Server[] = [];
const sockets: Socket[] = [];
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

/** A server answering /stream with a connection made by `open`, and anything else with "ok". */
async function serve(open: (res: ServerResponse) => SseConnection): Promise<{ port: number; connection: Promise<SseConnection> }> {
  let opened!: (connection: SseConnection) => void;
  const connection = new Promise<SseConnection>((resolve) => (opened = resolve));
  const server = createServer((req, res) => {
    if (req.url !== '/stream') return void res.end('ok');
    opened(open(res));
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as { port: number }).port, connection };
}

/** A raw client socket and everything it received, with a bounded wait for what it expects. */
async function client(port: number, request: string) {
  const socket = connect(port, '127.0.0.1');
  sockets.push(socket);
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  let received = Buffer.alloc(0);
  const waiters = new Set<() => void>();
  socket.on('data', (chunk: Buffer) => {
    received = Buffer.concat([received, chunk]);
    for (const wake of waiters) wake();
  });
  socket.write(request);
  return {
    socket,
    get received() {
      return received;
    },
    /** Resolves once `done(received)` holds; rejects after `ms`. */
    until(done: (bytes: Buffer) => boolean, what: string, ms = 10_000): Promise<void> {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => (waiters.delete(check), reject(new Error(`timed out waiting for ${what}`))), ms);
        const check = (): void => {
          if (!done(received)) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve();
        };
        waiters.add(check);
        check();
      });
    },
  };
}

/** Splits a response into its head and chunked body: the chunks' data, and whether the last chunk came. */
function dechunk(bytes: Buffer): { head: string; chunks: string[]; ended: boolean; rest: Buffer } {
  const split = bytes.indexOf('\r\n\r\n');
  const head = bytes.subarray(0, split).toString('latin1');
  const chunks: string[] = [];
  let at = split + 4;
  for (;;) {
    const line = bytes.indexOf('\r\n', at);
    if (line === -1) return { head, chunks, ended: false, rest: Buffer.alloc(0) };
    const size = parseInt(bytes.subarray(at, line).toString('latin1'), 16);
    if (size === 0) return { head, chunks, ended: bytes.length >= line + 4, rest: bytes.subarray(line + 4) };
    if (bytes.length < line + 2 + size + 2) return { head, chunks, ended: false, rest: Buffer.alloc(0) };
    // Each chunk's declared size is its data's length in bytes, then CRLF.
    expect(bytes.subarray(line + 2 + size, line + 4 + size).toString('latin1')).toBe('\r\n');
    chunks.push(bytes.subarray(line + 2, line + 2 + size).toString('utf8'));
    at = line + 4 + size;
  }
}

const GET = (version = '1.1'): string => `GET /stream HTTP/${version}\r\nHost: localhost\r\n\r\n`;

describe('an SSE connection written to Node’s response', () => {
  it('writes events and keep-alives as HTTP/1.1 chunks, ends with the last chunk, and leaves the connection to the next request', async () => {
    const keepAlives = new KeepAlives(160);
    const { port, connection } = await serve((res) => {
      const c = new SseConnection({}, keepAlives);
      // Written before the response was chosen: it waits, then goes first.
      c.write(encodeSseEvent('{"n":1}', 'k.1'));
      c.writeTo(res);
      c.write(encodeSseEvent('{"text":"naïve — ✓"}', 'k.2'));
      return c;
    });
    const raw = await client(port, GET());
    const sse = await connection;
    await raw.until((bytes) => dechunk(bytes).chunks.length === 3, 'a keep-alive after the two events');
    sse.close();
    await raw.until((bytes) => dechunk(bytes).ended, 'the last chunk');
    const { head, chunks } = dechunk(raw.received);
    expect(head).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(head).toMatch(/\r\ncontent-type: text\/event-stream\r\n/i);
    expect(head).toMatch(/\r\ntransfer-encoding: chunked(\r\n|$)/i);
    expect(chunks).toEqual([encodeSseEvent('{"n":1}', 'k.1'), encodeSseEvent('{"text":"naïve — ✓"}', 'k.2'), ': keep-alive\n\n']);
    expect(sse.open).toBe(false);
    expect(keepAlives.size).toBe(0);

    // The framing was whole: the same connection answers another request.
    const before = raw.received.length;
    raw.socket.write('GET /plain HTTP/1.1\r\nHost: localhost\r\n\r\n');
    await raw.until((bytes) => bytes.subarray(before).includes('\r\n\r\nok'), 'the next answer on the same connection');
    expect(raw.received.subarray(before).toString('latin1')).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
  });

  it('sends the head and what follows in the same tick (a POST answered whole as a stream) in one write to the socket', async () => {
    let writes = 0;
    const { port, connection } = await serve((res) => {
      const socket = res.socket!;
      // Node's socket hands every write to _write, or a corked batch to _writev, once each.
      const write = socket._write.bind(socket);
      const writev = socket._writev!.bind(socket);
      socket._write = (...args) => (writes++, write(...args));
      socket._writev = (...args) => (writes++, writev(...args));
      const c = new SseConnection();
      c.writeTo(res);
      c.write('id: k.0\nretry: 1000\ndata: \n\n');
      c.write(encodeSseEvent('{"result":{}}', 'k.1'));
      c.close();
      return c;
    });
    const raw = await client(port, GET());
    await connection;
    await raw.until((bytes) => dechunk(bytes).ended, 'the last chunk');
    expect(dechunk(raw.received).chunks).toEqual(['id: k.0\nretry: 1000\ndata: \n\n', encodeSseEvent('{"result":{}}', 'k.1')]);
    // Four writes (head, two events, the last chunk) when the head was flushed on its own.
    expect(writes).toBe(1);
  });

  it('writes the body unframed to an HTTP/1.0 client, and closes the connection at its end', async () => {
    const { port, connection } = await serve((res) => {
      const c = new SseConnection();
      c.writeTo(res);
      c.write(encodeSseEvent('{"n":1}'));
      return c;
    });
    const raw = await client(port, GET('1.0'));
    const ended = new Promise<void>((resolve) => raw.socket.once('end', resolve));
    (await connection).close();
    await ended;
    const text = raw.received.toString('utf8');
    expect(text).not.toMatch(/transfer-encoding/i);
    expect(text.slice(text.indexOf('\r\n\r\n') + 4)).toBe(encodeSseEvent('{"n":1}'));
  });

  it('waits behind an answer still due on a pipelined connection, then follows it, framed', async () => {
    let slow!: ServerResponse;
    let opened!: (connection: SseConnection) => void;
    const connection = new Promise<SseConnection>((resolve) => (opened = resolve));
    const server = createServer((req, res) => {
      if (req.url === '/slow') slow = res;
      else {
        const c = new SseConnection();
        c.writeTo(res);
        opened(c);
      }
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    // Two requests in one write: the stream's response has no socket until the first is answered.
    const raw = await client(port, `GET /slow HTTP/1.1\r\nHost: localhost\r\n\r\n${GET()}`);
    const sse = await connection;
    sse.write(encodeSseEvent('{"n":1}', 'k.1'));
    slow.end('ok');
    sse.write(encodeSseEvent('{"n":2}', 'k.2'));
    sse.close();
    const second = (bytes: Buffer): Buffer => bytes.subarray(bytes.indexOf('HTTP/1.1', 1));
    await raw.until((bytes) => bytes.indexOf('HTTP/1.1', 1) > 0 && dechunk(second(bytes)).ended, 'both answers, the stream to its last chunk');
    expect(raw.received.toString('latin1')).toMatch(/^HTTP\/1\.1 200 OK\r\n[^]*\r\n\r\nokHTTP\/1\.1 200 OK\r\n/);
    expect(dechunk(second(raw.received)).chunks).toEqual([encodeSseEvent('{"n":1}', 'k.1'), encodeSseEvent('{"n":2}', 'k.2')]);
  });

  it('ends the connection when the client goes away', async () => {
    const { port, connection } = await serve((res) => {
      const c = new SseConnection({}, new KeepAlives(60_000));
      c.writeTo(res);
      return c;
    });
    const raw = await client(port, GET());
    const sse = await connection;
    const closed = new Promise<void>((resolve) => (sse.onclose = resolve));
    raw.socket.destroy();
    await closed;
    expect(sse.open).toBe(false);
    sse.write('late;');
    expect(sse.queued).toEqual({ bytes: 0, messages: 0 });
  });

  describe('a client that does not read', () => {
    const message = (i: number): string => encodeSseEvent(JSON.stringify({ i, pad: 'x'.repeat(1_000) }));

    /** A GET stream written straight to its response, under `bounds`, whose client reads nothing. */
    async function unread(bounds: QueueBounds): Promise<{ res: ServerResponse; sse: SseConnection }> {
      let res!: ServerResponse;
      const { port, connection } = await serve((r) => {
        res = r;
        const c = new SseConnection({}, 0, bounds);
        c.writeTo(r);
        return c;
      });
      const raw = await client(port, GET());
      raw.socket.pause();
      const sse = await connection;
      return { res, sse };
    }

    it('drops the droppable messages past the bound, and holds no more than the bound and the socket’s own high-water mark', async () => {
      const dropped: string[] = [];
      const bounds: QueueBounds = { bytes: 64 * 1024, messages: 100, ondrop: (method) => dropped.push(method) };
      const { res, sse } = await unread(bounds);
      // Far more than the kernel's buffers on both ends hold.
      for (let i = 0; i < 40_000 && dropped.length < 1_000; i++) {
        sse.write(message(i), 'notifications/message');
        expect(sse.queued.bytes).toBeLessThanOrEqual(bounds.bytes);
        if (i % 1_000 === 0) await new Promise((resolve) => setImmediate(resolve));
      }
      expect(dropped.length).toBe(1_000);
      expect(new Set(dropped)).toEqual(new Set(['notifications/message']));
      expect(sse.open).toBe(true);
      expect(res.socket!.writableLength).toBeLessThanOrEqual(res.socket!.writableHighWaterMark + 2_000);
    });

    it('closes the connection when what waits may not be dropped', async () => {
      let overflows = 0;
      const bounds: QueueBounds = { bytes: 64 * 1024, messages: 100, onoverflow: () => overflows++ };
      const { res, sse } = await unread(bounds);
      const closed = new Promise<void>((resolve) => (sse.onclose = resolve));
      const gone = new Promise<void>((resolve) => res.once('close', resolve));
      for (let i = 0; i < 40_000 && sse.open; i++) {
        sse.write(message(i));
        if (i % 1_000 === 0) await new Promise((resolve) => setImmediate(resolve));
      }
      await closed;
      expect(overflows).toBe(1);
      expect(sse.queued).toEqual({ bytes: 0, messages: 0 });
      // Dropped, not ended: the response is destroyed rather than flushed to a client that does not read.
      await gone;
      expect(res.destroyed).toBe(true);
    });
  });
});
