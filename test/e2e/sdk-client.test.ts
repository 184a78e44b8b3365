// The official SDK client against a gateway fronting server-everything over stdio and over
// Streamable HTTP, plus server-memory: namespaced catalogs, routing, pass-through fidelity.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectClient, startGateway, upstream, type TestGateway } from '../helpers/gateway.js';
import { EVERYTHING_BIN, NODE } from '../helpers/paths.js';
import { startEverythingHttp, type EverythingHttp } from '../helpers/processes.js';

let remote: EverythingHttp;
let gw: TestGateway;
let client: Client;
let direct: Client;

beforeAll(async () => {
  remote = await startEverythingHttp();
  gw = await startGateway({
    upstreams: { everything: upstream.everything(), remote: upstream.http(remote.url), memory: upstream.memory() },
  });
  client = await connectClient(gw.url);
  direct = new Client({ name: 'switchyard-test', version: '1.0.0' }, { capabilities: {} });
  await direct.connect(new StdioClientTransport({ command: NODE, args: [EVERYTHING_BIN, 'stdio'], stderr: 'ignore' }));
});

afterAll(async () => {
  await Promise.allSettled([client?.close(), direct?.close()]);
  await gw?.close();
  await remote?.close();
});

describe('gateway core with the SDK client', () => {
  it('initializes with the gateway identity and the union of upstream capabilities', () => {
    expect(client.getServerVersion()).toMatchObject({ name: 'switchyard' });
    expect(client.getServerCapabilities()).toEqual({
      tools: { listChanged: true },
      prompts: { listChanged: true },
      resources: { subscribe: true, listChanged: true },
      completions: {},
      logging: {},
      tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } },
    });
  });

  it('lists namespaced tools from every upstream, sorted by upstream', async () => {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    expect(names).toContain('everything__echo');
    expect(names).toContain('remote__echo');
    expect(names).toContain('memory__read_graph');
    const upstreams = names.map((n) => n.split('__')[0]);
    expect(upstreams).toEqual([...upstreams].sort());
  });

  it('passes tool definitions through untouched apart from the name', async () => {
    const { tools: viaGateway } = await client.listTools();
    const { tools: own } = await direct.listTools();
    const mine = viaGateway.filter((t) => t.name.startsWith('everything__')).map((t) => ({ ...t, name: t.name.slice('everything__'.length) }));
    expect(mine).toEqual(own);
  });

  it('routes two tools of the same name to their own upstreams', async () => {
    const local = await client.callTool({ name: 'everything__echo', arguments: { message: 'via stdio' } });
    const http = await client.callTool({ name: 'remote__echo', arguments: { message: 'via http' } });
    expect(local.content).toEqual([{ type: 'text', text: 'Echo: via stdio' }]);
    expect(http.content).toEqual([{ type: 'text', text: 'Echo: via http' }]);
  });

  it('relays content of every type and structuredContent unchanged, the URIs of resource links and embedded resources namespaced', async () => {
    for (const [name, args] of [
      ['get-tiny-image', {}],
      ['get-structured-content', { location: 'New York' }],
      ['get-annotated-message', { messageType: 'error', includeImage: true }],
      ['get-resource-links', { count: 2 }],
      ['get-resource-reference', { resourceType: 'Text', resourceId: 1 }],
    ] as const) {
      const viaGateway = await client.callTool({ name: `everything__${name}`, arguments: args });
      const own = await direct.callTool({ name, arguments: args });
      // Dynamic resources carry their creation time; the two calls may straddle a second.
      const timeless = (value: unknown): unknown => JSON.parse(JSON.stringify(value).replace(/\d{1,2}:\d{2}:\d{2}\s?[AP]M/g, '<time>'));
      // What the client can read through the gateway: the upstream's URIs under its prefix.
      const namespaced = (value: unknown): unknown => JSON.parse(JSON.stringify(value).replace(/"uri":"demo:\/\//g, '"uri":"everything+demo://'));
      expect(timeless(viaGateway), name).toEqual(timeless(namespaced(own)));
    }
  });

  it('keeps memory state per upstream session and answers from server-memory', async () => {
    await client.callTool({ name: 'memory__create_entities', arguments: { entities: [{ name: 'switchyard-e2e', entityType: 'test', observations: ['x'] }] } });
    const found = await client.callTool({ name: 'memory__search_nodes', arguments: { query: 'switchyard-e2e' } });
    expect(JSON.stringify(found.content)).toContain('switchyard-e2e');
  });

  it('answers an unknown tool with -32602', async () => {
    await expect(client.callTool({ name: 'nosuch__tool', arguments: {} })).rejects.toMatchObject({ code: -32602 });
    const error = await client.callTool({ name: 'nosuch__tool', arguments: {} }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(McpError);
  });

  it('lists and reads namespaced resources and templates', async () => {
    const { resources } = await client.listResources();
    const first = resources.find((r) => r.uri.startsWith('remote+demo://'));
    expect(first).toBeDefined();
    const read = await client.readResource({ uri: first!.uri });
    const own = await direct.readResource({ uri: first!.uri.slice('remote+'.length) });
    expect(read.contents).toEqual(own.contents.map((content) => ({ ...content, uri: `remote+${content.uri}` })));

    const { resourceTemplates } = await client.listResourceTemplates();
    const template = resourceTemplates.find((t) => t.uriTemplate.startsWith('everything+'));
    expect(template).toBeDefined();
  });

  it('gets prompts and completes their arguments through the owning upstream', async () => {
    const { prompts } = await client.listPrompts();
    const names = prompts.map((p) => p.name);
    expect(names).toContain('everything__simple-prompt');
    const prompt = await client.getPrompt({ name: 'everything__simple-prompt' });
    const own = await direct.getPrompt({ name: 'simple-prompt' });
    expect(prompt).toEqual(own);

    const withCompletion = prompts.find((p) => p.name === 'everything__completable-prompt');
    expect(withCompletion).toBeDefined();
    const argument = withCompletion!.arguments![0]!.name;
    const completed = await client.complete({ ref: { type: 'ref/prompt', name: 'everything__completable-prompt' }, argument: { name: argument, value: '' } });
    const ownCompleted = await direct.complete({ ref: { type: 'ref/prompt', name: 'completable-prompt' }, argument: { name: argument, value: '' } });
    expect(completed).toEqual(ownCompleted);
  });

  it('subscribes to a resource and sets the log level', async () => {
    const { resources } = await client.listResources();
    await expect(client.subscribeResource({ uri: resources[0]!.uri })).resolves.toEqual({});
    await expect(client.unsubscribeResource({ uri: resources[0]!.uri })).resolves.toEqual({});
    await expect(client.setLoggingLevel('warning')).resolves.toEqual({});
  });

  it('answers ping itself', async () => {
    await expect(client.ping()).resolves.toEqual({});
  });
});
