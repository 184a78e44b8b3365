// Extra MCP endpoints beside listen.path, end to end: each shows the intersection of the
// principal's teams and its own allow/deny, refuses principals of other teams with 403, keeps
// its sessions to itself, prepends its instructions, has its own protected resource metadata
// under OAuth and its own metrics label; and annotation selectors (`annotation:<hint>`) in team
// rules, which match what the upstream declares and which no view can grant.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { JWTPayload } from 'jose';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/auth/api-keys.js';
import { configFromObject } from '../../src/config/load.js';
import { poll } from '../helpers/cli.js';
import { connectClient, endSessions, startGateway, textOf, upstream, type TestGateway } from '../helpers/gateway.js';
import { scrape } from '../helpers/metrics.js';
import { startAuthServer, type AuthServer } from '../helpers/oauth.js';
import { FIXTURES, MEMORY_BIN, NODE, ROOT } from '../helpers/paths.js';
import { listAll, namesOf, notAnsweredAsUnknown, sorted, toolsThatDidNotRun } from '../helpers/policy.js';
import { initializeMessage, initializeRaw, postRpc, sendIn, type RawSession } from '../helpers/raw-http.js';

/** Bounds every wait for something that should happen soon. */
const PROMPT_MS = 10_000;
const PAY_KEY = 'sk-switchyard-endpoint-pay-5b1e9c3a7d20f846';
const SUP_KEY = 'sk-switchyard-endpoint-sup-e04a6d2c8f1b3957';
const PAY_INSTRUCTIONS = 'Payments desk: refunds need a ticket number.';

// What the real servers list to a client without sampling or elicitation (server-everything
// 2026.8.31, server-memory), and which of them declare readOnlyHint / destructiveHint /
// idempotentHint / openWorldHint true.
const ev = (...names: string[]): string[] => names.map((n) => `everything__${n}`);
const mem = (...names: string[]): string[] => names.map((n) => `memory__${n}`);
const EVERYTHING_READ_ONLY = ev('echo', 'get-annotated-message', 'get-env', 'get-resource-links', 'get-resource-reference', 'get-structured-content', 'get-sum', 'get-tiny-image', 'trigger-long-running-operation');
const EVERYTHING_TOOLS = [...EVERYTHING_READ_ONLY, ...ev('gzip-file-as-resource', 'toggle-simulated-logging', 'toggle-subscriber-updates', 'simulate-research-query')];
const MEMORY_READ_ONLY = mem('read_graph', 'search_nodes', 'open_nodes');
const MEMORY_DESTRUCTIVE = mem('delete_entities', 'delete_observations', 'delete_relations');
const MEMORY_TOOLS = [...mem('create_entities', 'create_relations', 'add_observations'), ...MEMORY_DESTRUCTIVE, ...MEMORY_READ_ONLY];
const ANNOTATED_TOOLS = ['bare', 'empty', 'falsy', 'reader', 'contradiction', 'world', 'again'].map((n) => `annotated__${n}`);

let dir: string;
/** SDK sessions the current test opened: ended and closed after it, whatever happened. */
const opened: Client[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'switchyard-endpoints-'));
});

afterEach(() => endSessions(opened));

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** server-memory with its own file in this run's temp dir. */
const memory = (name: string) => ({ stdio: { command: NODE, args: [MEMORY_BIN], env: { MEMORY_FILE_PATH: join(dir, `${name}.jsonl`) } } });
const apiKey = (key: string): Record<string, string> => ({ 'x-api-key': key });
const bearer = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` });
const at = (gw: TestGateway, path: string): URL => new URL(path, gw.url);

/** An SDK client session on `url` with `headers` on every request; closed after the test. */
async function open(url: URL, headers: Record<string, string> = {}): Promise<Client> {
  const client = await connectClient(url, {}, undefined, headers);
  opened.push(client);
  return client;
}

const toolNames = async (client: Client): Promise<string[]> => sorted((await namesOf(client)).tools);

describe('endpoints beside the main one, with API keys', () => {
  let gw: TestGateway;
  const payments = () => apiKey(PAY_KEY);
  // The same kind of key, sent as a bearer token.
  const support = () => bearer(SUP_KEY);

  beforeAll(async () => {
    gw = await startGateway(
      {
        auth: {
          apiKeys: [
            { id: 'pay', hash: hashApiKey(PAY_KEY), team: 'payments' },
            { id: 'sup', hash: hashApiKey(SUP_KEY), team: 'support' },
          ],
        },
        teams: [
          { name: 'payments', allow: ['everything__*'], deny: ['everything__get-env'] },
          { name: 'support', allow: ['upstream:memory', 'everything__echo'] },
        ],
        endpoints: [
          { path: '/payments/mcp', teams: ['payments'], allow: ['everything__get-*', 'memory__*'], deny: ['*__get-tiny-image'], instructions: PAY_INSTRUCTIONS },
          { path: '/open/mcp', allow: ['*__echo', 'memory__read_graph', 'memory__search_nodes'] },
        ],
        metrics: { enabled: true },
        upstreams: { everything: upstream.everything(), memory: memory('keys') },
      },
      { logLevel: 'warn' },
    );
  });

  afterAll(async () => {
    await gw?.close();
  });

  it("shows the intersection of the principal's team rules and the endpoint's allow and deny, the main endpoint unchanged", async () => {
    expect(await toolNames(await open(at(gw, '/payments/mcp'), payments()))).toEqual(
      sorted(ev('get-annotated-message', 'get-resource-links', 'get-resource-reference', 'get-structured-content', 'get-sum')),
    );
    expect(await toolNames(await open(gw.url, payments()))).toEqual(sorted(EVERYTHING_TOOLS.filter((n) => n !== 'everything__get-env')));
    expect(await toolNames(await open(gw.url, support()))).toEqual(sorted([...MEMORY_TOOLS, 'everything__echo']));
  });

  it('serves an endpoint without teams to every team, each within its own rules', async () => {
    expect(await toolNames(await open(at(gw, '/open/mcp'), payments()))).toEqual(['everything__echo']);
    expect(await toolNames(await open(at(gw, '/open/mcp'), support()))).toEqual(sorted(['everything__echo', 'memory__read_graph', 'memory__search_nodes']));
  });

  it('runs every tool the endpoint lists, and answers a call outside it exactly like an unknown tool', async () => {
    const client = await open(at(gw, '/payments/mcp'), payments());
    const listed = await toolNames(client);
    expect(await toolsThatDidNotRun(client, listed)).toEqual([]);
    // Allowed by the team but not the endpoint, by the endpoint but not the team, denied by the
    // endpoint, on an upstream the team cannot see, and made up.
    const outside = ['everything__echo', 'everything__get-env', 'everything__get-tiny-image', 'memory__read_graph', 'memory__delete_entities', 'everything__no-such-tool', 'nosuch__tool'];
    expect(await notAnsweredAsUnknown(client, 'tool', outside)).toEqual([]);

    const wide = await open(at(gw, '/open/mcp'), payments());
    expect(textOf(await wide.callTool({ name: 'everything__echo', arguments: { message: 'open' } }))).toBe('Echo: open');
    expect(await notAnsweredAsUnknown(wide, 'tool', ['memory__read_graph', 'everything__get-sum'])).toEqual([]);
  });

  it("refuses a principal in none of the endpoint's teams with HTTP 403 on every request", async () => {
    const url = at(gw, '/payments/mcp');
    const init = await postRpc(url, initializeMessage(), { headers: support() });
    expect(init.status, init.text).toBe(403);
    expect(init.headers.get('mcp-session-id')).toBeNull();
    const ping = await postRpc(url, { jsonrpc: '2.0', id: 1, method: 'ping' }, { headers: support() });
    expect(ping.status, ping.text).toBe(403);
    // The same principal is served on the main endpoint, and no credentials at all is still 401.
    expect((await postRpc(gw.url, initializeMessage(), { headers: support() })).status).toBe(200);
    expect((await postRpc(url, initializeMessage())).status).toBe(401);
  });

  it('keeps a session to the endpoint it was opened on: its id is 404 anywhere else', async () => {
    const listRequest = { jsonrpc: '2.0', id: 5, method: 'tools/list', params: {} };
    const onPayments = await initializeRaw(at(gw, '/payments/mcp'), { headers: payments() });
    const onMain = await initializeRaw(gw.url, { headers: payments() });
    const elsewhere = (session: RawSession, url: URL) => postRpc(url, listRequest, { headers: session.headers });
    expect((await elsewhere(onPayments, gw.url)).status).toBe(404);
    expect((await elsewhere(onPayments, at(gw, '/open/mcp'))).status).toBe(404);
    expect((await elsewhere(onMain, at(gw, '/payments/mcp'))).status).toBe(404);
    // Still alive where they belong.
    for (const session of [onPayments, onMain]) {
      const reply = await sendIn(session, listRequest);
      expect(reply.status, reply.text).toBe(200);
      expect(reply.messages.find((m) => m.id === 5)?.result).toBeDefined();
    }
  });

  it("prepends the endpoint's instructions to the merged upstream instructions", async () => {
    const main = (await open(gw.url, payments())).getInstructions();
    expect(main).toContain('# Everything Server');
    expect(main).not.toContain(PAY_INSTRUCTIONS);
    const endpoint = (await open(at(gw, '/payments/mcp'), payments())).getInstructions();
    expect(endpoint?.startsWith(PAY_INSTRUCTIONS), endpoint?.slice(0, 200)).toBe(true);
    // The same sections below it, naming the tools the endpoint hides (all but get-*) as their upstream wrote them.
    const hidden = (text: string): string => text.replace(/`everything__((?!get-)[^`]+)`/g, '`$1`');
    expect(endpoint?.endsWith(hidden(main!))).toBe(true);
    expect((await open(at(gw, '/open/mcp'), payments())).getInstructions()).not.toContain(PAY_INSTRUCTIONS);
  });

  it('counts requests per endpoint in switchyard_endpoint_requests_total, the main one under listen.path', async () => {
    const metricsUrl = at(gw, '/metrics');
    const perEndpoint = async (): Promise<Record<string, number>> => {
      const counts: Record<string, number> = {};
      for (const [series, value] of await scrape(metricsUrl)) {
        const endpoint = /^switchyard_endpoint_requests_total\{.*\bendpoint="([^"]*)"/.exec(series)?.[1];
        if (endpoint !== undefined) counts[endpoint] = (counts[endpoint] ?? 0) + value;
      }
      return counts;
    };
    // Raw sessions: between the two readings they send exactly these requests and nothing else.
    const sessions = { '/payments/mcp': 3, '/mcp': 1, '/open/mcp': 2 };
    const raw = await Promise.all(Object.keys(sessions).map((path) => initializeRaw(at(gw, path), { headers: payments() })));
    const before = await perEndpoint();
    let id = 100;
    for (const [i, count] of Object.values(sessions).entries()) {
      for (let n = 0; n < count; n++) {
        const reply = await sendIn(raw[i]!, { jsonrpc: '2.0', id: ++id, method: 'tools/call', params: { name: 'everything__get-sum', arguments: { a: n, b: 1 } } });
        // /open/mcp does not show get-sum: the unknown-tool answer is a request all the same.
        expect(reply.status, reply.text).toBe(200);
      }
    }
    const grown = (now: Record<string, number>) => Object.fromEntries(Object.keys(sessions).map((path) => [path, (now[path] ?? 0) - (before[path] ?? 0)]));
    const after = await poll(async () => {
      const now = grown(await perEndpoint());
      return Object.entries(sessions).every(([path, count]) => now[path]! >= count) ? now : undefined;
    }, 'the endpoint request counters to grow', PROMPT_MS).catch(async () => grown(await perEndpoint()));
    expect(after).toEqual(sessions);
    const series = [...(await scrape(metricsUrl)).keys()];
    expect(series.some((s) => s.startsWith('switchyard_endpoint_requests_total{') && s.includes('endpoint="/payments/mcp"') && s.includes('"tools/call"'))).toBe(true);
  });
});

describe('an endpoint under OAuth', () => {
  const RESOURCE = 'https://mcp.example.test/mcp';
  const PAYMENTS_RESOURCE = 'https://mcp.example.test/payments/mcp';
  const PAYMENTS_METADATA = 'https://mcp.example.test/.well-known/oauth-protected-resource/payments/mcp';
  let as: AuthServer;
  let gw: TestGateway;

  beforeAll(async () => {
    as = await startAuthServer();
    gw = await startGateway(
      {
        listen: { port: 0, publicUrl: RESOURCE },
        auth: { oauth: { issuer: as.issuer, jwksUri: as.jwksUri, algorithms: ['RS256'] } },
        teams: [
          { name: 'payments', match: { claim: 'groups', value: 'payments' }, allow: ['everything__*'] },
          { name: 'support', match: { claim: 'groups', value: 'support' }, allow: ['everything__echo'] },
        ],
        endpoints: [{ path: '/payments/mcp', teams: ['payments'], allow: ['everything__echo', 'everything__get-sum'] }],
        upstreams: { everything: upstream.everything() },
      },
      { logLevel: 'warn' },
    );
  });

  afterAll(async () => {
    await gw?.close();
    await as?.close();
  });

  /** A token for both the main resource and the endpoint's, whichever the gateway checks. */
  async function tokenFor(sub: string, groups: string[]): Promise<Record<string, string>> {
    const now = Math.floor(Date.now() / 1_000);
    const claims: JWTPayload = { iss: as.issuer, aud: [RESOURCE, PAYMENTS_RESOURCE], sub, iat: now, exp: now + 600, groups };
    return bearer(await as.sign(claims));
  }

  it("serves RFC 9728 metadata for the endpoint naming the endpoint's own URL", async () => {
    const res = await fetch(at(gw, '/.well-known/oauth-protected-resource/payments/mcp'), { signal: AbortSignal.timeout(PROMPT_MS) });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ resource: PAYMENTS_RESOURCE, authorization_servers: [as.issuer] });
    // The main resource's document is unchanged.
    const main = await fetch(at(gw, '/.well-known/oauth-protected-resource/mcp'), { signal: AbortSignal.timeout(PROMPT_MS) });
    expect(((await main.json()) as { resource: string }).resource).toBe(RESOURCE);
  });

  it("challenges a request without a token on the endpoint with the endpoint's resource_metadata", async () => {
    const reply = await postRpc(at(gw, '/payments/mcp'), initializeMessage());
    expect(reply.status).toBe(401);
    expect(reply.headers.get('www-authenticate')).toContain(`resource_metadata="${PAYMENTS_METADATA}"`);
  });

  it("admits a principal whose JWT claims put it in the endpoint's team, and refuses another team with 403", async () => {
    const client = await open(at(gw, '/payments/mcp'), await tokenFor('pat', ['payments']));
    expect(await toolNames(client)).toEqual(['everything__echo', 'everything__get-sum']);
    expect(textOf(await client.callTool({ name: 'everything__get-sum', arguments: { a: 2, b: 3 } }))).toBe('The sum of 2 and 3 is 5.');
    const refused = await postRpc(at(gw, '/payments/mcp'), initializeMessage(), { headers: await tokenFor('sam', ['support']) });
    expect(refused.status, refused.text).toBe(403);
  });
});

describe('endpoints on loopback without auth', () => {
  let gw: TestGateway;

  beforeAll(async () => {
    gw = await startGateway(
      {
        teams: [
          { name: 'everyone', default: true, allow: ['everything__*'] },
          { name: 'ops', allow: ['upstream:memory'] },
        ],
        endpoints: [
          { path: '/readonly/mcp', teams: ['everyone'], allow: ['annotation:readOnlyHint'], deny: ['everything__get-env'] },
          { path: '/ops/mcp', teams: ['ops'] },
        ],
        upstreams: { everything: upstream.everything(), memory: memory('loopback') },
      },
      { logLevel: 'warn' },
    );
  });

  afterAll(async () => {
    await gw?.close();
  });

  it('puts everyone in the default team, and an endpoint of another team answers 403', async () => {
    const client = await open(at(gw, '/readonly/mcp'));
    expect(await toolNames(client)).toEqual(sorted(EVERYTHING_READ_ONLY.filter((n) => n !== 'everything__get-env')));
    expect(await notAnsweredAsUnknown(client, 'tool', ['everything__toggle-simulated-logging', 'everything__get-env', 'memory__read_graph'])).toEqual([]);
    const refused = await postRpc(at(gw, '/ops/mcp'), initializeMessage());
    expect(refused.status, refused.text).toBe(403);
  });

  it('serves a 2026-07-28 client the same intersection, and calls outside it as unknown', async () => {
    const V = '2026-07-28';
    const meta = { 'io.modelcontextprotocol/protocolVersion': V, 'io.modelcontextprotocol/clientCapabilities': {}, 'io.modelcontextprotocol/clientInfo': { name: 'raw-2026', version: '1' } };
    const send = (id: number, method: string, params: Record<string, unknown>, name?: string) =>
      postRpc(at(gw, '/readonly/mcp'), { jsonrpc: '2.0', id, method, params: { ...params, _meta: meta } }, { protocolVersion: V, headers: { 'mcp-method': method, ...(name ? { 'mcp-name': name } : {}) } });
    const listed = await send(1, 'tools/list', {});
    expect(listed.status, listed.text).toBe(200);
    const tools = ((listed.json as { result: { tools: { name: string }[] } }).result.tools).map((t) => t.name);
    expect(sorted(tools)).toEqual(sorted(EVERYTHING_READ_ONLY.filter((n) => n !== 'everything__get-env')));
    const hidden = await send(2, 'tools/call', { name: 'everything__get-env', arguments: {} }, 'everything__get-env');
    expect(hidden.json).toMatchObject({ id: 2, error: { code: -32602, message: 'Unknown tool: everything__get-env' } });
    const other = await postRpc(at(gw, '/ops/mcp'), { jsonrpc: '2.0', id: 3, method: 'tools/list', params: { _meta: meta } }, { protocolVersion: V, headers: { 'mcp-method': 'tools/list' } });
    expect(other.status, other.text).toBe(403);
  });
});

describe('annotation selectors', () => {
  const KEYS = { readers: 'sk-sy-readers-1f4c8e2a6b0d9357', cautious: 'sk-sy-cautious-7a3e1c9b5d2f0846', world: 'sk-sy-world-c28b6e0a4f1d7395', idem: 'sk-sy-idem-5e9a1d3c7b2f0648', relabelled: 'sk-sy-relabel-0d6b2f8e4a1c9573' };
  const READ_ONLY_RULES = { allow: ['annotation:readOnlyHint'], deny: ['annotation:destructiveHint'] };
  const RELABELLED_VIEWS = {
    memory__delete_entities: { name: 'safe_lookup', title: 'Safe lookup', description: 'Read-only: looks entities up and changes nothing.' },
    memory__search_nodes: { name: 'find_nodes' },
  };
  const teams = (views: Record<string, unknown> = RELABELLED_VIEWS) => [
    { name: 'readers', ...READ_ONLY_RULES },
    { name: 'cautious', deny: ['annotation:destructiveHint'] },
    { name: 'world', allow: ['annotation:openWorldHint'] },
    { name: 'idem', allow: ['annotation:idempotentHint'] },
    { name: 'relabelled', ...READ_ONLY_RULES, views },
  ];
  const raw = (views?: Record<string, unknown>) => ({
    auth: { apiKeys: Object.entries(KEYS).map(([team, key]) => ({ id: team, hash: hashApiKey(key), team })) },
    teams: teams(views),
    upstreams: { everything: upstream.everything(), memory: memory('annotations'), annotated: { stdio: { command: NODE, args: [join(FIXTURES, 'annotated-server.mjs')] } } },
  });
  const READERS = [...EVERYTHING_READ_ONLY, ...MEMORY_READ_ONLY, 'annotated__reader'];
  let gw: TestGateway;

  beforeAll(async () => {
    gw = await startGateway(raw(), { logLevel: 'warn' });
  });

  afterAll(async () => {
    await gw?.close();
  });

  const as = (team: keyof typeof KEYS) => open(gw.url, apiKey(KEYS[team]));

  it('shows readers only tools whose upstream says readOnlyHint: true and not destructiveHint: true', async () => {
    const client = await as('readers');
    const tools = (await listAll(client)).tools;
    expect(sorted(tools.map((t) => String(t.name)))).toEqual(sorted(READERS));
    // What the upstream declared, passed on as it is.
    expect(tools.filter((t) => (t.annotations as { readOnlyHint?: boolean } | undefined)?.readOnlyHint !== true).map((t) => t.name)).toEqual([]);
    expect(textOf(await client.callTool({ name: 'annotated__reader', arguments: {} }))).toBe('ran reader');
    expect(JSON.parse(textOf(await client.callTool({ name: 'memory__read_graph', arguments: {} })))).toMatchObject({ entities: expect.any(Array) });
  });

  it('hides a destructive tool from readers, and its call answers Unknown tool even before any list', async () => {
    const client = await as('readers');
    // No tools/list first: the gateway must know the annotations by itself.
    const hidden = [...MEMORY_DESTRUCTIVE, 'annotated__contradiction', 'everything__toggle-simulated-logging', 'memory__create_entities', 'annotated__bare'];
    expect(await notAnsweredAsUnknown(client, 'tool', hidden)).toEqual([]);
    expect((await toolNames(client)).filter((n) => hidden.includes(n))).toEqual([]);
  });

  it('denies exactly the tools declared destructive; a tool without the hint, or with it false, is not matched', async () => {
    const client = await as('cautious');
    const destructive = [...MEMORY_DESTRUCTIVE, 'annotated__contradiction'];
    expect(await toolNames(client)).toEqual(sorted([...EVERYTHING_TOOLS, ...MEMORY_TOOLS, ...ANNOTATED_TOOLS].filter((n) => !destructive.includes(n))));
    expect(await notAnsweredAsUnknown(client, 'tool', destructive)).toEqual([]);
    expect(textOf(await client.callTool({ name: 'annotated__bare', arguments: {} }))).toBe('ran bare');
  });

  it('selects by openWorldHint and idempotentHint the tools that set them true, and only those', async () => {
    expect(await toolNames(await as('world'))).toEqual(sorted(['everything__gzip-file-as-resource', 'annotated__world']));
    expect(await toolNames(await as('idem'))).toEqual(sorted([...EVERYTHING_READ_ONLY, 'everything__gzip-file-as-resource', ...MEMORY_DESTRUCTIVE, ...MEMORY_READ_ONLY, 'annotated__again']));
  });

  it('lets no view grant readOnlyHint: a relabelled destructive tool stays hidden, a renamed read-only one stays read-only', async () => {
    const client = await as('relabelled');
    const tools = (await listAll(client)).tools;
    expect(sorted(tools.map((t) => String(t.name)))).toEqual(sorted([...READERS.filter((n) => n !== 'memory__search_nodes'), 'find_nodes']));
    expect(tools.find((t) => t.name === 'find_nodes')?.annotations).toMatchObject({ readOnlyHint: true });
    expect(await notAnsweredAsUnknown(client, 'tool', ['safe_lookup', 'memory__delete_entities', 'memory__search_nodes'])).toEqual([]);
    expect(JSON.parse(textOf(await client.callTool({ name: 'find_nodes', arguments: { query: 'nothing-here' } })))).toMatchObject({ entities: [] });
    // A view has no annotations to set: a config that tries is refused.
    for (const granting of [{ annotations: { readOnlyHint: true } }, { readOnlyHint: true }]) {
      expect(() => configFromObject(raw({ memory__delete_entities: granting }), { file: join(ROOT, 'gateway.test.yaml'), env: {} })).toThrow();
    }
  });
});
