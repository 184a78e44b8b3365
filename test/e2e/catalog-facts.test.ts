// What one session learned of a tool never decides for another, and a big catalog costs no
// schema compilation until a tool is called (issue "Hold under hostile load", items 2 and 6).
// The upstream is a per-session stdio fixture that answers alice and bob differently.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, type ClientCapabilities } from '@modelcontextprotocol/sdk/types.js';
import { startGateway, textOf, type TestGateway } from '../helpers/gateway.js';
import { retainedBytes } from '../helpers/memory.js';
import { scrape } from '../helpers/metrics.js';
import { listAll } from '../helpers/policy.js';
import { FIXTURES, NODE } from '../helpers/paths.js';

const twoFaced = (env: Record<string, string> = {}) => ({ stdio: { command: NODE, args: [join(FIXTURES, 'two-faced-server.mjs')], env } });

async function connectAs(gw: TestGateway, name: string, capabilities: ClientCapabilities = {}, prepare?: (client: Client) => void): Promise<Client> {
  const client = new Client({ name, version: '1.0.0' }, { capabilities });
  prepare?.(client);
  await client.connect(new StreamableHTTPClientTransport(gw.url));
  return client;
}

async function metric(gw: TestGateway, name: string): Promise<number> {
  const series = await scrape(new URL('/metrics', gw.url));
  let total = 0;
  for (const [key, value] of series) if (key === name || key.startsWith(`${name}{`)) total += value;
  return total;
}

describe('tool facts stay with the session whose list they came from', () => {
  let gw: TestGateway;
  const clients: Client[] = [];

  beforeAll(async () => {
    gw = await startGateway({ teams: [{ name: 'everyone', default: true, confirm: true }], upstreams: { faces: twoFaced() } }, { logLevel: 'warn' });
  });

  afterAll(async () => {
    await Promise.allSettled(clients.map((c) => c.close()));
    await gw?.close();
  });

  it("bob's list does not change how alice's call is checked", async () => {
    const alice = await connectAs(gw, 'alice', { elicitation: {} }, (c) => c.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { confirm: true } })));
    const bob = await connectAs(gw, 'bob');
    clients.push(alice, bob);
    const aliceAct = (await alice.listTools()).tools.find((t) => t.name === 'faces__act');
    expect(aliceAct?.inputSchema.properties).toEqual({ x: { type: 'string' } });
    // Bob reads his list after alice: before the fix, his schema replaced hers gateway-wide.
    const bobAct = (await bob.listTools()).tools.find((t) => t.name === 'faces__act');
    expect(bobAct?.inputSchema.properties).toEqual({ x: { type: 'number' } });

    const aliceResult = await alice.callTool({ name: 'faces__act', arguments: { x: 'text' } });
    expect(aliceResult.isError).not.toBe(true);
    expect(textOf(aliceResult)).toBe('act {"x":"text"}');
    const bobResult = await bob.callTool({ name: 'faces__act', arguments: { x: 'text' } });
    expect(bobResult.isError).toBe(true);
    expect(textOf(bobResult)).toBe('Invalid arguments for tool faces__act: /x must be number');
  });

  it("alice's destructive tool asks her, whatever bob's list said", async () => {
    const asked: unknown[] = [];
    const alice = await connectAs(gw, 'alice', { elicitation: {} }, (c) =>
      c.setRequestHandler(ElicitRequestSchema, async (request) => {
        asked.push(request.params);
        return { action: 'decline' };
      }),
    );
    const bob = await connectAs(gw, 'bob', { elicitation: {} }, (c) =>
      c.setRequestHandler(ElicitRequestSchema, async (request) => {
        asked.push(request.params);
        return { action: 'decline' };
      }),
    );
    clients.push(alice, bob);
    await alice.listTools();
    await bob.listTools();
    const result = await alice.callTool({ name: 'faces__act', arguments: { x: 'prod' } });
    expect(asked).toHaveLength(1);
    expect(textOf(result)).toBe('The user declined to run faces__act. It was not run.');
    // The fixture's record holds only this call of `calls` itself: act never reached it.
    expect(JSON.parse(textOf(await alice.callTool({ name: 'faces__calls', arguments: {} })))).toEqual([{ name: 'calls', arguments: {} }]);
    // Bob's act is not destructive for him: it runs without asking.
    expect(textOf(await bob.callTool({ name: 'faces__act', arguments: { x: 1 } }))).toBe('act {"x":1}');
    expect(asked).toHaveLength(1);
  });

  it('a session that calls a tool before listing learns its facts from its own upstream session', async () => {
    const bob = await connectAs(gw, 'bob');
    const alice = await connectAs(gw, 'alice');
    clients.push(alice, bob);
    await bob.listTools();
    const result = await alice.callTool({ name: 'faces__act', arguments: { x: 'unlisted' } });
    // Alice cannot be asked (no elicitation): her act is destructive, so it is refused, not run.
    expect(result.isError).toBe(true);
    expect(textOf(result)).toContain('faces__act is destructive');
  });
});

describe('a big catalog', () => {
  let gw: TestGateway;
  const clients: Client[] = [];

  beforeAll(async () => {
    gw = await startGateway(
      {
        metrics: { enabled: true },
        upstreams: {
          big: { ...twoFaced({ TOOL_COUNT: '100000', PAGE_SIZE: '5000' }), maxTools: 200_000, maxToolBytes: 1024 * 1024 * 1024 },
          capped: { ...twoFaced({ TOOL_COUNT: '300', PAGE_SIZE: '100' }), maxTools: 150 },
        },
      },
      { logLevel: 'warn' },
    );
  });

  afterAll(async () => {
    await Promise.allSettled(clients.map((c) => c.close()));
    await gw?.close();
  });

  it('compiles no schema to list 100,000 tools, one on the first call, none on the next, while another session is served', async () => {
    const lister = await connectAs(gw, 'lister');
    const other = await connectAs(gw, 'other');
    clients.push(lister, other);
    const before = await metric(gw, 'switchyard_tool_schemas_compiled_total');
    const heldBefore = retainedBytes();
    let pings = 0;
    let listing = true;
    const pinging = (async () => {
      while (listing) {
        await other.ping();
        pings++;
      }
    })();
    const { tools } = await listAll(lister).finally(() => (listing = false));
    await pinging;
    expect(tools.filter((t) => String(t.name).startsWith('big__'))).toHaveLength(100_002);
    expect(pings).toBeGreaterThan(0);
    expect(await metric(gw, 'switchyard_tool_schemas_compiled_total')).toBe(before);
    // What the gateway keeps of the list (the session's names and facts; the client's copy of
    // 100,000 tools lives in this process too): compiled validators for all of them took >1 GB.
    const growth = retainedBytes() - heldBefore;
    expect(growth).toBeLessThan(256 * 1024 * 1024);

    const invalid = await lister.callTool({ name: 'big__bulk-99999', arguments: { field99999: 5 } });
    expect(textOf(invalid)).toBe('Invalid arguments for tool big__bulk-99999: /field99999 must be string');
    expect(await metric(gw, 'switchyard_tool_schemas_compiled_total')).toBe(before + 1);
    // Cached by content: the next call, in this session or another, compiles nothing.
    expect(textOf(await lister.callTool({ name: 'big__bulk-99999', arguments: { field99999: 'abcdef' } }))).toBe('bulk-99999 {"field99999":"abcdef"}');
    expect(textOf(await other.callTool({ name: 'big__bulk-99999', arguments: { field99999: 'abcdef' } }))).toBe('bulk-99999 {"field99999":"abcdef"}');
    expect(await metric(gw, 'switchyard_tool_schemas_compiled_total')).toBe(before + 1);
  });

  it('lists no more than maxTools of an upstream, says so once in the log and counts it', async () => {
    const client = await connectAs(gw, 'capped-reader');
    clients.push(client);
    const { tools } = await listAll(client);
    expect(tools.filter((t) => String(t.name).startsWith('capped__'))).toHaveLength(150);
    expect(await metric(gw, 'switchyard_catalog_truncated_total')).toBeGreaterThanOrEqual(1);
    await listAll(client);
    const warnings = gw.logs.filter((line) => line.includes('more tools than its limit') && line.includes('"capped"'));
    expect(warnings).toHaveLength(1);
    // A tool past the limit is unknown, like any tool the session was not shown.
    await expect(client.callTool({ name: 'capped__bulk-290', arguments: { 'field290': 'x' } })).rejects.toThrow(/Unknown tool: capped__bulk-290/);
  });
});
