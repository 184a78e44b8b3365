// The parts of the lazy section of `npm run bench` (bench/lazy.mjs): gateways configured as the
// bundled gateway.yaml is, their upstreams, the children and RSS of a gateway read from /proc,
// and the wire client every measurement drives (JSON-RPC on a keep-alive undici pool, no SDK,
// as bench/loadgen.mjs sends it).
import { spawnSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Pool } from 'undici';
import { gatewayConfig, here, root, start } from './parts.mjs';
import { childrenOf, rssBytes } from './proc.mjs';

export const node = process.execPath;
export const PROTOCOL = '2025-06-18';
export const CLIENT = { name: 'switchyard-bench-lazy', version: '1' };
export const bin = (name) => join(root, 'node_modules', '@modelcontextprotocol', name, 'dist', 'index.js');

// ---------- processes, from /proc ----------

/** The RSS of `pids` together (those still running). */
export async function rssOf(pids) {
  const each = await Promise.all(pids.map((pid) => rssBytes(pid).catch(() => 0)));
  return each.reduce((sum, bytes) => sum + bytes, 0);
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Calls `check` every `every` ms until it answers something other than undefined; throws past `ms`. */
export async function poll(check, what, ms, every = 50) {
  const deadline = performance.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (performance.now() > deadline) throw new Error(`lazy: ${what}: not within ${ms / 1000} s`);
    await sleep(every);
  }
}

/** The number of the gateway's children once it has not changed for half a second. */
export async function steadyChildren(pid) {
  let last = -1;
  let since = 0;
  return poll(async () => {
    const count = (await childrenOf(pid)).length;
    if (count !== last) [last, since] = [count, performance.now()];
    return performance.now() - since >= 500 ? count : undefined;
  }, 'a steady number of children', 30_000, 50);
}

// ---------- gateways and their upstreams ----------

/**
 * The bundled gateway.yaml's upstreams, with absolute paths (the memory file under `dir`);
 * everything is `stateful` there, a key a base build has not (`base`: left out).
 */
export function bundledUpstreams(dir, { base = false } = {}) {
  return {
    everything: { stdio: { command: node, args: [bin('server-everything'), 'stdio'] }, ...(base ? {} : { stateful: true }) },
    memory: { stdio: { command: node, args: [bin('server-memory')], env: { MEMORY_FILE_PATH: join(dir, 'lazy-memory.jsonl') } } },
  };
}

/**
 * A gateway of `buildDir` configured as the bundled gateway.yaml is (namespacing `__`, the
 * /search/mcp endpoint in search mode, metrics on) but for `upstreams`, and as the bench's other
 * gateways are (port 0, warnings only, no probes, room for `sessions`).
 */
export async function gateway(buildDir, dir, name, upstreams, { sessions = 1_000 } = {}) {
  const file = join(dir, `${name}.yaml`);
  const pinned = upstreams.everything ? '[everything__echo]' : '[]';
  const bundle = ['namespacing: { separator: "__", maxNameLength: 64 }', 'endpoints:', `  - { path: /search/mcp, discovery: search, pinned: ${pinned} }`];
  await writeFile(file, `${gatewayConfig(upstreams, { sessions, metrics: true })}${bundle.join('\n')}\n`);
  const g = await start(name, node, [join(buildDir, 'main.js'), '--config', file, '--port', '0']);
  return { ...g, file };
}

/** A stdio upstream whose children are cheap to start: Perl where there is one, else Node. */
export function liteUpstream() {
  const perl = spawnSync('perl', ['-e', '1'], { stdio: 'ignore' });
  if (perl.status === 0) return { kind: 'perl (bench/upstream-stdio-lite.pl)', stdio: { command: 'perl', args: [join(here, 'upstream-stdio-lite.pl')] } };
  return { kind: 'node (bench/upstream-stdio.mjs; no perl here)', stdio: { command: node, args: [join(here, 'upstream-stdio.mjs')] } };
}

// ---------- the wire client ----------

/**
 * JSON-RPC over a keep-alive undici pool of `connections` (as bench/loadgen.mjs sends it), any
 * number of sessions on it. Accepts JSON and SSE answers; throws on an HTTP or JSON-RPC error.
 */
export function wire(href, { connections = 1 } = {}) {
  const url = new URL(href);
  const pool = new Pool(url.origin, { connections, pipelining: 1, keepAliveTimeout: 60_000 });
  const base = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  let id = 0;
  async function post(message, session) {
    const headers = session ? { ...base, 'mcp-session-id': session, 'mcp-protocol-version': PROTOCOL } : base;
    const { statusCode, headers: answer, body } = await pool.request({ path: url.pathname, method: 'POST', headers, body: JSON.stringify(message), headersTimeout: 120_000, bodyTimeout: 120_000 });
    const text = await body.text();
    if (message.id === undefined) {
      if (statusCode !== 202 && statusCode !== 200) throw new Error(`${message.method}: HTTP ${statusCode} ${text.slice(0, 200)}`);
      return {};
    }
    if (statusCode !== 200) throw new Error(`${message.method}: HTTP ${statusCode} ${text.slice(0, 200)}`);
    let reply;
    if (String(answer['content-type']).startsWith('text/event-stream')) {
      for (const line of text.split('\n')) {
        if (!line.startsWith('data: {')) continue;
        const event = JSON.parse(line.slice(6));
        if (event.id === message.id && !('method' in event)) reply = event;
      }
    } else reply = JSON.parse(text);
    if (!reply) throw new Error(`${message.method}: no response in the answer`);
    if (reply.error) throw new Error(`${message.method}: ${reply.error.message}`);
    return { session: answer['mcp-session-id'], result: reply.result };
  }
  return {
    /** initialize + notifications/initialized; the session id. */
    async open() {
      const { session, result } = await post({ jsonrpc: '2.0', id: id++, method: 'initialize', params: { protocolVersion: PROTOCOL, capabilities: {}, clientInfo: CLIENT } });
      if (!session || !result?.protocolVersion) throw new Error(`initialize: no session id or no result (${JSON.stringify(result).slice(0, 200)})`);
      await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, session);
      return session;
    },
    /** tools/list, every page; the names. */
    async list(session) {
      const names = [];
      let cursor;
      do {
        const { result } = await post({ jsonrpc: '2.0', id: id++, method: 'tools/list', ...(cursor ? { params: { cursor } } : {}) }, session);
        for (const tool of result.tools) names.push(tool.name);
        cursor = result.nextCursor;
      } while (cursor);
      return names;
    },
    /** tools/call of an echo tool, its answer checked. */
    async echo(session, tool, message) {
      const { result } = await post({ jsonrpc: '2.0', id: id++, method: 'tools/call', params: { name: tool, arguments: { message } } }, session);
      const text = result?.content?.[0]?.text;
      if (result?.isError || typeof text !== 'string' || !text.includes(message)) throw new Error(`tools/call ${tool}: ${JSON.stringify(result).slice(0, 200)}`);
    },
    async del(session) {
      const { statusCode, body } = await pool.request({ path: url.pathname, method: 'DELETE', headers: { 'mcp-session-id': session, 'mcp-protocol-version': PROTOCOL } });
      await body.dump();
      if (statusCode >= 300 && statusCode !== 404) throw new Error(`DELETE: HTTP ${statusCode}`);
    },
    close: () => pool.close(),
  };
}

/** `count` tasks by `concurrency` workers; errors counted, the first kept. */
export async function inParallel(count, concurrency, task) {
  let next = 0;
  let done = 0;
  let errors = 0;
  let firstError;
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, async () => {
    while (next < count) {
      const i = next++;
      try {
        await task(i);
        done++;
      } catch (err) {
        errors++;
        firstError ??= err.message;
      }
    }
  }));
  return { done, errors, ...(firstError ? { firstError } : {}) };
}

const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
export const p50 = (xs) => quantile([...xs].sort((a, b) => a - b), 0.5);
