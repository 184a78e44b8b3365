// Issue 35 item 1: resources a session creates are its own. server-everything's
// `gzip-file-as-resource` registers `demo://resource/session/<name>` in the session that called
// it and links to it; through Switchyard that link is read, and subscribed to, at the session's
// own upstream session, for a 2026-07-28 client with a principal (whose requests share one
// gateway-held session), over stdio, HTTP and a warm child (content-uris.test.ts has the
// sessions era); a namespaced URI no list shows is asked of the upstream, and only the
// upstream's "not found" makes it unknown. (An anonymous 2026-07-28 request is a session of its
// own: what one created, the next cannot see; protocol.md.)
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/auth/api-keys.js';
import { join } from 'node:path';
import { connectClient, startGateway, upstream, type TestGateway } from '../helpers/gateway.js';
import { FIXTURES, NODE } from '../helpers/paths.js';
import { poll } from '../helpers/cli.js';
import { startEverythingHttp, type EverythingHttp } from '../helpers/processes.js';

const KEY = 'sk-session-resources-0123456789abcdef';

let remote: EverythingHttp;
let gw: TestGateway;

beforeAll(async () => {
  remote = await startEverythingHttp();
  gw = await startGateway(
    {
      auth: { apiKeys: [{ id: 'ci', hash: hashApiKey(KEY), team: 'ci' }] },
      listen: { port: 0, allowUnauthenticated: true },
      teams: [{ name: 'ci' }],
      upstreams: {
        everything: upstream.everything(),
        remote: upstream.http(remote.url),
        warmed: { ...upstream.everything(), stateful: true, warm: 1 },
        fmcp: { stdio: { command: NODE, args: [join(FIXTURES, 'docs-server.mjs')] } },
      },
    },
    { logLevel: 'warn' },
  );
}, 30_000);

afterAll(async () => {
  await gw?.close();
  await remote?.close();
});

const gzipped = (text: string) => `data:text/plain;base64,${Buffer.from(text).toString('base64')}`;

describe.each(['everything', 'remote', 'warmed'])('a resource the session created at %s, for a 2026-07-28 client with a principal', (prefix) => {
  it('is read and subscribed to at its own upstream session, and its updates reach the listener', async () => {
    const client = new ModernClient({ name: 'session-resources', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    const updated: unknown[] = [];
    client.setNotificationHandler('notifications/resources/updated', (n) => void updated.push(n.params));
    await client.connect(new ModernTransport(gw.url, { requestInit: { headers: { authorization: `Bearer ${KEY}` } } }));
    try {
      const made = await client.callTool({ name: `${prefix}__gzip-file-as-resource`, arguments: { name: 'notes.txt.gz', data: gzipped('kept in the session'), outputType: 'resourceLink' } });
      const link = (made.content as { type: string; uri?: string }[]).find((b) => b.type === 'resource_link');
      expect(link?.uri).toBe(`${prefix}+demo://resource/session/notes.txt.gz`);
      const read = await client.readResource({ uri: link!.uri! });
      expect(read.contents[0]).toMatchObject({ uri: link!.uri });
      const subscription = await client.listen({ resourceSubscriptions: [link!.uri!] });
      expect(subscription.honoredFilter).toEqual({ resourceSubscriptions: [link!.uri!] });
      await client.callTool({ name: `${prefix}__toggle-subscriber-updates`, arguments: {} });
      await poll(async () => (updated.length > 0 ? true : undefined), 'notifications/resources/updated of the session resource', 15_000);
      expect(updated[0]).toMatchObject({ uri: link!.uri });
      await client.callTool({ name: `${prefix}__toggle-subscriber-updates`, arguments: {} });
      await subscription.close();
    } finally {
      await client.close();
    }
  });
});

describe('a namespaced URI no list shows', () => {
  it('is read at the upstream, which alone says it is unknown', async () => {
    const c = await connectClient(gw.url, {}, undefined, { authorization: `Bearer ${KEY}` });
    try {
      const listed = (await c.listResources()).resources.map((r) => r.uri);
      expect(listed).not.toContain('fmcp+fmcp://docs/changelog');
      // A page of the upstream's template: listed nowhere, served all the same.
      await expect(c.readResource({ uri: 'fmcp+fmcp://docs/changelog' })).resolves.toMatchObject({ contents: [{ uri: 'fmcp+fmcp://docs/changelog', text: 'page changelog of docs' }] });
      await expect(c.readResource({ uri: 'fmcp+nowhere://x' })).rejects.toMatchObject({ code: -32602, data: { uri: 'fmcp+nowhere://x' } });
    } finally {
      await c.close();
    }
  });
});
