// The load generator: opens S sessions on an MCP endpoint, then calls tools/call `echo` from C
// closed-loop workers (or at a fixed offered rate) for D seconds over a keep-alive undici pool,
// accepting JSON and SSE answers and checking every echo. Prints one JSON line: throughput,
// latency percentiles (ms) and errors. Run in its own process, so it never shares an event
// loop with what it measures.
//   node loadgen.mjs --url URL [--sessions 16] [--concurrency 16] [--duration 3] [--rate R]
//                    [--tool echo] [--token T] [--init-only N] [--pid P] [--protocol-version 2025-06-18]
//       --pid: also the CPU seconds process P spent over the counted calls (from /proc/<pid>/stat),
//       as cpuSeconds in the summary.
//   node loadgen.mjs --alternate TARGETS_JSON [--slices 6] [--slice 0.5] [--warm-up 2] …
//       TARGETS_JSON: [{ "name", "url", "tool", "token"?, "pid"? }, …]. Closed-loop slices of
//       --slice seconds, the targets taking turns A B C, C B A, … --slices times each after a
//       --warm-up of each; every slice reports its calls, its seconds and, with a pid, the CPU
//       seconds that process spent in it (from /proc/<pid>/stat), and the share of the whole
//       machine that sat idle during it (from /proc/stat).
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { CLK_TCK, cpuSeconds, idleShare, machineTicks } from './proc.mjs';

const { values } = parseArgs({
  options: {
    url: { type: 'string' },
    sessions: { type: 'string', default: '16' },
    concurrency: { type: 'string', default: '16' },
    duration: { type: 'string', default: '3' },
    rate: { type: 'string' },
    tool: { type: 'string', default: 'echo' },
    token: { type: 'string' },
    'init-only': { type: 'string' },
    alternate: { type: 'string' },
    slices: { type: 'string', default: '6' },
    slice: { type: 'string', default: '0.5' },
    'warm-up': { type: 'string', default: '2' },
    pid: { type: 'string' },
    'protocol-version': { type: 'string', default: '2025-06-18' },
  },
});
const VERSION = values['protocol-version'];
const concurrency = Number(values.concurrency);
let firstError;

/** One MCP endpoint: its pool, its sessions, and a checked echo call. */
function endpoint({ url: href, tool, token }) {
  const url = new URL(href);
  const pool = new Pool(url.origin, { connections: Math.max(concurrency, 16), pipelining: 1, keepAliveTimeout: 60_000 });
  const baseHeaders = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': VERSION };
  if (token) baseHeaders.authorization = `Bearer ${token}`;
  const sessions = [];
  let counter = 0;

  async function post(message, session) {
    const headers = session ? { ...baseHeaders, 'mcp-session-id': session } : baseHeaders;
    const { statusCode, headers: answer, body } = await pool.request({ path: url.pathname, method: 'POST', headers, body: JSON.stringify(message) });
    const text = await body.text();
    if (statusCode === 202) return { status: statusCode, headers: answer };
    if (statusCode !== 200) throw new Error(`HTTP ${statusCode}: ${text.slice(0, 200)}`);
    const type = String(answer['content-type'] ?? '');
    let reply;
    if (type.startsWith('application/json')) reply = JSON.parse(text);
    else {
      for (const line of text.split('\n')) {
        if (!line.startsWith('data: ') || line.length < 7) continue;
        const event = JSON.parse(line.slice(6));
        if (event.id === message.id && !('method' in event)) reply = event;
      }
    }
    if (!reply) throw new Error('no response in the answer');
    return { status: statusCode, headers: answer, reply };
  }

  async function openSession() {
    const init = await post({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: 'loadgen', version: '1' } } });
    if (init.reply.error) throw new Error(`initialize failed: ${init.reply.error.message}`);
    const session = init.headers['mcp-session-id'];
    await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, session);
    return session;
  }

  /** One checked echo call; resolves to its latency in ms, or undefined when it failed. */
  async function call(started) {
    const n = counter++;
    const message = `m-${n}`;
    try {
      const { reply } = await post({ jsonrpc: '2.0', id: n + 1, method: 'tools/call', params: { name: tool, arguments: { message } } }, sessions[n % sessions.length]);
      if (reply.result?.content?.[0]?.text !== message) throw new Error(`wrong echo: ${JSON.stringify(reply).slice(0, 200)}`);
      return performance.now() - started;
    } catch (err) {
      firstError ??= err.message;
      return undefined;
    }
  }

  return {
    openSession,
    call,
    get calls() {
      return counter;
    },
    async open(count) {
      for (let i = 0; i < count; i++) sessions.push(await openSession());
    },
    close: () => pool.close(),
  };
}

function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

function summary(latencies, errors, seconds, extra = {}) {
  const sorted = latencies.sort((a, b) => a - b);
  return {
    calls: sorted.length,
    errors,
    seconds,
    throughput: sorted.length / seconds,
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    ...extra,
  };
}

/** C closed-loop workers calling until `end` (a performance.now() time); resolves when all are done. */
async function closedLoop(target, end, onResult) {
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (performance.now() < end) onResult(await target.call(performance.now()));
  }));
}

/** A target's CPU seconds so far; 0 for one without a pid (direct), so its turns report 0. */
const cpuOf = (pid) => (pid ? cpuSeconds(pid) : 0);

const print = (result) => process.stdout.write(`${JSON.stringify(result)}\n`);

if (values.alternate) {
  // Several targets, taking turns in short closed-loop slices, so that every target is measured
  // under the same state of a machine whose speed drifts within seconds.
  const specs = JSON.parse(values.alternate);
  const targets = specs.map((spec) => ({ spec, load: endpoint(spec), slices: [], cpu: 0 }));
  for (const t of targets) await t.load.open(Number(values.sessions));
  let errors = 0;
  const count = (latency) => {
    if (latency === undefined) errors++;
  };
  for (const t of targets) await closedLoop(t.load, performance.now() + Number(values['warm-up']) * 1000, count);
  errors = 0;
  for (const t of targets) t.cpu = await cpuOf(t.spec.pid);
  for (let i = 0; i < Number(values.slices); i++) {
    for (const t of i % 2 === 0 ? targets : [...targets].reverse()) {
      const calls = t.load.calls;
      const cpu = await cpuOf(t.spec.pid);
      const machine = await machineTicks();
      const started = performance.now();
      await closedLoop(t.load, started + Number(values.slice) * 1000, count);
      const seconds = (performance.now() - started) / 1000;
      t.slices.push({ calls: t.load.calls - calls, seconds, cpuSeconds: (await cpuOf(t.spec.pid)) - cpu, machineIdle: idleShare(machine, await machineTicks()) });
    }
  }
  // What each process spent while the others had their turns (deferred GC, timers): a turn's
  // CPU figure leaves it out, so it is reported to be seen to stay small.
  for (const t of targets) {
    const between = (await cpuOf(t.spec.pid)) - t.cpu - t.slices.reduce((sum, slice) => sum + slice.cpuSeconds, 0);
    t.cpuBetweenTurns = Math.round(between * CLK_TCK) / CLK_TCK; // whole ticks, not float dust
  }
  const byName = (pick) => Object.fromEntries(targets.map((t) => [t.spec.name, pick(t)]));
  print({ errors, ...(firstError ? { firstError } : {}), targets: byName((t) => t.slices), cpuBetweenTurns: byName((t) => t.cpuBetweenTurns) });
  await Promise.all(targets.map((t) => t.load.close()));
  process.exit(0);
}

const target = endpoint({ url: values.url, tool: values.tool, token: values.token });

// --init-only N: N initializes one after another, for handshake latency.
if (values['init-only']) {
  const latencies = [];
  let errors = 0;
  const started = performance.now();
  for (let i = 0; i < Number(values['init-only']); i++) {
    const t = performance.now();
    try {
      await target.openSession();
      latencies.push(performance.now() - t);
    } catch (err) {
      errors++;
      firstError ??= err.message;
    }
  }
  const extra = { totalCalls: Number(values['init-only']), ...(firstError ? { firstError } : {}) };
  print(summary(latencies, errors, (performance.now() - started) / 1000, extra));
  await target.close();
  process.exit(0);
}

await target.open(Number(values.sessions));
let errors = 0;
const latencies = [];
const record = (latency) => {
  if (latency === undefined) errors++;
  else latencies.push(latency);
};

const durationMs = Number(values.duration) * 1000;
// Warm-up: a second of the same traffic, not counted.
await closedLoop(target, performance.now() + Math.min(1000, durationMs / 3), record);
latencies.length = 0;
errors = 0;

const pid = values.pid ? Number(values.pid) : undefined;
const cpuAtStart = pid ? await cpuSeconds(pid) : 0;
const start = performance.now();
const end = start + durationMs;
if (values.rate) {
  // Open loop: request i is due at start + i/rate and sent then, however many are still in
  // flight, so a slow target queues them and that wait is counted. Latency counts from the send
  // (never before it: timers fire late, which is the load generator's delay, not the target's).
  const interval = 1000 / Number(values.rate);
  const inflight = new Set();
  for (let i = 0; ; i++) {
    const due = start + i * interval;
    if (due >= end) break;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    const p = target.call(performance.now()).then(record);
    inflight.add(p);
    p.finally(() => inflight.delete(p));
  }
  await Promise.all(inflight);
} else {
  await closedLoop(target, end, record);
}
const seconds = (performance.now() - start) / 1000;
const cpu = pid ? { cpuSeconds: (await cpuSeconds(pid)) - cpuAtStart } : {};
print(summary(latencies, errors, seconds, { totalCalls: target.calls, ...cpu, ...(firstError ? { firstError } : {}) }));
await target.close();
process.exit(0);
