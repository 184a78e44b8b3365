// MCP Apps through Switchyard (issue 22 item 2), with the real server-basic-vanillajs from npm and
// the ext-apps AppBridge as host: list the UI tool, read its ui:// resource, render the View in
// Chromium, let it initialize with the host and call its server tool by the upstream's own name;
// directly over HTTP and through the gateway (server over HTTP and over stdio), same steps, same
// outcome. What the server received is journaled on its side of the wire in every setup.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, request, type OutgoingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Client, StreamableHTTPClientTransport, type JSONRPCMessage, type Tool, type Transport } from '@modelcontextprotocol/client';
import { AppBridge, getToolUiResourceUri, RESOURCE_MIME_TYPE } from '@modelcontextprotocol/ext-apps/app-bridge';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBrowser, type TestBrowser } from '../helpers/browser.js';
import { connectClient, startGateway, type TestGateway } from '../helpers/gateway.js';
import { NODE, ROOT } from '../helpers/paths.js';
import { stopChild, waitForLine } from '../helpers/processes.js';
import { freePort } from '../helpers/redis.js';

const APPS_BIN = join(ROOT, 'node_modules/@modelcontextprotocol/server-basic-vanillajs/dist/index.js');
const UI_EXTENSION = 'io.modelcontextprotocol/ui';
/** What an MCP Apps host declares (SEP-1865): it renders text/html;profile=mcp-app. */
const HOST_CAPABILITIES = { extensions: { [UI_EXTENSION]: { mimeTypes: [RESOURCE_MIME_TYPE] } } };
const ISO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

interface Message {
  jsonrpc?: string;
  id?: string | number;
  method?: string;
  params?: Record<string, unknown>;
  result?: Record<string, unknown>;
  error?: unknown;
}

/** A route from the host to the server; `received` is what reached the server. */
interface Route {
  url: URL;
  received(): Promise<Message[]>;
  close(): Promise<void>;
}

interface Setup {
  name: string;
  /** The UI tool's name as the host lists it. */
  tool: string;
  /** The UI resource's URI as the host sees it. */
  uiUri: string;
  open(): Promise<Route>;
}

/** What the server itself answers, read straight from it: the reference every setup is held to. */
interface Reference {
  capabilities: Record<string, unknown> | undefined;
  contents: { uri: string; mimeType?: string; text?: string; _meta?: unknown };
}

let server: { url: URL; close(): Promise<void> };
let reference: Reference;
let browser: TestBrowser;
let journals: string;

beforeAll(async () => {
  journals = await mkdtemp(join(tmpdir(), 'switchyard-apps-'));
  server = await startAppsHttp();
  const client = new Client({ name: 'switchyard-reference', version: '1.0.0' }, { capabilities: HOST_CAPABILITIES });
  try {
    await client.connect(new StreamableHTTPClientTransport(server.url));
    const read = await client.readResource({ uri: 'ui://get-time/mcp-app.html' });
    reference = { capabilities: client.getServerCapabilities() as Record<string, unknown> | undefined, contents: read.contents[0] as Reference['contents'] };
  } finally {
    await client.close();
  }
  browser = await startBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
  if (journals) await rm(journals, { recursive: true, force: true });
});

const setups: Setup[] = [
  {
    name: 'directly over HTTP',
    tool: 'get-time',
    uiUri: 'ui://get-time/mcp-app.html',
    open: () => startRecordingProxy(server.url),
  },
  {
    name: 'through Switchyard, server over HTTP',
    tool: 'apps__get-time',
    uiUri: 'ui://apps/get-time/mcp-app.html',
    async open() {
      const proxy = await startRecordingProxy(server.url);
      const gw = await startGatewayOrClose({ upstreams: { apps: { http: { url: proxy.url.href } } } }, proxy);
      return { url: gw.url, received: proxy.received, close: async () => closeAll(gw, proxy) };
    },
  },
  {
    name: 'through Switchyard, server over stdio',
    tool: 'apps__get-time',
    uiUri: 'ui://apps/get-time/mcp-app.html',
    async open() {
      const journal = join(journals, 'stdio.jsonl');
      const gw = await startGateway({ upstreams: { apps: { stdio: { command: NODE, args: ['-e', STDIN_TEE, APPS_BIN, '--stdio'], env: { SWITCHYARD_JOURNAL: journal } } } } }, { logLevel: 'warn' });
      return { url: gw.url, received: () => readJournal(journal), close: () => gw.close() };
    },
  },
];

describe.each(setups)('an MCP Apps host $name', (setup) => {
  let route: Route;
  let host: HostClient;

  beforeAll(async () => {
    route = await setup.open();
    host = await connectHost(route.url);
  }, 30_000);

  afterAll(async () => {
    await host?.client.close();
    await route?.close();
  });

  it('lists the UI tool with its ui:// resource under both the nested and the legacy _meta key', async () => {
    const tool = await uiTool(host.client, setup.tool);
    expect(tool._meta?.ui).toMatchObject({ resourceUri: setup.uiUri });
    expect(tool._meta?.['ui/resourceUri']).toBe(setup.uiUri);
    expect(getToolUiResourceUri(tool)).toBe(setup.uiUri);
  });

  it('lists the UI resource and reads it as the same HTML, under the URI the tool gives', async () => {
    const listed = await host.client.listResources();
    expect(listed.resources.map((r) => r.uri)).toContain(setup.uiUri);
    const read = await host.client.readResource({ uri: setup.uiUri });
    expect(read.contents).toHaveLength(1);
    expect(read.contents[0]).toEqual({ ...reference.contents, uri: setup.uiUri });
  });

  it("sends the host's ui extension capability to the server, and advertises the server's extensions as the server does", async () => {
    const initializes = (await route.received()).filter((m) => m.method === 'initialize');
    expect(initializes.length).toBeGreaterThan(0);
    for (const initialize of initializes) expect((initialize.params?.capabilities as Record<string, unknown> | undefined)?.extensions).toEqual(HOST_CAPABILITIES.extensions);
    expect((host.client.getServerCapabilities() as Record<string, unknown> | undefined)?.extensions).toEqual(reference.capabilities?.extensions);
  });

  it("answers a tools/call by the server's own tool name, as a View sends it", async () => {
    const result = await host.client.callTool({ name: 'get-time', arguments: {} });
    expect(result.isError).toBeFalsy();
    expect((result.structuredContent as { time?: string } | undefined)?.time).toMatch(ISO_TIME);
    expect((await route.received()).filter((m) => m.method === 'tools/call').map((m) => m.params?.name)).toContain('get-time');
  });

  it("renders the View, which initializes with the host and calls get-time by the server's own name; the server answers and the View shows the time", async () => {
    const tool = await uiTool(host.client, setup.tool);
    const read = await host.client.readResource({ uri: getToolUiResourceUri(tool)! });
    const html = (read.contents[0] as { text?: string }).text;
    expect(html).toContain('get-time-btn');

    const context = await browser.context();
    const bridge = new AppBridge(host.client, { name: 'switchyard-apps-host', version: '1.0.0' }, { serverTools: {}, openLinks: {}, logging: {} });
    const viewErrors: string[] = [];
    try {
      const page = await context.newPage();
      page.on('console', (message) => {
        if (message.type() === 'error') viewErrors.push(message.text());
      });
      const relay = new PageRelay(page);
      await page.exposeFunction('switchyardToHost', (message: JSONRPCMessage) => relay.deliver(message));
      await page.setContent(HOST_PAGE);
      const initialized = new Promise<void>((resolve) => bridge.addEventListener('initialized', () => resolve()));
      await bridge.connect(relay);
      await page.evaluate((srcdoc) => (globalThis as unknown as HostPage).switchyardShow(srcdoc), html!);
      await bounded(initialized, 15_000, 'the View to initialize with the host (ui/notifications/initialized)');
      expect(bridge.getAppVersion()).toEqual({ name: 'Get Time App', version: '1.0.0' });

      const view = page.frameLocator('#view');
      const callsBefore = host.sent.filter((m) => m.method === 'tools/call').length;
      const serverCallsBefore = (await route.received()).filter((m) => m.method === 'tools/call').length;
      await view.locator('#get-time-btn').click({ timeout: 10_000 });
      const shown = view.locator('#server-time', { hasText: ISO_TIME });
      await shown.waitFor({ timeout: 15_000 }).catch((err: unknown) => {
        throw new Error(`the View showed no time: ${String(err)}; View errors: ${JSON.stringify(viewErrors)}`);
      });
      const time = (await shown.textContent())!;

      // The host's MCP client forwarded exactly the View's call, by the server's own name...
      const calls = host.sent.filter((m) => m.method === 'tools/call').slice(callsBefore);
      expect(calls.map((m) => m.params?.name)).toEqual(['get-time']);
      // ...got the server's result, which is what the View shows...
      const answer = host.received.find((m) => m.id === calls[0]!.id && m.method === undefined);
      expect(answer?.error).toBeUndefined();
      expect(answer?.result?.structuredContent).toEqual({ time });
      // ...and the server got the call under its own tool name.
      const serverCalls = (await route.received()).filter((m) => m.method === 'tools/call').slice(serverCallsBefore);
      expect(serverCalls.map((m) => m.params?.name)).toEqual(['get-time']);

      await bridge.teardownResource({}, { timeout: 5_000 });
    } finally {
      await bridge.close().catch(() => {});
      await context.close();
    }
  });
});

describe("an upstream's declared extensions", () => {
  const DECLARED = { [UI_EXTENSION]: {}, 'com.example/switchyard-test': { level: 1 } };
  const extServer = () => ({ command: NODE, args: ['--input-type=module', '-e', extensionServer(DECLARED)] });
  let gw: TestGateway;

  beforeAll(async () => {
    gw = await startGateway({ upstreams: { ext: { stdio: extServer() } } }, { logLevel: 'warn' });
  });

  afterAll(async () => {
    await gw?.close();
  });

  it("appear in the gateway's initialize result as the server declares them", async () => {
    const direct = new ClientV1({ name: 'switchyard-test', version: '1.0.0' });
    const viaGateway = await connectClient(gw.url, HOST_CAPABILITIES);
    try {
      await direct.connect(new StdioClientTransport(extServer()));
      expect(direct.getServerCapabilities()?.extensions).toEqual(DECLARED);
      expect(viaGateway.getServerCapabilities()?.extensions).toEqual(DECLARED);
    } finally {
      await Promise.allSettled([direct.close(), viaGateway.close()]);
    }
  });
});

// ---- the host ----

/** The host's MCP client (SDK v2, as AppBridge takes), with every message it sent and received. */
interface HostClient {
  client: Client;
  sent: Message[];
  received: Message[];
}

async function connectHost(url: URL): Promise<HostClient> {
  const sent: Message[] = [];
  const received: Message[] = [];
  const transport = new StreamableHTTPClientTransport(url);
  const send = transport.send.bind(transport);
  transport.send = (message, options) => {
    sent.push(message as Message);
    return send(message, options);
  };
  const client = new Client({ name: 'switchyard-apps-host', version: '1.0.0' }, { capabilities: HOST_CAPABILITIES });
  await client.connect(transport);
  const deliver = transport.onmessage;
  transport.onmessage = (message: JSONRPCMessage) => {
    received.push(message as Message);
    deliver?.(message);
  };
  return { client, sent, received };
}

/** The listed tool named `name`, which must link a UI resource. */
async function uiTool(client: Client, name: string): Promise<Tool> {
  const { tools } = await client.listTools();
  const withUi = tools.filter((t) => getToolUiResourceUri(t) !== undefined);
  expect(withUi.map((t) => t.name)).toEqual([name]);
  return withUi[0]!;
}

/**
 * The host page: the View in a sandboxed srcdoc iframe, as hosts render one. What the View posts to
 * its parent goes to the AppBridge in Node (exposeFunction); PageRelay posts the answers back.
 */
const HOST_PAGE = `<!doctype html>
<html><body>
<iframe id="view" sandbox="allow-scripts" style="width: 640px; height: 560px; border: 0"></iframe>
<script>
  const view = document.getElementById('view');
  window.addEventListener('message', (event) => {
    if (event.source === view.contentWindow) window.switchyardToHost(event.data);
  });
  window.switchyardShow = (html) => { view.srcdoc = html; };
  window.switchyardToView = (message) => view.contentWindow.postMessage(message, '*');
</script>
</body></html>`;

/** What HOST_PAGE defines on its window (the tests compile without the DOM library). */
interface HostPage {
  switchyardShow(html: string): void;
  switchyardToView(message: unknown): void;
}

/** The AppBridge's transport: postMessage to and from the View, relayed through the host page. */
class PageRelay implements Transport {
  onmessage?: Transport['onmessage'];
  onerror?: (error: Error) => void;
  onclose?: () => void;
  #closed = false;

  constructor(private readonly page: Page) {}

  async start(): Promise<void> {}

  async send(message: JSONRPCMessage): Promise<void> {
    if (this.#closed) return;
    await this.page.evaluate((m) => (globalThis as unknown as HostPage).switchyardToView(m), message);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.onclose?.();
  }

  deliver(message: JSONRPCMessage): void {
    if (!this.#closed) this.onmessage?.(message);
  }
}

// ---- the server and its side of the wire ----

/** server-basic-vanillajs over HTTP in its own process; it takes its port from PORT only. */
async function startAppsHttp(): Promise<{ url: URL; close(): Promise<void> }> {
  const port = await freePort();
  const child: ChildProcessWithoutNullStreams = spawn(NODE, [APPS_BIN], { stdio: 'pipe', env: { PATH: process.env.PATH, PORT: String(port) } });
  try {
    await waitForLine(child, /^MCP server listening on /);
  } catch (err) {
    await stopChild(child);
    throw err;
  }
  return { url: new URL(`http://127.0.0.1:${port}/mcp`), close: () => stopChild(child) };
}

/** An HTTP proxy in front of the server that journals every JSON-RPC message posted through it. */
async function startRecordingProxy(target: URL): Promise<Route> {
  const received: Message[] = [];
  const proxy: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      if (body.length > 0) {
        try {
          const parsed = JSON.parse(body.toString('utf8')) as Message | Message[];
          received.push(...(Array.isArray(parsed) ? parsed : [parsed]));
        } catch {
          // not JSON: forwarded as is, the server answers it
        }
      }
      const headers: OutgoingHttpHeaders = { ...req.headers, host: target.host };
      delete headers.connection;
      delete headers['keep-alive'];
      const forward = request(new URL(req.url ?? '/', target), { method: req.method, headers, agent: false }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      forward.on('error', () => res.destroy());
      res.on('close', () => forward.destroy());
      forward.end(body);
    });
  });
  await new Promise<void>((resolve, reject) => {
    proxy.once('error', reject);
    proxy.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = proxy.address() as AddressInfo;
  return {
    url: new URL(`http://127.0.0.1:${port}${target.pathname}`),
    received: async () => received,
    close: () =>
      new Promise<void>((resolve) => {
        proxy.closeAllConnections();
        proxy.close(() => resolve());
      }),
  };
}

/**
 * A stdio wrapper (node -e, CommonJS): runs the rest of its argv as a node child, appending every
 * byte the gateway writes to the child's stdin to $SWITCHYARD_JOURNAL first.
 */
const STDIN_TEE = `
const { spawn } = require('node:child_process');
const { appendFileSync } = require('node:fs');
const child = spawn(process.execPath, process.argv.slice(1), { stdio: ['pipe', 'inherit', 'inherit'] });
process.stdin.on('data', (chunk) => { appendFileSync(process.env.SWITCHYARD_JOURNAL, chunk); child.stdin.write(chunk); });
process.stdin.on('end', () => child.stdin.end());
child.stdin.on('error', () => {});
child.on('exit', (code) => process.exit(code ?? 1));
for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => child.kill(signal));
`;

async function readJournal(file: string): Promise<Message[]> {
  const text = await readFile(file, 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as Message);
}

/** A stdio MCP server (SDK v1, node --input-type=module -e) that declares `extensions` and one tool. */
function extensionServer(extensions: Record<string, unknown>): string {
  const sdk = (path: string) => pathToFileURL(join(ROOT, 'node_modules/@modelcontextprotocol/sdk/dist/esm', path)).href;
  return `
import { McpServer } from ${JSON.stringify(sdk('server/mcp.js'))};
import { StdioServerTransport } from ${JSON.stringify(sdk('server/stdio.js'))};
const server = new McpServer({ name: 'extensions-server', version: '1.0.0' }, { capabilities: { extensions: ${JSON.stringify(extensions)} } });
server.registerTool('noop', { description: 'does nothing' }, async () => ({ content: [] }));
await server.connect(new StdioServerTransport());
`;
}

// ---- small things ----

async function startGatewayOrClose(raw: Record<string, unknown>, route: Route): Promise<TestGateway> {
  try {
    return await startGateway(raw, { logLevel: 'warn' });
  } catch (err) {
    await route.close();
    throw err;
  }
}

async function closeAll(...things: { close(): Promise<void> }[]): Promise<void> {
  for (const thing of things) await thing.close().catch(() => {});
}

function bounded<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
