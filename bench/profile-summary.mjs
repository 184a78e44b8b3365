// Summarises V8 .cpuprofile files (from `--cpu-prof`, e.g. `npm run bench -- --shapes --profile DIR`):
// self time by function and by file or package, and the time spent under each of the gateway's
// own files (inclusive: any frame of that file on the stack), as shares of the busy (non-idle)
// samples. Only the samples after the profile's longest idle stretch count: in a bench run that
// is the wait for its turn after startup and the handshakes, so what is left is the load (the
// warm-up and the turns). A file named FILE:US (US the process's CPU µs per call, from the same
// run) gets µs per call beside each share. With --diff A:US B:US: per file or package, and per
// function, where A's µs per call exceed B's. A diagnostic; the bench's figures come from /proc.
//   node bench/profile-summary.mjs [--top 25] FILE.cpuprofile[:US] [FILE2 …]
//   node bench/profile-summary.mjs --diff [--top 25] A.cpuprofile:US B.cpuprofile:US
//   node bench/profile-summary.mjs --callers NAME FILE.cpuprofile[:US]  (the stacks under which a
//                                        function named NAME spends its self time, 4 frames up)
//   node bench/profile-summary.mjs --lines NAME FILE.cpuprofile  (the lines of the compiled file
//                                        the samples of a function named NAME fell on)
//   node bench/profile-summary.mjs --layers FILE.cpuprofile:US [FILE2:US …]  (self time by the
//                                        layers of a call, one column per profile; Thirteenth pass)
//   node bench/profile-summary.mjs --window FILE.json FILE.cpuprofile  (only the samples between
//                                        FILE.json's `from` and `to`, µs of the monotonic clock
//                                        the profile is stamped with: bench/connected.mjs --profile
//                                        writes the idle phase's)
import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { parseArgs } from 'node:util';

const { values, positionals } = parseArgs({ allowPositionals: true, options: { top: { type: 'string', default: '25' }, diff: { type: 'boolean', default: false }, callers: { type: 'string' }, lines: { type: 'string' }, layers: { type: 'boolean', default: false }, window: { type: 'string' } } });
const window = values.window ? JSON.parse(await readFile(values.window, 'utf8')) : undefined;
const TOP = Number(values.top);

/** Where a frame's code lives: a package, a Node internal, the gateway's file (under dist), or a V8 category. */
function fileOf(url, name) {
  if (!url) return name.startsWith('(') ? name : '(native)';
  const path = url.replace(/^file:\/\//, '');
  const nm = path.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const rest = path.slice(nm + 14).split('/');
    return `npm:${rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]}`;
  }
  if (path.startsWith('node:')) return path;
  const dist = /\/(?:[\w.-]*-)?dist[^/]*\/(.*)$/.exec(path);
  if (dist) return `gateway:${dist[1]}`;
  return basename(path);
}

/** The gateway's functions whose self time is mostly V8's JSON.parse or JSON.stringify (inlined there). */
const JSON_CARRIERS = new Set(['received', 'decodeMessages', 'json', '#exchangeWith']);
const GATEWAY_LAYERS = [
  ['auth/', 'JWT (auth/, jose)'],
  ['metrics/', 'metrics (metrics/, prom-client)'],
  ['policy/', 'policy (policy/)'],
  ['router/', 'router and tools/call steps (router/)'],
  ['http/', 'HTTP endpoint (http/: edge, body, responder, reply)'],
  ['transport/', 'upstream transport (transport/)'],
  ['upstream/', 'upstream client (upstream/, mcp/)'],
  ['mcp/', 'upstream client (upstream/, mcp/)'],
  ['links/', 'sessions, links, names'],
  ['session/', 'sessions, links, names'],
  ['names/', 'sessions, links, names'],
];
const PACKAGE_LAYERS = { 'npm:undici': 'undici (incl. its llhttp wasm)', 'npm:jose': 'JWT (auth/, jose)', 'npm:prom-client': 'metrics (metrics/, prom-client)', 'npm:hono': 'Hono and its Node adapter', 'npm:@hono/node-server': 'Hono and its Node adapter', 'npm:ajv': 'argument checks (ajv)', 'npm:lru-cache': 'lru-cache (JWT and Accept caches)' };

/** The layer of a call a frame's self time belongs to (--layers). */
function layerOf(functionName, where) {
  if (functionName === 'writev' || functionName === 'writevGeneric') return 'socket writes (native writev and its JS)';
  if (functionName === '(garbage collector)') return 'garbage collector (the objects of each call)';
  if (functionName === '(program)') return '(program: V8 outside JavaScript)';
  if (where.startsWith('gateway:')) {
    if (JSON_CARRIERS.has(functionName)) return 'JSON parse and stringify (received, decodeMessages, json, #exchangeWith)';
    const path = where.slice('gateway:'.length);
    return GATEWAY_LAYERS.find(([prefix]) => path.startsWith(prefix))?.[1] ?? 'gateway, other';
  }
  if (PACKAGE_LAYERS[where]) return PACKAGE_LAYERS[where];
  if (/^[0-9a-f]{8}$/.test(where)) return PACKAGE_LAYERS['npm:undici'];
  if (where.startsWith('npm:')) return 'other packages';
  if (/^node:(_http_|net$|events$|buffer$|internal\/(streams|stream_base_commons|buffer))/.test(where)) return 'Node HTTP and sockets (JavaScript)';
  if (where.startsWith('node:')) return 'Node, other (timers, ticks, perf hooks)';
  return where === '(native)' ? 'native, other' : `other (${where})`;
}

/** Self time per call by layer, one column per profile (each FILE:US). */
async function layered(args) {
  if (args.some((a) => !a.usPerCall)) throw new Error('--layers FILE.cpuprofile:US …');
  const loaded = await Promise.all(args.map((a) => load(a.file)));
  const perCall = loaded.map((p, i) => new Map([...p.layers].map(([k, us]) => [k, (args[i].usPerCall * us) / p.busy])));
  const names = [...new Set(perCall.flatMap((m) => [...m.keys()]))].sort((x, y) => (perCall[0].get(y) ?? 0) - (perCall[0].get(x) ?? 0));
  const cell = (x) => x.toFixed(1).padStart(10);
  const lines = [`µs per call by layer (self time; columns: ${args.map((a, i) => `${i + 1} ${basename(a.file)} at ${a.usPerCall}`).join(', ')})`];
  for (const name of names) lines.push(`  ${perCall.map((m) => cell(m.get(name) ?? 0)).join('')}  ${name}`);
  lines.push(`  ${args.map((a) => cell(a.usPerCall)).join('')}  total`);
  return lines.join('\n');
}

/** FILE[:US] as { file, usPerCall }. */
function named(arg) {
  const match = /^(.*\.cpuprofile):([\d.]+)$/.exec(arg);
  return match ? { file: match[1], usPerCall: Number(match[2]) } : { file: arg, usPerCall: undefined };
}

/** Self time (µs) by function and by file, the gateway's inclusive time by file, over the load's samples. */
async function load(file) {
  const profile = JSON.parse(await readFile(file, 'utf8'));
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const self = new Map();
  const isIdle = (i) => byId.get(profile.samples[i]).callFrame.functionName === '(idle)';
  // The longest idle stretch; the load is what comes after it.
  let from = 0;
  let longest = 0;
  for (let i = 0, start = 0, run = 0; i < profile.samples.length; i++) {
    if (!isIdle(i)) {
      run = 0;
      continue;
    }
    if (run === 0) start = i;
    run += profile.timeDeltas[i + 1] ?? 0;
    if (run > longest) [longest, from] = [run, start];
  }
  // With --window, the samples stamped inside it instead.
  const stamps = [];
  for (let i = 0, t = profile.startTime; i < profile.samples.length; i++) stamps.push((t += profile.timeDeltas[i]));
  const counted = (i) => (window ? stamps[i] >= window.from && stamps[i] <= window.to : i >= from);
  // A sample's time is the gap to the next one (how DevTools attributes it).
  for (let i = 0; i < profile.samples.length; i++) {
    if (!counted(i)) continue;
    const dt = profile.timeDeltas[i + 1] ?? 0;
    self.set(profile.samples[i], (self.get(profile.samples[i]) ?? 0) + dt);
  }
  const fn = new Map();
  const layers = new Map();
  const callers = new Map();
  const files = new Map();
  const inclusive = new Map();
  let busy = 0;
  let idle = 0;
  for (const [id, us] of self) {
    const node = byId.get(id);
    const { functionName, url, lineNumber } = node.callFrame;
    if (functionName === '(idle)') {
      idle += us;
      continue;
    }
    busy += us;
    const where = fileOf(url, functionName);
    const key = `${functionName || '(anonymous)'}  ${where}${url ? `:${lineNumber + 1}` : ''}`;
    fn.set(key, (fn.get(key) ?? 0) + us);
    const layer = layerOf(functionName, where);
    layers.set(layer, (layers.get(layer) ?? 0) + us);
    if (values.callers && functionName === values.callers) {
      const stack = [];
      for (let at = parent.get(id); at !== undefined && stack.length < 4; at = parent.get(at)) {
        const frame = byId.get(at).callFrame;
        stack.push(`${frame.functionName || '(anonymous)'} ${fileOf(frame.url, frame.functionName)}:${frame.lineNumber + 1}`);
      }
      const where = stack.join(' < ');
      callers.set(where, (callers.get(where) ?? 0) + us);
    }
    files.set(where, (files.get(where) ?? 0) + us);
    // Inclusive per gateway file: each file counted once per sample however deep it recurs.
    const seen = new Set();
    for (let at = id; at !== undefined; at = parent.get(at)) {
      const frame = byId.get(at).callFrame;
      const f = fileOf(frame.url, frame.functionName);
      if (f.startsWith('gateway:') && !seen.has(f)) {
        seen.add(f);
        inclusive.set(f, (inclusive.get(f) ?? 0) + us);
      }
    }
  }
  return { fn, files, inclusive, callers, layers, busy, idle };
}

async function summarise({ file, usPerCall }) {
  const { fn, files, inclusive, callers, busy, idle } = await load(file);
  const share = (us) => `${((100 * us) / busy).toFixed(1).padStart(5)}%${usPerCall ? ` ${((usPerCall * us) / busy).toFixed(2).padStart(6)} µs/call` : ''}`;
  const top = (map, n = TOP) => [...map].sort((a, b) => b[1] - a[1]).slice(0, n).map(([k, us]) => `  ${share(us)}  ${k}`);
  const group = (prefix) => [...files].filter(([k]) => k.startsWith(prefix)).reduce((t, [, us]) => t + us, 0);
  const lines = [`${file}: ${(busy / 1e6).toFixed(2)} s busy, ${(idle / 1e6).toFixed(2)} s idle, ${window ? 'inside the window' : 'after its longest idle stretch'}`];
  if (values.callers) return [...lines, `${values.callers}, by caller:`, ...top(callers)].join('\n');
  lines.push(`  by kind: gateway code ${share(group('gateway:')).trim()}, node: internals ${share(group('node:')).trim()}, npm packages ${share(group('npm:')).trim()}, native/V8 ${share(group('(')).trim()}`);
  lines.push('self time by file or package:', ...top(files, 20));
  lines.push('self time by function:', ...top(fn));
  if (inclusive.size) lines.push('inclusive time by gateway file (any frame of it on the stack):', ...top(inclusive, 20));
  return lines.join('\n');
}

/** Where A's µs per call exceed B's, per file or package and per function. */
async function diff(a, b) {
  if (!a?.usPerCall || !b?.usPerCall) throw new Error('--diff A.cpuprofile:US B.cpuprofile:US');
  const [pa, pb] = await Promise.all([load(a.file), load(b.file)]);
  const perCall = (p, us, map) => new Map([...map].map(([k, t]) => [k, (us * t) / p.busy]));
  const lines = [`${a.file} (${a.usPerCall} µs/call) over ${b.file} (${b.usPerCall} µs/call): ${(a.usPerCall - b.usPerCall).toFixed(1)} µs/call more`];
  for (const [title, key] of [['by file or package', 'files'], ['by function', 'fn']]) {
    const ma = perCall(pa, a.usPerCall, pa[key]);
    const mb = perCall(pb, b.usPerCall, pb[key]);
    const keys = new Set([...ma.keys(), ...mb.keys()]);
    const rows = [...keys].map((k) => [k, ma.get(k) ?? 0, mb.get(k) ?? 0]).sort((x, y) => y[1] - y[2] - (x[1] - x[2]));
    lines.push(`${title} (µs/call: A, B, A − B):`);
    for (const [k, x, y] of rows.slice(0, TOP)) lines.push(`  ${x.toFixed(2).padStart(6)} ${y.toFixed(2).padStart(6)} ${(x - y).toFixed(2).padStart(6)}  ${k}`);
  }
  return lines.join('\n');
}

/** The lines of the compiled file that the samples in functions named `name` fell on (V8's position ticks, whole profile). */
async function linesOf(file, name) {
  const profile = JSON.parse(await readFile(file, 'utf8'));
  const ticks = new Map();
  for (const node of profile.nodes) {
    if (node.callFrame.functionName !== name) continue;
    for (const { line, ticks: n } of node.positionTicks ?? []) {
      const key = `${fileOf(node.callFrame.url, name)}:${line}`;
      ticks.set(key, (ticks.get(key) ?? 0) + n);
    }
  }
  const total = [...ticks.values()].reduce((sum, n) => sum + n, 0);
  const rows = [...ticks].sort((a, b) => b[1] - a[1]).slice(0, TOP).map(([key, n]) => `  ${((100 * n) / total).toFixed(1).padStart(5)}%  ${String(n).padStart(6)} samples  ${key}`);
  return [`${file}: ${name}'s ${total} samples by line of the compiled file:`, ...rows].join('\n');
}

if (values.lines) for (const arg of positionals) process.stdout.write(`${await linesOf(named(arg).file, values.lines)}\n\n`);
else if (values.layers) process.stdout.write(`${await layered(positionals.map(named))}\n`);
else if (values.diff) process.stdout.write(`${await diff(named(positionals[0]), named(positionals[1]))}\n`);
else for (const arg of positionals) process.stdout.write(`${await summarise(named(arg))}\n\n`);
