// The sizing section of `npm run bench` (`--only sizing`; issue "Sized for a company", item 4):
// the figures a platform engineer plans a deployment from, none judged against a target.
//   1. Latency added over a direct connection at a fixed offered rate, 100 and 1,000 calls/s:
//      p50 and p99 of direct, the naive hop, the gateway and the gateway with JWT and metrics
//      (the run's HTTP targets, interleaved A B C … C B A by the runner's interleaved(), fresh
//      processes each round); added = a target's figure − direct's in the same round, then the
//      median. Beside it each one's CPU per call over the counted calls (loadgen --pid), and so
//      the calls/s a fully used core serves at that rate; the hop's is the control (what a call
//      costs any Node process at that rate on this machine).
//   2. Memory with the bundled gateway.yaml: the replica's own RSS at start and after a session,
//      the RSS, PSS and USS (smaps_rollup: shared pages divided among their sharers; the pages
//      it alone maps) of each stdio child it spawned (server-everything, server-memory; found
//      from /proc, children of the gateway's pid, by their command line), and what a session
//      adds: N sessions each initialize, initialized, tools/list, then a call to each server.
//      Once as gateway.yaml runs them (everything a child per session, memory one shared child),
//      once swapped (everything shared, memory per session), so each server is measured both ways.
import { readFile, writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { parse, stringify } from 'yaml';
import { root, start } from './parts.mjs';
import { childrenOf, cpuSeconds, rssBytes, stopGateway } from './proc.mjs';
import { wire } from './wire.mjs';

/** The offered rates, calls/s, and the least calls a measurement at each makes (for its p99). */
const RATES = [100, 1_000];
const LEAST_CALLS = 1_000;
/** How a stdio child is told apart: its command line names its package. */
const SERVERS = [
  { name: 'everything', match: 'server-everything', call: ['everything__echo', { message: 'sizing' }] },
  { name: 'memory', match: 'server-memory', call: ['memory__read_graph', {}] },
];
const MB = 2 ** 20;

/** The machine's load averages (1, 5, 15 min): this machine is shared, so a run says how busy it was. */
const load = () => loadavg().map((x) => x.toFixed(2)).join(', ');

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * From /proc/<pid>/smaps_rollup, in bytes: PSS (every page it maps, a shared one divided among
 * the processes that map it, on the whole machine) and USS (the pages it alone maps: what one
 * more such process adds, the pages of node's binary and libraries being there already).
 */
async function setSizes(pid) {
  const rollup = await readFile(`/proc/${pid}/smaps_rollup`, 'utf8').catch(() => '');
  const kb = (field) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(rollup)?.[1] ?? NaN) * 1024;
  return { pss: kb('Pss'), uss: kb('Private_Clean') + kb('Private_Dirty') };
}

/** The gateway's RSS and each of its children: pid, server (by command line), RSS, PSS and USS. */
async function snapshot(pid) {
  const children = [];
  for (const child of (await childrenOf(pid)).sort((a, b) => a - b)) {
    const command = (await readFile(`/proc/${child}/cmdline`, 'utf8').catch(() => '')).replaceAll('\0', ' ');
    const server = SERVERS.find((s) => command.includes(s.match))?.name ?? 'other';
    children.push({ pid: child, server, rss: await rssBytes(child).catch(() => 0), ...(await setSizes(child)) });
  }
  return { gateway: await rssBytes(pid), children };
}

/**
 * Resolves once the gateway's children have been the same processes for a second and none of
 * them used CPU over the last 200 ms (a child spawned ahead, or replacing one handed over, has
 * loaded). Throws after 60 s.
 */
async function settle(pid) {
  const deadline = performance.now() + 60_000;
  let last = '';
  let since = performance.now();
  for (;;) {
    const children = await childrenOf(pid);
    const key = children.sort((a, b) => a - b).join(',');
    if (key !== last) [last, since] = [key, performance.now()];
    if (performance.now() - since >= 1_000) {
      const before = await Promise.all(children.map((child) => cpuSeconds(child).catch(() => -1)));
      await sleep(200);
      const after = await Promise.all(children.map((child) => cpuSeconds(child).catch(() => -2)));
      if (before.every((cpu, i) => cpu === after[i])) return;
    }
    if (performance.now() > deadline) throw new Error(`sizing: the gateway's children did not settle within 60 s (${key})`);
    await sleep(100);
  }
}

/**
 * gateway.yaml as bundled (`swapped`: everything shared, memory a child per session), with what
 * a bench run must change: its node_modules paths absolute (they are relative to the file's
 * directory, and this copy lives elsewhere) and health probes off (a probe spawns a child every
 * 30 s, which would be counted). The memory file is set by the environment (MEMORY_FILE_PATH).
 */
async function bundledConfig({ swapped }) {
  const config = parse(await readFile(join(root, 'gateway.yaml'), 'utf8'));
  for (const upstream of Object.values(config.upstreams)) {
    upstream.stdio.args = upstream.stdio.args.map((arg) => (arg.startsWith('node_modules/') && !isAbsolute(arg) ? join(root, arg) : arg));
  }
  const { everything, memory } = config.upstreams;
  if (!everything?.stdio || !memory?.stdio) throw new Error('sizing: gateway.yaml no longer has the stdio upstreams everything and memory');
  if (swapped) {
    config.upstreams.everything = { stdio: everything.stdio, sharing: 'shared' };
    config.upstreams.memory = { stdio: memory.stdio };
  }
  config.health = { ...config.health, probeInterval: 0 };
  return stringify(config);
}

const byServer = (snap, server) => snap.children.filter((c) => c.server === server);
const sum = (xs, key) => xs.reduce((total, x) => total + x[key], 0);

/** One gateway of the bundled config (or swapped): the snapshots after each step. */
async function memoryRun({ buildDir, dir, swapped, sessions }) {
  const file = join(dir, `sizing-${swapped ? 'swapped' : 'bundled'}.yaml`);
  await writeFile(file, await bundledConfig({ swapped }));
  const env = { MEMORY_FILE_PATH: join(dir, `sizing-memory-${swapped ? 'swapped' : 'bundled'}.jsonl`) };
  const g = await start(`sizing ${swapped ? 'swapped' : 'bundled'}`, process.execPath, [join(buildDir, 'main.js'), '--config', file, '--port', '0'], env);
  const client = wire(g.url);
  try {
    const steps = {};
    await settle(g.pid);
    steps.start = await snapshot(g.pid);
    const first = await client.open();
    const tools = await client.list(first);
    for (const s of SERVERS) if (!tools.includes(s.call[0])) throw new Error(`sizing: tools/list has no ${s.call[0]} (${tools.length} tools)`);
    await settle(g.pid);
    steps.listed = await snapshot(g.pid);
    for (const s of SERVERS) await client.call(first, ...s.call);
    await settle(g.pid);
    steps.called = await snapshot(g.pid);
    for (let i = 0; i < sessions; i++) {
      const session = await client.open();
      await client.list(session);
      for (const s of SERVERS) await client.call(session, ...s.call);
    }
    await settle(g.pid);
    steps.sessions = await snapshot(g.pid);
    const perSession = Object.fromEntries(SERVERS.map(({ name }) => {
      const [a, b] = [byServer(steps.called, name), byServer(steps.sessions, name)];
      const per = (key) => (sum(b, key) - sum(a, key)) / sessions;
      return [name, { children: (b.length - a.length) / sessions, rss: per('rss'), pss: per('pss'), uss: per('uss') }];
    }));
    perSession.gateway = (steps.sessions.gateway - steps.called.gateway) / sessions;
    return { sharing: swapped ? { everything: 'shared', memory: 'per-session' } : { everything: 'per-session', memory: 'shared' }, sessions, steps, perSession };
  } finally {
    await client.close();
    await stopGateway(g);
  }
}

/**
 * The section. `targets`: the run's direct, hop, plain and prod targets (renewable); `interleaved`
 * the runner's; `duration` its seconds per measurement (at least LEAST_CALLS calls are made at
 * each rate); `sessions` the sessions of the memory runs.
 */
export async function runSizing({ targets, interleaved, rounds, duration, quick, buildDir, dir, say, fmt, row, median }) {
  const { direct, hop, plain, prod } = targets;
  const figures = { rounds, loadBefore: loadavg(), latency: {}, memory: {} };
  say(`\nSizing (bench/sizing.mjs; figures to plan from, no target judged); load average ${load()} at its start:`);
  say(`Latency at a fixed offered rate (HTTP upstream, 16 sessions, open loop), ${rounds} round(s) on fresh processes, targets interleaved A B C … C B A; added = a target's − direct's in the same round, median of the rounds:`);
  for (const rate of RATES) {
    const seconds = quick ? 1 : Math.max(duration, Math.ceil(LEAST_CALLS / rate));
    const argsOf = (t) => ['--sessions', '16', '--concurrency', '16', '--duration', String(seconds), '--tool', t.tool, '--rate', String(rate), ...(t.pid ? ['--pid', String(t.pid)] : [])];
    const results = await interleaved([direct, hop, plain, prod], argsOf);
    say(` ${rate.toLocaleString('en')} calls/s offered, ${seconds} s per measurement (${(rate * seconds).toLocaleString('en')} calls; ms, each round in parentheses):`);
    for (const t of [direct, hop, plain, prod]) for (const key of ['p50', 'p99']) say(row(`${t.name} ${key}`, results[t.name], key, 3));
    // Below the rate offered: the target fell behind and its calls queued (the machine, or it).
    say(`  served (calls/s, until the last answer): ${[direct, hop, plain, prod].map((t) => `${t.name} ${fmt(median(results[t.name].map((r) => r.throughput)), 0)}`).join(', ')}`);
    const added = (name, key) => median(results[name].map((r, i) => r[key] - results[direct.name][i][key]));
    const figure = { seconds, results, added: {}, cpuPerCallUs: {} };
    for (const t of [hop, plain, prod]) {
      const cpu = results[t.name].map((r) => (r.cpuSeconds * 1e6) / r.calls);
      figure.added[t.name] = { p50: added(t.name, 'p50'), p99: added(t.name, 'p99') };
      figure.cpuPerCallUs[t.name] = cpu;
      const perCore = 1e6 / median(cpu);
      say(`  added by ${t.name.padEnd(22)} p50 ${fmt(figure.added[t.name].p50, 3)} ms, p99 ${fmt(figure.added[t.name].p99, 3)} ms; CPU per call ${fmt(median(cpu), 0)} µs (${cpu.map((x) => fmt(x, 0)).join(', ')}): ${fmt(perCore, 0)} calls/s per core, ${fmt(perCore / 2, 0)} at 50 % headroom`);
    }
    figures.latency[rate] = figure;
  }

  const sessions = quick ? 2 : 10;
  say(`Memory with the bundled gateway.yaml (its node_modules paths absolute, health probes off, MEMORY_FILE_PATH in the run's temp dir); ${sessions} sessions after the first, each initialize, initialized, tools/list, then ${SERVERS.map((s) => s.call[0]).join(' and ')}; after the children settle, in MB; a child's RSS (USS: the pages it alone maps, what one more adds):`);
  const mb = (bytes) => fmt(bytes / MB, 1);
  const children = (snap) => SERVERS.map(({ name }) => {
    const own = byServer(snap, name);
    return `${name} ${own.length}${own.length ? ` (${own.map((c) => `${mb(c.rss)} (${mb(c.uss)})`).join(', ')})` : ''}`;
  }).join('; ');
  for (const swapped of [false, true]) {
    const run = await memoryRun({ buildDir, dir, swapped, sessions });
    figures.memory[swapped ? 'swapped' : 'bundled'] = run;
    say(` ${swapped ? 'swapped: everything shared, memory a child per session' : 'as bundled: everything a child per session (stateful, warm: 1), memory one shared child'}:`);
    const labels = { start: 'gateway at start', listed: 'after a session\'s tools/list', called: 'after its two calls', sessions: `after ${sessions} more sessions` };
    for (const [step, label] of Object.entries(labels)) {
      const snap = run.steps[step];
      say(`  ${label.padEnd(30)} gateway ${mb(snap.gateway)} MB; children: ${children(snap)}`);
    }
    const per = run.perSession;
    const each = SERVERS.map(({ name }) => `${name} (${run.sharing[name]}) ${fmt(per[name].children, 1)} children, ${mb(per[name].rss)} MB RSS, ${mb(per[name].pss)} PSS, ${mb(per[name].uss)} USS`).join('; ');
    say(`  per session over the ${sessions}: gateway ${fmt(per.gateway / 1024, 0)} KB (within its heap's ups and downs at this count); ${each}`);
  }
  figures.loadAfter = loadavg();
  say(` load average ${load()} at its end`);
  return figures;
}
