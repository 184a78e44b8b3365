// Merged lists follow every upstream's nextCursor behind one composite cursor: nothing is
// truncated, nothing repeated, and the order is deterministic.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ListPromptsResultSchema, ListResourcesResultSchema, ListToolsResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectClient, startGateway, upstream, type TestGateway } from '../helpers/gateway.js';

let gw: TestGateway;
let client: Client;

beforeAll(async () => {
  gw = await startGateway({
    upstreams: {
      // Two paging upstreams of different lengths, and one that never pages.
      alpha: upstream.paged({ TOOL_COUNT: '25', PAGE_SIZE: '10' }),
      beta: upstream.paged({ TOOL_COUNT: '3', PAGE_SIZE: '4' }),
      everything: upstream.everything(),
    },
  });
  client = await connectClient(gw.url);
});

afterAll(async () => {
  await client?.close();
  await gw?.close();
});

async function allPages(method: 'tools/list' | 'prompts/list' | 'resources/list'): Promise<{ names: string[]; pages: number }> {
  const schema = { 'tools/list': ListToolsResultSchema, 'prompts/list': ListPromptsResultSchema, 'resources/list': ListResourcesResultSchema }[method];
  const names: string[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const result = (await client.request({ method, params: cursor === undefined ? {} : { cursor } }, schema)) as Record<string, unknown>;
    const items = (result.tools ?? result.prompts ?? result.resources) as { name?: string; uri?: string }[];
    names.push(...items.map((item) => (method === 'resources/list' ? item.uri! : item.name!)));
    cursor = result.nextCursor as string | undefined;
    pages++;
    expect(pages).toBeLessThan(50);
  } while (cursor !== undefined);
  return { names, pages };
}

describe('pagination across upstreams', () => {
  it('returns every tool of every upstream exactly once', async () => {
    const { names, pages } = await allPages('tools/list');
    // alpha: 7 special tools + 25 numbered = 32 tools in pages of 10 → 4 upstream pages.
    expect(pages).toBe(4);
    const alpha = names.filter((n) => n.startsWith('alpha__'));
    const beta = names.filter((n) => n.startsWith('beta__'));
    expect(alpha).toHaveLength(32);
    expect(beta).toHaveLength(10);
    expect(new Set(names).size).toBe(names.length);
    for (let i = 0; i < 25; i++) expect(names).toContain(`alpha__tool-${String(i).padStart(2, '0')}`);
    expect(names.filter((n) => n.startsWith('everything__')).length).toBeGreaterThan(5);
  });

  it('orders each page by upstream name and is stable across traversals', async () => {
    const first = await allPages('tools/list');
    const second = await allPages('tools/list');
    expect(second.names).toEqual(first.names);
    const page = await client.listTools();
    const prefixes = page.tools.map((t) => t.name.split('__')[0]!);
    expect(prefixes).toEqual([...prefixes].sort());
  });

  it('pages prompts and resources the same way', async () => {
    const prompts = await allPages('prompts/list');
    expect(prompts.names.filter((n) => n.startsWith('alpha__prompt-'))).toHaveLength(12);
    const resources = await allPages('resources/list');
    expect(resources.names.filter((u) => u.startsWith('beta+fixture://item/'))).toHaveLength(12);
    expect(new Set(resources.names).size).toBe(resources.names.length);
  });

  it('rejects a cursor it did not issue with -32602', async () => {
    await expect(client.request({ method: 'tools/list', params: { cursor: 'not-a-cursor' } }, ListToolsResultSchema)).rejects.toMatchObject({ code: -32602 });
    // A cursor issued for another list is not valid for this one.
    const page = (await client.request({ method: 'prompts/list', params: {} }, ListPromptsResultSchema)) as { nextCursor?: string };
    expect(page.nextCursor).toBeDefined();
    await expect(client.request({ method: 'tools/list', params: { cursor: page.nextCursor } }, ListToolsResultSchema)).rejects.toMatchObject({ code: -32602 });
  });
});
