// The upstream client's handshake against a real node:http MCP server: notifications/initialized
// goes out after initialize answers, and closing the client while it is on its way (a health
// probe does so at once) is the owner's decision, not an upstream failure to log.
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { StreamableHttpTransport } from '../../src/transport/streamable-http.js';
import { UpstreamClient, type RequestOptions } from '../../src/upstream/client.js';
import type { Transport } from '../../src/transport/types.js';
import { createLogger } from '../../src/util/log.js';
import { Cancellation } from '../../src/util/cancel.js';
import { SESSIONS_ONLY } from '../../src/upstream/stateless-protocol.js';

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** An upstream that answers initialize at once and holds notifications/initialized until told. */
async function holdingUpstream(): Promise<{ url: string; notified: Promise<void>; release: () => void }> {
  let notified!: () => void;
  const arrived = new Promise<void>((resolve) => (notified = resolve));
  const held: ServerResponse[] = [];
  const server = createServer((req, res) => {
    if (req.method !== 'POST') return void res.writeHead(req.method === 'DELETE' ? 200 : 405).end();
    let text = '';
    req.on('data', (chunk: Buffer) => (text += chunk));
    req.on('end', () => {
      const message = JSON.parse(text) as { id?: number; method: string; params?: { protocolVersion?: string } };
      if (message.method === 'initialize') {
        const result = { protocolVersion: message.params?.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'holding', version: '1' } };
        return void res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 's-1' }).end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result }));
      }
      if (message.method === 'server/discover') return void res.writeHead(400).end();
      held.push(res);
      notified();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(() => new Promise((resolve) => (server.closeAllConnections(), server.close(resolve))));
  const release = (): void => {
    for (const res of held.splice(0)) if (!res.destroyed) res.writeHead(202).end();
  };
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, notified: arrived, release };
}

/**
 * A client of `upstream` over its own undici Agent, connected (initialize answered, the
 * notification on its way), with every log line it writes.
 */
async function connected(upstream: { url: string; notified: Promise<void> }): Promise<{ client: UpstreamClient; agent: Agent; lines: string[] }> {
  const agent = new Agent();
  closers.push(() => (agent.destroyed ? Promise.resolve() : agent.close()));
  const lines: string[] = [];
  const logger = createLogger({ level: 'debug', write: (line) => lines.push(line) });
  const client = new UpstreamClient('held', new StreamableHttpTransport({ url: upstream.url, headers: {}, dispatcher: agent, logger }), { timeoutMs: 5_000, maxTotalTimeoutMs: 5_000, logger });
  const init = await client.connect({ protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } }, 5_000, SESSIONS_ONLY);
  expect(init.protocolVersion).toBe('2025-06-18');
  await upstream.notified;
  return { client, agent, lines };
}

const warnings = (lines: string[]): string[] => lines.map((line) => JSON.parse(line) as { level: string; msg: string }).filter((entry) => entry.level === 'warn').map((entry) => entry.msg);

describe('UpstreamClient handshake', () => {
  it('logs nothing when its owner closes it while notifications/initialized is on its way', async () => {
    const upstream = await holdingUpstream();
    const { client, lines } = await connected(upstream);
    await client.close();
    // A request waits for the handshake to end: once it has failed, the handshake is over.
    await expect(client.request('ping')).rejects.toThrow(/closed/);
    upstream.release();
    expect(warnings(lines)).toEqual([]);
  });

  it('still warns and closes when the upstream refuses the notification on its own', async () => {
    const upstream = await holdingUpstream();
    const { client, agent, lines } = await connected(upstream);
    await agent.destroy(); // the connection breaks under the notification
    await expect(client.request('ping')).rejects.toThrow();
    expect(client.closed).toBe(true);
    expect(warnings(lines)).toContain('upstream did not take notifications/initialized; closing it');
  });
});

describe('UpstreamClient.request with a done callback (the request path without a promise)', () => {
  it('tells done a turn later, never before request() returns, when the client is closed or the caller already cancelled', async () => {
    const logger = createLogger({ level: 'error', write: () => {} });
    const agent = new Agent();
    closers.push(() => agent.close());
    const client = new UpstreamClient('gone', new StreamableHttpTransport({ url: 'http://127.0.0.1:9/mcp', headers: {}, dispatcher: agent, logger }), { timeoutMs: 1_000, maxTotalTimeoutMs: 1_000, logger });
    const outcome = (options: RequestOptions): Promise<{ outcome: unknown; returned: boolean }> => {
      let returned = false;
      const told = new Promise<{ outcome: unknown; returned: boolean }>((resolve) => client.request('tools/call', { name: 'echo' }, options, (result) => resolve({ outcome: result, returned })));
      returned = true;
      return told;
    };
    const cancelled = new Cancellation();
    cancelled.abort('cancelled by client');
    const early = await outcome({ signal: cancelled });
    expect(early.returned).toBe(true);
    expect(early.outcome).toMatchObject({ code: 'cancelled' });

    await client.close();
    const late = await outcome({});
    expect(late.returned).toBe(true);
    expect(late.outcome).toMatchObject({ code: 'upstream_closed' });
    expect(client.pendingCount).toBe(0);
  });
});

describe('UpstreamClient with a transport that throws as it sends', () => {
  it('fails the request at once with upstream_unavailable and keeps nothing pending', async () => {
    const logger = createLogger({ level: 'error', write: () => {} });
    const throwing: Transport = {
      start: async () => {},
      close: async () => {},
      send: () => Promise.reject(new Error('unused')),
      post: () => {
        throw new Error('socket gone');
      },
    };
    const client = new UpstreamClient('throws', throwing, { timeoutMs: 60_000, maxTotalTimeoutMs: 60_000, logger });
    const outcome = await new Promise<unknown>((resolve) => client.request('tools/call', { name: 'echo' }, {}, resolve));
    expect(outcome).toMatchObject({ code: 'upstream_unavailable' });
    expect(client.pendingCount).toBe(0);
    await client.close();
  });
});
