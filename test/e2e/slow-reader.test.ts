// A client that does not read cannot grow the gateway's memory (issue "Hold under hostile load",
// item 1): a GET stream and a POST's SSE answer opened over raw sockets and never read, while
// the upstream floods them. What waits for each connection is bounded; progress and log
// notifications are dropped oldest first (counted), a flood of what may not be dropped closes
// the connection (counted), and other sessions are served throughout. The gateway runs in this
// process, so its memory is measured here.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { connectClient, startGateway, textOf, type TestGateway } from '../helpers/gateway.js';
import { retainedBytes } from '../helpers/memory.js';
import { scrape } from '../helpers/metrics.js';
import { FIXTURES, NODE } from '../helpers/paths.js';
import { initializeRaw, POST_ACCEPT as ACCEPT, postRpc } from '../helpers/raw-http.js';
import { sendAndNeverRead, type UnreadRequest } from '../helpers/raw-socket.js';

async function metric(gw: TestGateway, name: string, labels = ''): Promise<number> {
  const series = await scrape(new URL('/metrics', gw.url));
  let total = 0;
  for (const [key, value] of series) if ((key === name || key.startsWith(`${name}{`)) && key.includes(labels)) total += value;
  return total;
}

describe('a client that does not read', () => {
  let gw: TestGateway;
  let bystander: Client;
  const sockets: UnreadRequest[] = [];

  beforeAll(async () => {
    gw = await startGateway(
      {
        metrics: { enabled: true },
        // Defaults for the queue; a small replay buffer so the figures are the queue's.
        sessions: { replayBytes: 256 * 1024 },
        upstreams: { flood: { stdio: { command: NODE, args: [join(FIXTURES, 'notify-flood-server.mjs')] } } },
      },
      { logLevel: 'warn' },
    );
    bystander = await connectClient(gw.url);
  });

  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await Promise.allSettled([bystander?.close()]);
    await gw?.close();
  });

  /** A raw session: initialize and initialized, over fetch (its answers are read). */
  async function rawSession(): Promise<string> {
    // Unbounded, as the calls between floods may wait on a busy gateway.
    return (await initializeRaw(gw.url, { clientInfo: { name: 'slow', version: '1' }, signal: null })).id;
  }

  /** A tools/call in a raw session whose answer is read (JSON, or the SSE stream to its end): the result's text. */
  async function rawCall(session: string, name: string, args: Record<string, unknown>): Promise<string> {
    const reply = await postRpc(gw.url, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } }, { session, protocolVersion: '2025-11-25', timeoutMs: 120_000 });
    return textOf(reply.messages.find((m) => m.id === 1)?.result);
  }

  it('holds a GET stream that is never read to a bounded queue while 5 × 50,000 log messages of 1 KB arrive', async () => {
    // The child's log messages, unrelated to any request, go to the session's GET stream.
    const session = await rawSession();
    sockets.push(await sendAndNeverRead(gw.url, 'GET', { accept: 'text/event-stream', 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' }));
    const before = retainedBytes();
    const growth: number[] = [];
    for (let round = 0; round < 5; round++) {
      expect(await rawCall(session, 'flood__flood', { count: 50_000, size: 1024, kind: 'log' })).toBe('sent 50000');
      growth.push(retainedBytes() - before);
      // Served between the rounds, in full.
      expect((await bystander.listTools()).tools.map((t) => t.name)).toContain('flood__flood');
    }
    // 250 MB went to a client that read none of it; without a bound all of it would wait here.
    expect(Math.max(...growth)).toBeLessThan(64 * 1024 * 1024);
    expect(await metric(gw, 'switchyard_stream_dropped_total', 'notifications/message')).toBeGreaterThan(200_000);
  }, 300_000);

  it("holds a POST's SSE answer that is never read while 300,000 progress notifications arrive", async () => {
    const session = await rawSession();
    const call = JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'flood__flood', arguments: { count: 300_000, size: 256, kind: 'progress' }, _meta: { progressToken: 'p' } } });
    const droppedBefore = await metric(gw, 'switchyard_stream_dropped_total', 'notifications/progress');
    const before = retainedBytes();
    sockets.push(await sendAndNeverRead(gw.url, 'POST', { 'content-type': 'application/json', accept: ACCEPT, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' }, call));
    // `settled` answers once the flood has been written (the gateway reads the child in order).
    expect(await rawCall(session, 'flood__settled', {})).toBe('settled');
    await expect.poll(() => metric(gw, 'switchyard_stream_dropped_total', 'notifications/progress'), { timeout: 30_000 }).toBeGreaterThan(droppedBefore + 250_000);
    expect(retainedBytes() - before).toBeLessThan(64 * 1024 * 1024);
    expect(await bystander.ping()).toEqual({});
  }, 300_000);

  it('closes a stream that is never read once what waits for it may not be dropped', async () => {
    const session = await rawSession();
    sockets.push(await sendAndNeverRead(gw.url, 'GET', { accept: 'text/event-stream', 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' }));
    const before = await metric(gw, 'switchyard_stream_overflows_total', 'standalone');
    expect(await rawCall(session, 'flood__flood', { count: 200_000, size: 16, kind: 'changed' })).toBe('sent 200000');
    expect(await metric(gw, 'switchyard_stream_overflows_total', 'standalone')).toBeGreaterThan(before);
    // Other sessions keep their streams and are served.
    expect(await bystander.ping()).toEqual({});
  }, 300_000);
});
