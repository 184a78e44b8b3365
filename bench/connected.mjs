// The connected section of `npm run bench` (issue "Sized for a company", item 1): N sessions
// each holding a GET stream, as a real client keeps one per session, on one gateway with one
// shared stdio upstream (the bundled style). Three figures, measured in one run:
//   - RSS per connected session: the gateway's RSS with all N open, less with half of them, over
//     N/2, each reading once settled (target ≤ 16 KB);
//   - CPU while they all idle: the gateway's CPU time over two keep-alive periods, as a share of
//     one core (target ≤ 1 %), once it has settled: at least one keep-alive period after the last
//     session opened, and past V8's memory reducer (below), whose CPU is printed apart;
//   - a call's p99 while they are connected, over its p99 with nobody connected, the same calls
//     from the same client, one at a time (target ≤ 1.5).
// Standalone: node bench/connected.mjs [--sessions 10000] [--build-dir DIR] [--quick] [--keep-alive MS] [--profile DIR]
// (--keep-alive 0: no keep-alive comments, to tell their cost from the rest of idling; --profile:
// the gateway runs with --cpu-prof into DIR, and DIR/idle-window.json says when it idled, for
// `node bench/profile-summary.mjs --window DIR/idle-window.json DIR/*.cpuprofile`)
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import { build, gatewayConfig, here, root, start } from './parts.mjs';
import { cpuSeconds, idleShare, machineTicks, rssBytes, stopGateway } from './proc.mjs';

/** The gateway's default keep-alive (sessions.keepAlive); --quick: 2 s, so its idle window is short. */
const KEEP_ALIVE_MS = 15_000;
const QUICK_KEEP_ALIVE_MS = 2_000;
const VERSION = '2025-06-18';
/** The memory reducer's collections come about 0.7 s apart: this long without one, it is done. */
const REDUCER_QUIET_MS = 3_000;
/** The longest the idle window waits for the memory reducer (it may not run at all). */
const REDUCER_WAIT_MS = 120_000;
/** The target for CPU while every stream idles: a share of one core. */
const IDLE_TARGET = 0.01;

/**
 * V8's memory reducer: a while after a process's allocation slows (about 33 s after 10,000
 * sessions opened, bench/HISTORY.md), it collects the whole heap up to three times to give
 * memory back: a clean-up once after the sessions opened, not what idling costs (the next
 * minute has no collection at all). The gateway runs with --trace-gc, whose lines name these
 * collections "Mark-Compact (reduce)"; this hears them.
 */
export function memoryReducer(output) {
  const times = [];
  let wake;
  createInterface({ input: output }).on('line', (line) => {
    if (!line.includes('Mark-Compact (reduce)')) return;
    times.push(performance.now());
    wake?.();
  });
  return {
    times,
    /** Resolves at the next reducing collection, or after `ms`. */
    next(ms) {
      return new Promise((resolve) => {
        const timer = setTimeout(done, ms);
        function done() {
          clearTimeout(timer);
          wake = undefined;
          resolve();
        }
        wake = done;
      });
    },
  };
}

/**
 * Waits at least `minMs` from `since` (performance.now()), and until the memory reducer is done
 * (a reducing collection, then none for `quietMs`), or `maxMs` from `since` at most.
 */
export async function settle(reducer, since, minMs, maxMs, quietMs = REDUCER_QUIET_MS) {
  for (;;) {
    const now = performance.now();
    // (a collection before `since`, after an earlier group of sessions opened, is not this one's)
    const last = reducer.times.findLast((at) => at >= since);
    const reduced = last !== undefined && now - last >= quietMs;
    if (now - since >= maxMs || (now - since >= minMs && reduced)) return;
    const until = Math.min(since + maxMs, Math.max(since + minMs, last === undefined ? Infinity : last + quietMs));
    await reducer.next(Math.max(0, until - now));
  }
}

/** `calls` tools/call one after another on one session; their latencies in ms, sorted. */
async function callLatencies(url, calls) {
  // (one session, as a developer's IDE makes its calls)
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': VERSION };
  const init = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: 'latency', version: '1' } } }) });
  const session = init.headers.get('mcp-session-id');
  await init.text();
  const inSession = { ...headers, 'mcp-session-id': session };
  await (await fetch(url, { method: 'POST', headers: inSession, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) })).text();
  const times = [];
  for (let i = 0; i < calls + 50; i++) {
    const began = performance.now();
    const res = await fetch(url, { method: 'POST', headers: inSession, body: JSON.stringify({ jsonrpc: '2.0', id: i + 1, method: 'tools/call', params: { name: 'bench__echo', arguments: { message: 'hi' } } }) });
    const text = await res.text();
    if (res.status !== 200 || !text.includes('"result"')) throw new Error(`call ${i} answered ${res.status}: ${text.slice(0, 200)}`);
    if (i >= 50) times.push(performance.now() - began); // the first 50 warm up
  }
  await fetch(url, { method: 'DELETE', headers: inSession }).then((res) => res.text());
  return times.sort((a, b) => a - b);
}

const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];

/** Opens `count` connected sessions from a process of their own; resolves with it once they are open. */
function connectClients(url, count) {
  const child = spawn(process.execPath, [join(here, 'connected-clients.mjs'), url, String(count)], { stdio: ['pipe', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout });
    lines.once('line', (line) => resolve({ ...JSON.parse(line), close: () => new Promise((done) => (child.once('exit', done), child.stdin.end('close\n'))) }));
    child.once('exit', (code) => reject(new Error(`the clients exited (${code}) before connecting`)));
  });
}

/** Two groups of clients' counts as one. */
function joined(a, b) {
  return { connected: a.connected + b.connected, errors: a.errors + b.errors, firstError: a.firstError ?? b.firstError };
}

/** The monotonic clock in µs, the one V8's CPU profiles are stamped with. */
const monotonicUs = () => Number(process.hrtime.bigint() / 1_000n);

/** The process's CPU over `ms` of nothing else happening, as a share of one core, and the machine's idle share meanwhile. */
async function idleWindow(pid, ms) {
  const cpuBefore = await cpuSeconds(pid);
  const machineBefore = await machineTicks();
  const started = performance.now();
  await new Promise((resolve) => setTimeout(resolve, ms));
  const seconds = (performance.now() - started) / 1_000;
  return { started, seconds, cpuShare: ((await cpuSeconds(pid)) - cpuBefore) / seconds, machineIdle: idleShare(machineBefore, await machineTicks()) };
}

/** Settles a server `count` clients have just connected to (settle()), and says how long it took and what it cost. */
async function settled(server, reducer, windowMs, quick) {
  const opened = performance.now();
  const cpuBefore = await cpuSeconds(server.pid);
  await settle(reducer, opened, windowMs, quick ? windowMs : REDUCER_WAIT_MS);
  const seconds = (performance.now() - opened) / 1_000;
  return { seconds, cpuShare: ((await cpuSeconds(server.pid)) - cpuBefore) / seconds, reductions: reducer.times.filter((at) => at >= opened).map((at) => (at - opened) / 1_000) };
}

/**
 * The floor (keepalive-floor.mjs): the same clients and keep-alive pace on a server that does
 * nothing else, settled and measured as the gateway is. Its CPU while idle is the socket writes'.
 */
async function floorIdle(sessions, keepAliveMs, windowMs, quick) {
  const floor = await start('keepalive-floor', process.execPath, ['--trace-gc', join(here, 'keepalive-floor.mjs')], { EVERY_MS: String(keepAliveMs) });
  try {
    const reducer = memoryReducer(floor.output);
    const clients = await connectClients(floor.url, sessions);
    try {
      await settled(floor, reducer, windowMs, quick);
      return { connected: clients.connected, ...(await idleWindow(floor.pid, 2 * windowMs)) };
    } finally {
      await clients.close();
    }
  } finally {
    await floor.stop();
  }
}

export async function runConnected({ buildDir, sessions, quick = false, keepAlive, profile, say = console.log, fmt = (x, d = 2) => x.toFixed(d) }) {
  const keepAliveMs = keepAlive ?? (quick ? QUICK_KEEP_ALIVE_MS : KEEP_ALIVE_MS);
  // Keep-alives off (0) still measure over 30 s.
  const windowMs = keepAliveMs > 0 ? keepAliveMs : 15_000;
  const CALLS = quick ? 200 : 1_000;
  const dir = await mkdtemp(join(tmpdir(), 'switchyard-connected-'));
  const file = join(dir, 'gateway.yaml');
  const upstreams = { bench: { stdio: { command: process.execPath, args: [join(here, 'upstream-stdio.mjs')] }, sharing: 'shared' } };
  const max = sessions + 1_000;
  await writeFile(file, gatewayConfig(upstreams, { sessions: max }).replace(`maxPerPrincipal: ${max} }`, `maxPerPrincipal: ${max}, keepAlive: ${keepAliveMs}ms }`));
  if (profile) await mkdir(profile, { recursive: true });
  const profiling = profile ? ['--cpu-prof', `--cpu-prof-dir=${profile}`] : [];
  const gateway = await start('connected', process.execPath, ['--trace-gc', ...profiling, join(buildDir, 'main.js'), '--config', file, '--port', '0']);
  const reducer = memoryReducer(gateway.output);
  let figures;
  try {
    say(`\nConnected clients: ${sessions} sessions, each initialize, initialized, tools/list and a GET stream held (one shared stdio upstream, ${VERSION}, keep-alive every ${keepAliveMs / 1_000} s${profile ? ', gateway profiled: its CPU figure is not one to judge' : ''}):`);
    const alone = await callLatencies(gateway.url, CALLS);
    const before = await rssBytes(gateway.pid);
    // Opened in two halves, the RSS per session from the second half's growth: the reading of a
    // process that has held none varies with its collector's state by more than the sessions'
    // own growth does (bench/HISTORY.md, Twenty-second pass).
    const half = sessions >> 1;
    const first = await connectClients(gateway.url, half);
    let second;
    try {
      // Settle after each half: one keep-alive period, and the memory reducer's clean-up (the
      // quick pass does not wait for it: its figures are not judged).
      await settled(gateway, reducer, windowMs, quick);
      const mid = await rssBytes(gateway.pid);
      second = await connectClients(gateway.url, sessions - half);
      const clients = joined(first, second);
      const settling = await settled(gateway, reducer, windowMs, quick);
      const after = await rssBytes(gateway.pid);
      // Two keep-alive periods with every stream open and nothing else happening.
      const from = monotonicUs();
      const idle = await idleWindow(gateway.pid, 2 * windowMs);
      const reducedWhileIdle = reducer.times.filter((at) => at >= idle.started).length;
      if (profile) await writeFile(join(profile, 'idle-window.json'), `${JSON.stringify({ from, to: monotonicUs() })}\n`);
      const crowded = await callLatencies(gateway.url, CALLS);
      figures = {
        sessions,
        connected: clients.connected,
        errors: clients.errors,
        rssBefore: before,
        rssHalf: mid,
        rssAfter: after,
        bytesPerSession: (after - mid) / (sessions - half),
        idleCpuShare: idle.cpuShare,
        settleSeconds: settling.seconds,
        settleCpuShare: settling.cpuShare,
        reductions: settling.reductions,
        reducedWhileIdle,
        keepAliveMs,
        machineIdle: idle.machineIdle,
        loadAverage: loadavg()[0],
        p50Alone: quantile(alone, 0.5),
        p99Alone: quantile(alone, 0.99),
        p50Connected: quantile(crowded, 0.5),
        p99Connected: quantile(crowded, 0.99),
      };
      figures.p99Ratio = figures.p99Connected / figures.p99Alone;
      say(`  RSS per connected session     ${fmt(figures.bytesPerSession / 1024, 1).padStart(7)} KB     (RSS ${fmt(before / 2 ** 20, 0)} → ${fmt(mid / 2 ** 20, 0)} → ${fmt(after / 2 ** 20, 0)} MB with none, half and all connected, each settled; ${clients.connected} connected, ${clients.errors} errors${clients.firstError ? `; first: ${clients.firstError}` : ''})`);
      say(`  CPU while all idle            ${fmt(figures.idleCpuShare * 100, 2).padStart(7)} % of a core over ${fmt(idle.seconds, 0)} s   (${reducedWhileIdle > 0 ? `${reducedWhileIdle} of the memory reducer's collections in it; ` : ''}machine ${fmt(idle.machineIdle * 100, 0)} % idle meanwhile, load average ${fmt(figures.loadAverage, 1)})`);
      say(`  settled after                 ${fmt(settling.seconds, 0).padStart(7)} s      (${settling.reductions.length === 0 ? 'no reducing collection of V8 meanwhile' : `V8's memory reducer collected the heap at ${settling.reductions.map((at) => fmt(at, 1)).join(', ')} s`}; ${fmt(settling.cpuShare * 100, 2)} % of a core meanwhile, once after the sessions opened)`);
      say(`  call p50 / p99, nobody connected  ${fmt(figures.p50Alone, 3)} / ${fmt(figures.p99Alone, 3)} ms; all connected ${fmt(figures.p50Connected, 3)} / ${fmt(figures.p99Connected, 3)} ms (${CALLS} calls one at a time each)`);
    } finally {
      await Promise.all([first.close(), second?.close()]);
    }
  } finally {
    await stopGateway(gateway);
    await rm(dir, { recursive: true, force: true });
  }
  const floor = await floorIdle(sessions, keepAliveMs, windowMs, quick);
  figures.floorIdleCpuShare = floor.cpuShare;
  figures.floorMachineIdle = floor.machineIdle;
  say(`  the floor while all idle      ${fmt(floor.cpuShare * 100, 2).padStart(7)} % of a core over ${fmt(floor.seconds, 0)} s   (keepalive-floor.mjs: the same ${floor.connected} streams and keep-alives, nothing else; machine ${fmt(floor.machineIdle * 100, 0)} % idle meanwhile)`);
  const idleMet = figures.idleCpuShare <= IDLE_TARGET;
  say('  Targets:');
  say(`    RSS per connected session (KB)   ${fmt(figures.bytesPerSession / 1024, 1)} ≤ 16   ${figures.bytesPerSession / 1024 <= 16 && figures.errors === 0 ? 'met' : 'NOT met'}`);
  say(`    CPU while idle (% of a core)     ${fmt(figures.idleCpuShare * 100, 2)} ≤ 1    ${idleMet ? 'met' : 'NOT met'}`);
  say(`    call p99 connected / alone       ${fmt(figures.p99Ratio, 2)} ≤ 1.5  ${figures.p99Ratio <= 1.5 ? 'met' : 'NOT met'}`);
  if (!idleMet) say(`    why not met: ${idleWhy(figures)}`);
  return figures;
}

/**
 * Why the idle target was missed, from the run's figures: a reducing collection in the window,
 * the keep-alive writes alone (the floor) at 80 % of the target or more, or the gateway's own idling.
 */
export function idleWhy({ idleCpuShare, floorIdleCpuShare, reducedWhileIdle }) {
  if (reducedWhileIdle > 0) return "V8's memory reducer collected the heap during the window (it had not run when the wait for it ended)";
  // The floor can read 0 in a short window (the CPU clock counts in 10 ms ticks).
  const times = floorIdleCpuShare > 0 ? (idleCpuShare / floorIdleCpuShare).toFixed(2) : '–';
  const floor = `${(floorIdleCpuShare * 100).toFixed(2)} %`;
  if (floorIdleCpuShare >= 0.8 * IDLE_TARGET) return `the keep-alive writes alone cost ${floor} of a core here (keepalive-floor.mjs; the gateway idles at ${times}× that): on loopback a write also runs the receiving client's side of TCP in the writer's system call, which a write to another machine does not`;
  return `the gateway idles at ${times}× what its keep-alive writes alone cost (keepalive-floor.mjs, ${floor}): its own timers and sweeps (--profile DIR shows them)`;
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values } = parseArgs({ options: { sessions: { type: 'string' }, 'build-dir': { type: 'string' }, quick: { type: 'boolean' }, 'keep-alive': { type: 'string' }, profile: { type: 'string' } } });
  const buildDir = values['build-dir'] ?? join(root, '.tmp', 'connected-dist');
  if (!values['build-dir']) await build(buildDir);
  await runConnected({ buildDir, sessions: Number(values.sessions ?? 10_000), quick: values.quick === true, ...(values['keep-alive'] ? { keepAlive: Number(values['keep-alive']) } : {}), ...(values.profile ? { profile: values.profile } : {}) });
  process.exit(0);
}
