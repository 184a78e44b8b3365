// `npm run bench:ab -- [options] NAME=KIND …`: several gateways (builds, feature sets) and the
// naive hop taking turns under one load generator, as the bench's throughput section does, to
// compare them with each other in the same minutes. Each round starts fresh processes; the
// figures are the medians of turn-by-turn ratios to the first `hop`, with each round's ratio of
// CPU per call beside them. A diagnostic, not a verdict: it judges no target.
//   KIND: hop[:token] | direct[:token] (:token: sent the JWT gateways' Authorization header too)
//         | gateway[:plain|jwt|metrics|jwt+metrics][@BUILD_DIR]
//         | lean[:NAME=VALUE,…] (lean-forwarder.mjs with those LEAN_* knobs, e.g. lean:LEAN_TIMERS=1)
//         | floor[:NAME=VALUE,…] (lean-floor.mjs with those FLOOR_* knobs, e.g. floor:FLOOR_API=request)
//   The ratios are to the first hop or floor target named.
//   e.g.  npm run bench:ab -- --rounds 4 hop=hop a=gateway:jwt+metrics b=gateway:jwt+metrics@.tmp/old-dist
//   [--rounds 4] [--slices 10] [--slice 0.5] (turns per target and round, seconds each)
//   [--warm-up 2] (seconds of load per target before each round's turns)
//   [--build-dir DIR] (where this tree is compiled for targets without @BUILD_DIR; default .tmp/bench-dist)
//   [--env NAME=VALUE] (repeatable: the bench upstream's shape, e.g. --env GET=1 --env TOOLS=50 for
//                       the call path's upstream)
//   [--flags NAME='--node-flag …'] (repeatable: Node/V8 flags for that target's process, e.g.
//                                  --flags big='--max-semi-space-size=64')
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { authServer, build, gatewayConfig, here, loadgen, median, renewable, root, start, stopAll } from './parts.mjs';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { rounds: { type: 'string', default: '4' }, slices: { type: 'string', default: '10' }, slice: { type: 'string', default: '0.5' }, 'warm-up': { type: 'string', default: '2' }, 'build-dir': { type: 'string' }, flags: { type: 'string', multiple: true, default: [] }, env: { type: 'string', multiple: true, default: [] } },
});
const C = 16;
const FEATURES = { plain: {}, jwt: { jwt: true }, metrics: { metrics: true }, 'jwt+metrics': { jwt: true, metrics: true } };

/** NAME=KIND as { name, kind, features, build }; throws on anything else. */
function parseTarget(text) {
  const lean = /^([\w.+-]+)=lean(?::((?:LEAN_\w+=\w+,?)+))?$/.exec(text);
  if (lean) return { name: lean[1], kind: 'lean', env: Object.fromEntries((lean[2] ?? '').split(',').filter(Boolean).map((pair) => pair.split('='))) };
  const floor = /^([\w.+-]+)=floor(?::((?:FLOOR_\w+=\w+,?)+))?$/.exec(text);
  if (floor) return { name: floor[1], kind: 'floor', env: Object.fromEntries((floor[2] ?? '').split(',').filter(Boolean).map((pair) => pair.split('='))) };
  const match = /^([\w.+-]+)=(hop|direct|gateway)(?::([\w+]+))?(?:@(.+))?$/.exec(text);
  if (!match) throw new Error(`not a target: ${text} (NAME=hop, NAME=direct, NAME=lean[:LEAN_X=1,…] or NAME=gateway[:plain|jwt|metrics|jwt+metrics][@BUILD_DIR])`);
  const [, name, kind, variant = kind === 'gateway' ? 'jwt+metrics' : undefined, buildDir] = match;
  // A hop or direct target with :token gets the same Authorization header as a JWT gateway.
  if (kind !== 'gateway') {
    if (variant !== undefined && variant !== 'token') throw new Error(`${text}: ${kind} takes :token or nothing`);
    return { name, kind, token: variant === 'token' };
  }
  if (!(variant in FEATURES)) throw new Error(`${text}: unknown variant ${variant}`);
  return { name, kind, features: FEATURES[variant], build: buildDir && resolve(root, buildDir) };
}

const specs = positionals.map(parseTarget);
/** Node flags by target name (--flags NAME='…'). */
const flagsOf = new Map(
  values.flags.map((entry) => {
    const at = entry.indexOf('=');
    if (at <= 0 || !specs.some((s) => s.name === entry.slice(0, at))) throw new Error(`--flags ${entry}: NAME='--flag …' naming a target`);
    return [entry.slice(0, at), entry.slice(at + 1).split(' ').filter(Boolean)];
  }),
);
const base = specs.find((s) => s.kind === 'hop' || s.kind === 'floor');
if (!base) throw new Error('name a hop or floor target (NAME=hop, NAME=floor): the ratios are to the first');
if (new Set(specs.map((s) => s.name)).size !== specs.length) throw new Error('target names must differ');
const ownBuild = resolve(root, values['build-dir'] ?? join('.tmp', 'bench-dist'));
if (specs.some((s) => s.kind === 'gateway' && !s.build)) await build(ownBuild);

const dir = await mkdtemp(join(tmpdir(), 'switchyard-ab-'));
let auth;
try {
  auth = await authServer();
  const upstream = await start('upstream', process.execPath, [join(here, 'upstream-http.mjs')], Object.fromEntries(values.env.map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)])));
  const targets = [];
  for (const spec of specs) {
    const token = spec.token ? { token: auth.token } : {};
    const flags = flagsOf.get(spec.name) ?? [];
    if (spec.kind === 'direct') targets.push({ name: spec.name, url: upstream.url, tool: 'echo', ...token });
    else if (spec.kind === 'lean') targets.push(await renewable(() => start(spec.name, process.execPath, [...flags, join(here, 'lean-forwarder.mjs')], { UPSTREAM: upstream.url, ...spec.env }), { tool: 'b__echo' }));
    else if (spec.kind === 'floor') targets.push(await renewable(() => start(spec.name, process.execPath, [...flags, join(here, 'lean-floor.mjs')], { UPSTREAM: upstream.url, ...spec.env }), { tool: 'echo' }));
    else if (spec.kind === 'hop') targets.push(await renewable(() => start(spec.name, process.execPath, [...flags, join(here, 'naive-hop.mjs')], { UPSTREAM: upstream.url }), { tool: 'echo', ...token }));
    else {
      const file = join(dir, `${spec.name}.yaml`);
      const { jwt = false, metrics = false } = spec.features;
      await writeFile(file, gatewayConfig({ b: { http: { url: upstream.url } } }, { sessions: 1000, metrics, auth: jwt ? auth : undefined }));
      const main = join(spec.build ?? ownBuild, 'main.js');
      targets.push(await renewable(() => start(spec.name, process.execPath, [...flags, main, '--config', file, '--port', '0']), { tool: 'b__echo', ...(jwt ? { token: auth.token } : {}) }));
    }
  }
  const rounds = Object.fromEntries(targets.map((t) => [t.name, []]));
  for (let round = 0; round < Number(values.rounds); round++) {
    if (round > 0) for (const t of targets) if (t.renew) await t.renew();
    const turns = targets.map((t) => ({ name: t.name, url: t.url, tool: t.tool, token: t.token, pid: t.pid }));
    const result = await loadgen(['--alternate', JSON.stringify(turns), '--sessions', String(C), '--concurrency', String(C), '--slices', values.slices, '--slice', values.slice, '--warm-up', values['warm-up']]);
    if (result.errors > 0) throw new Error(`${result.errors} errors (first: ${result.firstError})`);
    for (const t of targets) rounds[t.name].push(result.targets[t.name]);
    process.stderr.write(`round ${round + 1} of ${values.rounds} done\n`);
  }
  const sum = (slices, key) => slices.reduce((total, slice) => total + slice[key], 0);
  const cpuPerCall = (slices) => sum(slices, 'cpuSeconds') / sum(slices, 'calls');
  console.log(`${Number(values.rounds)} rounds of ${values.slices} turns of ${values.slice} s at C=${C}; ratios to ${base.name}, turn by turn, then their median`);
  console.log(`${'target'.padEnd(14)} ${'CPU/call'.padStart(9)} ${'throughput'.padStart(11)} ${'CPU µs'.padStart(7)}   CPU/call by round`);
  for (const t of targets) {
    if (t.name === base.name) continue;
    const paired = (figure) => median(rounds[t.name].flatMap((slices, r) => slices.map((slice, i) => figure(slice) / figure(rounds[base.name][r][i]))));
    const cpu = t.pid ? paired((s) => s.cpuSeconds / s.calls).toFixed(3) : '–';
    const throughput = paired((s) => s.calls / s.seconds).toFixed(3);
    const micros = t.pid ? (median(rounds[t.name].map(cpuPerCall)) * 1e6).toFixed(0) : '–';
    const byRound = t.pid ? rounds[t.name].map((slices, r) => (cpuPerCall(slices) / cpuPerCall(rounds[base.name][r])).toFixed(2)).join(' ') : '';
    console.log(`${t.name.padEnd(14)} ${cpu.padStart(9)} ${throughput.padStart(11)} ${micros.padStart(7)}   ${byRound}`);
  }
  // Whether the two cores were saturated: a turn with idle time was bounded by more than CPU.
  const idle = (t) => (100 * median(rounds[t.name].flat().map((slice) => slice.machineIdle))).toFixed(0);
  console.log(`machine idle in the turns (median %): ${targets.map((t) => `${t.name} ${idle(t)}`).join(', ')}`);
} finally {
  await stopAll();
  await auth?.close();
  await rm(dir, { recursive: true, force: true });
}
