// Names clients can use: shortened forms for long or illegal names that still route, and an
// unprefixed upstream that makes a single-upstream gateway fully transparent.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { describe, expect, it } from 'vitest';
import { connectClient, startGateway, terminateSession, textOf, upstream } from '../helpers/gateway.js';
import { EVERYTHING_BIN, NODE } from '../helpers/paths.js';

const LONG_NAME = 'a_tool_whose_name_is_far_too_long_for_the_strictest_clients_to_accept_as_is';
const CLIENT_RULE = /^[a-zA-Z0-9_-]{1,64}$/;


describe('shortened names', () => {
  it('exposes every name within the strictest client rule and routes shortened names back', async () => {
    const gw = await startGateway({ upstreams: { paged: upstream.paged() } });
    const client = await connectClient(gw.url);
    try {
      const { tools } = await client.listTools();
      for (const tool of tools) expect(tool.name).toMatch(CLIENT_RULE);
      const long = tools.find((t) => t.description === `fixture tool ${LONG_NAME}`)!;
      const dotted = tools.find((t) => t.description === 'fixture tool admin.tools.list')!;
      const spaced = tools.find((t) => t.description === 'fixture tool has space')!;
      expect(long.name).toMatch(/^paged__a_tool_whose_name.*_[0-9a-f]{8}$/);
      expect(long.name).toHaveLength(64);
      expect(dotted.name).toMatch(/^paged__admin_tools_list_[0-9a-f]{8}$/);

      expect(textOf(await client.callTool({ name: long.name, arguments: { message: 'x' } }))).toBe(`${LONG_NAME} {"message":"x"}`);
      expect(textOf(await client.callTool({ name: dotted.name, arguments: {} }))).toBe('admin.tools.list {}');
      expect(textOf(await client.callTool({ name: spaced.name, arguments: {} }))).toBe('has space {}');
    } finally {
      await client.close();
      await gw.close();
    }
  });

  it('gives the same shortened name in another gateway, which routes it before any listing', async () => {
    const first = await startGateway({ upstreams: { paged: upstream.paged() } });
    let exposed: string;
    const client = await connectClient(first.url);
    try {
      exposed = (await client.listTools()).tools.find((t) => t.description === `fixture tool ${LONG_NAME}`)!.name;
    } finally {
      await client.close();
      await first.close();
    }
    const second = await startGateway({ upstreams: { paged: upstream.paged() } });
    const fresh = await connectClient(second.url);
    try {
      // No tools/list in this gateway yet: the alias is rebuilt from the upstream on demand.
      expect(textOf(await fresh.callTool({ name: exposed, arguments: {} }))).toBe(`${LONG_NAME} {}`);
      await expect(fresh.callTool({ name: 'paged__a_tool_00000000', arguments: {} })).rejects.toMatchObject({ code: -32602 });
    } finally {
      await fresh.close();
      await second.close();
    }
  });
});

describe('transparent single upstream', () => {
  it('lists exactly what the upstream lists, and routes unprefixed names and URIs', async () => {
    const gw = await startGateway({ upstreams: { everything: { ...upstream.everything(), prefix: '' } } });
    const client = await connectClient(gw.url);
    const direct = new Client({ name: 'switchyard-test', version: '1.0.0' }, { capabilities: {} });
    await direct.connect(new StdioClientTransport({ command: NODE, args: [EVERYTHING_BIN, 'stdio'], stderr: 'ignore' }));
    try {
      expect(await client.listTools()).toEqual(await direct.listTools());
      expect(await client.listPrompts()).toEqual(await direct.listPrompts());
      expect(await client.listResources()).toEqual(await direct.listResources());
      expect(await client.listResourceTemplates()).toEqual(await direct.listResourceTemplates());
      expect(await client.callTool({ name: 'echo', arguments: { message: 'plain' } })).toEqual(await direct.callTool({ name: 'echo', arguments: { message: 'plain' } }));
      const { resources } = await direct.listResources();
      expect(await client.readResource({ uri: resources[0]!.uri })).toEqual(await direct.readResource({ uri: resources[0]!.uri }));
    } finally {
      await Promise.allSettled([client.close(), direct.close()]);
      await gw.close();
    }
  });

  it('keeps an unprefixed upstream beside prefixed ones without collisions', async () => {
    const gw = await startGateway({ upstreams: { everything: { ...upstream.everything(), prefix: '' }, paged: upstream.paged() } });
    const client = await connectClient(gw.url);
    try {
      const names = (await client.listTools()).tools.map((t) => t.name);
      expect(names).toContain('echo');
      expect(names).toContain('paged__echo');
      expect(textOf(await client.callTool({ name: 'echo', arguments: { message: 'bare' } }))).toBe('Echo: bare');
      expect(textOf(await client.callTool({ name: 'paged__echo', arguments: { message: 'prefixed' } }))).toBe('echo {"message":"prefixed"}');
    } finally {
      await client.close();
      await gw.close();
    }
  });
});
