// The shapes section of `npm run bench -- --shapes`: what a call costs as the upstream behind it
// changes shape (session ids or none, a GET stream or 405, 1 to 1,000 tools, JSON or SSE
// answers, 1 or 16 client sessions). One factor varies at a time from a base shape, plus the
// "real server" shape of issue 27. In each shape the gateway (plain, and with JWT and metrics),
// the lean MCP-aware forwarder and the naive hop take turns with the lean floor
// (bench/lean-floor.mjs) under one load generator, fresh processes each round, and every figure
// is a ratio to the floor's in the same turns (bench/README.md, "Tenth pass").
// The turns run in the order naive hop, lean, gateway, gateway+jwt+metrics, floor: with five
// targets the first and the last sit idle 4 s between their turns (the last 8 s before its
// first), and a process with a gateway's heap that idles that long runs major GCs inside its
// next turns (a plain gateway placed last: 26 mark-compacts in a 30 s life instead of 1, +50%
// CPU per call; Tenth pass). The ends go to the two processes with the smallest heaps.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gatewayConfig, here, loadgen, median, renewable, start } from './parts.mjs';

const BASE = { SESSIONS: '1', GET: '0', TOOLS: '1', SSE: '0', clients: 16, version: '2025-06-18' };
/** Each shape: a name, what it changes from the base, and the upstream's env. */
export const SHAPES = [
  { name: 'base', label: 'base: session ids, GET 405, 1 tool, 16 sessions, JSON', ...BASE },
  { name: 'no-session-ids', label: 'no session ids', ...BASE, SESSIONS: '0' },
  { name: 'get-stream', label: 'GET stream served', ...BASE, GET: '1' },
  { name: 'tools-50', label: '50 tools', ...BASE, TOOLS: '50' },
  { name: 'tools-1000', label: '1,000 tools', ...BASE, TOOLS: '1000' },
  { name: 'one-session', label: '1 client session', ...BASE, clients: 1 },
  { name: 'sse', label: 'SSE answers', ...BASE, SSE: '1' },
  // The clients that get the answer as a resumable stream (a priming event first): 2025-11-25 on.
  { name: 'sse-primed', label: 'SSE answers, 2025-11-25 clients', ...BASE, SSE: '1', version: '2025-11-25' },
  { name: 'real', label: 'real server: ids + GET + 50 tools + 16 sessions', ...BASE, GET: '1', TOOLS: '50' },
];
/** The targets of every shape, the floor first; `cpuBase` names the one the profile rule compares. */
const TARGETS = ['floor', 'naive hop', 'lean', 'gateway', 'gateway+jwt+metrics'];
const C = 16;

const sum = (slices, key) => slices.reduce((total, slice) => total + slice[key], 0);

/**
 * Runs `shapes` (names from SHAPES; all by default). Resolves to { [shape]: { rounds, ratios } }:
 * per target its rounds' slices, and the median turn-by-turn ratios of throughput and CPU per
 * call to the floor's (`gatewayOverLean`: the gateway's CPU per call over the lean forwarder's,
 * turn by turn, the rule for a profile).
 */
export async function runShapes({ buildDir, dir, auth, rounds, slices, slice, warmUp, profile, names, say }) {
  const chosen = names ? names.map((n) => SHAPES.find((s) => s.name === n) ?? fail(`--shape-names: unknown shape ${n} (one of ${SHAPES.map((s) => s.name).join(', ')})`)) : SHAPES;
  const out = {};
  for (const shape of chosen) {
    const profiled = (target) => (profile ? ['--cpu-prof', `--cpu-prof-dir=${profile}`, `--cpu-prof-name=${shape.name}-${target.replaceAll('+', '-').replaceAll(' ', '-')}.cpuprofile`] : []);
    const env = { SESSIONS: shape.SESSIONS, GET: shape.GET, TOOLS: shape.TOOLS, SSE: shape.SSE };
    const upstream = await start(`upstream ${shape.name}`, process.execPath, [join(here, 'upstream-shapes.mjs')], env);
    const targets = [];
    try {
      const file = (name) => join(dir, `shape-${shape.name}-${name}.yaml`);
      await writeFile(file('plain'), gatewayConfig({ b: { http: { url: upstream.url } } }, { sessions: 1000 }));
      await writeFile(file('prod'), gatewayConfig({ b: { http: { url: upstream.url } } }, { sessions: 1000, metrics: true, auth }));
      const node = (name, args, extra, processEnv = {}) => renewable(() => start(name, process.execPath, [...profiled(name), ...args], { UPSTREAM: upstream.url, ...processEnv }), { name, ...extra });
      targets.push(await node('naive hop', [join(here, 'naive-hop.mjs')], { tool: 'echo' }));
      targets.push(await node('lean', [join(here, 'lean-forwarder.mjs')], { tool: 'b__echo' }));
      targets.push(await node('gateway', [join(buildDir, 'main.js'), '--config', file('plain'), '--port', '0'], { tool: 'b__echo' }));
      targets.push(await node('gateway+jwt+metrics', [join(buildDir, 'main.js'), '--config', file('prod'), '--port', '0'], { tool: 'b__echo', token: auth.token }));
      targets.push(await node('floor', [join(here, 'lean-floor.mjs')], { tool: 'echo' }));
      const byTarget = Object.fromEntries(TARGETS.map((name) => [name, []]));
      for (let round = 0; round < rounds; round++) {
        if (round > 0) for (const t of targets) await t.renew();
        const specs = targets.map((t) => ({ name: t.name, url: t.url, tool: t.tool, token: t.token, pid: t.pid }));
        const result = await loadgen(['--alternate', JSON.stringify(specs), '--sessions', String(shape.clients), '--protocol-version', shape.version, '--concurrency', String(C), '--slices', String(slices), '--slice', String(slice), '--warm-up', String(warmUp)]);
        if (result.errors > 0) throw new Error(`shape ${shape.name}: ${result.errors} errors (first: ${result.firstError})`);
        for (const name of TARGETS) byTarget[name].push(result.targets[name]);
      }
      const paired = (name, base, figure) => median(byTarget[name].flatMap((turns, r) => turns.map((turn, i) => figure(turn) / figure(byTarget[base][r][i]))));
      const throughput = (turn) => turn.calls / turn.seconds;
      const cpu = (turn) => turn.cpuSeconds / turn.calls;
      const ratios = {};
      for (const name of TARGETS.slice(1)) ratios[name] = { throughput: paired(name, 'floor', throughput), cpu: paired(name, 'floor', cpu) };
      const absolute = Object.fromEntries(TARGETS.map((name) => [name, { throughput: median(byTarget[name].map((turns) => sum(turns, 'calls') / sum(turns, 'seconds'))), cpuPerCallUs: median(byTarget[name].map((turns) => (sum(turns, 'cpuSeconds') * 1e6) / sum(turns, 'calls'))) }]));
      const idle = median(Object.values(byTarget).flat(2).map((turn) => turn.machineIdle));
      out[shape.name] = { label: shape.label, env, clients: shape.clients, version: shape.version, rounds: byTarget, ratios, absolute, gatewayOverLean: paired('gateway', 'lean', cpu), prodOverLean: paired('gateway+jwt+metrics', 'lean', cpu), machineIdle: idle };
      say?.(shapeRow(shape.name, out[shape.name]));
    } finally {
      await Promise.all([...targets.map((t) => t.stop()), upstream.stop()]);
    }
  }
  return out;
}

function fail(message) {
  throw new Error(message);
}

const f = (x, digits = 2) => (Number.isFinite(x) ? x.toFixed(digits) : String(x));

/** The table's heading: every cell after the floor's µs is throughput / CPU per call, to the floor's. */
export function shapeHeading() {
  const cell = (s) => s.padStart(11);
  return [
    `  ${'shape'.padEnd(16)} ${'floor/s'.padStart(7)} ${'µs'.padStart(4)} ${cell('naive hop')} ${cell('lean')} ${cell('gateway')} ${cell('gw+jwt+met')}  ${'gw/lean CPU'.padStart(11)}  idle`,
    `  ${''.padEnd(16)} ${''.padStart(7)} ${''.padStart(4)} ${cell('tput / CPU')} ${cell('tput / CPU')} ${cell('tput / CPU')} ${cell('tput / CPU')}  ${'plain / prod'.padStart(11)}`,
  ].join('\n');
}

export function shapeRow(name, s) {
  const cell = (target) => `${f(s.ratios[target].throughput)} / ${f(s.ratios[target].cpu)}`.padStart(11);
  return `  ${name.padEnd(16)} ${f(s.absolute.floor.throughput, 0).padStart(7)} ${f(s.absolute.floor.cpuPerCallUs, 0).padStart(4)} ${cell('naive hop')} ${cell('lean')} ${cell('gateway')} ${cell('gateway+jwt+metrics')}  ${`${f(s.gatewayOverLean)} / ${f(s.prodOverLean)}`.padStart(11)}  ${f(100 * s.machineIdle, 0).padStart(3)}%`;
}

/**
 * Issue 36's targets, judged in every shape against the floor of the same turns: CPU per call
 * ≤ 1.3× plain and ≤ 1.5× with JWT and metrics, throughput ≥ 0.8× both. Each as [id, label,
 * gateway, figure, limit, comparison].
 */
const SHAPE_TARGETS = [
  ['cpu-plain', 'CPU plain', 'gateway', 'cpu', 1.3, '<='],
  ['cpu-jwt-metrics', 'CPU JWT+metrics', 'gateway+jwt+metrics', 'cpu', 1.5, '<='],
  ['throughput-plain', 'tput plain', 'gateway', 'throughput', 0.8, '>='],
  ['throughput-jwt-metrics', 'tput JWT+metrics', 'gateway+jwt+metrics', 'throughput', 0.8, '>='],
];

/**
 * Why a shape misses a target, as the profiles of bench/HISTORY.md found it (the Fifteenth pass
 * for the JSON shapes, the Seventeenth to Nineteenth for SSE answers), with this run's figures.
 */
export function shapeWhy(s) {
  const lean = f(s.ratios.lean.cpu);
  if (s.env.SSE === '1' && s.version >= '2025-11-25') {
    return (
      `the upstream answers as a stream, so a 2025-11-25 client's answer is a resumable stream of its session (its record, its event kept in the replay\n` +
      `      log, the priming event, chunk framing) and the upstream's SSE is parsed: the stream costs about 0.15 of the floor's CPU per call (bench/runs/\n` +
      `      ab-sse-json-older.txt: the same upstream with JSON answers to older clients); the lean forwarder, answering JSON, ${lean} here. The stream stays:\n` +
      `      it is what such a client resumes, and what the conformance suite's SSE checks score (docs/performance.md)`
    );
  }
  if (s.env.SSE === '1') {
    return (
      `the upstream answers as a stream, parsed here (decoding, the parser, its events: about 2.3 µs per call), and its SSE makes the machine's wake-ups\n` +
      `      dearer, which the socket writes show (bench/HISTORY.md, Nineteenth pass); the lean forwarder, parsing the same, ${lean} here`
    );
  }
  return (
    `the floor parses nothing; the gateway parses and writes JSON both ways (as the lean forwarder does: ${lean} here) and runs its own steps (edge, session,\n` +
    `      policy, names, limits, client, transport), some forty, none above 2 µs under profiling; one run's ratio moves by up to 0.3 between identical\n` +
    `      processes on a shared 2-core host (bench/HISTORY.md, Fifteenth pass; where the time goes: --profile DIR, then bench/profile-summary.mjs --layers)`
  );
}

/** Says each shape's verdict on the targets (recorded by `check` as shape-NAME-ID), and why where one is missed. */
export function judgeShapes(shapes, check, say) {
  say('  targets in every shape (CPU per call ≤ 1.30 plain, ≤ 1.50 JWT+metrics; throughput ≥ 0.80 both):');
  for (const [name, s] of Object.entries(shapes)) {
    const missed = SHAPE_TARGETS.filter(([id, , gateway, figure, limit, comparison]) => !check(`shape-${name}-${id}`, s.ratios[gateway][figure], limit, comparison, 'shapes'));
    const what = missed.map(([, label, gateway, figure, limit, comparison]) => `${label} ${f(s.ratios[gateway][figure])} ${comparison === '<=' ? '>' : '<'} ${f(limit)}`);
    say(`    ${name.padEnd(16)} ${missed.length === 0 ? 'met' : `NOT met: ${what.join(', ')}`}`);
    if (missed.length > 0) say(`      why: ${shapeWhy(s)}`);
  }
}

/** The Targets section's line: in how many shapes every target was met (`targets`: the run's, as judgeShapes recorded them). */
export function shapesVerdict(shapes, targets) {
  const names = Object.keys(shapes);
  const missed = names.filter((name) => targets.some((t) => !t.met && SHAPE_TARGETS.some(([id]) => t.name === `shape-${name}-${id}`)));
  return ` shapes: every target met in ${names.length - missed.length} of ${names.length}${missed.length > 0 ? ` (not in ${missed.join(', ')}: verdicts and why above)` : ''}`;
}
