// search_tools in front of 300 tools, end to end: a query longer than 1,000 characters (here one
// word repeated 20,000 times, 140 KB: well under the body limit) is answered at once as a tool
// error saying the bound, and the session and the gateway go on answering searches as before.
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectClient, startGateway, textOf, type TestGateway } from '../helpers/gateway.js';
import { FIXTURES, NODE } from '../helpers/paths.js';

const PATH = '/find';

describe('a search_tools query over the bound', () => {
  let gw: TestGateway;
  let client: Client;

  beforeAll(async () => {
    gw = await startGateway(
      { endpoints: [{ path: PATH, discovery: 'search' }], upstreams: { bulk: { stdio: { command: NODE, args: [join(FIXTURES, 'two-faced-server.mjs')], env: { TOOL_COUNT: '300' } } } } },
      { logLevel: 'warn' },
    );
    client = await connectClient(new URL(PATH, gw.url));
  });

  afterAll(async () => {
    await client?.close();
    await gw?.close();
  });

  it('is refused as a tool error naming the bound, and searches go on', async () => {
    const found = await client.callTool({ name: 'search_tools', arguments: { query: 'bulk number', limit: 3 } });
    expect(found.isError).not.toBe(true);
    expect((found.structuredContent as { tools: unknown[] }).tools).toHaveLength(3);

    const refused = await client.callTool({ name: 'search_tools', arguments: { query: 'number '.repeat(20_000) } });
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toBe('Invalid arguments for tool search_tools: /query must be at most 1000 characters (a few words saying what the tool should do)');

    // Just under the bound, one word repeated: searched as the one word.
    const repeated = await client.callTool({ name: 'search_tools', arguments: { query: 'number '.repeat(142).slice(0, 1_000), limit: 3 } });
    expect(repeated.isError).not.toBe(true);
    expect((repeated.structuredContent as { tools: unknown[] }).tools).toHaveLength(3);
  });
});
