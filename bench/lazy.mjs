// The lazy section of `npm run bench` (`--only lazy`): what a client session costs when it costs
// no upstream child until a request needs one (bench/README.md, "Lazy sessions"). Each figure is
// a ratio of two things measured in the same run:
//   1. RSS per idle session: 10,000 sessions held after initialize and tools/list (no DELETE) on
//      a gateway of the bundled gateway.yaml's two stdio upstreams (server-everything and
//      server-memory), the growth of the gateway's RSS over the sessions, and its children.
//   2. initialize with those two stdio upstreams against initialize with one HTTP upstream
//      (bench/upstream-http.mjs), interleaved A B A B on two gateways.
//   3. With `warm: 1`, a session's first tools/call (its own child handed over and initialized)
//      against its second one.
//   4. initialize with nine HTTP upstreams and one that never answers (bench/hung-http.mjs,
//      initTimeoutMs 1000) against the nine alone, interleaved A B A B.
//   5. The children left once `idleTimeout` (2 s) has passed after 1,000 sessions that each made
//      one call and were abandoned without DELETE (warm: 1).
// With a base build (`--lazy-base DIR`: a build from before lazy sessions), 1, 2 and 4 are
// measured on it too, with its keys (no idleTimeout, warm or stateful); 1 with 100 sessions,
// since there each session holds a child per upstream.
// Every client is a wire client: JSON-RPC on a keep-alive undici pool, no SDK, as
// bench/loadgen.mjs sends it. Children are counted from /proc (processes whose parent is the
// gateway), and every child a gateway leaves behind is waited for and killed by its pid.
import { spawn, spawnSync } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gatewayConfig, here, median, root, start } from './parts.mjs';
import { childrenOf, cpuSeconds, rssBytes, stopGateway } from './proc.mjs';
import { PROTOCOL, wire as wireClient } from './wire.mjs';

const node = process.execPath;
const CLIENT = { name: 'switchyard-bench-lazy', version: '1' };
/** The wire client (bench/wire.mjs) as this section's sessions introduce themselves. */
const wire = (href, options = {}) => wireClient(href, { ...options, client: CLIENT });
const bin = (name) => join(root, 'node_modules', '@modelcontextprotocol', name, 'dist', 'index.js');
/** Sessions of measurement 1 on a base build: each holds two children there (not 10,000 × 2). */
export const BASE_IDLE_SESSIONS = 100;
/** Measurement 5's idle timeout, in ms (written "2s" in its config), and its children ahead. */
const IDLE_TIMEOUT_MS = 2_000;
const WARM = 1;
const HUNG_INIT_TIMEOUT_MS = 1_000;

// ---------- processes, from /proc ----------

/** The RSS of `pids` together (those still running). */
async function rssOf(pids) {
  const each = await Promise.all(pids.map((pid) => rssBytes(pid).catch(() => 0)));
  return each.reduce((sum, bytes) => sum + bytes, 0);
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Calls `check` every `every` ms until it answers something other than undefined; throws past `ms`. */
async function poll(check, what, ms, every = 50) {
  const deadline = performance.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (performance.now() > deadline) throw new Error(`lazy: ${what}: not within ${ms / 1000} s`);
    await sleep(every);
  }
}

/** The number of the gateway's children once it has not changed for half a second. */
async function steadyChildren(pid) {
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
function bundledUpstreams(dir, { base = false } = {}) {
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
async function gateway(buildDir, dir, name, upstreams, { sessions = 1_000 } = {}) {
  const file = join(dir, `${name}.yaml`);
  const pinned = upstreams.everything ? '[everything__echo]' : '[]';
  const bundle = ['namespacing: { separator: "__", maxNameLength: 64 }', 'endpoints:', `  - { path: /search/mcp, discovery: search, pinned: ${pinned} }`];
  await writeFile(file, `${gatewayConfig(upstreams, { sessions, metrics: true })}${bundle.join('\n')}\n`);
  const g = await start(name, node, [join(buildDir, 'main.js'), '--config', file, '--port', '0']);
  return { ...g, file };
}

/** A stdio upstream whose children are cheap to start: Perl where there is one, else Node. */
function liteUpstream() {
  const perl = spawnSync('perl', ['-e', '1'], { stdio: 'ignore' });
  if (perl.status === 0) return { kind: 'perl (bench/upstream-stdio-lite.pl)', stdio: { command: 'perl', args: [join(here, 'upstream-stdio-lite.pl')] } };
  return { kind: 'node (bench/upstream-stdio.mjs; no perl here)', stdio: { command: node, args: [join(here, 'upstream-stdio.mjs')] } };
}

/** `count` tasks by `concurrency` workers; errors counted, the first kept. */
async function inParallel(count, concurrency, task) {
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
const p50 = (xs) => quantile([...xs].sort((a, b) => a - b), 0.5);

// ---------- 1. RSS per idle session ----------

async function idleSessions({ buildDir, dir, label, sessions, concurrency }) {
  const g = await gateway(buildDir, dir, `lazy-idle-${label}`, bundledUpstreams(dir, { base: label === 'base' }), { sessions: sessions + 100 });
  const client = wire(g.url, { connections: concurrency });
  try {
    const warmUp = Math.max(1, Math.min(50, Math.round(sessions / 20)));
    let tools = 0;
    for (let i = 0; i < warmUp; i++) {
      const names = await client.list(await client.open());
      if (!names.some((n) => n.startsWith('everything__')) || !names.some((n) => n.startsWith('memory__'))) throw new Error(`lazy: tools/list on ${label} lists no tools of both upstreams (${names.slice(0, 5).join(', ')}, …)`);
      tools = names.length;
    }
    const rssBefore = await rssBytes(g.pid);
    const before = await childrenOf(g.pid);
    const childrenRssBefore = await rssOf(before);
    const t0 = performance.now();
    const run = await inParallel(sessions, concurrency, async () => {
      const names = await client.list(await client.open());
      if (names.length !== tools) throw new Error(`tools/list listed ${names.length} tools, not ${tools}`);
    });
    const seconds = (performance.now() - t0) / 1000;
    const rssAfter = await rssBytes(g.pid);
    const children = await childrenOf(g.pid);
    const childrenRss = await rssOf(children);
    return {
      sessions, warmUp, tools, opened: run.done, errors: run.errors, firstError: run.firstError, seconds,
      rssBefore, rssAfter, bytesPerSession: (rssAfter - rssBefore) / sessions,
      childrenBefore: before.length, children: children.length, childrenPerSession: (children.length - before.length) / sessions,
      childrenRssBefore, childrenRss, childBytesPerSession: (childrenRss - childrenRssBefore) / sessions,
    };
  } finally {
    await client.close();
    await stopGateway(g);
  }
}

// ---------- 2 and 4: initialize, two gateways interleaved ----------

/**
 * initialize + initialized on `a` and `b` in turns (A B A B …), `pairs` of them per round after
 * `warmUp` of each; each session is deleted after its timed handshake, and the next handshake
 * waits until the gateway is back to the children it had before it (a base build's stdio
 * sessions take theirs with them). Per round: each one's p50 and their ratio.
 */
async function interleavedInits(a, b, { rounds, pairs, warmUp }) {
  const sides = [a, b].map((g) => ({ g, client: wire(g.url), children: 0 }));
  const settle = (side) => poll(async () => ((await childrenOf(side.g.pid)).length <= side.children ? true : undefined), `${side.g.name}: back to ${side.children} children after a DELETE`, 30_000, 10);
  const once = async (side) => {
    const t0 = performance.now();
    const session = await side.client.open();
    const ms = performance.now() - t0;
    await side.client.del(session);
    await settle(side);
    return ms;
  };
  try {
    for (const side of sides) {
      for (let i = 0; i < warmUp; i++) await side.client.del(await side.client.open());
      // What the gateway holds between sessions (a catalog's children).
      side.children = await steadyChildren(side.g.pid);
    }
    const result = [];
    for (let round = 0; round < rounds; round++) {
      const samples = sides.map(() => []);
      for (let i = 0; i < pairs; i++) for (const [k, side] of sides.entries()) samples[k].push(await once(side));
      const [pa, pb] = samples.map(p50);
      result.push({ a: pa, b: pb, ratio: pa / pb, n: pairs });
    }
    return result;
  } finally {
    await Promise.all(sides.map((side) => side.client.close()));
  }
}

async function initStdioVsHttp({ buildDir, dir, label, upstreamUrl, rounds, pairs, warmUp }) {
  const a = await gateway(buildDir, dir, `lazy-init-stdio-${label}`, bundledUpstreams(dir, { base: label === 'base' }));
  try {
    const b = await gateway(buildDir, dir, `lazy-init-http-${label}`, { b: { http: { url: upstreamUrl } } });
    try {
      return await interleavedInits(a, b, { rounds, pairs, warmUp });
    } finally {
      await stopGateway(b);
    }
  } finally {
    await stopGateway(a);
  }
}

async function initHung({ buildDir, dir, label, upstreamUrl, hungUrl, rounds, pairs, warmUp }) {
  const nine = Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`h${i + 1}`, { http: { url: upstreamUrl } }]));
  const a = await gateway(buildDir, dir, `lazy-hung-${label}`, { ...nine, hung: { http: { url: hungUrl }, initTimeoutMs: HUNG_INIT_TIMEOUT_MS } });
  try {
    const b = await gateway(buildDir, dir, `lazy-nine-${label}`, nine);
    try {
      return await interleavedInits(a, b, { rounds, pairs, warmUp });
    } finally {
      await stopGateway(b);
    }
  } finally {
    await stopGateway(a);
  }
}

// ---------- 3. the first call of a session, with warm: 1 ----------

/**
 * Resolves once the gateway has `count` children and none of them used CPU over the last
 * 100 ms: the child spawned ahead has started (a child still loading is not yet ready).
 */
async function quietChildren(pid, count) {
  return poll(async () => {
    const children = await childrenOf(pid);
    if (children.length !== count) return undefined;
    const before = await Promise.all(children.map((child) => cpuSeconds(child).catch(() => -1)));
    await sleep(100);
    const after = await Promise.all(children.map((child) => cpuSeconds(child).catch(() => -2)));
    return before.every((cpu, i) => cpu === after[i]) ? children : undefined;
  }, `${count} children, all started and idle`, 30_000, 20);
}

async function firstCalls({ buildDir, dir, rounds, sessions }) {
  const { everything } = bundledUpstreams(dir);
  const g = await gateway(buildDir, dir, 'lazy-first-call', { everything: { ...everything, warm: 1 } });
  const client = wire(g.url);
  try {
    // The warm-up session opens the catalog and takes the first child spawned ahead.
    const warmUp = await client.open();
    await client.echo(warmUp, 'everything__echo', 'warm-up');
    await client.del(warmUp);
    // Between sessions: the catalog's child and the one spawned ahead.
    const between = await steadyChildren(g.pid);
    const result = [];
    for (let round = 0; round < rounds; round++) {
      const first = [];
      const second = [];
      for (let i = 0; i < sessions; i++) {
        await quietChildren(g.pid, between);
        const session = await client.open();
        let t0 = performance.now();
        await client.echo(session, 'everything__echo', `first-${round}-${i}`);
        first.push(performance.now() - t0);
        t0 = performance.now();
        await client.echo(session, 'everything__echo', `second-${round}-${i}`);
        second.push(performance.now() - t0);
        await client.del(session);
      }
      result.push({ first: p50(first), second: p50(second), ratio: p50(first) / p50(second), n: sessions, firstMax: Math.max(...first) });
    }
    return { between, rounds: result };
  } finally {
    await client.close();
    await stopGateway(g);
  }
}

/**
 * The reference for 3: server-everything alone, as a child spawned ahead meets a session's first
 * call: a started child (idle, as quietChildren() waits for), then over its stdio from here
 * initialize, initialized, tools/list, a first and a second tools/call of echo, each timed.
 */
async function upstreamAlone({ samples }) {
  const { everything } = bundledUpstreams('');
  const result = [];
  for (let i = 0; i < samples; i++) {
    const child = spawn(everything.stdio.command, everything.stdio.args, { cwd: root, stdio: ['pipe', 'pipe', 'ignore'] });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    try {
      const waiting = new Map();
      let buffer = '';
      child.stdout.on('data', (chunk) => {
        buffer += chunk;
        for (let at = buffer.indexOf('\n'); at >= 0; at = buffer.indexOf('\n')) {
          const message = JSON.parse(buffer.slice(0, at));
          buffer = buffer.slice(at + 1);
          if (message.id !== undefined && !('method' in message)) waiting.get(message.id)?.(message);
        }
      });
      let id = 0;
      const timed = (method, params) => new Promise((resolve, reject) => {
        const n = ++id;
        const t0 = performance.now();
        const timer = setTimeout(() => reject(new Error(`lazy: server-everything alone: no answer to ${method}`)), 30_000);
        waiting.set(n, (message) => {
          clearTimeout(timer);
          if (message.error) reject(new Error(`lazy: server-everything alone: ${method}: ${message.error.message}`));
          else resolve(performance.now() - t0);
        });
        child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: n, method, params })}\n`);
      });
      await quietProcess(child.pid);
      const initialize = await timed('initialize', { protocolVersion: PROTOCOL, capabilities: {}, clientInfo: CLIENT });
      child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
      const list = await timed('tools/list', {});
      const first = await timed('tools/call', { name: 'echo', arguments: { message: 'first' } });
      const second = await timed('tools/call', { name: 'echo', arguments: { message: 'second' } });
      result.push({ initialize, list, first, second });
    } finally {
      child.stdin.end();
      const timer = setTimeout(() => child.kill('SIGKILL'), 2_000);
      await exited;
      clearTimeout(timer);
    }
  }
  const mid = (key) => median(result.map((r) => r[key]));
  return { samples, initialize: mid('initialize'), list: mid('list'), first: mid('first'), second: mid('second'), ratio: median(result.map((r) => (r.initialize + r.first) / r.second)) };
}

/** Resolves once `pid` used no CPU over 100 ms (a Node child that has loaded its modules). */
function quietProcess(pid) {
  return poll(async () => {
    const before = await cpuSeconds(pid);
    await sleep(100);
    return (await cpuSeconds(pid)) === before ? true : undefined;
  }, `process ${pid} idle`, 30_000, 20);
}

// ---------- 5. children after abandoned sessions have idled ----------

async function abandoned({ buildDir, dir, sessions, concurrency }) {
  const lite = liteUpstream();
  const g = await gateway(buildDir, dir, 'lazy-abandoned', { lite: { stdio: lite.stdio, warm: WARM, idleTimeout: `${IDLE_TIMEOUT_MS / 1000}s` } }, { sessions: sessions + 100 });
  const client = wire(g.url, { connections: concurrency });
  let peak = 0;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      peak = Math.max(peak, (await childrenOf(g.pid)).length);
      await sleep(100);
    }
  })();
  try {
    // The child spawned ahead at start.
    await poll(async () => ((await childrenOf(g.pid)).length >= WARM ? true : undefined), `the child spawned ahead`, 10_000);
    const childrenBefore = (await childrenOf(g.pid)).length;
    const t0 = performance.now();
    const run = await inParallel(sessions, concurrency, async (i) => {
      const session = await client.open();
      await client.echo(session, 'lite__echo', `abandoned-${i}`);
      // … and no DELETE: the session stays open, its own child idles.
    });
    const lastCall = performance.now();
    const childrenAtLastCall = (await childrenOf(g.pid)).length;
    let children = childrenAtLastCall;
    let reached = true;
    const deadlineMs = IDLE_TIMEOUT_MS + 20_000;
    try {
      await poll(async () => {
        children = (await childrenOf(g.pid)).length;
        return children <= WARM ? true : undefined;
      }, `children down to ${WARM}`, deadlineMs, 100);
    } catch {
      reached = false;
    }
    const waited = (performance.now() - lastCall) / 1000;
    return { upstream: lite.kind, sessions, opened: run.done, errors: run.errors, firstError: run.firstError, seconds: (lastCall - t0) / 1000, idleTimeoutMs: IDLE_TIMEOUT_MS, warm: WARM, childrenBefore, childrenAtLastCall, peak: Math.max(peak, childrenAtLastCall), children, beyondWarm: Math.max(0, children - WARM), waited, reached, deadline: deadlineMs / 1000 };
  } finally {
    sampling = false;
    await sampler;
    await client.close();
    await stopGateway(g);
  }
}

// ---------- the section ----------

/**
 * The whole section on `buildDir`, and 1, 2 and 4 on `baseDir` too when given. `upstreamUrl` is
 * the run's bench/upstream-http.mjs; `idle` the sessions of measurement 1 (10,000); `rounds` the
 * rounds of 2, 3 and 4; `quick` shrinks every count. `say` prints a line, `fmt` a figure.
 */
export async function runLazy({ buildDir, baseDir, dir, upstreamUrl, idle, rounds, quick, say, fmt }) {
  // Per round, except the last two. A base build's stdio initialize spawns two children (about
  // 0.5 s) and its hung one waits initTimeoutMs: a few of them in all, however many rounds.
  const perRound = (total, least) => Math.max(least, Math.ceil(total / rounds));
  const sizes = quick
    ? { pairs: 10, basePairs: 2, hungPairs: 10, baseHungPairs: 2, warmUp: 3, firstCalls: 2, alone: 1, abandoned: 50 }
    : { pairs: 60, basePairs: perRound(6, 2), hungPairs: 60, baseHungPairs: perRound(4, 2), warmUp: 10, firstCalls: perRound(12, 3), alone: 3, abandoned: 1_000 };
  const baseIdle = Math.min(idle, BASE_IDLE_SESSIONS);
  const builds = [{ key: 'after', label: 'this build', dir: buildDir }, ...(baseDir ? [{ key: 'base', label: `base (${baseDir})`, dir: baseDir }] : [])];
  const width = Math.max(...builds.map((b) => b.label.length)) + 2;
  const each = (xs, digits) => xs.map((x) => fmt(x, digits)).join(', ');
  const figures = { rounds, idle: {}, init: {}, hung: {} };
  let hung;
  say(`\nLazy sessions: no upstream child until a request needs one (bench/lazy.mjs); ${rounds} round(s); the wire client (JSON-RPC on keep-alive connections, no SDK)${baseDir ? `; base = the build in ${baseDir}, without idleTimeout/warm/stateful` : ''}:`);
  try {
    say(`1. Idle sessions held after initialize + tools/list, no DELETE (the bundled gateway.yaml's stdio upstreams everything and memory, 4 at a time):`);
    for (const b of builds) {
      const sessions = b.key === 'base' ? baseIdle : idle;
      const r = await idleSessions({ buildDir: b.dir, dir, label: b.key, sessions, concurrency: 4 });
      figures.idle[b.key] = r;
      const note = b.key === 'base' && sessions < idle ? ` (not ${idle.toLocaleString('en')}: each holds a child per upstream there)` : '';
      say(`  ${b.label.padEnd(width)}${fmt(r.bytesPerSession / 1024, 1).padStart(8)} KB/session   ${r.sessions.toLocaleString('en')} sessions${note}, gateway RSS ${fmt(r.rssBefore / 2 ** 20, 0)} → ${fmt(r.rssAfter / 2 ** 20, 0)} MB, ${r.opened} opened, ${r.errors} errors${r.firstError ? ` (first: ${r.firstError})` : ''}, ${fmt(r.seconds, 1)} s`);
      const size = (bytes) => (Math.abs(bytes) >= 2 ** 20 ? `${fmt(bytes / 2 ** 20, 1)} MB` : `${fmt(bytes / 1024, 1)} KB`);
      say(`  ${''.padEnd(width)}children ${r.childrenBefore} → ${r.children} (${fmt(r.childrenPerSession, 2)} per session), their RSS ${fmt(r.childrenRssBefore / 2 ** 20, 0)} → ${fmt(r.childrenRss / 2 ** 20, 0)} MB (${size(r.childBytesPerSession)} per session); gateway and children ${size(r.bytesPerSession + r.childBytesPerSession)} per session${b.key === 'base' ? ' (the gateway\'s own figure over 100 sessions is within its heap\'s ups and downs)' : ''}`);
    }

    say(`2. initialize + initialized p50 (ms), the two stdio upstreams (A) / one HTTP upstream (B), interleaved A B A B, each session deleted after it:`);
    for (const b of builds) {
      const pairs = b.key === 'base' ? sizes.basePairs : sizes.pairs;
      const r = await initStdioVsHttp({ buildDir: b.dir, dir, label: b.key, upstreamUrl, rounds, pairs, warmUp: b.key === 'base' ? 1 : sizes.warmUp });
      figures.init[b.key] = r;
      say(`  ${b.label.padEnd(width)}stdio ${fmt(median(r.map((x) => x.a)), 3)}  http ${fmt(median(r.map((x) => x.b)), 3)}  ratio ${fmt(median(r.map((x) => x.ratio)))}   (ratio by round ${each(r.map((x) => x.ratio), 2)}; ${pairs} pairs a round)`);
    }

    say(`3. warm: 1 on server-everything: a session's first tools/call / its second (p50 ms; each session initialized, then the two calls timed, then deleted; the next waits for the child spawned ahead to have started):`);
    const first = await firstCalls({ buildDir, dir, rounds, sessions: sizes.firstCalls });
    const fr = first.rounds;
    say(`  ${builds[0].label.padEnd(width)}first ${fmt(median(fr.map((x) => x.first)), 3)}  second ${fmt(median(fr.map((x) => x.second)), 3)}  ratio ${fmt(median(fr.map((x) => x.ratio)))}   (ratio by round ${each(fr.map((x) => x.ratio), 2)}; ${sizes.firstCalls} sessions a round; first max ${fmt(Math.max(...fr.map((x) => x.firstMax)), 1)})`);
    first.alone = await upstreamAlone({ samples: sizes.alone });
    figures.firstCall = first;
    const al = first.alone;
    say(`  ${'server-everything alone'.padEnd(width)}initialize ${fmt(al.initialize, 3)}  tools/list ${fmt(al.list, 3)}  first call ${fmt(al.first, 3)}  second ${fmt(al.second, 3)}  (initialize + first) / second ${fmt(al.ratio)}   (a started child, over its stdio from the runner, no gateway; median of ${al.samples})`);

    say(`4. initialize + initialized p50 (ms), nine HTTP upstreams and one that never answers (initTimeoutMs ${HUNG_INIT_TIMEOUT_MS}; A) / the nine alone (B), interleaved A B A B after warm-up initializes:`);
    hung = await start('hung upstream', node, [join(here, 'hung-http.mjs')]);
    for (const b of builds) {
      const pairs = b.key === 'base' ? sizes.baseHungPairs : sizes.hungPairs;
      const r = await initHung({ buildDir: b.dir, dir, label: b.key, upstreamUrl, hungUrl: hung.url, rounds, pairs, warmUp: b.key === 'base' ? 1 : sizes.warmUp });
      figures.hung[b.key] = r;
      say(`  ${b.label.padEnd(width)}nine + hung ${fmt(median(r.map((x) => x.a)), 3)}  nine ${fmt(median(r.map((x) => x.b)), 3)}  ratio ${fmt(median(r.map((x) => x.ratio)))}   (ratio by round ${each(r.map((x) => x.ratio), 2)}; ${pairs} pairs a round)`);
    }
    await hung.stop();
    hung = undefined;

    say(`5. Children after ${sizes.abandoned.toLocaleString('en')} sessions that each made one call and were abandoned (no DELETE), idleTimeout ${IDLE_TIMEOUT_MS / 1000}s, warm: ${WARM}:`);
    const ab = await abandoned({ buildDir, dir, sessions: sizes.abandoned, concurrency: 4 });
    figures.abandoned = ab;
    say(`  ${builds[0].label.padEnd(width)}children beyond warm ${ab.beyondWarm}   (children ${ab.childrenBefore} before, ${ab.childrenAtLastCall} at the last call, peak ${ab.peak}, ${ab.children} ${ab.reached ? `${fmt(ab.waited, 1)} s after it` : `at the deadline, ${ab.deadline} s after it`}; ${ab.opened} sessions in ${fmt(ab.seconds, 1)} s, ${ab.errors} errors${ab.firstError ? ` (first: ${ab.firstError})` : ''}; upstream ${ab.upstream})`);
  } finally {
    await hung?.stop();
  }
  return figures;
}

/**
 * The section's targets from its figures: [name, label, value, limit, comparison, extra check].
 * Judged on this build only; the base's figures are printed beside them.
 */
export function lazyTargets(figures, median) {
  const targets = [];
  const idle = figures.idle.after;
  if (idle) targets.push(['lazy-idle-rss', 'RSS per idle session (KB), 2 stdio', idle.bytesPerSession / 1024, 64, '<=', idle.errors === 0 && idle.opened === idle.sessions]);
  if (figures.init.after) targets.push(['lazy-initialize', 'initialize 2 stdio / 1 HTTP', median(figures.init.after.map((r) => r.ratio)), 1.5, '<=', true]);
  if (figures.firstCall) targets.push(['lazy-first-call', 'first call (warm: 1) / second', median(figures.firstCall.rounds.map((r) => r.ratio)), 3, '<=', true]);
  if (figures.hung.after) targets.push(['lazy-hung-initialize', 'initialize 9 + hung / 9', median(figures.hung.after.map((r) => r.ratio)), 1.2, '<=', true]);
  const ab = figures.abandoned;
  if (ab) targets.push(['lazy-idle-children', 'children beyond warm after idle', ab.beyondWarm, 0, '<=', ab.errors === 0 && ab.opened === ab.sessions]);
  return targets;
}
