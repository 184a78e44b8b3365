// URIs an upstream writes inside content come back as URIs the client can use through the
// gateway (issue "Transparent multiplexing", items 1 and 7): resource links and embedded
// resources in tool results and prompt messages, and resources/read contents, carry the
// namespaced URI; following a link (read, subscribe) works, over a stdio and an HTTP upstream;
// the merged instructions say how names are formed. Real server-everything, the SDK v1 client.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectClient, startGateway, upstream, type TestGateway } from '../helpers/gateway.js';
import { startEverythingHttp, type EverythingHttp } from '../helpers/processes.js';

interface Block {
  type: string;
  uri?: string;
  text?: string;
  resource?: { uri: string; text?: string; blob?: string };
}

let remote: EverythingHttp;
let gw: TestGateway;
const clients: Client[] = [];

beforeAll(async () => {
  remote = await startEverythingHttp();
  gw = await startGateway({ upstreams: { everything: upstream.everything(), remote: upstream.http(remote.url) } }, { logLevel: 'warn' });
}, 30_000);

afterAll(async () => {
  await Promise.allSettled(clients.map((c) => c.close()));
  await gw?.close();
  await remote?.close();
});

async function client(): Promise<Client> {
  const c = await connectClient(gw.url);
  clients.push(c);
  return c;
}

const blocksOf = (result: unknown): Block[] => (result as { content: Block[] }).content;

describe.each(['everything', 'remote'])('content URIs of %s', (prefix) => {
  it('are namespaced in resource links, and each link can be read as given', async () => {
    const c = await client();
    const links = blocksOf(await c.callTool({ name: `${prefix}__get-resource-links`, arguments: { count: 3 } })).filter((b) => b.type === 'resource_link');
    expect(links).toHaveLength(3);
    for (const link of links) {
      expect(link.uri).toMatch(new RegExp(`^${prefix}\\+demo://resource/dynamic/`));
      const read = await c.readResource({ uri: link.uri! });
      expect(read.contents.map((content) => content.uri)).toEqual([link.uri]);
    }
  });

  it('are namespaced in embedded resources of tool results and prompt messages', async () => {
    const c = await client();
    const embedded = blocksOf(await c.callTool({ name: `${prefix}__get-resource-reference`, arguments: { resourceType: 'Text', resourceId: 1 } })).find((b) => b.type === 'resource');
    expect(embedded?.resource?.uri).toBe(`${prefix}+demo://resource/dynamic/text/1`);
    const prompt = await c.getPrompt({ name: `${prefix}__resource-prompt`, arguments: { resourceType: 'Text', resourceId: '1' } });
    const resources = prompt.messages.map((m) => m.content as Block).filter((b) => b.type === 'resource');
    expect(resources.map((b) => b.resource?.uri)).toEqual([`${prefix}+demo://resource/dynamic/text/1`]);
    // The text an upstream wrote is data: it stays as it was.
    expect(prompt.messages.map((m) => m.content as Block).find((b) => b.type === 'text')?.text).toContain('Text resource with id: 1');
  });

  it('let a client follow the link a tool made for its session: read it and subscribe to it', async () => {
    const c = await client();
    const data = `data:text/plain;base64,${Buffer.from('hello through the gateway').toString('base64')}`;
    const result = blocksOf(await c.callTool({ name: `${prefix}__gzip-file-as-resource`, arguments: { name: 'hello.txt.gz', data, outputType: 'resourceLink' } }));
    const link = result.find((b) => b.type === 'resource_link');
    expect(link?.uri).toBe(`${prefix}+demo://resource/session/hello.txt.gz`);
    const read = await c.readResource({ uri: link!.uri! });
    expect(read.contents[0]).toMatchObject({ uri: link!.uri });
    expect((read.contents[0] as { blob?: string }).blob).toBeTruthy();
    await expect(c.subscribeResource({ uri: link!.uri! })).resolves.toEqual({});
    const listed = await c.listResources();
    expect(listed.resources.map((r) => r.uri)).toContain(link!.uri);
  });
});

describe('merged instructions', () => {
  it('keep one section per upstream under its prefix and say once how names are formed', async () => {
    const c = await client();
    const text = c.getInstructions() ?? '';
    expect(text.match(/is `<prefix>__x` through this gateway/g)).toHaveLength(1);
    expect(text).toMatch(/^## everything$/m);
    expect(text).toMatch(/^## remote$/m);
    expect(text.indexOf('through this gateway')).toBeLessThan(text.indexOf('## everything'));
  });
});

describe('a URI as the upstream wrote it (no prefix)', () => {
  const uri = 'demo://resource/static/document/architecture.md';

  it('is read from the one upstream that lists it, and the answer carries the namespaced URI', async () => {
    const single = await startGateway({ upstreams: { everything: upstream.everything() } }, { logLevel: 'warn' });
    const c = await connectClient(single.url);
    try {
      const read = await c.readResource({ uri });
      expect(read.contents.map((content) => content.uri)).toEqual([`everything+${uri}`]);
    } finally {
      await c.close();
      await single.close();
    }
  });

  it('is unknown when two upstreams list it (which one is meant cannot be told)', async () => {
    const c = await client();
    await expect(c.readResource({ uri })).rejects.toMatchObject({ code: -32602, data: { uri } });
  });
});
