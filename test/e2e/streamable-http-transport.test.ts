// The Streamable HTTP client transport's POST exchange (undici's handler API, exchange.ts)
// against a real node:http server that answers each POST as the test says: JSON, SSE split
// across writes, 202, error bodies, an expired session, bodies too large or cut off, silence.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JsonRpcMessage } from '../../src/mcp/jsonrpc.js';
import { BeforeResponseError, exchange, InFlight, type InFlightEntry } from '../../src/transport/exchange.js';
import { StreamableHttpTransport } from '../../src/transport/streamable-http.js';
import { TransportError } from '../../src/transport/types.js';
import { Cancellation } from '../../src/util/cancel.js';
import { silentLogger } from '../../src/util/log.js';

type Answer = (req: IncomingMessage, res: ServerResponse, body: { id?: unknown; method?: string }) => void;

let server: Server;
let url: string;
let answer: Answer = (_req, res) => res.writeHead(500).end();
/** Resolves when the server sees the client's connection of the current POST close. */
let closed: Promise<void> = Promise.resolve();
/** Resolves when the server has the next POST's body. */
let arrived: () => void = () => {};
const nextRequest = (): Promise<void> => new Promise((resolve) => (arrived = resolve));
const agent = new Agent();

beforeAll(async () => {
  server = createServer((req, res) => {
    let text = '';
    req.on('data', (chunk: Buffer) => (text += chunk));
    req.on('end', () => {
      answer(req, res, req.method === 'POST' ? (JSON.parse(text) as { id?: unknown; method?: string }) : {});
      arrived();
    });
    closed = new Promise((resolve) => res.once('close', () => resolve()));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await agent.close();
});

function transport(options: { maxMessageBytes?: number; resume?: { sessionId: string } } = {}): { t: StreamableHttpTransport; got: { message: JsonRpcMessage; related: unknown }[] } {
  const t = new StreamableHttpTransport({ url, headers: {}, dispatcher: agent, logger: silentLogger, ...options });
  const got: { message: JsonRpcMessage; related: unknown }[] = [];
  t.onmessage = (message, extra) => got.push({ message, related: extra?.relatedRequestId });
  return { t, got };
}

const call = (id: number): JsonRpcMessage => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: { message: 'hi' } } });

async function failure(promise: Promise<unknown>): Promise<TransportError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(TransportError);
  return err as TransportError;
}

describe('StreamableHttpTransport POST', () => {
  it('delivers a JSON answer with the id of the request it answers', async () => {
    answer = (_req, res, body) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: body.id, result: { ok: true } }));
    const { t, got } = transport();
    await t.send(call(7));
    expect(got).toEqual([{ message: { jsonrpc: '2.0', id: 7, result: { ok: true } }, related: 7 }]);
  });

  it('fails the send when the receiver throws on the answer, JSON or SSE, so the caller is not left waiting', async () => {
    const thrown = new Error('receiver broke');
    for (const type of ['application/json', 'text/event-stream']) {
      answer = (_req, res, body) => {
        const text = JSON.stringify({ jsonrpc: '2.0', id: body.id, result: {} });
        res.writeHead(200, { 'content-type': type }).end(type === 'text/event-stream' ? `data: ${text}\n\n` : text);
      };
      const { t } = transport();
      t.onmessage = () => {
        throw thrown;
      };
      const err = await failure(t.send(call(8)));
      expect(err.code).toBe('network');
      expect(err.cause).toBe(thrown);
    }
  });

  it('delivers SSE events in order as they complete, an event split across writes included', async () => {
    answer = (_req, res, body) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('event: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}\n\n');
      res.write('data: {"jsonrpc":"2.0","id":');
      setTimeout(() => res.end(`${JSON.stringify(body.id)},"result":{"done":true}}\n\n`), 20);
    };
    const { t, got } = transport();
    await t.send(call(8));
    expect(got.map((g) => g.message)).toEqual([
      { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 1, progress: 1 } },
      { jsonrpc: '2.0', id: 8, result: { done: true } },
    ]);
    expect(got.every((g) => g.related === 8)).toBe(true);
  });

  it('takes a 202 for a notification, its body dropped', async () => {
    answer = (_req, res) => res.writeHead(202).end('ignored');
    const { t, got } = transport();
    await t.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    expect(got).toEqual([]);
  });

  it('relays a JSON-RPC error an error status carries for the request, and otherwise fails with the status', async () => {
    answer = (_req, res, body) => res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: body.id, error: { code: -32602, message: 'bad' } }));
    const { t, got } = transport();
    await t.send(call(9));
    expect(got).toEqual([{ message: { jsonrpc: '2.0', id: 9, error: { code: -32602, message: 'bad' } }, related: 9 }]);

    answer = (_req, res) => res.writeHead(503, { 'content-type': 'text/plain' }).end('busy');
    const err = await failure(t.send(call(10)));
    expect([err.code, err.status]).toEqual(['http_status', 503]);
  });

  it('fails with the status when an error body breaks off', async () => {
    answer = (_req, res) => {
      res.writeHead(500, { 'content-type': 'application/json', 'content-length': '1000' });
      res.write('{"jsonrpc":');
      setTimeout(() => res.destroy(), 20);
    };
    const { t } = transport();
    const err = await failure(t.send(call(11)));
    expect([err.code, err.status]).toEqual(['http_status', 500]);
  });

  it('says the upstream session expired on a 404 once it has one', async () => {
    answer = (_req, res, body) =>
      body.method === 'initialize'
        ? res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'up-1' }).end(JSON.stringify({ jsonrpc: '2.0', id: body.id, result: {} }))
        : res.writeHead(404).end();
    const { t } = transport();
    await t.send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {} });
    expect(t.sessionId).toBe('up-1');
    const err = await failure(t.send(call(2)));
    expect([err.code, err.status]).toEqual(['session_expired', 404]);
  });

  it('says the upstream session expired on a 400 naming the session, as server-everything answers an id it no longer knows', async () => {
    answer = (_req, res, body) =>
      res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: body.id, error: { code: -32000, message: 'Bad Request: No valid session ID provided' } }));
    const { t, got } = transport({ resume: { sessionId: 'up-gone' } });
    const err = await failure(t.send(call(3)));
    expect([err.code, err.status]).toEqual(['session_expired', 400]);
    expect(got).toEqual([]);
    // Without a session id, the same answer is the request's own error.
    const fresh = transport();
    await fresh.t.send(call(4));
    expect(fresh.got.map((g) => g.message)).toEqual([{ jsonrpc: '2.0', id: 4, error: { code: -32000, message: 'Bad Request: No valid session ID provided' } }]);
  });

  it('ends the upstream session with DELETE on close, unless told to keep it for another replica', async () => {
    const methods: string[] = [];
    answer = (req, res) => {
      methods.push(req.method!);
      res.writeHead(200).end();
    };
    const kept = transport({ resume: { sessionId: 'up-kept' } }).t;
    kept.keepSession();
    await kept.close();
    expect(methods).toEqual([]);
    await transport({ resume: { sessionId: 'up-ended' } }).t.close();
    expect(methods).toEqual(['DELETE']);
  });

  it('holds the GET stream only while asked, once asked: none at establishment, one while held, cut when let go', async () => {
    const gets: ServerResponse[] = [];
    let opened: () => void = () => {};
    answer = (req, res) => {
      if (req.method !== 'GET') return void res.writeHead(202).end();
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(': open\n\n');
      gets.push(res);
      opened();
    };
    const { t } = transport({ resume: { sessionId: 'up-held' } });
    try {
      t.holdStream(false);
      t.sessionEstablished('2025-06-18');
      // A notification round trip: a GET sent at establishment would have arrived before it.
      await t.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      expect(gets).toHaveLength(0);

      const first = new Promise<void>((resolve) => (opened = resolve));
      t.holdStream(true);
      await first;
      expect(gets).toHaveLength(1);
      const cut = new Promise<void>((resolve) => gets[0]!.once('close', () => resolve()));
      t.holdStream(false);
      await cut;
      expect(gets).toHaveLength(1);
    } finally {
      t.keepSession();
      await t.close();
    }
  });

  it('refuses a JSON answer larger than maxMessageBytes and cuts the connection', async () => {
    answer = (_req, res, body) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: body.id, result: { text: 'x'.repeat(10_000) } }));
    const { t, got } = transport({ maxMessageBytes: 1_000 });
    const err = await failure(t.send(call(12)));
    expect(err.code).toBe('oversized');
    expect(got).toEqual([]);
  });

  it('fails with stream_ended when the answer never comes in a stream that ends', async () => {
    answer = (_req, res) => res.writeHead(200, { 'content-type': 'text/event-stream' }).end(': nothing\n\n');
    const { t } = transport();
    expect((await failure(t.send(call(13)))).code).toBe('stream_ended');
  });

  it('resumes a stream the server closed before the answer (polling): GET with Last-Event-ID after its retry, in the session', async () => {
    const gets: Record<string, string | string[] | undefined>[] = [];
    let id: unknown;
    answer = (req, res, body) => {
      if (req.method === 'POST') {
        id = body.id;
        // A priming event (id, retry, empty data), then the server closes the stream.
        res.writeHead(200, { 'content-type': 'text/event-stream' }).end('id: ev-1\nretry: 20\ndata: \n\n');
        return;
      }
      gets.push(req.headers);
      res.writeHead(200, { 'content-type': 'text/event-stream' }).end(`id: ev-2\ndata: ${JSON.stringify({ jsonrpc: '2.0', id, result: { resumed: true } })}\n\n`);
    };
    const { t, got } = transport({ resume: { sessionId: 'sess-1' } });
    await t.send(call(15));
    expect(got.map((g) => g.message)).toEqual([{ jsonrpc: '2.0', id: 15, result: { resumed: true } }]);
    expect(gets).toHaveLength(1);
    expect(gets[0]).toMatchObject({ 'last-event-id': 'ev-1', 'mcp-session-id': 'sess-1', accept: 'text/event-stream' });
  });

  it('fails with stream_ended when the server will not resume the stream (its GET is refused)', async () => {
    answer = (req, res) => {
      if (req.method === 'POST') res.writeHead(200, { 'content-type': 'text/event-stream' }).end('id: ev-1\nretry: 10\ndata: \n\n');
      else res.writeHead(405).end();
    };
    const { t } = transport({ resume: { sessionId: 'sess-2' } });
    const err = await failure(t.send(call(16)));
    expect(err).toMatchObject({ code: 'stream_ended', status: 405 });
  });

  it('keeps what was answered when the stream breaks after the answer', async () => {
    answer = (_req, res, body) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', id: body.id, result: {} })}\n\n`);
      setTimeout(() => res.destroy(), 20);
    };
    const { t, got } = transport();
    await t.send(call(14));
    expect(got.map((g) => g.message)).toEqual([{ jsonrpc: '2.0', id: 14, result: {} }]);
  });

  it('cuts an exchange whose cancellation aborts, before the headers or mid-stream, and the server sees the connection close', async () => {
    const { t } = transport();
    answer = () => {}; // never answers
    const exchange = new Cancellation();
    const reached = nextRequest();
    const sent = t.send(call(15), { cancel: exchange });
    await reached;
    const serverSawClose = closed;
    exchange.abort(new TransportError('closed', 'transport closed'));
    expect((await failure(sent)).code).toBe('closed');
    await serverSawClose;

    // After the headers: the client has taken the stream's first event when it aborts.
    answer = (_req, res) => res.writeHead(200, { 'content-type': 'text/event-stream' }).write('data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}\n\n');
    const streaming = new Cancellation();
    const firstEvent = new Promise<void>((resolve) => (t.onmessage = () => resolve()));
    const open = t.send(call(16), { cancel: streaming });
    await firstEvent;
    const streamClosed = closed;
    streaming.abort(new TransportError('closed', 'transport closed'));
    expect((await failure(open)).code).toBe('closed');
    await streamClosed;
  });

  it('cuts every POST in flight on close, without aborting the callers\' own exchanges', async () => {
    answer = () => {}; // never answers
    const { t } = transport();
    const exchange = new Cancellation();
    const reached = nextRequest();
    const withExchange = t.send(call(18), { cancel: exchange });
    await reached;
    const serverSawClose = closed;
    await t.close();
    expect((await failure(withExchange)).code).toBe('closed');
    expect(exchange.aborted).toBe(false);
    await serverSawClose;
    expect((await failure(t.send(call(19)))).code).toBe('closed');
  });

  it('fails with a network error when nothing listens', async () => {
    const free = createServer();
    await new Promise<void>((resolve) => free.listen(0, '127.0.0.1', resolve));
    const port = (free.address() as AddressInfo).port;
    await new Promise((resolve) => free.close(resolve));
    const t = new StreamableHttpTransport({ url: `http://127.0.0.1:${port}/mcp`, headers: {}, dispatcher: agent, logger: silentLogger });
    expect((await failure(t.send(call(17)))).code).toBe('network');
  });
});

describe('InFlight (the exchanges a transport cuts on close)', () => {
  /** The cuts run a turn after cutAll (a renewal puts its new transport in place first). */
  const turn = (): Promise<void> => Promise.resolve();
  /** An exchange's entry (exchanges are their own), added to `inflight`. */
  const add = (inflight: InFlight, cut: (err: Error) => void): InFlightEntry => {
    const entry: InFlightEntry = { cut, prev: undefined, next: undefined };
    inflight.add(entry);
    return entry;
  };

  it('cuts what is still in flight, once, and nothing removed before, a turn after cutAll', async () => {
    const inflight = new InFlight();
    const cut: string[] = [];
    const [a, b, c] = ['a', 'b', 'c'].map((name) => add(inflight, () => cut.push(name)));
    inflight.delete(b!);
    inflight.delete(b!);
    inflight.cutAll(new Error('closed'));
    expect(cut).toEqual([]);
    await turn();
    expect(cut.sort()).toEqual(['a', 'c']);
    // Their own settling removes them again after the cut: the list stays empty.
    inflight.delete(a!);
    inflight.delete(c!);
    inflight.cutAll(new Error('closed'));
    await turn();
    expect(cut).toHaveLength(2);
  });

  it('keeps working after a cut, when an exchange removes itself while being cut', async () => {
    const inflight = new InFlight();
    const cut: string[] = [];
    const first = add(inflight, () => {
      cut.push('first');
      inflight.delete(first);
      inflight.delete(second);
    });
    const second = add(inflight, () => cut.push('second'));
    inflight.cutAll(new Error('closed'));
    await turn();
    expect(cut.sort()).toEqual(['first', 'second']);
    add(inflight, () => cut.push('later'));
    inflight.cutAll(new Error('closed'));
    await turn();
    expect(cut).toEqual(['first', 'second', 'later']);
  });

  it('cuts the others when one owner throws on its cut, and reports what it threw', async () => {
    const reported: unknown[] = [];
    const inflight = new InFlight((err) => reported.push(err));
    const cut: string[] = [];
    add(inflight, () => cut.push('a'));
    add(inflight, () => {
      throw new Error('owner failed');
    });
    add(inflight, () => cut.push('c'));
    inflight.cutAll(new Error('closed'));
    await turn();
    expect(cut.sort()).toEqual(['a', 'c']);
    expect(reported).toEqual([new Error('owner failed')]);
  });
});

describe('post() and exchange() (the request path without promises)', () => {
  it('tells done how a post ended, once, never before post() returns: an answer, then a closed transport', async () => {
    const { t, got } = transport();
    answer = (_req, res, body) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: body.id, result: {} }));
    const ended: unknown[] = [];
    let returned = false;
    const first = new Promise<void>((resolve) =>
      t.post(call(21), undefined, (err) => {
        ended.push({ err, returned, answered: got.length });
        resolve();
      }),
    );
    returned = true;
    await first;
    // The answer reached the receiver before the post was said to be over.
    expect(ended).toEqual([{ err: undefined, returned: true, answered: 1 }]);

    await t.close();
    returned = false;
    const second = new Promise<unknown>((resolve) => t.post(call(22), undefined, (err) => resolve({ err, returned })));
    returned = true;
    const { err, returned: after } = (await second) as { err: unknown; returned: boolean };
    expect(after).toBe(true);
    expect((err as TransportError).code).toBe('closed');
  });

  it('reports a dispatcher that refuses the request (closed) after exchange() returns, as a failure before the response', async () => {
    const closedAgent = new Agent();
    await closedAgent.close();
    let returned = false;
    const outcome = new Promise<{ err: unknown; result: unknown; returned: boolean }>((resolve) => {
      exchange(closedAgent, { origin: new URL(url).origin, path: '/mcp', method: 'POST', headers: {}, body: '{}' }, undefined, () => ({ kind: 'skip' }), new InFlight(), (err, result) =>
        resolve({ err, result, returned }),
      );
    });
    returned = true;
    const { err, result, returned: after } = await outcome;
    expect(after).toBe(true);
    expect(result).toBeUndefined();
    expect(err).toBeInstanceOf(BeforeResponseError);
  });
});
