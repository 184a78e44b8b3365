// HTTP status codes of the MCP endpoint over a real socket, one behaviour per test, against the
// Streamable HTTP transport (spec: basic/transports.mdx) and the lifecycle's version negotiation.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, upstream, type TestGateway } from '../helpers/gateway.js';
import {
  exchange as rawExchange,
  expectRpcError,
  initializeMessage,
  initializeRaw,
  INITIALIZED,
  LATEST,
  openStream as openRawStream,
  openStreamWhenFree as openRawStreamWhenFree,
  POST_ACCEPT,
  postRpc,
  type FetchInit,
  type FetchOptions,
  type RawReply,
} from '../helpers/raw-http.js';

// JSON-RPC 2.0 §5.1 error codes.
const PARSE_ERROR = -32700;
const INVALID_REQUEST = -32600;
/** Bounds every single HTTP exchange; the test timeout bounds the whole test. */
const FETCH_TIMEOUT_MS = 10_000;
const CLIENT_INFO = { name: 'status-test', version: '1.0.0' };

let gw: TestGateway;

beforeAll(async () => {
  gw = await startGateway({ upstreams: { paged: upstream.paged() } });
});

afterAll(async () => {
  await gw?.close();
});

/** Where a request goes: the shared gateway unless `url` says otherwise. */
type At = { url?: URL };

/** One request with exactly the headers given (and the session's), read to the end. */
function exchange({ url, ...init }: FetchInit & At): Promise<RawReply> {
  return rawExchange(url ?? gw.url, init);
}

/** POSTs `text` without a Content-Length (chunked), in two chunks split at `splitAt`. */
function postChunked(url: URL, text: string, headers: Record<string, string>, splitAt: number): Promise<Response> {
  const bytes = new TextEncoder().encode(text);
  return fetch(url, {
    method: 'POST',
    headers,
    body: new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(bytes.subarray(0, splitAt));
        controller.enqueue(bytes.subarray(splitAt));
        controller.close();
      },
    }),
    duplex: 'half',
    signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
  });
}

/** POSTs one JSON-RPC message (or a batch; raw text as it is) with the headers a conforming client sends (unless overridden). */
function post(message: unknown, { url, ...options }: FetchOptions & At = {}): Promise<RawReply> {
  return postRpc(url ?? gw.url, message, options);
}

const initializeRequest = (protocolVersion: string, id: number | string = 1) => initializeMessage({ protocolVersion, id, clientInfo: CLIENT_INFO });

const ping = (id: number | string) => ({ jsonrpc: '2.0', id, method: 'ping' });
const initialized = INITIALIZED;

/** Initializes a session as a client would (initialize, then notifications/initialized, without MCP-Protocol-Version) and returns its id. */
async function openSession(protocolVersion = LATEST, url: URL = gw.url): Promise<string> {
  return (await initializeRaw(url, { protocolVersion, id: 1, clientInfo: CLIENT_INFO, versionHeader: false })).id;
}

function expectAcceptedEmpty(reply: RawReply): void {
  expect(reply.status).toBe(202);
  expect(reply.text).toBe('');
}

/** Opens the session's GET stream, reading only the headers; the caller cancels the body. */
function openStream(session: string | undefined, accept = 'text/event-stream'): Promise<Response> {
  return openRawStream(gw.url, { session, accept });
}

/** openStream, retrying while the gateway answers 409 (bounded at about 2 s). */
function openStreamWhenFree(session: string): Promise<Response> {
  return openRawStreamWhenFree(gw.url, { session });
}

/** A well-formed id that no session has. */
const strangerId = () => randomBytes(24).toString('base64url');

describe('initialize', () => {
  it('answers 200 with JSON carrying the negotiated protocolVersion and a session id header', async () => {
    const reply = await post(initializeRequest(LATEST, 'init-1'));
    expect(reply.status).toBe(200);
    expect(reply.headers.get('content-type')).toMatch(/^application\/json/);
    expect(reply.json).toMatchObject({ jsonrpc: '2.0', id: 'init-1', result: { protocolVersion: LATEST } });
    expect(reply.headers.get('mcp-session-id')).not.toBeNull();
  });

  it('issues session ids of at least 32 visible ASCII characters, distinct per session', async () => {
    const first = await openSession();
    const second = await openSession();
    // transports.mdx "Session Management": only visible ASCII, 0x21 to 0x7E.
    for (const id of [first, second]) {
      expect(id).toMatch(/^[\x21-\x7E]+$/);
      expect(id.length).toBeGreaterThanOrEqual(32);
    }
    expect(first).not.toBe(second);
  });

  it.each([
    ['2025-03-26', '2025-03-26'],
    ['2024-11-05', '2024-11-05'],
    ['2025-06-18', '2025-06-18'],
    ['1999-01-01', LATEST],
  ])('negotiates version %s to %s', async (requested, expected) => {
    const reply = await post(initializeRequest(requested, 3));
    expect(reply.status).toBe(200);
    expect(reply.json).toMatchObject({ jsonrpc: '2.0', id: 3, result: { protocolVersion: expected } });
  });

  it('refuses a second initialize on an existing session with 400 carrying the request id', async () => {
    const session = await openSession();
    const reply = await post(initializeRequest(LATEST, 7), { session });
    expectRpcError(reply, 400, INVALID_REQUEST, 7);
  });

  it('answers an initialize naming an unknown session with 404', async () => {
    const reply = await post(initializeRequest(LATEST, 8), { session: strangerId() });
    expectRpcError(reply, 404, INVALID_REQUEST);
  });
});

describe('session header', () => {
  it('refuses a request without Mcp-Session-Id with 400 (-32600)', async () => {
    const reply = await post({ jsonrpc: '2.0', id: 11, method: 'tools/list' });
    expectRpcError(reply, 400, INVALID_REQUEST);
  });

  it('refuses a notification without Mcp-Session-Id with 400', async () => {
    const reply = await post(initialized);
    expectRpcError(reply, 400, INVALID_REQUEST);
  });

  it('answers a ping without Mcp-Session-Id with 200 and an empty result (allowed before initialization)', async () => {
    const reply = await post(ping(12));
    expect(reply.status).toBe(200);
    expect(reply.json).toEqual({ jsonrpc: '2.0', id: 12, result: {} });
  });

  it('answers a POST with an unknown session id with 404', async () => {
    const reply = await post(ping(13), { session: strangerId() });
    expectRpcError(reply, 404, INVALID_REQUEST);
  });

  it('answers a GET with an unknown session id with 404', async () => {
    const reply = await exchange({ method: 'GET', session: strangerId(), headers: { accept: 'text/event-stream' } });
    expectRpcError(reply, 404, INVALID_REQUEST);
  });

  it('answers a DELETE with an unknown session id with 404', async () => {
    const reply = await exchange({ method: 'DELETE', session: strangerId() });
    expectRpcError(reply, 404, INVALID_REQUEST);
  });

  it('refuses a DELETE without Mcp-Session-Id with 400', async () => {
    const reply = await exchange({ method: 'DELETE' });
    expectRpcError(reply, 400, INVALID_REQUEST);
  });

  it('ends a session on DELETE with 200, after which POST, GET and DELETE with its id get 404', async () => {
    const session = await openSession();
    const ended = await exchange({ method: 'DELETE', session });
    expect(ended.status).toBe(200);

    expectRpcError(await post(ping(14), { session }), 404, INVALID_REQUEST);
    expectRpcError(await exchange({ method: 'GET', session, headers: { accept: 'text/event-stream' } }), 404, INVALID_REQUEST);
    expectRpcError(await exchange({ method: 'DELETE', session }), 404, INVALID_REQUEST);
  });
});

describe('MCP-Protocol-Version header', () => {
  let session: string;
  beforeAll(async () => {
    session = await openSession('2025-06-18');
  });

  it('refuses an unsupported version with 400', async () => {
    const reply = await post(ping(21), { session, headers: { 'mcp-protocol-version': '2099-01-01' } });
    expectRpcError(reply, 400, INVALID_REQUEST);
  });

  it('refuses an unsupported version on GET and DELETE with 400 too', async () => {
    const headers = { 'mcp-protocol-version': '2099-01-01' };
    expectRpcError(await exchange({ method: 'GET', session, headers: { ...headers, accept: 'text/event-stream' } }), 400, INVALID_REQUEST);
    expectRpcError(await exchange({ method: 'DELETE', session, headers }), 400, INVALID_REQUEST);
  });

  it('accepts a request without the header (2025-03-26 is assumed)', async () => {
    const reply = await post(ping(22), { session });
    expect(reply.status).toBe(200);
    expect(reply.json).toEqual({ jsonrpc: '2.0', id: 22, result: {} });
  });

  it('accepts a supported version', async () => {
    const reply = await post(ping(23), { session, headers: { 'mcp-protocol-version': '2025-06-18' } });
    expect(reply.status).toBe(200);
    expect(reply.json).toEqual({ jsonrpc: '2.0', id: 23, result: {} });
  });
});

describe('messages that need no answer', () => {
  let session: string;
  beforeAll(async () => {
    session = await openSession();
  });

  it('accepts a notification with 202 and an empty body', async () => {
    expectAcceptedEmpty(await post(initialized, { session }));
  });

  it('accepts a JSON-RPC response with 202 and an empty body', async () => {
    expectAcceptedEmpty(await post({ jsonrpc: '2.0', id: 99, result: {} }, { session }));
  });

  it('accepts a JSON-RPC error response with 202 and an empty body', async () => {
    expectAcceptedEmpty(await post({ jsonrpc: '2.0', id: 98, error: { code: -32601, message: 'Method not found' } }, { session }));
  });
});

describe('batches', () => {
  it.each(['2025-06-18', '2025-11-25'])('refuses a batch with 400 (-32600) in a %s session', async (version) => {
    const session = await openSession(version);
    const reply = await post([ping(31)], { session });
    expectRpcError(reply, 400, INVALID_REQUEST);
  });

  describe('in a 2025-03-26 session', () => {
    let session: string;
    beforeAll(async () => {
      session = await openSession('2025-03-26');
    });

    it('answers a batch of two requests with 200 and an array of two responses with matching ids', async () => {
      const reply = await post([ping(41), { jsonrpc: '2.0', id: 'list-42', method: 'tools/list' }], { session });
      expect(reply.status).toBe(200);
      expect(reply.headers.get('content-type')).toMatch(/^application\/json/);
      expect(Array.isArray(reply.json)).toBe(true);
      const responses = reply.json as { id: unknown; result?: Record<string, unknown> }[];
      expect(responses).toHaveLength(2);
      // JSON-RPC 2.0 §6: responses may come in any order; they are matched by id.
      const byId = new Map(responses.map((r) => [r.id, r]));
      expect(byId.get(41)).toEqual({ jsonrpc: '2.0', id: 41, result: {} });
      expect(byId.get('list-42')).toMatchObject({ jsonrpc: '2.0', id: 'list-42', result: { tools: expect.any(Array) } });
    });

    it('answers a batch of one request with an array all the same', async () => {
      const reply = await post([ping(43)], { session });
      expect(reply.status).toBe(200);
      expect(reply.json).toEqual([{ jsonrpc: '2.0', id: 43, result: {} }]);
    });

    it('accepts a batch of only notifications with 202 and an empty body', async () => {
      const reply = await post([initialized, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'none' } }], { session });
      expectAcceptedEmpty(reply);
    });

    it('refuses an empty batch with 400 (-32600)', async () => {
      expectRpcError(await post([], { session }), 400, INVALID_REQUEST);
    });
  });
});

describe('malformed bodies', () => {
  let session: string;
  beforeAll(async () => {
    session = await openSession();
  });

  it('refuses malformed JSON with 400 (-32700)', async () => {
    const reply = await post('{"jsonrpc":"2.0","id":1,', { session });
    expectRpcError(reply, 400, PARSE_ERROR);
  });

  it('refuses JSON that is not a JSON-RPC message with 400 (-32600)', async () => {
    const reply = await post({ foo: 1 }, { session });
    expectRpcError(reply, 400, INVALID_REQUEST);
  });
});

describe('content negotiation', () => {
  it.each(['application/json', 'text/event-stream'])('refuses a POST whose Accept is only %s with 406', async (accept) => {
    const reply = await post(ping(51), { headers: { accept } });
    expectRpcError(reply, 406, INVALID_REQUEST);
  });

  it('accepts Content-Type application/json with a charset parameter', async () => {
    const reply = await post(ping(53), { headers: { 'content-type': 'application/json; charset=utf-8' } });
    expect(reply.status).toBe(200);
    expect(reply.json).toEqual({ jsonrpc: '2.0', id: 53, result: {} });
  });

  it('refuses a POST with Content-Type text/plain with 415', async () => {
    const reply = await post(ping(52), { headers: { 'content-type': 'text/plain' } });
    expectRpcError(reply, 415, INVALID_REQUEST);
  });

  it('refuses a GET whose Accept lacks text/event-stream with 406', async () => {
    const session = await openSession();
    const reply = await exchange({ method: 'GET', session, headers: { accept: 'application/json' } });
    expectRpcError(reply, 406, INVALID_REQUEST);
  });
});

describe('GET stream', () => {
  it('opens an event stream with 200 and Content-Type text/event-stream', async () => {
    const session = await openSession();
    const res = await openStream(session);
    try {
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    } finally {
      await res.body?.cancel();
    }
  });

  it('refuses a second concurrent stream on the same session with 409, and accepts a new one once the first is gone', async () => {
    const session = await openSession();
    const first = await openStream(session);
    expect(first.status).toBe(200);
    try {
      const second = await openStream(session);
      const body: unknown = await second.json();
      expect(second.status).toBe(409);
      expect(body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: INVALID_REQUEST } });
    } finally {
      await first.body?.cancel();
    }

    const again = await openStreamWhenFree(session);
    try {
      expect(again.status).toBe(200);
      expect(again.headers.get('content-type')).toMatch(/^text\/event-stream/);
    } finally {
      await again.body?.cancel();
    }
  });

  // Hono answers HEAD with the GET handler and drops the body without cancelling it, so the
  // SSE stream it opened is never detached (src/http/app.ts registers no HEAD route).
  it('does not let a HEAD request take the session\'s GET stream', async () => {
    const session = await openSession();
    const head = await fetch(gw.url, {
      method: 'HEAD',
      headers: { accept: 'text/event-stream', 'mcp-session-id': session },
      signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
    });
    await head.body?.cancel();

    const res = await openStreamWhenFree(session);
    try {
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    } finally {
      await res.body?.cancel();
    }
  });
});

describe('other methods', () => {
  it.each(['PUT', 'PATCH'])('answers %s with 405 and an Allow header listing GET, POST, DELETE', async (method) => {
    const reply = await exchange({ method, headers: { 'content-type': 'application/json' }, body: JSON.stringify(ping(61)) });
    expectRpcError(reply, 405, INVALID_REQUEST);
    const allowed = (reply.headers.get('allow') ?? '').split(',').map((m) => m.trim());
    expect(allowed).toEqual(expect.arrayContaining(['GET', 'POST', 'DELETE']));
  });
});

describe('body size limit', () => {
  it('refuses a body larger than listen.maxBodyBytes with 413, whether its length is declared or streamed', async () => {
    const small = await startGateway({ listen: { port: 0, maxBodyBytes: 1024 }, upstreams: {} });
    try {
      const within = await post(ping(71), { url: small.url });
      expect(within.status).toBe(200);

      const big = JSON.stringify({ ...ping(72), params: { padding: 'x'.repeat(2048) } });
      expectRpcError(await post(big, { url: small.url }), 413, INVALID_REQUEST);

      // No Content-Length: the limit must hold while the body is being read.
      const chunked = await postChunked(small.url, big, { 'content-type': 'application/json', accept: POST_ACCEPT }, 800);
      const body: unknown = await chunked.json();
      expect(chunked.status).toBe(413);
      expect(body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: INVALID_REQUEST } });
    } finally {
      await small.close();
    }
  });
});

describe('bodies with and without Content-Length', () => {
  // A declared body is served on the listener's direct path, a chunked one through Hono's
  // adapter (app.ts, HttpApp.direct): the client must not be able to tell them apart.
  function postMessageChunked(message: unknown, session?: string): Promise<Response> {
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: POST_ACCEPT, 'x-request-id': 'chunked-1' };
    if (session !== undefined) headers['mcp-session-id'] = session;
    return postChunked(gw.url, JSON.stringify(message), headers, 10);
  }

  it('answers a chunked initialize and request as it answers declared ones, with the same headers', async () => {
    const init = await postMessageChunked(initializeRequest(LATEST, 'c-1'));
    expect(init.status).toBe(200);
    expect(init.headers.get('x-request-id')).toBe('chunked-1');
    const session = init.headers.get('mcp-session-id')!;
    expect(((await init.json()) as { result: { protocolVersion: string } }).result.protocolVersion).toBe(LATEST);

    const chunked = await postMessageChunked({ jsonrpc: '2.0', id: 'c-2', method: 'tools/list' }, session);
    const declared = await post({ jsonrpc: '2.0', id: 'c-2', method: 'tools/list' }, { session, headers: { 'x-request-id': 'declared-1' } });
    expect(chunked.status).toBe(200);
    expect(declared.status).toBe(200);
    expect(chunked.headers.get('content-type')).toBe(declared.headers.get('content-type'));
    expect(declared.headers.get('x-request-id')).toBe('declared-1');
    expect(await chunked.json()).toEqual(declared.json);
  });
});

describe('Origin validation', () => {
  it('refuses an Origin not in listen.allowedOrigins with 403', async () => {
    const reply = await post(ping(81), { headers: { origin: 'https://evil.example' } });
    expectRpcError(reply, 403, INVALID_REQUEST);
  });

  it('accepts an allowed Origin with 200 and still refuses any other with 403', async () => {
    const guarded = await startGateway({ listen: { port: 0, allowedOrigins: ['https://app.example.com'] }, upstreams: {} });
    try {
      const allowed = await post(initializeRequest(LATEST, 82), { url: guarded.url, headers: { origin: 'https://app.example.com' } });
      expect(allowed.status).toBe(200);
      expect(allowed.json).toMatchObject({ jsonrpc: '2.0', id: 82, result: { protocolVersion: LATEST } });

      const other = await post(initializeRequest(LATEST, 83), { url: guarded.url, headers: { origin: 'https://evil.example' } });
      expectRpcError(other, 403, INVALID_REQUEST);
    } finally {
      await guarded.close();
    }
  });
});

describe('health', () => {
  it('answers GET /healthz with 200, status ok and the upstream up once a session is open', async () => {
    await openSession();
    const reply = await exchange({ method: 'GET', url: new URL('/healthz', gw.url) });
    expect(reply.status).toBe(200);
    expect(reply.headers.get('content-type')).toMatch(/^application\/json/);
    expect(reply.json).toMatchObject({ status: 'ok', upstreams: { paged: { state: 'up' } } });
  });
});
