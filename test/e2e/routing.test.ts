// Routing rules: completion by prompt or resource ref reaches the owning upstream with the
// original name or URI, and a method is never sent to an upstream that did not declare it.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectClient, startGateway, textOf, upstream, type TestGateway } from '../helpers/gateway.js';

let gw: TestGateway;
let client: Client;

beforeAll(async () => {
  // paged declares tools, prompts, resources (no subscribe) and completions, but no logging;
  // everything declares logging and subscribe, so the gateway advertises both.
  gw = await startGateway({ upstreams: { paged: upstream.paged(), everything: upstream.everything() } });
  client = await connectClient(gw.url);
});

afterAll(async () => {
  await client?.close();
  await gw?.close();
});

describe('routing', () => {
  it('completes a prompt argument at the owning upstream under the original name', async () => {
    const result = await client.complete({ ref: { type: 'ref/prompt', name: 'paged__prompt-03' }, argument: { name: 'topic', value: 'ra' } });
    expect(result.completion.values).toEqual(['ref/prompt:prompt-03:ra']);
  });

  it('completes a resource template argument at the owning upstream under the original URI', async () => {
    const { resourceTemplates } = await client.listResourceTemplates();
    const template = resourceTemplates.find((t) => t.uriTemplate === 'paged+fixture://item/{id}');
    expect(template).toBeDefined();
    const result = await client.complete({ ref: { type: 'ref/resource', uri: template!.uriTemplate }, argument: { name: 'id', value: '4' } });
    expect(result.completion.values).toEqual(['ref/resource:fixture://item/{id}:4']);
  });

  it('reads a resource and gets a prompt by the original URI and name upstream, the contents carrying the URI the client reads it by', async () => {
    const read = await client.readResource({ uri: 'paged+fixture://item/7' });
    expect(read.contents).toEqual([{ uri: 'paged+fixture://item/7', mimeType: 'text/plain', text: 'content of fixture://item/7' }]);
    const prompt = await client.getPrompt({ name: 'paged__prompt-01', arguments: { topic: 'gateways' } });
    expect(prompt.messages[0]!.content).toEqual({ type: 'text', text: 'prompt prompt-01 about gateways' });
  });

  it('never sends a method to an upstream that did not declare its capability', async () => {
    await expect(client.setLoggingLevel('debug')).resolves.toEqual({});
    await expect(client.subscribeResource({ uri: 'paged+fixture://item/1' })).rejects.toMatchObject({ code: -32601 });
    const unhandled = JSON.parse(textOf(await client.callTool({ name: 'paged__unhandled', arguments: {} }))) as string[];
    // Nothing: not even the era probe (2026-07-28 server/discover.mdx), which went to the
    // upstream's first session, the catalog's, and is remembered for the upstream.
    expect(unhandled).toEqual([]);
    // The same calls on everything, which declares both, succeed.
    const { resources } = await client.listResources();
    const uri = resources.find((r) => r.uri.startsWith('everything+'))!.uri;
    await expect(client.subscribeResource({ uri })).resolves.toEqual({});
  });

  it('answers a resource no upstream owns with -32602', async () => {
    await expect(client.readResource({ uri: 'nosuch+file:///x' })).rejects.toMatchObject({ code: -32602 });
    await expect(client.getPrompt({ name: 'nosuch__prompt' })).rejects.toMatchObject({ code: -32602 });
  });
});
