// Upstream sessions in a fleet (gateways sharing sessions.keys): a replica that drains, stops
// or lets a session idle never ends the upstream HTTP session its id carries to the others,
// and an upstream session that is gone, however the upstream says so (server-everything's own
// HTTP server answers 400 "No valid session ID provided", not 404), is replaced.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectClient, startGateway, textOf, upstream, type TestGateway } from '../helpers/gateway.js';
import { startOwnEverything, type OwnEverything } from '../helpers/everything-own.js';
import { startEverythingHttp, type EverythingHttp } from '../helpers/processes.js';
import { LATEST, messagesOf, postRpc } from '../helpers/raw-http.js';
import { poll } from '../helpers/cli.js';
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';

const WAIT_MS = 15_000;

type Message = { id?: number; result?: Record<string, unknown>; error?: { code: number; message: string } };

const sessionKey = (): string => randomBytes(32).toString('hex');

function sessionOf(client: Client): string {
  return (client.transport as StreamableHTTPClientTransport).sessionId!;
}

async function call(url: URL, session: string, id: number, method: string, params: Record<string, unknown> = {}): Promise<Message> {
  const reply = await postRpc(url, { jsonrpc: '2.0', id, method, params }, { session, protocolVersion: LATEST, timeoutMs: WAIT_MS });
  expect(reply.status, `${method} ${id}`).toBe(200);
  const answer = messagesOf<Message>(reply).find((m) => m.id === id);
  expect(answer, `${method} ${id}`).toBeDefined();
  return answer!;
}

function echoed(answer: Message): string {
  expect(answer.error).toBeUndefined();
  return textOf(answer.result);
}

describe('a replica letting a session go keeps the upstream session the fleet carries', () => {
  let remote: EverythingHttp;
  const gateways: TestGateway[] = [];

  beforeAll(async () => {
    remote = await startEverythingHttp();
  });

  afterAll(async () => {
    await Promise.allSettled(gateways.map((g) => g.close()));
    await remote?.close();
  });

  const replica = async (keys: string[], sessions: Record<string, unknown> = {}): Promise<TestGateway> => {
    const gw = await startGateway({ sessions: { keys, ...sessions }, shutdown: { gracePeriod: '2s' }, upstreams: { remote: upstream.http(remote.url) } });
    gateways.push(gw);
    return gw;
  };

  it('a drain sends no DELETE upstream, and another replica goes on with the same upstream session', async () => {
    const keys = [sessionKey()];
    const [a, b] = await Promise.all([replica(keys), replica(keys)]);
    const client = await connectClient(a.url);
    const session = sessionOf(client);
    expect(textOf(await client.callTool({ name: 'remote__echo', arguments: { message: 'on A' } }))).toBe('Echo: on A');
    const before = await remote.stats();

    await a.gateway.drain();
    await client.close().catch(() => {});

    const after = await remote.stats();
    expect(after.deletes).toBe(before.deletes);
    expect(after.sessions).toBe(before.sessions);
    expect(echoed(await call(b.url, session, 1, 'tools/call', { name: 'remote__echo', arguments: { message: 'on B' } }))).toBe('Echo: on B');
    // Continued, not opened again.
    expect((await remote.stats()).initializes).toBe(before.initializes);
    // The client's DELETE does end it upstream.
    const ended = await fetch(b.url, { method: 'DELETE', headers: { 'mcp-session-id': session, 'mcp-protocol-version': LATEST } });
    expect(ended.status).toBe(200);
    await poll(async () => ((await remote.stats()).deletes > before.deletes ? true : undefined), 'the DELETE upstream', WAIT_MS);
  });

  it('a session idle on one replica is forgotten there, not ended: no DELETE upstream, and its id still opens it there', async () => {
    const keys = [sessionKey()];
    const a = await replica(keys, { idleTimeout: '1s' });
    const client = await connectClient(a.url);
    const session = sessionOf(client);
    expect(textOf(await client.callTool({ name: 'remote__echo', arguments: { message: 'before' } }))).toBe('Echo: before');
    await client.close();
    const before = await remote.stats();

    await poll(() => (a.logs.some((line) => line.includes('closing idle session')) ? true : undefined), 'the idle sweep', WAIT_MS);
    expect((await remote.stats()).deletes).toBe(before.deletes);
    expect(echoed(await call(a.url, session, 1, 'tools/call', { name: 'remote__echo', arguments: { message: 'after' } }))).toBe('Echo: after');
    expect((await remote.stats()).initializes).toBe(before.initializes);
  });
});

describe('an upstream session gone, said with a 400 naming the session', () => {
  let server: OwnEverything | undefined;
  let gw: TestGateway;

  beforeAll(async () => {
    server = await startOwnEverything();
    gw = await startGateway({ sessions: { keys: [sessionKey()] }, upstreams: { remote: upstream.http(server.url) } });
  }, 30_000);

  afterAll(async () => {
    await gw?.close();
    await server?.close();
  });

  it('is replaced by a new upstream session: a list is sent again on it, and calls go on', async () => {
    const client = await connectClient(gw.url);
    try {
      expect(textOf(await client.callTool({ name: 'remote__echo', arguments: { message: 'first' } }))).toBe('Echo: first');
      // The upstream restarts: every session it knew is gone, and it says so with 400.
      const { port } = server!;
      await server!.close();
      server = await startOwnEverything(port);

      const names = (await client.listTools()).tools.map((t) => t.name);
      expect(names).toContain('remote__echo');
      expect(textOf(await client.callTool({ name: 'remote__echo', arguments: { message: 'again' } }))).toBe('Echo: again');
      expect(gw.logs.some((line) => line.includes('re-initializing upstream session'))).toBe(true);
    } finally {
      await client.close();
    }
  });
});
