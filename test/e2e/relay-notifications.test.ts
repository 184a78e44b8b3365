// Notifications reach exactly the session that owns the upstream session they came from, with
// names and URIs rewritten; messages related to a request travel on that request's stream.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectClient, journal, recordNotifications, startGateway, upstream, type NotificationLog, type TestGateway } from '../helpers/gateway.js';
import { startEverythingHttp, type EverythingHttp } from '../helpers/processes.js';
import { initializeRaw, postRaw, postRpc, rawFetch } from '../helpers/raw-http.js';
import { SseReader, type JsonRpc } from '../helpers/sse-reader.js';

let remote: EverythingHttp;
let gw: TestGateway;

beforeAll(async () => {
  remote = await startEverythingHttp();
  gw = await startGateway({ upstreams: { everything: upstream.everything(), remote: upstream.http(remote.url), rogue: upstream.rogue() } });
});

afterAll(async () => {
  await gw?.close();
  await remote?.close();
});

async function recordingClient(): Promise<{ client: Client; log: NotificationLog }> {
  let log!: NotificationLog;
  const client = await connectClient(gw.url, {}, (c) => (log = recordNotifications(c)));
  return { client, log };
}

describe('notifications', () => {
  it('forwards an upstream list_changed to the owning session only', async () => {
    // Only rogue upstreams here: server-everything announces its own list change at startup.
    const quiet = await startGateway({ upstreams: { rogue: upstream.rogue() } });
    const record = async (): Promise<{ client: Client; log: NotificationLog }> => {
      let log!: NotificationLog;
      const client = await connectClient(quiet.url, {}, (c) => (log = recordNotifications(c)));
      return { client, log };
    };
    const a = await record();
    const b = await record();
    try {
      await a.client.callTool({ name: 'rogue__notify', arguments: { method: 'notifications/tools/list_changed' } });
      await a.log.waitFor((n) => n.method === 'notifications/tools/list_changed', 'tools list_changed');
      await b.client.callTool({ name: 'rogue__notify', arguments: { method: 'notifications/message', params: { level: 'info', data: 'marker for B' } } });
      await b.log.waitFor((n) => n.method === 'notifications/message' && n.params?.data === 'marker for B', 'B\'s marker');
      expect(b.log.all).toEqual([{ method: 'notifications/message', params: { level: 'info', logger: 'rogue', data: 'marker for B' } }]);
    } finally {
      await Promise.allSettled([a.client.close(), b.client.close()]);
      await quiet.close();
    }
  });

  it('prefixes the logger of upstream log messages and fans logging/setLevel out', async () => {
    const { client, log } = await recordingClient();
    try {
      await client.setLoggingLevel('info');
      const seen = await journal(client, 'rogue__journal');
      expect(seen).toContainEqual(expect.objectContaining({ method: 'logging/setLevel', params: { level: 'info' } }));
      await client.callTool({ name: 'rogue__notify', arguments: { method: 'notifications/message', params: { level: 'warning', logger: 'db', data: 'slow query' } } });
      await client.callTool({ name: 'rogue__notify', arguments: { method: 'notifications/message', params: { level: 'info', data: 'no logger' } } });
      const named = await log.waitFor((n) => n.params?.data === 'slow query', 'the named log message');
      expect(named.params).toEqual({ level: 'warning', logger: 'rogue/db', data: 'slow query' });
      const bare = await log.waitFor((n) => n.params?.data === 'no logger', 'the unnamed log message');
      expect(bare.params).toEqual({ level: 'info', logger: 'rogue', data: 'no logger' });
    } finally {
      await client.close();
    }
  });

  it('relays the client\'s roots/list_changed to its upstream sessions', async () => {
    const client = await connectClient(gw.url, { roots: { listChanged: true } });
    try {
      // The session's own upstream session is opened by its first call (one opened later asks
      // the client for its roots itself).
      await journal(client, 'rogue__journal');
      await client.sendRootsListChanged();
      const deadline = Date.now() + 5_000;
      let seen = await journal(client, 'rogue__journal');
      while (!seen.some((m) => m.method === 'notifications/roots/list_changed') && Date.now() < deadline) seen = await journal(client, 'rogue__journal');
      expect(seen.some((m) => m.method === 'notifications/roots/list_changed')).toBe(true);
    } finally {
      await client.close();
    }
  });
});

describe('isolation between two sessions on the same upstreams', () => {
  it('keeps log messages and resource updates of one session away from the other', async () => {
    const a = await recordingClient();
    const b = await recordingClient();
    try {
      const { resources } = await a.client.listResources();
      const uri = resources.find((r) => r.uri.startsWith('remote+'))!.uri;
      const local = resources.find((r) => r.uri.startsWith('everything+'))!.uri;
      await a.client.subscribeResource({ uri });
      await a.client.subscribeResource({ uri: local });
      await a.client.callTool({ name: 'remote__toggle-subscriber-updates', arguments: {} });
      await a.client.callTool({ name: 'everything__toggle-subscriber-updates', arguments: {} });
      await a.client.callTool({ name: 'remote__toggle-simulated-logging', arguments: {} });
      await a.client.callTool({ name: 'everything__toggle-simulated-logging', arguments: {} });

      // A gets its own updates, with namespaced URIs, and log messages from both upstreams.
      await a.log.waitFor((n) => n.method === 'notifications/resources/updated' && n.params?.uri === uri, 'A\'s remote resource update');
      await a.log.waitFor((n) => n.method === 'notifications/resources/updated' && n.params?.uri === local, 'A\'s local resource update');
      await a.log.waitFor((n) => n.method === 'notifications/message' && n.params?.logger === 'remote', 'A\'s remote log message');
      await a.log.waitFor((n) => n.method === 'notifications/message' && n.params?.logger === 'everything', 'A\'s local log message');

      // Then B hears its own marker, and nothing of A's came before it.
      await b.client.callTool({ name: 'rogue__notify', arguments: { method: 'notifications/message', params: { level: 'info', data: 'B marker' } } });
      await b.log.waitFor((n) => n.params?.data === 'B marker', 'B\'s marker');
      // B's only other notifications are its own upstreams announcing their tools at startup.
      const others = b.log.all.filter((n) => n.method !== 'notifications/tools/list_changed');
      expect(others).toEqual([{ method: 'notifications/message', params: { level: 'info', logger: 'rogue', data: 'B marker' } }]);

      await a.client.callTool({ name: 'remote__toggle-subscriber-updates', arguments: {} });
      await a.client.callTool({ name: 'remote__toggle-simulated-logging', arguments: {} });
    } finally {
      await Promise.allSettled([a.client.close(), b.client.close()]);
    }
  });
});

describe('stream placement', () => {
  it.each(['remote', 'everything'])('sends a server-initiated request on the stream of the request it belongs to (%s)', async (name) => {
    // A raw session whose requests carry no MCP-Protocol-Version.
    const { id: session } = await initializeRaw(gw.url, { protocolVersion: '2025-06-18', id: 1, capabilities: { sampling: {} }, versionHeader: false });
    const call = await postRaw(
      gw.url,
      { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: `${name}__trigger-sampling-request`, arguments: { prompt: 'p', maxTokens: 5 } } },
      { session, timeoutMs: 15_000 },
    );
    expect(call.headers.get('content-type')).toBe('text/event-stream');
    const stream = new SseReader(call);
    const messages: JsonRpc[] = [];
    while (!messages.some((m) => m.id === 2 && 'result' in m)) {
      const message = await stream.nextMessage(15_000, 'the tool result');
      if (!message) break;
      messages.push(message);
      if (message.method === 'sampling/createMessage') {
        // Answer it in a separate POST; the tool's result then arrives on this same stream.
        const answered = await postRpc(gw.url, { jsonrpc: '2.0', id: message.id, result: { model: 'm', role: 'assistant', content: { type: 'text', text: 'raw answer' } } }, { session });
        expect(answered.status).toBe(202);
      }
    }
    expect(messages[0]).toMatchObject({ method: 'sampling/createMessage' });
    expect(messages.at(-1)).toMatchObject({ id: 2, result: { content: [{ type: 'text', text: expect.stringContaining('raw answer') }] } });
    await rawFetch(gw.url, { method: 'DELETE', session });
  });
});
