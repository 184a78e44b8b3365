// An endpoint in search mode (`discovery: search`), end to end: tools/list shows the pinned
// tools and two gateway tools, search_tools finds tools by what they do (only those the
// principal may call there, shaped as tools/list shapes them), call_tool runs exactly what
// tools/call would (errors, progress and sampling included), and the index follows reloads.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CreateMessageRequestSchema, type ClientCapabilities } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { configFromObject } from '../../src/config/load.js';
import { poll } from '../helpers/cli.js';
import { connectClient, endSessions, recordNotifications, startGateway, textOf, upstream, type NotificationLog, type TestGateway } from '../helpers/gateway.js';
import { MEMORY_BIN, NODE, ROOT } from '../helpers/paths.js';
import { failureOf, listAll, sorted, unknownAnswer } from '../helpers/policy.js';

/** Bounds every wait for something that should happen soon. */
const PROMPT_MS = 10_000;
const TOOLS_CHANGED = 'notifications/tools/list_changed';
const PATH = '/search/mcp';
const PINNED = ['everything__echo', 'everything__get-env', 'memory__read_graph'];
/** Hidden from the endpoint: by the team (get-env) and by the endpoint itself (memory's deletes). */
const HIDDEN = ['everything__get-env', 'memory__delete_entities', 'memory__delete_observations', 'memory__delete_relations'];

let dir: string;
/** SDK sessions the current test opened: ended and closed after it, whatever happened. */
const opened: Client[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'switchyard-search-'));
});

afterEach(() => endSessions(opened));

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** The gateway's config: one default team (loopback, no auth) and the search endpoint. */
const rawConfig = (endpointDeny: string[] = ['memory__delete_*']) => ({
  teams: [{ name: 'everyone', default: true, deny: ['everything__get-env'], views: { everything__echo: { title: 'Parrot' } } }],
  endpoints: [{ path: PATH, discovery: 'search', pinned: PINNED, deny: endpointDeny }],
  upstreams: { everything: upstream.everything(), memory: { stdio: { command: NODE, args: [MEMORY_BIN], env: { MEMORY_FILE_PATH: join(dir, 'memory.jsonl') } } } },
});

interface Session {
  client: Client;
  notes: NotificationLog;
}

/** An SDK client session on `url`, notifications recorded; closed after the test. */
async function open(url: URL, capabilities: ClientCapabilities = {}, prepare?: (client: Client) => void): Promise<Session> {
  let notes: NotificationLog | undefined;
  const client = await connectClient(url, capabilities, (c) => {
    notes = recordNotifications(c);
    prepare?.(c);
  });
  opened.push(client);
  return { client, notes: notes! };
}

/** What search_tools returns for each tool (the fields tools/list gives too). */
interface Found {
  name: string;
  title?: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  annotations?: Record<string, unknown>;
}

const shape = (tool: Record<string, unknown>) => ({ name: tool.name, title: tool.title, description: tool.description, inputSchema: tool.inputSchema, annotations: tool.annotations });

/** search_tools' results, checked: structured, and the same as JSON text in content[0]. */
async function search(client: Client, query: string, limit?: number): Promise<Found[]> {
  const result = await client.callTool({ name: 'search_tools', arguments: limit === undefined ? { query } : { query, limit } });
  expect(result.isError, JSON.stringify(result).slice(0, 500)).not.toBe(true);
  const structured = result.structuredContent as { tools?: Found[] } | undefined;
  expect(Array.isArray(structured?.tools), JSON.stringify(result).slice(0, 500)).toBe(true);
  // "JSON of the same": the structured content, or its tools array.
  expect([structured, structured!.tools]).toContainEqual(JSON.parse(textOf(result)));
  return structured!.tools!;
}

const namesFound = async (client: Client, query: string, limit?: number): Promise<string[]> => (await search(client, query, limit)).map((t) => t.name);

/** call_tool with `name` and `args`. */
const viaCallTool = (client: Client, name: string, args: Record<string, unknown>, options?: Parameters<Client['callTool']>[2]) =>
  client.callTool({ name: 'call_tool', arguments: { name, arguments: args } }, undefined, options);

describe('an endpoint in search mode', () => {
  let gw: TestGateway;
  let url: URL;
  /** What the main endpoint (list mode) lists to the same team, by name. */
  let listed: Map<string, Record<string, unknown>>;
  /** The names this endpoint may ever show. */
  let visible: string[];

  beforeAll(async () => {
    gw = await startGateway(rawConfig(), { logLevel: 'warn' });
    url = new URL(PATH, gw.url);
    const main = await connectClient(gw.url);
    try {
      listed = new Map((await listAll(main)).tools.map((t) => [String(t.name), t]));
    } finally {
      await main.close();
    }
    visible = [...listed.keys()].filter((n) => !HIDDEN.includes(n));
    // The premises: both upstreams are behind it, and the team's denial applies on the main endpoint.
    expect(visible).toEqual(expect.arrayContaining(['everything__get-sum', 'memory__search_nodes', 'memory__create_entities']));
    expect(listed.has('everything__get-env')).toBe(false);
  });

  afterAll(async () => {
    await gw?.close();
  });

  it('lists the visible pinned tools, shaped as in list mode, plus search_tools and call_tool', async () => {
    const { client } = await open(url);
    const tools = (await listAll(client)).tools;
    expect(sorted(tools.map((t) => String(t.name)))).toEqual(sorted(['everything__echo', 'memory__read_graph', 'search_tools', 'call_tool']));
    for (const name of ['everything__echo', 'memory__read_graph']) {
      expect(shape(tools.find((t) => t.name === name)!)).toEqual(shape(listed.get(name)!));
    }
    expect(tools.find((t) => t.name === 'everything__echo')?.title).toBe('Parrot');
  });

  it('describes search_tools and call_tool by their input schemas, and search_tools names the upstreams behind it', async () => {
    const { client } = await open(url);
    const tools = (await listAll(client)).tools;
    const searchTool = tools.find((t) => t.name === 'search_tools')!;
    const callTool = tools.find((t) => t.name === 'call_tool')!;
    expect(searchTool.inputSchema).toMatchObject({
      type: 'object',
      properties: { query: { type: 'string' }, limit: { type: 'integer', minimum: 1, maximum: 20, default: 5 } },
      required: expect.arrayContaining(['query']),
    });
    expect(callTool.inputSchema).toMatchObject({ type: 'object', properties: { name: { type: 'string' }, arguments: { type: 'object' } }, required: expect.arrayContaining(['name']) });
    expect(searchTool.description).toContain('everything');
    expect(searchTool.description).toContain('memory');
  });

  it.each([
    ['add two numbers', 'everything__get-sum'],
    ['look up an entity in the knowledge graph', 'memory__search_nodes'],
  ])('finds the right tool for "%s" among the top five, shaped as tools/list shapes it', async (query, expected) => {
    const { client } = await open(url);
    const found = await search(client, query);
    expect(found.length).toBeLessThanOrEqual(5);
    expect(found.map((t) => t.name), `found: ${found.map((t) => t.name).join(', ')}`).toContain(expected);
    expect(new Set(found.map((t) => t.name)).size).toBe(found.length);
    for (const tool of found) expect(shape(tool as unknown as Record<string, unknown>)).toEqual(shape(listed.get(tool.name)!));
  });

  it("applies the team's views to what it finds", async () => {
    const { client } = await open(url);
    const echo = (await search(client, 'echo back the input string')).find((t) => t.name === 'everything__echo');
    expect(echo?.title).toBe('Parrot');
  });

  it('returns at most `limit` tools, best first, five unless asked', async () => {
    const { client } = await open(url);
    const query = 'knowledge graph';
    const five = await namesFound(client, query);
    const one = await namesFound(client, query, 1);
    const twenty = await namesFound(client, query, 20);
    expect(five.length).toBeLessThanOrEqual(5);
    expect(one).toEqual(five.slice(0, 1));
    // Six visible memory tools speak of the knowledge graph.
    expect(twenty.length).toBeGreaterThan(5);
    expect(twenty.length).toBeLessThanOrEqual(20);
    expect(twenty.slice(0, five.length)).toEqual(five);
  });

  it('never returns a tool the principal may not call on this endpoint', async () => {
    const { client } = await open(url);
    const queries = ['print all environment variables', 'delete entities from the knowledge graph', 'delete observations and relations', 'knowledge graph', 'add two numbers', 'echo'];
    for (const query of queries) {
      const names = await namesFound(client, query, 20);
      // The gateway's own two tools are callable here too; nothing else outside `visible` is.
      expect(names.filter((n) => !visible.includes(n) && n !== 'search_tools' && n !== 'call_tool'), query).toEqual([]);
    }
  });

  it('runs through call_tool exactly what tools/call of the name runs, and tools/call of a visible unpinned tool works too', async () => {
    const { client } = await open(url);
    const calls: [string, Record<string, unknown>][] = [
      ['everything__echo', { message: 'through the search endpoint' }],
      ['everything__get-sum', { a: 19, b: 23 }],
      ['everything__get-structured-content', { location: 'Chicago' }],
    ];
    for (const [name, args] of calls) {
      const direct = await client.callTool({ name, arguments: args });
      expect(direct.isError, JSON.stringify(direct)).not.toBe(true);
      expect(await viaCallTool(client, name, args)).toEqual(direct);
    }
    expect(textOf(await client.callTool({ name: 'everything__get-sum', arguments: { a: 19, b: 23 } }))).toBe('The sum of 19 and 23 is 42.');
  });

  it('answers call_tool of a hidden or unknown name with -32602 Unknown tool, exactly like tools/call', async () => {
    const { client } = await open(url);
    for (const name of [...HIDDEN, 'everything__no-such-tool', 'nosuch__tool']) {
      expect({ name, got: await failureOf(viaCallTool(client, name, {})) }).toEqual({ name, got: unknownAnswer('tool', name) });
      expect({ name, got: await failureOf(client.callTool({ name, arguments: {} })) }).toEqual({ name, got: unknownAnswer('tool', name) });
    }
  });

  it('relays the progress of a call through call_tool to the caller', async () => {
    const { client } = await open(url);
    const seen: unknown[] = [];
    const result = await viaCallTool(client, 'everything__trigger-long-running-operation', { duration: 0.3, steps: 3 }, { onprogress: (p) => void seen.push(p), timeout: PROMPT_MS });
    expect(textOf(result)).toMatch(/Steps: 3/);
    expect(seen).toEqual([1, 2, 3].map((progress) => ({ progress, total: 3 })));
  });

  it("brings sampling asked during call_tool to the calling client's handler, each of two concurrent clients only its own", async () => {
    const samplingClient = async (reply: string) => {
      const asked: unknown[] = [];
      const { client } = await open(url, { sampling: {} }, (c) =>
        c.setRequestHandler(CreateMessageRequestSchema, async (request) => {
          asked.push(request.params);
          return { model: 'test-model', role: 'assistant', content: { type: 'text', text: reply } };
        }),
      );
      return { client, asked };
    };
    const a = await samplingClient('answer from A');
    const b = await samplingClient('answer from B');
    const [ra, rb] = await Promise.all([
      viaCallTool(a.client, 'everything__trigger-sampling-request', { prompt: 'question A', maxTokens: 20 }, { timeout: PROMPT_MS }),
      viaCallTool(b.client, 'everything__trigger-sampling-request', { prompt: 'question B', maxTokens: 20 }, { timeout: PROMPT_MS }),
    ]);
    expect(textOf(ra)).toContain('answer from A');
    expect(textOf(rb)).toContain('answer from B');
    expect(a.asked).toHaveLength(1);
    expect(b.asked).toHaveLength(1);
    expect(JSON.stringify(a.asked)).toContain('question A');
    expect(JSON.stringify(a.asked)).not.toContain('question B');
    expect(JSON.stringify(b.asked)).toContain('question B');
    expect(JSON.stringify(b.asked)).not.toContain('question A');
  });
});

describe('the search index across a reload', () => {
  let gw: TestGateway;

  beforeAll(async () => {
    gw = await startGateway(rawConfig(), { logLevel: 'warn' });
  });

  afterAll(async () => {
    await gw?.close();
  });

  const reload = (endpointDeny: string[]) =>
    gw.gateway.reload(configFromObject({ listen: { port: 0 }, health: { probeInterval: 0 }, ...rawConfig(endpointDeny) }, { file: join(ROOT, 'gateway.test.yaml'), env: {} }));

  it('tells the session tools/list_changed and searches the new rules in the same session', async () => {
    const { client, notes } = await open(new URL(PATH, gw.url));
    const changes = () => notes.all.filter((n) => n.method === TOOLS_CHANGED).length;
    // As a host does: it has listed the tools, so it wants to hear when they change.
    await listAll(client);
    expect(await namesFound(client, 'add two numbers')).toContain('everything__get-sum');

    // The endpoint now denies get-sum: gone from search, and call_tool answers as for an unknown tool.
    let heard = changes();
    reload(['memory__delete_*', 'everything__get-sum']);
    await poll(() => (changes() > heard ? true : undefined), 'tools/list_changed after denying get-sum', PROMPT_MS);
    expect(await namesFound(client, 'add two numbers', 20)).not.toContain('everything__get-sum');
    expect(await failureOf(viaCallTool(client, 'everything__get-sum', { a: 1, b: 2 }))).toEqual(unknownAnswer('tool', 'everything__get-sum'));

    // Allowed again: found again, and it runs.
    heard = changes();
    reload(['memory__delete_*']);
    await poll(() => (changes() > heard ? true : undefined), 'tools/list_changed after allowing get-sum', PROMPT_MS);
    expect(await namesFound(client, 'add two numbers')).toContain('everything__get-sum');
    expect(textOf(await viaCallTool(client, 'everything__get-sum', { a: 1, b: 2 }))).toBe('The sum of 1 and 2 is 3.');
  });
});
