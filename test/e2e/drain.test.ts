// The drain as a load balancer meets it: from SIGTERM (here gateway.drain()) every new request
// is answered 503 before anything reads it, also one on a connection the balancer keeps pooled,
// so the balancer may send it to another replica; but the probes, and what concerns the call of
// a session with a call in flight here, are served; the call finishes; the listener accepts until the end. (test/e2e/listener.test.ts: the listener's part.)
import { Agent, request, type IncomingHttpHeaders } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { poll } from '../helpers/cli.js';
import { startGateway, upstream, type TestGateway } from '../helpers/gateway.js';
import { initializeRaw, LATEST, POST_HEADERS } from '../helpers/raw-http.js';

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  /** The local port of the connection it came on. */
  port: number;
}

/** One POST over `agent` (a pooled connection when it holds one), read to its end. */
function post(url: URL, agent: Agent, headers: Record<string, string>, body: unknown): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', agent, headers: { ...POST_HEADERS, ...headers }, signal: AbortSignal.timeout(20_000) }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, text: Buffer.concat(chunks).toString('utf8'), port: req.socket!.localPort! }));
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

const call = (id: number, name: string, args: Record<string, unknown>): unknown => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });

let gw: TestGateway | undefined;
const agents: Agent[] = [];

afterEach(async () => {
  for (const agent of agents.splice(0)) agent.destroy();
  await gw?.close();
  gw = undefined;
});

describe('a draining gateway', () => {
  it('answers a new request 503 unread, on a pooled connection too, but serves the probes and the notifications of a session with a call in flight here; that call finishes', async () => {
    gw = await startGateway({ shutdown: { gracePeriod: '10s' }, upstreams: { everything: upstream.everything() } });
    const url = gw.url;
    const headersOf = (session: { id: string }): Record<string, string> => ({ 'mcp-session-id': session.id, 'mcp-protocol-version': LATEST });
    // Two sessions: `busy` has a slow call in flight when the drain begins, `idle` has none.
    const [busy, idle] = await Promise.all([initializeRaw(url, { protocolVersion: LATEST, id: 1 }), initializeRaw(url, { protocolVersion: LATEST, id: 1 })]);
    // Two pooled connections, as a balancer keeps them: one carries the slow call, the other
    // served a call before the drain and is idle when it begins (before the fix, such a request
    // was served while a call was in flight, and its connection reset once none was).
    const [slowAgent, pooled] = [new Agent({ keepAlive: true, maxSockets: 1 }), new Agent({ keepAlive: true, maxSockets: 1 })];
    agents.push(slowAgent, pooled);
    const before = await post(url, pooled, headersOf(idle), call(2, 'everything__echo', { message: 'before' }));
    expect(before.status).toBe(200);
    expect(before.headers.connection).toBe('keep-alive');

    const slow = post(url, slowAgent, headersOf(busy), call(3, 'everything__trigger-long-running-operation', { duration: 1, steps: 2 }));
    await poll(async () => ((await (await fetch(new URL('/healthz', url))).json()) as { upstreams: Record<string, { pending?: number }> }).upstreams.everything?.pending || undefined, 'the slow call in flight');
    const echoesBefore = gw.logs.filter((line) => line.includes('"tool":"echo"')).length;

    const drained = gw.gateway.drain();
    const refused = await post(url, pooled, headersOf(idle), call(4, 'everything__echo', { message: 'during' }));
    expect(refused.port, 'the same pooled connection').toBe(before.port);
    expect(refused.status).toBe(503);
    expect(refused.headers).toMatchObject({ 'retry-after': '1', connection: 'close', 'content-type': 'application/json' });
    expect(JSON.parse(refused.text)).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32603, message: 'Service Unavailable: the gateway is shutting down' } });
    // A new connection is accepted and answered the same; the probe is served.
    const fresh = new Agent({ keepAlive: true });
    agents.push(fresh);
    expect((await post(url, fresh, headersOf(idle), call(5, 'everything__echo', { message: 'new' }))).status).toBe(503);
    const readyz = await fetch(new URL('/readyz', url));
    expect(readyz.status).toBe(503);
    expect(await readyz.json()).toMatchObject({ ready: false, draining: true });
    // The busy session is served here for what concerns its call (a cancellation, an answer to
    // the server's question: only this replica can take them); a cancellation of nothing stands
    // for them. A new request of it starts nothing: 503 (test/e2e/drain-busy-session.test.ts).
    const served = await post(url, fresh, headersOf(busy), { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 999 } });
    expect(served).toMatchObject({ status: 202, headers: { connection: 'close' } });
    const ping = await post(url, fresh, headersOf(busy), { jsonrpc: '2.0', id: 6, method: 'ping' });
    expect(ping).toMatchObject({ status: 503, headers: { 'retry-after': '1', connection: 'close' } });

    const answered = await slow;
    expect(answered.status).toBe(200);
    expect(answered.text).toMatch(/Long running operation completed/);
    await drained;
    // Nothing of the refused requests reached the upstream.
    expect(gw.logs.filter((line) => line.includes('"tool":"echo"')).length).toBe(echoesBefore);
  }, 30_000);
});
