// Upstreams that refuse the GET stream as if the session were gone (404, or a 400 naming the
// session) while the session still answers its POSTs: an Express server with only
// app.post('/mcp') ("Cannot GET /mcp"), replicas without sticky sessions. A ping in the session
// tells the two apart: the gateway neither re-initializes in a loop nor reads a huge error body
// whole, and a session that is really gone is still renewed. In-process upstreams on port 0.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { Agent } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { GetStreamSupport } from '../../src/transport/get-stream.js';
import { StreamableHttpTransport } from '../../src/transport/streamable-http.js';
import { TransportError } from '../../src/transport/types.js';
import { silentLogger, type Logger } from '../../src/util/log.js';
import { poll } from '../helpers/cli.js';
import { connectClient, startGateway, until, upstream, type TestGateway } from '../helpers/gateway.js';

const WAIT_MS = 10_000;

interface Counts {
  initialize: number;
  ping: number;
  get: number;
  /** POSTs in a session it answered 404. */
  refused: number;
}

interface FakeUpstream {
  url: string;
  counts: Counts;
  /** Resolves once `check` holds over the counts (checked on every request), bounded. */
  reach(check: (counts: Counts) => boolean, what: string): Promise<void>;
  close(): Promise<void>;
}

interface Behaviour {
  /** How it answers a GET on the endpoint. */
  get: (res: ServerResponse) => void;
  /** Whether it forgets each session once its handshake is over (every later POST in it: 404). */
  forgets?: boolean;
}

/** A minimal sessions-era server: every POST answered as JSON, a GET as `behaviour` says. */
async function startUpstream(behaviour: Behaviour): Promise<FakeUpstream> {
  const counts: Counts = { initialize: 0, ping: 0, get: 0, refused: 0 };
  /** Sessions past their handshake (forgotten, when it forgets). */
  const forgotten = new Set<string>();
  let wake = (): void => {};
  const json = (res: ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}): void =>
    void res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(value));
  const answer = (req: IncomingMessage, res: ServerResponse, text: string): void => {
    if (req.method === 'GET') {
      counts.get++;
      return behaviour.get(res);
    }
    if (req.method !== 'POST') return void res.writeHead(200).end();
    const msg = JSON.parse(text) as { id?: number | string; method?: string; params?: { protocolVersion?: string } };
    if (msg.method === 'initialize') {
      counts.initialize++;
      const result = { protocolVersion: msg.params?.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'post-only', version: '1' } };
      return json(res, 200, { jsonrpc: '2.0', id: msg.id, result }, { 'mcp-session-id': `s${counts.initialize}` });
    }
    if (msg.method === 'ping') counts.ping++;
    const session = req.headers['mcp-session-id'];
    if (behaviour.forgets && typeof session === 'string' && forgotten.has(session)) {
      counts.refused++;
      return json(res, 404, { jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } });
    }
    if (typeof session === 'string' && msg.method === 'notifications/initialized') forgotten.add(session);
    if (msg.id === undefined) return void res.writeHead(202).end();
    if (msg.method === 'server/discover') return json(res, 400, { jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: 'Method not found' } });
    const result = msg.method === 'tools/list' ? { tools: [{ name: 't', inputSchema: { type: 'object' } }] } : {};
    json(res, 200, { jsonrpc: '2.0', id: msg.id, result });
  };
  const server: Server = createServer((req, res) => {
    let text = '';
    req.on('data', (chunk: Buffer) => (text += chunk));
    req.on('end', () => {
      answer(req, res, text);
      wake();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`,
    counts,
    reach: (check, what) => until(() => check(counts), (w) => (wake = w), WAIT_MS, what),
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** Express's answer to a GET on a path it has only a POST route for. */
const cannotGet = (res: ServerResponse): void => void res.writeHead(404, { 'content-type': 'text/html' }).end('Cannot GET /mcp');

const agent = new Agent();
afterAll(() => agent.close());

/**
 * What the transports of a test say when they take a refused GET for "no GET stream" (logged at
 * info, once each): `refusal` resolves once one did, bounded.
 */
function refusals(): { logger: Logger; refusal: () => Promise<void> } {
  let count = 0;
  let wake = (): void => {};
  const logger: Logger = {
    ...silentLogger,
    info: (message: string) => {
      if (!message.includes('taken as no GET stream')) return;
      count++;
      wake();
    },
    child: () => logger,
  };
  return { logger, refusal: () => until(() => count > 0, (w) => (wake = w), WAIT_MS, 'the GET refusal to be taken as no GET stream') };
}

/** A transport with an upstream session open and its GET stream started; `ended` settles with its onclose. */
async function listening(url: string, getStream: GetStreamSupport, logger: Logger = silentLogger): Promise<{ t: StreamableHttpTransport; ended: Promise<Error | undefined>; open: () => boolean }> {
  const t = new StreamableHttpTransport({ url, headers: {}, dispatcher: agent, logger, getStream });
  let open = true;
  const ended = new Promise<Error | undefined>((resolve) => {
    t.onclose = (reason) => {
      open = false;
      resolve(reason);
    };
  });
  t.onmessage = () => {};
  await t.send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'test', version: '1' } } });
  await t.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  t.sessionEstablished('2025-06-18');
  return { t, ended, open: () => open };
}

describe('StreamableHttpTransport, its GET stream refused as an unknown session', () => {
  it('takes a 404 in a session that still answers a ping as no GET stream: the session goes on, and no session asks again', async () => {
    const up = await startUpstream({ get: cannotGet });
    const getStream = new GetStreamSupport();
    const { logger, refusal } = refusals();
    const first = await listening(up.url, getStream, logger);
    let second: Awaited<ReturnType<typeof listening>> | undefined;
    try {
      await refusal();
      expect(getStream.worthTrying).toBe(false);
      // A request round trip in the session: it is alive, and nothing ended it.
      await first.t.send({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
      expect(first.open()).toBe(true);
      expect(up.counts).toMatchObject({ initialize: 1, get: 1 });
      // Another session of the upstream opens no GET stream (a round trip would have seen it).
      second = await listening(up.url, getStream);
      await second.t.send({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
      expect(up.counts).toMatchObject({ initialize: 2, get: 1, ping: 1 });
    } finally {
      await second?.t.close();
      await first.t.close();
      await up.close();
    }
  });

  it('ends with session_expired when the ping is refused 404 too: the session is gone', async () => {
    const up = await startUpstream({ get: cannotGet, forgets: true });
    const { t, ended } = await listening(up.url, new GetStreamSupport());
    try {
      const reason = await ended;
      expect(reason).toBeInstanceOf(TransportError);
      expect(reason).toMatchObject({ code: 'session_expired' });
      expect(up.counts.ping).toBe(1);
    } finally {
      await t.close();
      await up.close();
    }
  });

  // BUG (fixed): the body of a 400 to the GET was read whole (`body.text()`), with no bound: a
  // 300 MB body took the gateway from 193 MB to 1,157 MB RSS.
  it('reads a 400 body no further than 64 KiB', async () => {
    const TOTAL = 64 * 1024 * 1024;
    let finished: boolean | undefined;
    let wake = (): void => {};
    const up = await startUpstream({
      get: (res) => {
        res.writeHead(400, { 'content-type': 'text/plain' });
        res.write('Bad Request: No valid session ID provided\n');
        const chunk = Buffer.alloc(1024 * 1024, 'a');
        let sent = 0;
        const pump = (): void => {
          while (sent < TOTAL) {
            sent += chunk.length;
            if (!res.write(chunk)) return void res.once('drain', pump);
          }
          res.end();
        };
        res.once('close', () => {
          finished = res.writableFinished;
          wake();
        });
        pump();
      },
    });
    const { logger, refusal } = refusals();
    const { t } = await listening(up.url, new GetStreamSupport(), logger);
    try {
      await until(() => finished !== undefined, (w) => (wake = w), WAIT_MS, 'the GET answer to end');
      expect(finished, 'the gateway read the whole body').toBe(false);
      // It named the session, so the session was asked: alive, so no GET stream.
      await refusal();
      expect(up.counts.ping).toBe(1);
    } finally {
      await t.close();
      await up.close();
    }
  });
});

describe('a gateway in front of an upstream that answers GET 404', () => {
  let gw: TestGateway | undefined;
  let client: Client | undefined;
  let up: FakeUpstream | undefined;

  afterAll(async () => {
    await client?.close();
    await gw?.close();
    await up?.close();
  });

  // BUG (fixed): each GET 404 was taken for a lost session: a new one at once, whose GET got 404
  // again (78,418 initializes in 60 s), and a client's tools/list took 60 s.
  it('opens one upstream session per use and answers a client at once', async () => {
    up = await startUpstream({ get: cannotGet });
    gw = await startGateway({ upstreams: { web: upstream.http(up.url) } });
    client = await connectClient(gw.url);
    const started = Date.now();
    expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(['web__t']);
    expect(Date.now() - started).toBeLessThan(5_000);
    await up.reach((c) => c.ping >= 1, 'the ping after the GET 404');
    const initializes = up.counts.initialize;
    expect((await client.listTools()).tools).toHaveLength(1);
    expect(up.counts.initialize).toBe(initializes);
    expect(initializes).toBeLessThanOrEqual(2); // the client's session, and the catalog's
    expect(up.counts.get).toBeLessThanOrEqual(2);
  });
});

describe('a gateway in front of an upstream that forgets every session once it is initialized', () => {
  // BUG (fixed): renewals of a lost session had no backoff and no loop count: a session lost
  // again right after its renewal was renewed at once, forever.
  it('renews it with backoff and gives up after restart.maxCrashes losses: marked down, and no more sessions are opened', async () => {
    const up = await startUpstream({ get: cannotGet, forgets: true });
    let gw: TestGateway | undefined;
    let client: Client | undefined;
    try {
      const restart = { backoff: 20, maxBackoff: 100, maxCrashes: 3, window: '1m' };
      gw = await startGateway({ upstreams: { web: { ...upstream.http(up.url), restart } } });
      const health = async (): Promise<{ state: string; lastError?: string }> =>
        ((await (await fetch(new URL('/healthz', gw!.url))).json()) as { upstreams: Record<string, { state: string; lastError?: string }> }).upstreams.web!;
      client = await connectClient(gw.url);
      await client.listTools().catch(() => undefined);
      await poll(async () => ((await health()).state === 'down' ? true : undefined), 'the upstream to be marked down', WAIT_MS, 20);
      expect((await health()).lastError).toMatch(/^crash loop: 3 losses of the upstream session within 60000 ms/);
      const initializes = up.counts.initialize;
      // A few sessions (the client's, the catalog's), each given up after 3 losses: never thousands.
      expect(initializes).toBeLessThan(20);
      await client.listTools().catch(() => undefined);
      expect(up.counts.initialize - initializes).toBeLessThan(5);
    } finally {
      await client?.close();
      await gw?.close();
      await up.close();
    }
  });
});
