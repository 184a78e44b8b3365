// The stateless section of `npm run bench` (`--only stateless`): what a tools/call of a
// 2026-07-28 client (no session) costs through the gateway, and the three ways to avoid the cost
// of isolation an anonymous one pays (bench/README.md, "Stateless clients"). Cases, each on a
// gateway of its own:
//   1. a principal (API key), server-everything over stdio: the baseline (and, on the same
//      gateway, a sessions-era session's call, for reference);
//   2. anonymous, the same upstream (per session, stateful), back to back;
//   3. anonymous, the same upstream with `warm: 1`, calls 400 ms apart, and back to back;
//   4. anonymous, server-memory over stdio with `sharing: shared` (and a principal on a gateway
//      of the same upstream);
//   5. anonymous, an HTTP sessions-era upstream (bench/upstream-http.mjs), against a principal
//      (and a sessions-era session) on a gateway of the same upstream;
//   6. direct: the HTTP upstream (a sessions-era session), and each stdio server over its own
//      stdio from here.
// Every client is a wire client: raw JSON-RPC on a keep-alive undici pool, no SDK, one call at a
// time. The cases take turns (A B C … C B A), fresh processes each round; each turn opens with a
// call that is not counted, so a back-to-back turn is back to back from its first counted call.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';
import { gatewayConfig, median, root, start } from './parts.mjs';
import { stopGateway } from './proc.mjs';

const node = process.execPath;
const STATELESS_VERSION = '2026-07-28';
const SESSIONS_VERSION = '2025-11-25';
const CLIENT = { name: 'switchyard-bench-stateless', version: '1' };
/** The `_meta` every 2026-07-28 request carries (test/helpers/stateless-wire.ts). */
const META = {
  'io.modelcontextprotocol/protocolVersion': STATELESS_VERSION,
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': CLIENT,
};
const API_KEY = 'sy-bench-stateless-0123456789abcdef';
/** The pause before each call of the spaced case, in ms (after the previous one's answer). */
export const SPACED_MS = 400;
const bin = (name) => join(root, 'node_modules', '@modelcontextprotocol', name, 'dist', 'index.js');

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// ---------- the wire clients ----------

/** The JSON-RPC answer to request `id` in an HTTP body, JSON or SSE; throws on an error. */
function answerOf(what, statusCode, contentType, text, id) {
  if (statusCode !== 200) throw new Error(`stateless: ${what}: HTTP ${statusCode} ${text.slice(0, 200)}`);
  let reply;
  if (String(contentType).startsWith('text/event-stream')) {
    for (const line of text.split('\n')) {
      if (!line.startsWith('data: {')) continue;
      const event = JSON.parse(line.slice(6));
      if (event.id === id && !('method' in event)) reply = event;
    }
  } else reply = JSON.parse(text);
  if (!reply) throw new Error(`stateless: ${what}: no answer in the body`);
  if (reply.error) throw new Error(`stateless: ${what}: ${reply.error.message}`);
  return reply.result;
}

/**
 * A 2026-07-28 client: each tools/call one POST with MCP-Protocol-Version, Mcp-Method, Mcp-Name
 * and the `_meta` of its revision; `headers` (an API key) on every request.
 */
function statelessClient(href, headers = {}) {
  const url = new URL(href);
  const pool = new Pool(url.origin, { connections: 1, pipelining: 1, keepAliveTimeout: 60_000 });
  let id = 0;
  return {
    async call(name, args) {
      const message = { jsonrpc: '2.0', id: ++id, method: 'tools/call', params: { name, arguments: args, _meta: META } };
      const sent = {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': STATELESS_VERSION,
        'mcp-method': 'tools/call',
        'mcp-name': name,
        ...headers,
      };
      const { statusCode, headers: answer, body } = await pool.request({ path: url.pathname, method: 'POST', headers: sent, body: JSON.stringify(message), headersTimeout: 60_000, bodyTimeout: 60_000 });
      return answerOf(`tools/call ${name}`, statusCode, answer['content-type'], await body.text(), message.id);
    },
    close: () => pool.close(),
  };
}

/** A sessions-era client: initialize + initialized on the first call, DELETE at close. */
function sessionClient(href, headers = {}) {
  const url = new URL(href);
  const pool = new Pool(url.origin, { connections: 1, pipelining: 1, keepAliveTimeout: 60_000 });
  const base = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers };
  let session;
  let id = 0;
  const post = async (message) => {
    const sent = session ? { ...base, 'mcp-session-id': session, 'mcp-protocol-version': SESSIONS_VERSION } : base;
    const { statusCode, headers: answer, body } = await pool.request({ path: url.pathname, method: 'POST', headers: sent, body: JSON.stringify(message), headersTimeout: 60_000, bodyTimeout: 60_000 });
    const text = await body.text();
    if (message.id === undefined) {
      if (statusCode !== 202 && statusCode !== 200) throw new Error(`stateless: ${message.method}: HTTP ${statusCode}`);
      return undefined;
    }
    session ??= answer['mcp-session-id'];
    return answerOf(message.method, statusCode, answer['content-type'], text, message.id);
  };
  let opened;
  return {
    async call(name, args) {
      opened ??= (async () => {
        await post({ jsonrpc: '2.0', id: ++id, method: 'initialize', params: { protocolVersion: SESSIONS_VERSION, capabilities: {}, clientInfo: CLIENT } });
        await post({ jsonrpc: '2.0', method: 'notifications/initialized' });
      })();
      await opened;
      return post({ jsonrpc: '2.0', id: ++id, method: 'tools/call', params: { name, arguments: args } });
    },
    async close() {
      if (session) {
        await pool.request({ path: url.pathname, method: 'DELETE', headers: { ...headers, 'mcp-session-id': session, 'mcp-protocol-version': SESSIONS_VERSION } }).then(({ body }) => body.dump()).catch(() => {});
      }
      await pool.close();
    },
  };
}

/**
 * A stdio server spoken to directly from here (no gateway): the child spawned, initialize +
 * initialized on the first call; one message a line.
 */
function stdioClient({ command, args, env = {} }) {
  const child = spawn(command, args, { cwd: root, env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'ignore'] });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const waiting = new Map();
  let buffer = '';
  child.stdout.on('data', (chunk) => {
    buffer += chunk;
    for (let at = buffer.indexOf('\n'); at >= 0; at = buffer.indexOf('\n')) {
      const line = buffer.slice(0, at);
      buffer = buffer.slice(at + 1);
      if (!line.startsWith('{')) continue;
      const message = JSON.parse(line);
      if (message.id !== undefined && !('method' in message)) waiting.get(message.id)?.(message);
    }
  });
  let id = 0;
  const request = (method, params) => new Promise((resolve, reject) => {
    const n = ++id;
    const timer = setTimeout(() => reject(new Error(`stateless: ${command} ${args.join(' ')}: no answer to ${method}`)), 60_000);
    waiting.set(n, (message) => {
      clearTimeout(timer);
      waiting.delete(n);
      if (message.error) reject(new Error(`stateless: ${method}: ${message.error.message}`));
      else resolve(message.result);
    });
    child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: n, method, params })}\n`);
  });
  let opened;
  return {
    pid: child.pid,
    async call(name, args) {
      opened ??= (async () => {
        await request('initialize', { protocolVersion: SESSIONS_VERSION, capabilities: {}, clientInfo: CLIENT });
        child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
      })();
      await opened;
      return request('tools/call', { name, arguments: args });
    },
    async close() {
      child.stdin.end();
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

// ---------- gateways and their children ----------

/** The two stdio servers of node_modules, the memory file under `dir`. */
function servers(dir) {
  return {
    everything: { command: node, args: [bin('server-everything'), 'stdio'] },
    memory: { command: node, args: [bin('server-memory')], env: { MEMORY_FILE_PATH: join(dir, 'stateless-memory.jsonl') } },
  };
}

/**
 * The gateways' upstreams, by the ids their tools are prefixed with: server-everything as the
 * bundled gateway.yaml has it (`stateful: true`), with `warm: 1` or without; server-memory
 * shared; the HTTP upstream.
 */
function upstreamsOf(dir, upstreamUrl) {
  const { everything, memory } = servers(dir);
  return {
    everything: { everything: { stdio: everything, stateful: true } },
    warm: { everything: { stdio: everything, stateful: true, warm: 1 } },
    memory: { memory: { stdio: memory, sharing: 'shared' } },
    http: { http: { http: { url: upstreamUrl } } },
  };
}

/** The gateways of the section: name, upstreams, and whether clients need an API key. */
const GATEWAYS = [
  { name: 'principal-stdio', upstreams: 'everything', keyed: true },
  { name: 'anonymous-stdio', upstreams: 'everything', keyed: false },
  { name: 'anonymous-warm', upstreams: 'warm', keyed: false },
  { name: 'anonymous-shared', upstreams: 'memory', keyed: false },
  { name: 'principal-shared', upstreams: 'memory', keyed: true },
  { name: 'principal-http', upstreams: 'http', keyed: true },
  { name: 'anonymous-http', upstreams: 'http', keyed: false },
];

/**
 * A gateway of `buildDir` as the bench's others (port 0, warnings only, no probes); with `keyed`,
 * `auth.apiKeys` holds the bench's key (its sha256), so an anonymous request is refused there.
 */
async function gateway(buildDir, dir, { name, upstreams, keyed }) {
  const file = join(dir, `stateless-${name}.yaml`);
  const hash = `sha256:${createHash('sha256').update(API_KEY, 'utf8').digest('hex')}`;
  const auth = keyed ? `auth: ${JSON.stringify({ apiKeys: [{ id: 'bench', hash }] })}\n` : '';
  await writeFile(file, `${gatewayConfig(upstreams, { sessions: 1_000 })}${auth}`);
  return start(`stateless ${name}`, node, [join(buildDir, 'main.js'), '--config', file, '--port', '0']);
}

// ---------- the cases ----------

const echo = (tool) => ({
  tool,
  args: (i) => ({ message: `stateless-${i}` }),
  check: (result, i) => {
    const text = result?.content?.[0]?.text;
    return !result?.isError && typeof text === 'string' && text.includes(`stateless-${i}`);
  },
});
const readGraph = (tool) => ({
  tool,
  args: () => ({}),
  check: (result) => !result?.isError && Array.isArray(result?.content) && result.content.length > 0,
});

const KEYED = { 'x-api-key': API_KEY };

/**
 * The cases in their turn order: key, label, the gateway (or the upstream) it calls, how its
 * client is opened, the call and its check, the pause before each counted call.
 */
function casesOf(dir) {
  const stdio = servers(dir);
  return [
    { key: 'principal', label: '1. principal (API key), everything stdio', gateway: 'principal-stdio', open: (url) => statelessClient(url, KEYED), ...echo('everything__echo') },
    { key: 'principalSession', label: '   sessions-era session, everything stdio', gateway: 'principal-stdio', open: (url) => sessionClient(url, KEYED), ...echo('everything__echo') },
    { key: 'anonymous', label: '2. anonymous, everything stdio, back to back', gateway: 'anonymous-stdio', open: (url) => statelessClient(url), ...echo('everything__echo') },
    { key: 'warmSpaced', label: `3. anonymous, warm: 1, ${SPACED_MS} ms apart`, gateway: 'anonymous-warm', open: (url) => statelessClient(url), ...echo('everything__echo'), spacing: SPACED_MS },
    { key: 'warmBackToBack', label: '   anonymous, warm: 1, back to back', gateway: 'anonymous-warm', open: (url) => statelessClient(url), ...echo('everything__echo') },
    { key: 'shared', label: '4. anonymous, memory stdio, sharing: shared', gateway: 'anonymous-shared', open: (url) => statelessClient(url), ...readGraph('memory__read_graph') },
    { key: 'principalShared', label: '   principal (API key), memory stdio, shared', gateway: 'principal-shared', open: (url) => statelessClient(url, KEYED), ...readGraph('memory__read_graph') },
    { key: 'anonymousHttp', label: '5. anonymous, HTTP upstream', gateway: 'anonymous-http', open: (url) => statelessClient(url), ...echo('http__echo') },
    { key: 'principalHttp', label: '   principal (API key), HTTP upstream', gateway: 'principal-http', open: (url) => statelessClient(url, KEYED), ...echo('http__echo') },
    { key: 'sessionHttp', label: '   sessions-era session, HTTP upstream', gateway: 'principal-http', open: (url) => sessionClient(url, KEYED), ...echo('http__echo') },
    { key: 'direct', label: '6. direct, HTTP upstream (a session)', upstream: 'http', open: (url) => sessionClient(url), ...echo('echo') },
    { key: 'directEverything', label: '   direct, everything over its stdio', open: () => stdioClient(stdio.everything), ...echo('echo') },
    { key: 'directMemory', label: '   direct, memory over its stdio', open: () => stdioClient(stdio.memory), ...readGraph('read_graph') },
  ];
}

/** Times one call of `c` and checks its answer; ms. */
async function timedCall(c, i) {
  const t0 = performance.now();
  const result = await c.client.call(c.tool, c.args(i));
  const ms = performance.now() - t0;
  if (!c.check(result, i)) throw new Error(`stateless: ${c.label.trim()}: tools/call ${c.tool} answered ${JSON.stringify(result).slice(0, 300)}`);
  return ms;
}

const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
function percentiles(samples) {
  const sorted = [...samples].sort((a, b) => a - b);
  return { n: sorted.length, p50: quantile(sorted, 0.5), p95: quantile(sorted, 0.95), max: sorted[sorted.length - 1] };
}

/**
 * One round on fresh gateways and children: each case's `warmUp` calls (not counted), then
 * `turns` turns per case in the order A B C …, … C B A, each turn a call that is not counted and
 * `perTurn` counted ones. Per case: p50, p95, max and the samples' count.
 */
async function round({ buildDir, dir, upstreamUrl, turns, perTurn, warmUp, call }) {
  const gateways = {};
  const cases = casesOf(dir);
  try {
    for (const spec of GATEWAYS) gateways[spec.name] = await gateway(buildDir, dir, { ...spec, upstreams: upstreamsOf(dir, upstreamUrl)[spec.upstreams] });
    for (const c of cases) {
      c.client = c.open(c.upstream ? upstreamUrl : gateways[c.gateway]?.url);
      for (let i = 0; i < warmUp; i++) await timedCall(c, call.next++);
      c.samples = [];
    }
    for (let turn = 0; turn < turns; turn++) {
      for (const c of turn % 2 ? [...cases].reverse() : cases) {
        await timedCall(c, call.next++); // the turn's lead-in, not counted
        for (let i = 0; i < perTurn; i++) {
          if (c.spacing) await sleep(c.spacing);
          c.samples.push(await timedCall(c, call.next++));
        }
      }
    }
    return Object.fromEntries(cases.map((c) => [c.key, percentiles(c.samples)]));
  } finally {
    await Promise.all(cases.map((c) => c.client?.close().catch(() => {})));
    await Promise.all(Object.values(gateways).map(stopGateway));
  }
}

/**
 * The whole section: `rounds` rounds (fresh gateways each) of `turns` × `perTurn` counted calls
 * per case; `quick` shrinks the counts. `upstreamUrl` is the run's bench/upstream-http.mjs. `say`
 * prints a line (run.mjs's), `fmt` formats a figure. Judges no target.
 */
export async function runStateless({ buildDir, dir, upstreamUrl, rounds, quick, say, fmt }) {
  const sizes = quick ? { turns: 1, perTurn: 5, warmUp: 1 } : { turns: 4, perTurn: 10, warmUp: 3 };
  const cases = casesOf(dir);
  say(`\nStateless clients (2026-07-28, no session): a tools/call through the gateway, one at a time, wire client (bench/stateless.mjs); ${rounds} round(s) on fresh gateways, ${sizes.turns} turn(s) per case a round in the order A B C … C B A, each turn 1 call not counted + ${sizes.perTurn} counted, after ${sizes.warmUp} warm-up call(s) per case (ms; the median over the rounds, each round in parentheses; ratios round by round, then their median):`);
  const call = { next: 0 };
  const byRound = [];
  // The machine's 1-minute load average after each round: a spawn's cost follows the CPU left.
  const load = [];
  for (let r = 0; r < rounds; r++) {
    byRound.push(await round({ buildDir, dir, upstreamUrl, ...sizes, call }));
    load.push(loadavg()[0]);
  }
  const mid = (key, q) => median(byRound.map((x) => x[key][q]));
  const ratio = (key, base, q) => median(byRound.map((x) => x[key][q] / x[base][q]));
  const each = (key, q) => byRound.map((x) => fmt(x[key][q], 1)).join(', ');
  say(`  ${'case'.padEnd(46)} ${'p50'.padStart(8)} ${'p95'.padStart(8)}   ${'/ case 1 p50, p95'.padEnd(18)}  (p50 by round; p95 by round)`);
  for (const c of cases) {
    const rel = c.key === 'principal' ? '1.00, 1.00' : `${fmt(ratio(c.key, 'principal', 'p50'))}, ${fmt(ratio(c.key, 'principal', 'p95'))}`;
    say(`  ${c.label.padEnd(46)} ${fmt(mid(c.key, 'p50'), 2).padStart(8)} ${fmt(mid(c.key, 'p95'), 2).padStart(8)}   ${rel.padEnd(18)}  (${each(c.key, 'p50')}; ${each(c.key, 'p95')})`);
  }
  const pair = (label, key, base) => say(`  ${label.padEnd(46)} p50 ${fmt(ratio(key, base, 'p50'))}, p95 ${fmt(ratio(key, base, 'p95'))}`);
  pair('4. anonymous / principal, memory shared', 'shared', 'principalShared');
  pair('5. anonymous / principal, HTTP upstream', 'anonymousHttp', 'principalHttp');
  pair('   principal / direct, HTTP upstream', 'principalHttp', 'direct');
  pair('   principal / sessions-era session, stdio', 'principal', 'principalSession');
  pair('   principal / sessions-era session, HTTP', 'principalHttp', 'sessionHttp');
  pair('   principal / direct, everything stdio', 'principal', 'directEverything');
  pair('   anonymous shared / direct, memory stdio', 'shared', 'directMemory');
  say(`  load average (1 min, ${cpus().length} CPUs) after each round: ${load.map((x) => fmt(x, 1)).join(', ')}`);
  return { rounds, ...sizes, spacingMs: SPACED_MS, load, cases: cases.map(({ key, label }) => ({ key, label: label.trim() })), byRound };
}
