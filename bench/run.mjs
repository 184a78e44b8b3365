// `npm run bench`: the gateway against a direct connection and the lean floor (the naive hop
// beside it), measured in the same run over several rounds (throughput in short turns,
// A B C … C B A; the rest interleaved the same way), and reported as median ratios with the
// absolute figures beside them. See bench/README.md for the method.
//   node bench/run.mjs [--rounds 5] [--duration 3] [--idle 10000] [--quick] [--json FILE]
//                      [--slices 10] [--slice 0.5] (throughput: turns per target per round, and
//                                        the seconds of each)
//                      [--profile DIR]   (gateway started with --cpu-prof, profiles written there)
//                      [--build-dir DIR] (where the gateway is compiled to; default .tmp/bench-dist)
//                      [--only http,latency,stdio,init,idle,connected,callpath,catalog,search,lazy,stateless,tracing] (run only these
//                                        sections; targets are judged only where their figures
//                                        were measured)
//                      [--search-iterations N] (search: calls of each kind and client per
//                                        round, default 1,000; --quick 100)
//                      [--lazy-base DIR] (lazy: measurements 1, 2 and 4 also on the build in DIR,
//                                        one from before lazy sessions, e.g. a worktree of 40a6873
//                                        compiled there; its measurement 1 holds 100 sessions)
//                      [--only inplace]  (opt-in: the steps of a call timed in an instrumented
//                                        copy of the build, bench/inplace.mjs)
//                      [--keep-processes] (one process per target for the whole run, instead of
//                                        fresh ones each round; what --profile wants)
//                      [--shapes]        (opt-in, also `--only shapes`: the gateway, the lean
//                                        forwarder and the naive hop against the lean floor
//                                        across upstream shapes, bench/shapes.mjs; 2 rounds of
//                                        8 turns unless --rounds/--slices say otherwise)
//                      [--shape-names base,tools-1000,…] (only these shapes)
//                      [--only sizing]   (opt-in: added p50/p99 at 100 and 1,000 calls/s, CPU per
//                                        call, the bundled config's memory, bench/sizing.mjs)
import { access, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { catalogStall } from './catalog-stall.mjs';
import { instrument, STEPS, timersOf } from './inplace.mjs';
import { lazyTargets, runLazy } from './lazy.mjs';
import { runSearch } from './search.mjs';
import { runStateless } from './stateless.mjs';
import { runTracing } from './tracing.mjs';
import { idleWhy, runConnected } from './connected.mjs';
import { judgeShapes, runShapes, shapeHeading, shapesVerdict, shapeWhy } from './shapes.mjs';
import { runSizing } from './sizing.mjs';
import { authServer, build, gatewayConfig, here, loadgen, median, renewable, root, start, stopAll } from './parts.mjs';
import { cpuSeconds, rssBytes } from './proc.mjs';
const { values } = parseArgs({
  options: {
    rounds: { type: 'string' },
    duration: { type: 'string' },
    slices: { type: 'string' },
    slice: { type: 'string' },
    idle: { type: 'string' },
    quick: { type: 'boolean', default: false },
    json: { type: 'string' },
    profile: { type: 'string' },
    'build-dir': { type: 'string' },
    only: { type: 'string' },
    'keep-processes': { type: 'boolean', default: false },
    shapes: { type: 'boolean', default: false },
    'shape-names': { type: 'string' },
    'search-iterations': { type: 'string' },
    'lazy-base': { type: 'string' },

  },
});
const quick = values.quick;
const renewing = !values['keep-processes'];
const ROUNDS = Number(values.rounds ?? (quick ? 1 : 5));
const DURATION = Number(values.duration ?? (quick ? 1 : 3));
const SLICES = Number(values.slices ?? (quick ? 2 : 10));
const SLICE = Number(values.slice ?? (quick ? 0.25 : 0.5));
const IDLE = Number(values.idle ?? (quick ? 200 : 10_000));
const INITS = quick ? 20 : 300;
const SECTIONS = ['http', 'latency', 'stdio', 'init', 'idle', 'connected', 'callpath', 'catalog', 'search', 'lazy', 'stateless', 'tracing'];
/** Sections run only when named: diagnostics, not targets. */
const OPT_IN = ['inplace', 'shapes', 'sizing'];
const only = new Set(values.only ? values.only.split(',').map((s) => s.trim()) : SECTIONS);
if (values.shapes) only.add('shapes');
for (const name of only) if (![...SECTIONS, ...OPT_IN].includes(name)) throw new Error(`--only: unknown section ${name} (one of ${[...SECTIONS, ...OPT_IN].join(', ')})`);
const C = 16;
const RATE = 1000;

// ---------- processes ----------

/** A load run against `target`, with the target's CPU time per call when it has a pid. */
async function measure(target, args, { tolerateErrors = false } = {}) {
  const before = target.pid ? await cpuSeconds(target.pid) : 0;
  const result = await loadgen(['--url', target.url, ...(target.token ? ['--token', target.token] : []), ...args]);
  if (target.pid) result.cpuPerCallUs = ((await cpuSeconds(target.pid)) - before) * 1e6 / result.totalCalls;
  if (result.errors > 0 && !tolerateErrors) throw new Error(`${target.name}: ${result.errors} errors (first: ${result.firstError})`);
  result.target = target.name;
  return result;
}

// ---------- the parts ----------

/** Node flags that write a CPU profile of the process named `name` under --profile. */
function profiled(name) {
  return values.profile ? ['--cpu-prof', `--cpu-prof-dir=${values.profile}`, `--cpu-prof-name=${name}.cpuprofile`] : [];
}

async function gateway(dir, name, upstreams, { production, auth, build = buildDir, env = {}, extra = '' }) {
  const file = join(dir, `${name}.yaml`);
  await writeFile(file, gatewayConfig(upstreams, { sessions: IDLE + 1000, metrics: production, auth: production ? auth : undefined }) + extra);
  const server = await start(name, process.execPath, [...profiled(name), join(build, 'main.js'), '--config', file, '--port', '0'], env);
  return production ? { ...server, token: auth.token } : server;
}

/**
 * Throughput and CPU per call of `targets` at C=16, the targets taking turns: each round (after
 * the first on fresh processes, as in interleaved()) one load generator warms every target up,
 * then runs short closed-loop slices in the order A B C …, … C B A, SLICES turns each, so that
 * every target meets the same state of a machine whose speed drifts within seconds.
 * Per round and target: throughput and CPU per call over its slices, and the slices themselves.
 */
async function alternating(targets) {
  const results = Object.fromEntries(targets.map((t) => [t.name, []]));
  for (let round = 0; round < ROUNDS; round++) {
    if (round > 0 && renewing) for (const t of targets) if (t.renew) await t.renew();
    const specs = targets.map((t) => ({ name: t.name, url: t.url, tool: t.tool, token: t.token, pid: t.pid }));
    const args = ['--alternate', JSON.stringify(specs), '--sessions', String(C), '--concurrency', String(C), '--slices', String(SLICES), '--slice', String(SLICE), '--warm-up', quick ? '0.5' : '2'];
    const result = await loadgen(args);
    if (result.errors > 0) throw new Error(`${result.errors} errors in turns of ${targets.map((t) => t.name).join(', ')} (first: ${result.firstError})`);
    for (const t of targets) {
      const slices = result.targets[t.name];
      const sum = (key) => slices.reduce((total, slice) => total + slice[key], 0);
      results[t.name].push({ throughput: sum('calls') / sum('seconds'), cpuPerCallUs: t.pid ? (sum('cpuSeconds') * 1e6) / sum('calls') : NaN, cpuBetweenTurns: result.cpuBetweenTurns[t.name], slices });
    }
  }
  return results;
}

const sliceThroughput = (slice) => slice.calls / slice.seconds;
const sliceCpu = (slice) => slice.cpuSeconds / slice.calls;

/**
 * `name`'s figure over `base`'s, turn by turn (the same turn of the same round, seconds apart),
 * and the median of those ratios over every turn of every round.
 */
function pairedRatio(results, name, base, figure) {
  const ratios = results[name].flatMap((round, r) => round.slices.map((slice, i) => figure(slice) / figure(results[base][r].slices[i])));
  return median(ratios);
}

// ---------- statistics and reporting ----------

const fmt = (x, digits = 2) => (Number.isFinite(x) ? x.toFixed(digits) : String(x));

/**
 * Runs every target once per round, the order reversed on odd rounds; returns results by name.
 * Each round after the first runs on fresh processes of the renewable targets (the hop, the
 * bridge, the gateways): two processes of one build differ by up to a tenth in CPU per call for
 * the whole of their life (how V8 happened to compile them, where their heap landed), so one
 * process per target would let a single draw decide every round of a run.
 */
async function interleaved(targets, argsOf) {
  const results = Object.fromEntries(targets.map((t) => [t.name, []]));
  for (let round = 0; round < ROUNDS; round++) {
    const fresh = round === 0 ? targets : renewing ? targets.filter((t) => t.renew) : [];
    if (round > 0) for (const t of fresh) await t.renew();
    // A pass that is not counted, so no round pays for a process's JIT warming up.
    if (!quick) for (const t of fresh) await measure(t, [...argsOf(t), '--duration', '2']);
    const order = round % 2 === 0 ? targets : [...targets].reverse();
    for (const t of order) results[t.name].push(await measure(t, argsOf(t)));
  }
  return results;
}

const report = { machine: { cpus: cpus().length, model: cpus()[0]?.model, node: process.version }, settings: { rounds: ROUNDS, duration: DURATION, idleSessions: IDLE, concurrency: C, rate: RATE }, figures: {}, targets: [] };
const lines = [];
const say = (line = '') => {
  lines.push(...line.split('\n'));
  process.stdout.write(`${line}\n`);
};

function check(name, value, limit, comparison, variant) {
  const met = comparison === '>=' ? value >= limit : value <= limit;
  report.targets.push({ name, variant, value, limit, comparison, met });
  return met;
}

function row(label, results, key, digits = 0) {
  const xs = results.map((r) => r[key]);
  return `  ${label.padEnd(24)} ${fmt(median(xs), digits).padStart(9)}   (${xs.map((x) => fmt(x, digits)).join(', ')})`;
}

// ---------- the run ----------

// The gateway runs as it does in production (the image runs `node dist/main.js`): compiled, here
// into a directory of its own inside the repository (so its imports resolve to node_modules).
const buildDir = resolve(root, values['build-dir'] ?? join('.tmp', 'bench-dist'));
const lazyBase = values['lazy-base'] && resolve(values['lazy-base']);
if (lazyBase) await access(join(lazyBase, 'main.js')).catch(() => {
  throw new Error(`--lazy-base ${values['lazy-base']}: no main.js there (a compiled build's directory, e.g. its dist)`);
});
await build(buildDir);
const dir = await mkdtemp(join(tmpdir(), 'switchyard-bench-'));
const started = performance.now();
let auth;
let failed = false;
try {
  auth = await authServer();
  const upstream = await start('upstream', process.execPath, [join(here, 'upstream-http.mjs')]);
  const direct = { name: 'direct', url: upstream.url, tool: 'echo' };
  const hop = await renewable(() => start('naive hop', process.execPath, [...profiled('naive hop'), join(here, 'naive-hop.mjs')], { UPSTREAM: upstream.url }), { tool: 'echo' });
  // The leanest hop (bench/lean-floor.mjs): the HTTP throughput, CPU per call, added latency and
  // initialize verdicts are ratios to it.
  const floor = await renewable(() => start('lean floor', process.execPath, [...profiled('lean floor'), join(here, 'lean-floor.mjs')], { UPSTREAM: upstream.url }), { tool: 'echo' });
  const httpUpstream = { b: { http: { url: upstream.url } } };
  const plain = await renewable(() => gateway(dir, 'gateway', httpUpstream, { production: false, auth }), { tool: 'b__echo' });
  const prod = await renewable(() => gateway(dir, 'gateway+jwt+metrics', httpUpstream, { production: true, auth }), { tool: 'b__echo' });
  const gateways = [plain, prod];
  const load = (t) => ['--sessions', String(C), '--concurrency', String(C), '--duration', String(DURATION), '--tool', t.tool];

  say(`Switchyard bench — ${report.machine.cpus} CPUs (${report.machine.model}), Node ${process.version}`);
  say(`${ROUNDS} round(s), ${renewing ? 'fresh processes each round' : 'one process per target'}; figures are medians over the rounds (each round in parentheses)`);
  say(`Throughput: targets take turns of ${SLICE} s (A B C … C B A), ${SLICES} each per round; ratios turn by turn, then their median`);
  say(`Latency, initialize: targets interleaved A B C … C B A, ${DURATION} s per measurement after a warm-up`);

  // 1. Throughput with an HTTP upstream, C=16, and the CPU each call costs.
  let tp;
  if (only.has('http')) {
    say(`\nThroughput, HTTP upstream, C=16, ${SLICES} turns of ${SLICE} s per target and round (calls/s):`);
    tp = await alternating([direct, hop, plain, prod, floor]);
    for (const t of [direct, floor, hop, plain, prod]) say(row(t.name, tp[t.name], 'throughput'));
    say('CPU per tools/call (µs, the serving process, in its turns):');
    for (const t of [floor, hop, plain, prod]) say(row(t.name, tp[t.name], 'cpuPerCallUs'));
    say('CPU spent between its turns (% of the CPU in them; not counted above):');
    for (const t of [floor, hop, plain, prod]) say(`  ${t.name.padEnd(24)} ${tp[t.name].map((r) => fmt((100 * r.cpuBetweenTurns) / r.slices.reduce((sum, s) => sum + s.cpuSeconds, 0), 1)).join(', ')}`);
    say('Machine idle during its turns (% of all CPUs, median of the round\'s turns):');
    for (const t of [direct, floor, hop, plain, prod]) say(`  ${t.name.padEnd(24)} ${tp[t.name].map((r) => fmt(100 * median(r.slices.map((s) => s.machineIdle)), 0)).join(', ')}`);
    report.figures.throughput = tp;
  }

  // 2. Latency added over direct at a fixed offered load.
  let lat, hopAdded, floorAdded;
  const added = (name) => lat[name].map((r, i) => r.p50 - lat[direct.name][i].p50);
  if (only.has('latency')) {
    say(`\nLatency at ${RATE} calls/s offered (p50 ms; added = p50 − direct's p50 in the same round):`);
    lat = await interleaved([direct, hop, plain, prod, floor], (t) => [...load(t), '--rate', String(RATE)]);
    for (const t of [direct, floor, hop, plain, prod]) say(row(t.name, lat[t.name], 'p50', 3));
    [hopAdded, floorAdded] = [median(added(hop.name)), median(added(floor.name))];
    say(`  added by ${'the lean floor'.padEnd(26)}${fmt(floorAdded, 3)} ms`);
    say(`  added by ${'the naive hop'.padEnd(26)}${fmt(hopAdded, 3)} ms`);
    for (const t of gateways) say(`  added by ${t.name.padEnd(26)}${fmt(median(added(t.name)), 3)} ms`);
    report.figures.latency = lat;
  }

  // 3. Throughput with a stdio upstream (one shared child, like the bridge).
  let st, bridge;
  const stdioNames = { plain: 'gateway stdio', 'jwt+metrics': 'gateway stdio+jwt+metrics' };
  if (only.has('stdio')) {
    say(`\nThroughput, stdio upstream, C=16, ${SLICES} turns of ${SLICE} s per target and round (calls/s):`);
    const stdioCmd = { stdio: { command: process.execPath, args: [join(here, 'upstream-stdio.mjs')] }, sharing: 'shared' };
    bridge = await renewable(() => start('naive bridge', process.execPath, [join(here, 'naive-bridge.mjs'), process.execPath, join(here, 'upstream-stdio.mjs')]), { tool: 'echo' });
    const sPlain = await renewable(() => gateway(dir, stdioNames.plain, { s: stdioCmd }, { production: false, auth }), { tool: 's__echo' });
    const sProd = await renewable(() => gateway(dir, stdioNames['jwt+metrics'], { s: stdioCmd }, { production: true, auth }), { tool: 's__echo' });
    st = await alternating([bridge, sPlain, sProd]);
    for (const t of [bridge, sPlain, sProd]) say(row(t.name, st[t.name], 'throughput'));
    report.figures.stdio = st;
    await Promise.all([bridge.stop(), sPlain.stop(), sProd.stop()]);
  }

  // 4. Initialize: the gateway against 3 HTTP upstreams, the floor (and the naive hop) against one.
  let init, hopInit, floorInit;
  const initNames = { plain: 'gateway 3 upstreams', 'jwt+metrics': 'gateway 3 upstreams+jwt+metrics' };
  if (only.has('init')) {
    say(`\nInitialize + initialized, ${INITS} one after another (p50 ms):`);
    const three = { a: { http: { url: upstream.url } }, b: { http: { url: upstream.url } }, c: { http: { url: upstream.url } } };
    const iPlain = await renewable(() => gateway(dir, initNames.plain, three, { production: false, auth }));
    const iProd = await renewable(() => gateway(dir, initNames['jwt+metrics'], three, { production: true, auth }));
    init = await interleaved([hop, iPlain, iProd, floor], () => ['--init-only', String(INITS)]);
    for (const t of [floor, hop, iPlain, iProd]) say(row(t.name, init[t.name], 'p50', 3));
    [hopInit, floorInit] = [hop, floor].map((t) => median(init[t.name].map((r) => r.p50)));
    report.figures.initialize = init;
    await Promise.all([iPlain.stop(), iProd.stop()]);
  }

  // 5. Idle sessions: RSS growth per session held (one HTTP upstream, no GET stream).
  const idle = {};
  const idleNames = { plain: 'idle', 'jwt+metrics': 'idle+jwt+metrics' };
  if (only.has('idle')) {
    say(`\nIdle sessions: ${IDLE} opened and held (one HTTP upstream, no GET stream):`);
    for (const production of [false, true]) {
      const g = await gateway(dir, production ? idleNames['jwt+metrics'] : idleNames.plain, httpUpstream, { production, auth });
      try {
        await measure(g, ['--init-only', '50']); // warm the code paths first
        // Per session from half to all held: a fresh process's RSS varies by tens of MB (117 or 157).
        const [before, half] = [await rssBytes(g.pid), await measure(g, ['--init-only', String(IDLE - (IDLE >> 1))], { tolerateErrors: true })];
        const [mid, rest] = [await rssBytes(g.pid), await measure(g, ['--init-only', String(IDLE >> 1)], { tolerateErrors: true })];
        const [after, opened] = [await rssBytes(g.pid), { calls: half.calls + rest.calls, errors: half.errors + rest.errors }];
        idle[g.name] = { opened: opened.calls, errors: opened.errors, rssBefore: before, rssHalf: mid, rssAfter: after, bytesPerSession: (after - mid) / (IDLE >> 1) };
        say(`  ${g.name.padEnd(24)} ${fmt(idle[g.name].bytesPerSession / 1024, 1).padStart(9)} KB/session   (RSS ${fmt(before / 2 ** 20, 0)} → ${fmt(mid / 2 ** 20, 0)} → ${fmt(after / 2 ** 20, 0)} MB with none, half and all held; ${opened.calls} opened, ${opened.errors} errors)`);
      } finally {
        await g.stop();
      }
    }
    report.figures.idle = idle;
  }

  // 5b. Connected clients: sessions each holding a GET stream (bench/connected.mjs, its own targets).
  if (only.has('connected')) {
    const connected = await runConnected({ buildDir, sessions: IDLE, quick, say, fmt, ...(values.profile ? { profile: join(resolve(values.profile), 'connected') } : {}) });
    report.figures.connected = connected;
  }

  // 6. Another session's ping while one session lists an upstream of 100,000 tools.
  let catalog;
  if (only.has('catalog')) {
    const tools = quick ? 20_000 : 100_000;
    say(`\nCatalog: another session's ping while one lists ${tools} tools (pages of 1,000), ${quick ? 1 : 3} round(s) (ms):`);
    catalog = await catalogStall({ buildDir, dir, rounds: quick ? 1 : 3, tools });
    const each = (key, digits = 1) => catalog.map((r) => fmt(r[key], digits)).join(', ');
    say(`  ping p50 ${fmt(median(catalog.map((r) => r.p50)), 1)}   (${each('p50')})`);
    say(`  ping p99 ${fmt(median(catalog.map((r) => r.p99)), 1)}   (${each('p99')})`);
    say(`  ping max ${fmt(median(catalog.map((r) => r.max)), 1)}   (${each('max')})`);
    say(`  the list took ${each('listSeconds', 2)} s for ${catalog[0].listed} tools; ${each('pings', 0)} pings answered meanwhile`);
    report.figures.catalog = catalog;
  }

  // 7. Search discovery: search_tools over 1,000 tools against a plain tools/call, tools/list
  // bytes of a search endpoint against a list endpoint, recall over real servers' tools.
  let searched;
  if (only.has('search')) {
    const iterations = Number(values['search-iterations'] ?? (quick ? 100 : 1_000));
    searched = await runSearch({ buildDir, dir, rounds: ROUNDS, iterations, warmUp: quick ? 20 : 200, say, fmt });
    report.figures.search = searched;
  }

  // 8. Lazy sessions: idle sessions with stdio upstreams, initialize, a session's first call, a
  // hung upstream, children after abandoned sessions idle (and on a base build, with --lazy-base).
  let lazy;
  if (only.has('lazy')) {
    lazy = await runLazy({ buildDir, baseDir: lazyBase, dir, upstreamUrl: upstream.url, idle: IDLE, rounds: ROUNDS, quick, say, fmt });
    report.figures.lazy = lazy;
  }

  // 9. Stateless (2026-07-28) clients: a tools/call of a principal's and of anonymous requests,
  // which get an upstream session each (a spawn, a warm child, a shared child, an HTTP session).
  // Judges no target.
  if (only.has('stateless')) {
    report.figures.stateless = await runStateless({ buildDir, dir, upstreamUrl: upstream.url, rounds: ROUNDS, quick, say, fmt });
  }

  // 10. Tracing off, on with sampleRatio 0 and 1 (spans to an OTLP sink): ratios, no target.
  if (only.has('tracing')) {
    const gatewayWith = (name, extra) => renewable(() => gateway(dir, name, httpUpstream, { production: false, auth, extra }), { tool: 'b__echo' });
    report.figures.tracing = await runTracing({ hop, gatewayWith, alternating, pairedRatio, sliceThroughput, sliceCpu, row, say, fmt });
  }

  // 11. Sizing: added p50/p99 at 100 and 1,000 calls/s, CPU per call, the bundled config's memory.
  if (only.has('sizing')) {
    report.figures.sizing = await runSizing({ targets: { direct, hop, plain, prod }, interleaved, rounds: ROUNDS, duration: DURATION, quick, buildDir, dir, say, fmt, row, median });
  }

  if (only.has('inplace')) {
    const inplaceDir = `${buildDir}-inplace`;
    await rm(inplaceDir, { recursive: true, force: true });
    await instrument(buildDir, inplaceDir);
    say(`\nIn place: the steps of a tools/call timed where they run (bench/inplace.mjs), C=${C}, ${DURATION} s per round (µs per call):`);
    // Both gateways run at once and take their measurements in turn (A B, B A, …), so both meet
    // the same state of the machine.
    const variants = [];
    try {
      for (const production of [false, true]) {
        const variant = production ? 'jwt+metrics' : 'plain';
        const out = join(dir, `inplace-${production ? 'prod' : 'plain'}.jsonl`);
        variants.push({ variant, out, rounds: [], g: await gateway(dir, `in place ${variant}`, httpUpstream, { production, auth, build: inplaceDir, env: { INPLACE_OUT: out } }) });
      }
      for (let round = 0; round <= ROUNDS; round++) {
        for (const v of round % 2 ? [...variants].reverse() : variants) {
          await measure(v.g, load(plain));
          const means = await timersOf(v.g.pid, v.out, round + 1);
          if (round > 0) v.rounds.push(means); // the first is the warm-up
        }
      }
    } finally {
      await Promise.all(variants.map((v) => v.g.stop()));
    }
    const inplace = Object.fromEntries(variants.map((v) => [v.variant, Object.fromEntries(STEPS.map(({ name }) => [name, v.rounds.map((r) => r[name] ?? null)]))]));
    // A step the plain gateway never takes (authenticate) has no figure: shown as –.
    const µs = (xs) => (xs.every((x) => x === null) ? '–' : fmt(median(xs), 1));
    say(`  ${'step (· within the one above)'.padEnd(36)} ${'plain'.padStart(8)} ${'jwt+metrics'.padStart(12)}   (each round: plain / jwt+metrics)`);
    for (const { name, within } of STEPS) {
      const [a, b] = [inplace.plain[name], inplace['jwt+metrics'][name]];
      const each = a.map((x, i) => `${µs([x])}/${µs([b[i]])}`).join(', ');
      say(`  ${(within ? `  · ${name}` : name).padEnd(36)} ${µs(a).padStart(8)} ${µs(b).padStart(12)}   (${each})`);
    }
    report.figures.inplace = inplace;
  }

  // The call path as the outside harness measured it (issue 36 item 3): a node:http upstream that
  // issues session ids and serves a GET stream, 50 tools, JSON answers; 16 sessions of a
  // 2025-06-18 client (loadgen's); C=16; against the lean floor (node:http in, an undici Pool out).
  // It is the shapes section's "real" shape, run by default and judged by the issue's targets.
  if (only.has('callpath')) {
    const rounds = values.rounds ? ROUNDS : quick ? 1 : 2;
    const slices = values.slices ? SLICES : quick ? 1 : 8;
    say(`\nCall path (the outside workload: ids + GET stream + 50 tools + 16 sessions of 2025-06-18, C=${C}), ${rounds} round(s) of ${slices} turns of ${SLICE} s; ratios to the lean floor, turn by turn:`);
    say(shapeHeading());
    const { real } = await runShapes({ buildDir, dir, auth, rounds, slices, slice: SLICE, warmUp: quick ? 0.3 : 2, profile: values.profile, names: ['real'], say });
    report.figures.callPath = real;
    const plain = real.ratios.gateway;
    const prod = real.ratios['gateway+jwt+metrics'];
    say(`  CPU per call / the floor's: plain ${fmt(plain.cpu)} ≤ 1.30 ${check('callpath-cpu-plain', plain.cpu, 1.3, '<=', 'callpath') ? 'met' : 'NOT met'}; JWT+metrics ${fmt(prod.cpu)} ≤ 1.50 ${check('callpath-cpu-jwt-metrics', prod.cpu, 1.5, '<=', 'callpath') ? 'met' : 'NOT met'}`);
    say(`  throughput / the floor's: plain ${fmt(plain.throughput)} ≥ 0.80 ${check('callpath-throughput-plain', plain.throughput, 0.8, '>=', 'callpath') ? 'met' : 'NOT met'}; JWT+metrics ${fmt(prod.throughput)} ≥ 0.80 ${check('callpath-throughput-jwt-metrics', prod.throughput, 0.8, '>=', 'callpath') ? 'met' : 'NOT met'}`);
    // Why, as the last profile of this section found it (bench/HISTORY.md, Fifteenth pass).
    if (!(plain.cpu <= 1.3 && prod.cpu <= 1.5 && plain.throughput >= 0.8 && prod.throughput >= 0.8)) say(`  why not met: ${shapeWhy(real)}`);
  }

  if (only.has('shapes')) {
    const rounds = values.rounds ? ROUNDS : quick ? 1 : 2;
    const slices = values.slices ? SLICES : quick ? 1 : 8;
    say(`\nShapes: C=${C}, ${rounds} round(s) of ${slices} turns of ${SLICE} s per target, fresh processes each round; ratios to the lean floor (bench/lean-floor.mjs), turn by turn, then their median:`);
    say(shapeHeading());
    const shapes = await runShapes({ buildDir, dir, auth, rounds, slices, slice: SLICE, warmUp: quick ? 0.3 : 2, profile: values.profile, names: values['shape-names']?.split(',').map((s) => s.trim()), say });
    const over = Object.entries(shapes).filter(([, s]) => Math.max(s.gatewayOverLean, s.prodOverLean) > 1.3).map(([name]) => name);
    say(`  gateway CPU per call over 1.3 × the lean forwarder's (to be profiled): ${over.length ? over.join(', ') : 'none'}`);
    judgeShapes(shapes, check, say);
    report.figures.shapes = shapes;
  }

  // Targets, judged only where their figures were measured in this run.
  say('\nTargets (ratios measured in this run):');
  const verdict = (met) => (met ? 'met' : 'NOT met');
  for (const t of gateways) {
    const variant = t === plain ? 'plain' : 'jwt+metrics';
    if (!(tp || lat || st || idle[idleNames[variant]] || init)) continue; // none of its figures in this run
    say(` ${variant}:`);
    // The naive hop's ratio stays beside each floor verdict, for the runs judged against it.
    const hopRatio = (x) => `(naive hop: ${fmt(x)})`;
    if (tp) {
      const ratio = pairedRatio(tp, t.name, floor.name, sliceThroughput);
      say(`  HTTP throughput / lean floor    ${fmt(ratio)} ≥ 0.80  ${verdict(check('http-throughput', ratio, 0.8, '>=', variant))}  ${hopRatio(pairedRatio(tp, t.name, hop.name, sliceThroughput))}`);
    }
    if (lat) {
      const gAdded = median(added(t.name));
      say(`  added p50 / lean floor's added  ${fmt(gAdded / floorAdded)} ≤ 1.30  ${verdict(check('added-latency', gAdded / floorAdded, 1.3, '<=', variant))}  ${hopRatio(gAdded / hopAdded)}`);
    }
    if (st) {
      const ratio = pairedRatio(st, stdioNames[variant], bridge.name, sliceThroughput);
      say(`  stdio throughput / naive bridge ${fmt(ratio)} ≥ 0.90  ${verdict(check('stdio-throughput', ratio, 0.9, '>=', variant))}`);
    }
    if (tp) {
      const [ratio, limit] = [pairedRatio(tp, t.name, floor.name, sliceCpu), variant === 'plain' ? 1.3 : 1.5];
      say(`  CPU per call / lean floor       ${fmt(ratio)} ≤ ${fmt(limit)}  ${verdict(check('cpu-per-call', ratio, limit, '<=', variant))}  ${hopRatio(pairedRatio(tp, t.name, hop.name, sliceCpu))}`);
    }
    const gIdle = idle[idleNames[variant]];
    if (gIdle) {
      say(`  RSS per idle session (KB)       ${fmt(gIdle.bytesPerSession / 1024, 1)} ≤ 16  ${verdict(check('idle-session-rss', gIdle.bytesPerSession / 1024, 16, '<=', variant) && gIdle.errors === 0 && gIdle.opened === IDLE)}`);
    }
    if (init) {
      const gInit = median(init[initNames[variant]].map((r) => r.p50));
      say(`  initialize (3) / floor's (1)    ${fmt(gInit / floorInit)} ≤ 1.50  ${verdict(check('initialize', gInit / floorInit, 1.5, '<=', variant))}  ${hopRatio(gInit / hopInit)}`);
    }
  }
  const { connected } = report.figures;
  if (connected) {
    const held = connected.errors === 0 && connected.connected === connected.sessions;
    say(` connected (${connected.connected.toLocaleString('en')} sessions with a GET stream, keep-alive every ${connected.keepAliveMs / 1_000} s):`);
    say(`  RSS per connected session (KB)  ${fmt(connected.bytesPerSession / 1024, 1)} ≤ 16  ${verdict(check('connected-session-rss', connected.bytesPerSession / 1024, 16, '<=', 'connected') && held)}`);
    const idleMet = check('connected-idle-cpu', connected.idleCpuShare * 100, 1, '<=', 'connected');
    say(`  CPU while idle (% of a core)    ${fmt(connected.idleCpuShare * 100, 2)} ≤ 1  ${verdict(idleMet)}${idleMet ? '' : `: ${idleWhy(connected)}`}`);
    say(`  call p99 connected / alone      ${fmt(connected.p99Ratio)} ≤ 1.50  ${verdict(check('connected-call-p99', connected.p99Ratio, 1.5, '<=', 'connected'))}`);
  }
  if (catalog) {
    const p99 = median(catalog.map((r) => r.p99));
    say(` catalog:\n  ping p99 during a ${catalog[0].listed}-tool list (ms) ${fmt(p99, 1)} ≤ 50  ${verdict(check('catalog-ping-p99', p99, 50, '<=', 'catalog'))}`);
  }
  if (searched) {
    // Judged as the gateway answers on the wire; as the SDK client sees it too (its own work in).
    say(' search:');
    for (const [kind, name, label] of [['wire', 'search-p50', 'wire client'], ['sdk', 'search-p50-sdk', 'SDK v1 client']]) {
      const p50 = median(searched.latency.map((r) => r[kind].search.p50));
      say(`  search_tools p50 over ${searched.catalogue.toLocaleString('en')} tools, ${label} (ms) ${fmt(p50, 3)} ≤ 2  ${verdict(check(name, p50, 2, '<=', 'search'))}`);
    }
  }
  if (lazy) {
    say(' lazy:');
    for (const [name, label, value, limit, comparison, sound] of lazyTargets(lazy, median)) {
      const digits = name === 'lazy-idle-children' ? 0 : name === 'lazy-idle-rss' ? 1 : 2;
      say(`  ${label.padEnd(35)} ${fmt(value, digits)} ${comparison === '<=' ? '≤' : '≥'} ${limit}  ${verdict(check(name, value, limit, comparison, 'lazy') && sound)}`);
    }
  }
  if (report.figures.shapes) say(shapesVerdict(report.figures.shapes, report.targets));
  if (report.figures.stateless) say(' stateless: none judged (figures only; bench/README.md, "Stateless clients")');
  if (report.figures.tracing) say(' tracing: none judged (ratios only; bench/README.md, "Tracing")');
  if (report.figures.sizing) say(' sizing: none judged (figures to plan from; bench/README.md, "Sizing")');
  if (tp) say(`\nDirect reaches ${fmt(median(tp[direct.name].map((r) => r.throughput)), 0)} calls/s; the lean floor ${fmt(pairedRatio(tp, floor.name, direct.name, sliceThroughput))} × direct, the naive hop ${fmt(pairedRatio(tp, hop.name, direct.name, sliceThroughput))}.`);
  say(`Took ${fmt((performance.now() - started) / 1000, 0)} s.`);
} catch (err) {
  failed = true;
  process.stderr.write(`bench failed: ${err.stack ?? err}\n`);
} finally {
  await stopAll();
  await auth?.close();
  await rm(dir, { recursive: true, force: true });
}
if (values.json) await writeFile(values.json, `${JSON.stringify({ ...report, summary: lines }, null, 2)}\n`);
process.exit(failed ? 1 : 0);
