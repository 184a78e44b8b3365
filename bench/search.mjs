// The search section of `npm run bench` (`--only search`): what an endpoint with
// `discovery: search` costs and finds (bench/README.md, "Search").
//   1. search_tools latency over a 1,000-tool catalogue (bench/search-fixture.mjs), one call at
//      a time, against a plain tools/call of `echo` through the same gateway (a list-mode
//      endpoint) and call_tool of it through the search endpoint; by the SDK v1 client over
//      Streamable HTTP and by a wire client (plain JSON-RPC on one undici connection), all
//      interleaved call by call; a fresh gateway each round.
//   2. tools/list bytes of the search endpoint against a list endpoint of the same gateway, over
//      four real servers (everything, memory, filesystem, sequential-thinking), and with the
//      recorded GitHub server as well.
//   3. Retrieval: recall@1 and recall@5 of search_tools over bench/search-queries.json, the
//      tools of those five real servers.
import { setMaxListeners } from 'node:events';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Pool } from 'undici';
import { CATALOGUE_SIZE } from './search-fixture.mjs';
import { gatewayConfig, here, median, root, start } from './parts.mjs';

const SEARCH_PATH = '/search/mcp';
const LIST_PATH = '/list/mcp';
const PROTOCOL = '2025-11-25';

/** Requests a user could make of the 1,000-tool catalogue, cycled through by the latency runs. */
export const LATENCY_QUERIES = [
  'refund the last charge for this customer',
  'which pods are crash looping in staging',
  'show unpaid invoices from last month',
  'book a meeting room for 10 people tomorrow',
  'who is on call for payments right now',
  'roll back the checkout deployment',
  "escalate the angry customer's ticket",
  'send the quarterly survey to all employees',
  'rotate the database password secret',
  'how many leads came from the webinar campaign',
  'translate this paragraph into German',
  'track the package for order 1182',
  "approve Maria's vacation request",
  'turn off the new checkout feature flag in production',
  'what will the weather be in Lisbon this weekend',
  'run a read-only SQL query against the orders table',
  'post a message to the releases channel',
  'unsubscribe this address from the newsletter audience',
  'find free time for Anna, Ben and me next week',
  'renew the certificate for api.example.com',
  'export all expense reports for Q3 as CSV',
  'silence the disk space alerts during maintenance',
  "schedule tomorrow's blog article for 9am",
  'retry the failed build job',
];

const node = process.execPath;
const bin = (name) => join(root, 'node_modules', '@modelcontextprotocol', name, 'dist', 'index.js');

/** The four real servers from node_modules, as gateway upstreams (state kept under `dir`). */
export async function realUpstreams(dir) {
  const allowed = join(dir, 'search-fs-root');
  await mkdir(allowed, { recursive: true });
  await writeFile(join(allowed, 'notes.txt'), 'a file for the filesystem server to find\n');
  return {
    everything: { stdio: { command: node, args: [bin('server-everything'), 'stdio'] } },
    memory: { stdio: { command: node, args: [bin('server-memory')], env: { MEMORY_FILE_PATH: join(dir, 'search-memory.jsonl') } } },
    filesystem: { stdio: { command: node, args: [bin('server-filesystem'), allowed] } },
    'sequential-thinking': { stdio: { command: node, args: [bin('server-sequential-thinking')], env: { DISABLE_THOUGHT_LOGGING: 'true' } } },
  };
}

export const recordedGithub = { github: { stdio: { command: node, args: [join(here, 'search-fixture.mjs'), '--recorded', join(here, 'search-recorded-github.json')] } } };

/** A gateway whose /search/mcp searches and /list/mcp lists, both over `upstreams`. */
export async function searchGateway(buildDir, dir, name, upstreams) {
  const file = join(dir, `${name}.yaml`);
  const endpoints = ['endpoints:', `  - { path: ${SEARCH_PATH}, discovery: search, pinned: [] }`, `  - { path: ${LIST_PATH}, discovery: list }`];
  await writeFile(file, `${gatewayConfig(upstreams, { sessions: 100 })}${endpoints.join('\n')}\n`);
  let gateway;
  try {
    gateway = await start(`gateway (${name})`, node, [join(buildDir, 'main.js'), '--config', file, '--port', '0']);
  } catch (err) {
    throw new Error(`search: the gateway did not start with endpoints of discovery: search and list (is the search discovery mode in this build?)\n${err.message}`);
  }
  return { ...gateway, search: new URL(SEARCH_PATH, gateway.url), list: new URL(LIST_PATH, gateway.url) };
}

/**
 * fetch for the SDK's transport, as the global one, except that the transport's one signal (on
 * every request it sends) is told not to warn: fetch drops its abort listener only when the
 * request is garbage-collected, so thousands of calls pass Node's listener warning in between.
 */
const quietFetch = (input, init) => {
  if (init?.signal) setMaxListeners(0, init.signal);
  return fetch(input, init);
};

/** An SDK v1 client with a session on `url`. */
async function connect(url) {
  const client = new Client({ name: 'switchyard-bench-search', version: '1' });
  try {
    await client.connect(new StreamableHTTPClientTransport(url, { fetch: quietFetch }));
  } catch (err) {
    throw new Error(`search: no MCP session could be opened on ${url.pathname}: ${err.message}`);
  }
  return client;
}

/**
 * The wire client: JSON-RPC on one keep-alive connection (undici, as bench/loadgen.mjs does), a
 * session of its own, no SDK; `callTool` answers the result as the SDK client's does.
 */
async function wire(url) {
  const pool = new Pool(url.origin, { connections: 1, pipelining: 1, keepAliveTimeout: 60_000 });
  const base = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  let session;
  let id = 0;
  const post = async (message) => {
    const headers = session ? { ...base, 'mcp-session-id': session, 'mcp-protocol-version': PROTOCOL } : base;
    const { statusCode, headers: answer, body } = await pool.request({ path: url.pathname, method: 'POST', headers, body: JSON.stringify(message) });
    const text = await body.text();
    if (message.id === undefined) return undefined;
    if (statusCode !== 200) throw new Error(`search: ${message.method} on ${url.pathname}: HTTP ${statusCode} ${text.slice(0, 200)}`);
    session ??= answer['mcp-session-id'];
    const raw = String(answer['content-type']).startsWith('text/event-stream') ? text.split('\n').filter((l) => l.startsWith('data: {')).map((l) => l.slice(6)).find((d) => JSON.parse(d).id === message.id) : text;
    const reply = JSON.parse(raw);
    if (reply.error) throw new Error(`search: ${message.method} on ${url.pathname}: ${reply.error.message}`);
    return reply.result;
  };
  await post({ jsonrpc: '2.0', id: id++, method: 'initialize', params: { protocolVersion: PROTOCOL, capabilities: {}, clientInfo: { name: 'switchyard-bench-search-wire', version: '1' } } });
  await post({ jsonrpc: '2.0', method: 'notifications/initialized' });
  return {
    callTool: (params) => post({ jsonrpc: '2.0', id: id++, method: 'tools/call', params }),
    close: async () => {
      await pool.request({ path: url.pathname, method: 'DELETE', headers: { 'mcp-session-id': session, 'mcp-protocol-version': PROTOCOL } }).then(({ body }) => body.dump()).catch(() => {});
      await pool.close();
    },
  };
}

/** Every tool listed on `client`'s endpoint, cursors followed. */
async function listAll(client) {
  const tools = [];
  let cursor;
  do {
    const page = await client.listTools(cursor ? { cursor } : undefined);
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor);
  return tools;
}

/** Fails clearly unless the search endpoint lists search_tools and call_tool. */
function expectSearchMode(tools, where) {
  const names = tools.map((t) => t.name);
  if (names.includes('search_tools') && names.includes('call_tool')) return;
  const shown = names.length > 6 ? `${names.slice(0, 6).join(', ')}, …` : names.join(', ');
  throw new Error(`search: tools/list on ${where} (discovery: search) shows ${names.length} tools (${shown}) and ${names.includes('search_tools') ? 'no call_tool' : 'no search_tools'}: discovery: search is not implemented in this build, or not as the contract says (pinned + search_tools + call_tool)`);
}

/** search_tools on `client`: the names of the tools found, best first. */
async function search(client, query, limit) {
  const result = await client.callTool({ name: 'search_tools', arguments: { query, limit } });
  if (result.isError) throw new Error(`search: search_tools ${JSON.stringify(query)} answered an error: ${JSON.stringify(result.content).slice(0, 300)}`);
  const tools = result.structuredContent?.tools;
  if (!Array.isArray(tools)) throw new Error(`search: search_tools ${JSON.stringify(query)} answered no structuredContent.tools: ${JSON.stringify(result).slice(0, 300)}`);
  if (tools.length > limit) throw new Error(`search: search_tools answered ${tools.length} tools for limit ${limit}`);
  for (const t of tools) if (typeof t?.name !== 'string' || typeof t.inputSchema !== 'object') throw new Error(`search: search_tools answered a tool without name and inputSchema: ${JSON.stringify(t).slice(0, 200)}`);
  return tools.map((t) => t.name);
}

async function echo(client, name, message, through) {
  const result = through === 'call_tool' ? await client.callTool({ name: 'call_tool', arguments: { name, arguments: { message } } }) : await client.callTool({ name, arguments: { message } });
  const text = result.content?.[0]?.text;
  if (result.isError || text !== message) throw new Error(`search: ${through} of ${name} answered ${JSON.stringify(result).slice(0, 300)}`);
}

const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
function percentiles(samples) {
  const sorted = [...samples].sort((a, b) => a - b);
  return { n: sorted.length, p50: quantile(sorted, 0.5), p90: quantile(sorted, 0.9), p99: quantile(sorted, 0.99), max: sorted[sorted.length - 1] };
}

/**
 * One round of part 1 on a fresh gateway: `warmUp` then `iterations` of each of search_tools
 * (limit 5, the queries in turn), tools/call echo on the list endpoint and call_tool echo on the
 * search endpoint, by each client (the SDK's and the wire client), interleaved call by call (the
 * order turned around every iteration).
 */
async function latencyRound({ buildDir, dir, iterations, warmUp }) {
  const gw = await searchGateway(buildDir, dir, 'search-latency', { saas: { stdio: { command: node, args: [join(here, 'search-fixture.mjs')] }, sharing: 'shared' } });
  const clients = [];
  const open = async (make, url) => {
    const client = await make(url);
    clients.push(client);
    return client;
  };
  try {
    const listing = await open(connect, gw.list);
    const listed = await listAll(listing);
    if (listed.length !== CATALOGUE_SIZE || !listed.some((t) => t.name === 'saas__echo')) throw new Error(`search: the list endpoint lists ${listed.length} tools, not the fixture's ${CATALOGUE_SIZE} with saas__echo`);
    const searching = await open(connect, gw.search);
    expectSearchMode(await listAll(searching), SEARCH_PATH);
    const by = { sdk: { searching, listing }, wire: { searching: await open(wire, gw.search), listing: await open(wire, gw.list) } };
    const samples = {};
    const steps = [];
    for (const [kind, c] of Object.entries(by)) {
      samples[kind] = { search: [], call: [], callTool: [] };
      steps.push(
        [kind, 'search', (i) => search(c.searching, LATENCY_QUERIES[i % LATENCY_QUERIES.length], 5)],
        [kind, 'call', (i) => echo(c.listing, 'saas__echo', `m${i}`, 'tools/call')],
        [kind, 'callTool', (i) => echo(c.searching, 'saas__echo', `m${i}`, 'call_tool')],
      );
    }
    for (let i = 0; i < warmUp + iterations; i++) {
      for (const [kind, key, run] of i % 2 ? [...steps].reverse() : steps) {
        const t0 = performance.now();
        await run(i);
        if (i >= warmUp) samples[kind][key].push(performance.now() - t0);
      }
    }
    return Object.fromEntries(Object.entries(samples).map(([kind, keys]) => [kind, Object.fromEntries(Object.entries(keys).map(([key, xs]) => [key, percentiles(xs)]))]));
  } finally {
    await Promise.all(clients.map((c) => c.close().catch(() => {})));
    await gw.stop();
  }
}

/** tools/list on `url` as a plain client sees it: tools and the bytes of every answer. */
export async function listBytes(url) {
  const post = async (session, message) => {
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    if (session) Object.assign(headers, { 'mcp-session-id': session, 'mcp-protocol-version': PROTOCOL });
    const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify(message), signal: AbortSignal.timeout(60_000) });
    const text = await res.text();
    if (message.id === undefined) return {};
    if (res.status !== 200) throw new Error(`search: ${message.method} on ${url.pathname}: HTTP ${res.status} ${text.slice(0, 200)}`);
    // The JSON-RPC answer as sent: the body, or the data of the SSE event that carries it.
    const raw = res.headers.get('content-type')?.startsWith('text/event-stream') ? text.split('\n').filter((l) => l.startsWith('data: {')).map((l) => l.slice(6)).find((d) => JSON.parse(d).id === message.id) : text;
    const body = JSON.parse(raw);
    if (body.error) throw new Error(`search: ${message.method} on ${url.pathname}: ${body.error.message}`);
    return { session: res.headers.get('mcp-session-id') ?? undefined, result: body.result, bytes: Buffer.byteLength(raw) };
  };
  const { session } = await post(undefined, { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: PROTOCOL, capabilities: {}, clientInfo: { name: 'switchyard-bench-search', version: '1' } } });
  await post(session, { jsonrpc: '2.0', method: 'notifications/initialized' });
  const tools = [];
  let bytes = 0;
  let cursor;
  for (let id = 1; ; id++) {
    const page = await post(session, { jsonrpc: '2.0', id, method: 'tools/list', ...(cursor ? { params: { cursor } } : {}) });
    tools.push(...page.result.tools);
    bytes += page.bytes;
    cursor = page.result.nextCursor;
    if (!cursor) break;
  }
  if (session) await fetch(url, { method: 'DELETE', headers: { 'mcp-session-id': session, 'mcp-protocol-version': PROTOCOL } }).catch(() => {});
  return { tools: tools.map((t) => t.name), bytes };
}

async function bytesOf(gw) {
  const [list, searching] = await Promise.all([listBytes(gw.list), listBytes(gw.search)]);
  return { list: { tools: list.tools.length, bytes: list.bytes }, search: { tools: searching.tools.length, names: searching.tools, bytes: searching.bytes }, ratio: searching.bytes / list.bytes };
}

/** Parts 2 and 3: tools/list bytes over the four real servers, then with GitHub too, and recall. */
async function realServers({ buildDir, dir, queriesFile }) {
  const real = await realUpstreams(dir);
  const gw4 = await searchGateway(buildDir, dir, 'search-real', real);
  let bytes;
  try {
    bytes = { real: await bytesOf(gw4) };
    expectSearchMode(bytes.real.search.names.map((name) => ({ name })), SEARCH_PATH);
  } finally {
    await gw4.stop();
  }
  const { queries } = JSON.parse(await readFile(queriesFile, 'utf8'));
  const gw5 = await searchGateway(buildDir, dir, 'search-retrieval', { ...real, ...recordedGithub });
  const clients = [];
  try {
    bytes.withGithub = await bytesOf(gw5);
    const listing = await connect(gw5.list);
    clients.push(listing);
    const listed = new Set((await listAll(listing)).map((t) => t.name));
    const unknown = queries.flatMap((q) => [q.tool, ...(q.also ?? [])]).filter((name) => !listed.has(name));
    if (unknown.length) throw new Error(`search: ${queriesFile} names tools the list endpoint does not list: ${[...new Set(unknown)].join(', ')}`);
    const searching = await connect(gw5.search);
    clients.push(searching);
    expectSearchMode(await listAll(searching), SEARCH_PATH);
    const results = [];
    for (const q of queries) {
      const found = await search(searching, q.query, 5);
      const wanted = [q.tool, ...(q.also ?? [])];
      const rank = found.findIndex((name) => wanted.includes(name));
      results.push({ query: q.query, tool: q.tool, rank: rank < 0 ? null : rank + 1, found });
    }
    const within = (k) => results.filter((r) => r.rank !== null && r.rank <= k).length;
    const servers = new Set([...listed].map((name) => name.split('__')[0]));
    return { bytes, retrieval: { tools: listed.size, servers: servers.size, queries: queries.length, at1: within(1), at5: within(5), recallAt1: within(1) / queries.length, recallAt5: within(5) / queries.length, mrr: results.reduce((sum, r) => sum + (r.rank ? 1 / r.rank : 0), 0) / queries.length, results } };
  } finally {
    await Promise.all(clients.map((c) => c.close().catch(() => {})));
    await gw5.stop();
  }
}

/**
 * The whole section: `rounds` latency rounds of `iterations` calls of each kind (after
 * `warmUp`), then the bytes and the retrieval set once (they do not vary run to run).
 * `say` prints a line (run.mjs's), `fmt` formats a figure.
 */
export async function runSearch({ buildDir, dir, rounds, iterations, warmUp, say, fmt, queriesFile = join(here, 'search-queries.json') }) {
  say(`\nSearch (an endpoint with discovery: search), ${CATALOGUE_SIZE.toLocaleString('en')}-tool catalogue (bench/search-fixture.mjs), ${rounds} round(s) on fresh gateways of ${iterations.toLocaleString('en')} calls of each kind and client after ${warmUp}, interleaved one at a time (ms):`);
  say('  SDK = the SDK v1 client over Streamable HTTP; wire = JSON-RPC on one keep-alive connection, no SDK (as the load generator)');
  const latency = [];
  for (let round = 0; round < rounds; round++) latency.push(await latencyRound({ buildDir, dir, iterations, warmUp }));
  const line = (label, pick, digits = 3) => {
    const xs = latency.map(pick);
    say(`  ${label.padEnd(44)} ${fmt(median(xs), digits).padStart(7)}   (${xs.map((x) => fmt(x, digits)).join(', ')})`);
  };
  for (const [kind, name] of [['sdk', 'SDK'], ['wire', 'wire']]) {
    for (const q of ['p50', 'p90', 'p99']) line(`${name}: search_tools (limit 5) ${q}`, (r) => r[kind].search[q]);
    for (const q of ['p50', 'p90', 'p99']) line(`${name}: tools/call echo, list endpoint ${q}`, (r) => r[kind].call[q]);
    line(`${name}: call_tool echo, search endpoint p50`, (r) => r[kind].callTool.p50);
    line(`${name}: search_tools p50 / tools/call p50`, (r) => r[kind].search.p50 / r[kind].call.p50, 2);
    line(`${name}: search_tools p50 − tools/call p50`, (r) => r[kind].search.p50 - r[kind].call.p50);
  }

  const { bytes, retrieval } = await realServers({ buildDir, dir, queriesFile });
  say('tools/list of the search endpoint against a list endpoint of the same gateway (bytes of the JSON-RPC answers):');
  const bytesLine = (label, b) => say(`  ${label.padEnd(44)} list ${b.list.tools} tools ${b.list.bytes.toLocaleString('en')} B; search ${b.search.tools} tools (${b.search.names.join(', ')}) ${b.search.bytes.toLocaleString('en')} B; search / list ${fmt(b.ratio, 3)} (${fmt(1 / b.ratio, 1)}× smaller)`);
  bytesLine('everything, memory, filesystem, seq.-th.', bytes.real);
  bytesLine('the same and github (recorded)', bytes.withGithub);
  say(`Retrieval: ${retrieval.queries} requests over ${retrieval.tools} tools of ${retrieval.servers} real servers (bench/search-queries.json), search_tools limit 5:`);
  say(`  recall@1 ${fmt(retrieval.recallAt1)} (${retrieval.at1}/${retrieval.queries})   recall@5 ${fmt(retrieval.recallAt5)} (${retrieval.at5}/${retrieval.queries})   MRR ${fmt(retrieval.mrr)}`);
  const missed = retrieval.results.filter((r) => r.rank === null);
  for (const r of missed) say(`  not in the top 5: ${JSON.stringify(r.query)} → ${r.tool} (found ${r.found.slice(0, 3).join(', ') || 'nothing'})`);
  return { catalogue: CATALOGUE_SIZE, iterations, warmUp, latency, bytes, retrieval };
}
