// Issue 22 with more real upstreams: server-memory, server-filesystem, server-sequential-thinking
// and a FastMCP server (over stdio and over its httpStream transport) each run one scenario with
// the SDK v1 client directly and through a Switchyard gateway fronting that server, and every
// check gets the same outcome modulo the namespace.
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { CallToolResultSchema, ListRootsRequestSchema, type ClientCapabilities, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, textOf, until, type TestGateway } from '../helpers/gateway.js';
import { contentOf, directSide, gatewaySide, outcomeOf, type Side } from '../helpers/parity.js';
import { FIXTURES, MEMORY_BIN, NODE, ROOT } from '../helpers/paths.js';
import { stopChild, waitForLine } from '../helpers/processes.js';

const FILESYSTEM_BIN = join(ROOT, 'node_modules/@modelcontextprotocol/server-filesystem/dist/index.js');
const THINKING_BIN = join(ROOT, 'node_modules/@modelcontextprotocol/server-sequential-thinking/dist/index.js');
const FASTMCP = join(FIXTURES, 'fastmcp-server.mjs');

type Kind = Side['kind'];

/** A notification as it reached the client's transport, before the SDK dispatched it. */
type Heard = { method: string; params?: Record<string, unknown> };

/**
 * One side's client and names. `heard` is read at the transport: the v1 SDK dispatches
 * notifications a microtask later than responses, so progress that arrives in the same chunk as
 * its result never reaches `onprogress` (seen directly over stdio).
 */
type Route = { client: Client; side: Side; heard: Heard[]; wake: Set<() => void> };

interface Setup {
  /** The upstream's entry in the gateway's config, and a transport straight to the same server. */
  upstream: Record<string, unknown>;
  direct(): Transport;
  /** A stdio server has no URL: its direct side only names things. */
  directUrl?: URL;
  capabilities?: ClientCapabilities;
  /** Registers handlers on a side's client before it connects. */
  prepare?(client: Client, kind: Kind): void;
  /** Makes each side's answers comparable beyond names (say, its own temp directory). */
  neutral?(value: unknown, kind: Kind): unknown;
  close?(): Promise<void>;
}

async function openRoute(transport: Transport, side: Side, setup: Setup): Promise<Route> {
  const client = new Client({ name: 'switchyard-parity', version: '1.0.0' }, { capabilities: setup.capabilities ?? {} });
  setup.prepare?.(client, side.kind);
  await client.connect(transport);
  const route: Route = { client, side, heard: [], wake: new Set() };
  const dispatch = transport.onmessage;
  transport.onmessage = (message: JSONRPCMessage, extra?: unknown) => {
    if ('method' in message && !('id' in message)) {
      route.heard.push(message.params === undefined ? { method: message.method } : { method: message.method, params: message.params });
      for (const wake of route.wake) wake();
    }
    (dispatch as (m: JSONRPCMessage, e?: unknown) => void)?.(message, extra);
  };
  return route;
}

/**
 * Before the enclosing describe's tests: `setup` the server, a gateway fronting it as `prefix`,
 * and an SDK v1 client on each side; after them, all of it closed. `both(scenario)` runs the
 * scenario directly, then through Switchyard, and gives both outcomes in the upstream's terms.
 */
function onBothRoutes(prefix: string, setup: () => Promise<Setup>) {
  const routes = new Map<Kind, Route>();
  let ready: Setup | undefined;
  let gateway: TestGateway | undefined;

  beforeAll(async () => {
    ready = await setup();
    gateway = await startGateway({ upstreams: { [prefix]: ready.upstream } }, { logLevel: 'warn' });
    routes.set('direct', await openRoute(ready.direct(), directSide(ready.directUrl ?? new URL(`stdio:${prefix}`)), ready));
    routes.set('switchyard', await openRoute(new StreamableHTTPClientTransport(gateway.url), gatewaySide(gateway.url, prefix), ready));
  });

  afterAll(async () => {
    await Promise.allSettled([...routes.values()].map((r) => r.client.close()));
    await gateway?.close();
    await ready?.close?.();
  });

  const route = (kind: Kind): Route => {
    const found = routes.get(kind);
    if (!found) throw new Error(`no ${kind} client: did it fail to connect?`);
    return found;
  };

  return {
    route,
    async both(scenario: (r: Route) => Promise<unknown>): Promise<{ direct: unknown; switchyard: unknown }> {
      const neutral = (value: unknown, kind: Kind) => (ready?.neutral ? ready.neutral(value, kind) : value);
      const direct = neutral(await scenario(route('direct')), 'direct');
      const switchyard = neutral(route('switchyard').side.plain(await scenario(route('switchyard'))), 'switchyard');
      return { direct, switchyard };
    },
  };
}

/** Resolves once a notification matching `predicate` has reached the route (bounded). */
async function hear(r: Route, predicate: (n: Heard) => boolean, what: string): Promise<Heard> {
  await until(() => r.heard.some(predicate), (wake) => r.wake.add(wake), 10_000, what);
  return r.heard.find(predicate)!;
}

const call = (r: Route, name: string, args: Record<string, unknown> = {}) => r.client.callTool({ name: r.side.name(name), arguments: args });
const sortedTools = async (r: Route) => (await r.client.listTools()).tools.sort((a, b) => a.name.localeCompare(b.name));

async function tempDir(label: string): Promise<string> {
  // realpath: the servers answer with resolved paths, and the temp dir may sit behind a symlink.
  return realpath(await mkdtemp(join(tmpdir(), `switchyard-${label}-`)));
}

/** A stdio server the client starts itself, with the SDK's default env and the server's own. */
function stdio(args: string[], env: Record<string, string> = {}): () => Transport {
  return () => new StdioClientTransport({ command: NODE, args, env: { ...getDefaultEnvironment(), ...env }, stderr: 'ignore' });
}

describe('server-memory over stdio', () => {
  let dir: string;
  const { route, both } = onBothRoutes('memory', async () => {
    dir = await tempDir('memory');
    return {
      // A graph file per side: each side's writes are its own.
      upstream: { stdio: { command: NODE, args: [MEMORY_BIN], env: { MEMORY_FILE_PATH: join(dir, 'switchyard.jsonl') } } },
      direct: stdio([MEMORY_BIN], { MEMORY_FILE_PATH: join(dir, 'direct.jsonl') }),
      close: () => rm(dir, { recursive: true, force: true }),
    };
  });

  it('lists the same tools, definitions and all', async () => {
    const { direct, switchyard } = await both(sortedTools);
    expect((direct as { name: string }[]).map((t) => t.name)).toContain('create_entities');
    expect(switchyard).toEqual(direct);
  });

  it('creates the same entities and relations', async () => {
    const { direct, switchyard } = await both(async (r) => {
      const entities = await call(r, 'create_entities', {
        entities: [
          { name: 'Ada', entityType: 'person', observations: ['wrote the first program'] },
          { name: 'Analytical Engine', entityType: 'machine', observations: ['never finished'] },
        ],
      });
      const relations = await call(r, 'create_relations', { relations: [{ from: 'Ada', to: 'Analytical Engine', relationType: 'programmed' }] });
      return { entities, relations };
    });
    expect(JSON.stringify(direct)).toContain('programmed');
    expect(switchyard).toEqual(direct);
  });

  it('reads back the same graph, and finds the same nodes', async () => {
    const { direct, switchyard } = await both(async (r) => ({
      graph: await call(r, 'read_graph'),
      search: await call(r, 'search_nodes', { query: 'program' }),
      open: await call(r, 'open_nodes', { names: ['Analytical Engine'] }),
    }));
    expect((direct as { graph: { structuredContent: { entities: unknown[]; relations: unknown[] } } }).graph.structuredContent).toMatchObject({ entities: [{}, {}], relations: [{}] });
    expect(switchyard).toEqual(direct);
  });

  it('reads the same graph resource, the URI in its namespace', async () => {
    const { direct, switchyard } = await both((r) => r.client.readResource({ uri: r.side.uri('memory://knowledge-graph') }));
    expect(JSON.stringify(direct)).toContain('Analytical Engine');
    expect(switchyard).toEqual(direct);
  });

  it('tells a subscriber the same way that the graph changed', async () => {
    const { direct, switchyard } = await both(async (r) => {
      const uri = r.side.uri('memory://knowledge-graph');
      await r.client.subscribeResource({ uri });
      await call(r, 'add_observations', { observations: [{ entityName: 'Ada', contents: ['was a countess'] }] });
      const updated = await hear(r, (n) => n.method === 'notifications/resources/updated', `an update of ${uri}`);
      await r.client.unsubscribeResource({ uri });
      return updated;
    });
    expect(direct).toEqual({ method: 'notifications/resources/updated', params: { uri: 'memory://knowledge-graph' } });
    expect(switchyard).toEqual(direct);
    expect(route('switchyard').heard.find((n) => n.method === 'notifications/resources/updated')?.params).toEqual({ uri: 'memory+memory://knowledge-graph' });
  });
});

describe('server-filesystem over stdio', () => {
  let dir: string;
  /** Each side's own allowed directory, so that the sides cannot see each other's files. */
  const roots: Record<Kind, string> = { direct: '', switchyard: '' };
  const { both } = onBothRoutes('fs', async () => {
    dir = await tempDir('filesystem');
    for (const kind of ['direct', 'switchyard'] as const) await mkdir((roots[kind] = join(dir, kind)));
    return {
      upstream: { stdio: { command: NODE, args: [FILESYSTEM_BIN, roots.switchyard] } },
      direct: stdio([FILESYSTEM_BIN, roots.direct]),
      neutral: (value, kind) => JSON.parse(JSON.stringify(value).replaceAll(roots[kind], '<root>')),
      close: () => rm(dir, { recursive: true, force: true }),
    };
  });

  it('lists the same tools, definitions and all', async () => {
    const { direct, switchyard } = await both(sortedTools);
    expect((direct as { name: string }[]).map((t) => t.name)).toEqual(expect.arrayContaining(['write_file', 'read_text_file', 'list_directory']));
    expect(switchyard).toEqual(direct);
  });

  it('writes, reads and lists a file the same way', async () => {
    const { direct, switchyard } = await both(async (r) => {
      const root = roots[r.side.kind];
      return {
        write: await call(r, 'write_file', { path: join(root, 'notes.txt'), content: 'first line\nsecond line\n' }),
        read: await call(r, 'read_text_file', { path: join(root, 'notes.txt') }),
        head: await call(r, 'read_text_file', { path: join(root, 'notes.txt'), head: 1 }),
        mkdir: await call(r, 'create_directory', { path: join(root, 'sub') }),
        list: await call(r, 'list_directory', { path: root }),
      };
    });
    expect(JSON.stringify((direct as { list: unknown }).list)).toContain('[FILE] notes.txt');
    expect(switchyard).toEqual(direct);
  });

  it('refuses a path outside its allowed directories the same way', async () => {
    const { direct, switchyard } = await both((r) => call(r, 'read_text_file', { path: join(dir, 'elsewhere.txt') }));
    expect(direct).toMatchObject({ isError: true });
    expect(switchyard).toEqual(direct);
  });
});

describe('server-filesystem with a client that declares roots', () => {
  let dir: string;
  /** The roots each side's client declares; the second list replaces the first. */
  const declared: Record<Kind, string[]> = { direct: [], switchyard: [] };
  const asked: Record<Kind, number> = { direct: 0, switchyard: 0 };
  const { both } = onBothRoutes('fs', async () => {
    dir = await tempDir('roots');
    for (const kind of ['direct', 'switchyard'] as const) {
      for (const name of ['first', 'second']) await mkdir(join(dir, kind, name), { recursive: true });
      declared[kind] = [join(dir, kind, 'first')];
    }
    return {
      upstream: { stdio: { command: NODE, args: [FILESYSTEM_BIN, join(dir, 'switchyard')] } },
      direct: stdio([FILESYSTEM_BIN, join(dir, 'direct')]),
      capabilities: { roots: { listChanged: true } },
      prepare: (client, kind) =>
        client.setRequestHandler(ListRootsRequestSchema, async () => {
          asked[kind]++;
          return { roots: declared[kind].map((path) => ({ uri: pathToFileURL(path).href, name: 'work' })) };
        }),
      neutral: (value, kind) => JSON.parse(JSON.stringify(value).replaceAll(join(dir, kind), '<dir>')),
      close: () => rm(dir, { recursive: true, force: true }),
    };
  });

  /** The server takes the roots up after answering roots/list; ask until they show (bounded). */
  async function allowedDirectories(r: Route, expected: string): Promise<string> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const text = textOf(await call(r, 'list_allowed_directories'));
      if (text.includes(expected) || Date.now() > deadline) return text;
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  it("is asked for its roots, and the server works in the client's roots", async () => {
    const { direct, switchyard } = await both((r) => allowedDirectories(r, declared[r.side.kind][0]!));
    expect(direct).toBe('Allowed directories:\n<dir>/first');
    expect(switchyard).toEqual(direct);
    expect(asked.switchyard).toBeGreaterThan(0);
  });

  it('relays a roots change: the server asks again and works in the new roots', async () => {
    const { direct, switchyard } = await both(async (r) => {
      const second = join(dir, r.side.kind, 'second');
      declared[r.side.kind] = [second];
      await r.client.sendRootsListChanged();
      return allowedDirectories(r, second);
    });
    expect(direct).toBe('Allowed directories:\n<dir>/second');
    expect(switchyard).toEqual(direct);
  });

  it('writes inside the declared root and refuses the one it replaced, the same way', async () => {
    const { direct, switchyard } = await both(async (r) => ({
      inside: await call(r, 'write_file', { path: join(dir, r.side.kind, 'second', 'a.txt'), content: 'a' }),
      outside: await call(r, 'write_file', { path: join(dir, r.side.kind, 'first', 'a.txt'), content: 'a' }),
    }));
    expect(direct).toMatchObject({ outside: { isError: true } });
    expect(switchyard).toEqual(direct);
  });
});

describe('server-sequential-thinking over stdio', () => {
  const { both } = onBothRoutes('thinking', async () => ({ upstream: { stdio: { command: NODE, args: [THINKING_BIN] } }, direct: stdio([THINKING_BIN]) }));

  it('lists the same tool, definition and all', async () => {
    const { direct, switchyard } = await both(sortedTools);
    expect((direct as { name: string }[]).map((t) => t.name)).toEqual(['sequentialthinking']);
    expect(switchyard).toEqual(direct);
  });

  it('answers the same sequence of thoughts, revision and branch included', async () => {
    const { direct, switchyard } = await both(async (r) => {
      const thoughts = [
        { thought: 'List what the gateway must preserve.', thoughtNumber: 1, totalThoughts: 3, nextThoughtNeeded: true },
        { thought: 'Names are mapped, results are not.', thoughtNumber: 2, totalThoughts: 3, nextThoughtNeeded: true },
        { thought: 'Revise: URIs are mapped too.', thoughtNumber: 3, totalThoughts: 3, nextThoughtNeeded: true, isRevision: true, revisesThought: 2 },
        { thought: 'Try the other way round.', thoughtNumber: 4, totalThoughts: 4, nextThoughtNeeded: false, branchFromThought: 1, branchId: 'alt' },
      ];
      const answers: unknown[] = [];
      for (const args of thoughts) answers.push(contentOf(await call(r, 'sequentialthinking', args)));
      return answers;
    });
    expect(JSON.stringify(direct)).toContain('alt');
    expect(switchyard).toEqual(direct);
  });

  it('fails a thought without its required fields the same way', async () => {
    const { direct, switchyard } = await both((r) => outcomeOf(call(r, 'sequentialthinking', { thought: 'incomplete' })));
    expect(direct).toEqual({ resolved: 'isError result' });
    expect(switchyard).toEqual(direct);
  });
});

/**
 * A log message in the upstream's terms: through Switchyard its logger names the upstream
 * (`fastmcp`, or `fastmcp/<logger>` for a logger of its own; docs/protocol.md).
 */
function unprefixedLogger(n: Heard, kind: Kind, prefix: string): Heard {
  if (kind === 'direct' || !n.params) return n;
  const { logger, ...params } = n.params;
  expect(logger === prefix || (typeof logger === 'string' && logger.startsWith(`${prefix}/`)), `logger ${String(logger)} names ${prefix}`).toBe(true);
  return { ...n, params: logger === prefix ? params : { ...params, logger: (logger as string).slice(prefix.length + 1) } };
}

/** FastMCP's httpStream transport on a free port, in its own process. */
async function startFastMcpHttp(): Promise<{ url: string; close(): Promise<void> }> {
  const child = spawn(NODE, [FASTMCP, 'http'], { stdio: 'pipe' });
  try {
    const [, url] = await waitForLine(child, /^listening on (\S+)/);
    return { url: url!, close: () => stopChild(child) };
  } catch (err) {
    await stopChild(child);
    throw err;
  }
}

const fastMcpTransports: [string, () => Promise<Setup>][] = [
  ['stdio', async () => ({ upstream: { stdio: { command: NODE, args: [FASTMCP] } }, direct: stdio([FASTMCP]) })],
  ['httpStream', async () => {
    const { url, close } = await startFastMcpHttp();
    return { upstream: { http: { url } }, direct: () => new StreamableHTTPClientTransport(new URL(url)), directUrl: new URL(url), close };
  }],
];

describe.each(fastMcpTransports)('a FastMCP server over %s', (_transport, setup) => {
  const { both } = onBothRoutes('fastmcp', setup);

  it('lists the same tools, definitions and all', async () => {
    const { direct, switchyard } = await both(sortedTools);
    expect((direct as { name: string }[]).map((t) => t.name)).toEqual(['add', 'count', 'note']);
    expect(switchyard).toEqual(direct);
  });

  it('adds up to the same sum', async () => {
    const { direct, switchyard } = await both(async (r) => contentOf(await call(r, 'add', { a: 19, b: 23 })));
    expect(direct).toEqual([{ type: 'text', text: '19 + 23 = 42' }]);
    expect(switchyard).toEqual(direct);
  });

  it('reports the same progress, every step of it', async () => {
    const { direct, switchyard } = await both(async (r) => {
      r.heard.length = 0;
      const result = await r.client.callTool({ name: r.side.name('count'), arguments: { steps: 4 } }, CallToolResultSchema, { onprogress: () => {} });
      const progress = r.heard.filter((n) => n.method === 'notifications/progress').map(({ params }) => ({ progress: params?.progress, total: params?.total }));
      return { progress, content: result.content };
    });
    expect((direct as { progress: unknown[] }).progress).toEqual([1, 2, 3, 4].map((progress) => ({ progress, total: 4 })));
    expect(switchyard).toEqual(direct);
  });

  it('relays the same log messages', async () => {
    const { direct, switchyard } = await both(async (r) => {
      r.heard.length = 0;
      const result = await call(r, 'note', { text: 'same both ways' });
      await hear(r, (n) => n.method === 'notifications/message' && n.params?.level === 'warning', 'the warning the tool logs');
      return { logs: r.heard.filter((n) => n.method === 'notifications/message').map((n) => unprefixedLogger(n, r.side.kind, 'fastmcp')), content: result.content };
    });
    expect((direct as { logs: unknown[] }).logs).toEqual([
      { method: 'notifications/message', params: { level: 'info', data: { message: 'noted', context: { text: 'same both ways' } } } },
      { method: 'notifications/message', params: { level: 'warning', data: { message: 'noted loudly', context: { text: 'same both ways' } } } },
    ]);
    expect(switchyard).toEqual(direct);
  });

  it('lists and reads the same resource, the URI in its namespace', async () => {
    const { direct, switchyard } = await both(async (r) => ({
      list: await r.client.listResources(),
      read: await r.client.readResource({ uri: r.side.uri('fixture://greeting') }),
    }));
    expect(JSON.stringify(direct)).toContain('hello from fastmcp');
    expect(switchyard).toEqual(direct);
  });

  it('lists and gets the same prompt', async () => {
    const { direct, switchyard } = await both(async (r) => ({
      list: await r.client.listPrompts(),
      get: await r.client.getPrompt({ name: r.side.name('greet'), arguments: { name: 'Ada' } }),
    }));
    expect(JSON.stringify(direct)).toContain('Please greet Ada warmly.');
    expect(switchyard).toEqual(direct);
  });

  // Both fail, each its own way. FastMCP answers an unknown tool -32601 and arguments that do not
  // fit the schema -32602; the spec (server/tools.mdx "Error Handling") makes the first -32602 and
  // the second a tool result with isError, which is what Switchyard answers (docs/protocol.md).
  it('fails an unknown tool: directly with FastMCP\'s -32601, through Switchyard with the spec\'s -32602', async () => {
    const { direct, switchyard } = await both((r) => outcomeOf(call(r, 'no-such-tool')));
    expect(direct).toEqual({ rejected: 'McpError', code: -32601 });
    expect(switchyard).toEqual({ rejected: 'McpError', code: -32602 });
  });

  it("fails invalid arguments: directly with FastMCP's -32602, through Switchyard with the spec's isError result", async () => {
    const { direct, switchyard } = await both((r) => outcomeOf(call(r, 'add', { a: 'nineteen', b: 23 })));
    expect(direct).toEqual({ rejected: 'McpError', code: -32602 });
    expect(switchyard).toEqual({ resolved: 'isError result' });
  });
});
