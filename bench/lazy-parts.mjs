// The parts of the lazy section of `npm run bench` (bench/lazy.mjs): gateways configured as the
// bundled gateway.yaml is, their upstreams, the children and RSS of a gateway read from /proc,
// and the wire client every measurement drives (JSON-RPC on a keep-alive undici pool, no SDK,
// as bench/loadgen.mjs sends it).
import { spawnSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gatewayConfig, here, root, start } from './parts.mjs';
import { childrenOf, rssBytes } from './proc.mjs';
import { PROTOCOL, wire as wireClient } from './wire.mjs';

export { PROTOCOL };

export const node = process.execPath;
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

/** The wire client (bench/wire.mjs) as this section's sessions introduce themselves. */
export const wire = (href, options = {}) => wireClient(href, { ...options, client: CLIENT });

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
