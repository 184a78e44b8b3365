// The load generator: opens S sessions on an MCP endpoint, then calls tools/call `echo` from C
// closed-loop workers (or at a fixed offered rate) for D seconds over a keep-alive undici pool,
// accepting JSON and SSE answers and checking every echo. Prints one JSON line: throughput,
// latency percentiles (ms) and errors. Run in its own process, so it never shares an event
// loop with what it measures.
//   node loadgen.mjs --url URL [--sessions 16] [--concurrency 16] [--duration 3] [--rate R]
//                    [--tool echo] [--token T] [--init-only N]
import { parseArgs } from 'node:util';
import { Pool } from 'undici';

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
  },
});
const url = new URL(values.url);
const concurrency = Number(values.concurrency);
const pool = new Pool(url.origin, { connections: Math.max(concurrency, 16), pipelining: 1, keepAliveTimeout: 60_000 });
const baseHeaders = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' };
if (values.token) baseHeaders.authorization = `Bearer ${values.token}`;

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
  const init = await post({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'loadgen', version: '1' } } });
  if (init.reply.error) throw new Error(`initialize failed: ${init.reply.error.message}`);
  const session = init.headers['mcp-session-id'];
  await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, session);
  return session;
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

let firstError;
// --init-only N: N initializes one after another, for handshake latency.
if (values['init-only']) {
  const latencies = [];
  let errors = 0;
  const started = performance.now();
  for (let i = 0; i < Number(values['init-only']); i++) {
    const t = performance.now();
    try {
      await openSession();
      latencies.push(performance.now() - t);
    } catch (err) {
      errors++;
      firstError ??= err.message;
    }
  }
  const extra = { totalCalls: Number(values['init-only']), ...(firstError ? { firstError } : {}) };
  process.stdout.write(`${JSON.stringify(summary(latencies, errors, (performance.now() - started) / 1000, extra))}\n`);
  await pool.close();
  process.exit(0);
}

const sessions = [];
for (let i = 0; i < Number(values.sessions); i++) sessions.push(await openSession());

let counter = 0;
let errors = 0;
const latencies = [];
async function callOnce(started) {
  const n = counter++;
  const message = `m-${n}`;
  try {
    const { reply } = await post({ jsonrpc: '2.0', id: n + 1, method: 'tools/call', params: { name: values.tool, arguments: { message } } }, sessions[n % sessions.length]);
    if (reply.result?.content?.[0]?.text !== message) throw new Error(`wrong echo: ${JSON.stringify(reply).slice(0, 200)}`);
    latencies.push(performance.now() - started);
  } catch (err) {
    errors++;
    firstError ??= err.message;
  }
}

const durationMs = Number(values.duration) * 1000;
// Warm-up: a second of the same traffic, not counted.
{
  const warmEnd = performance.now() + Math.min(1000, durationMs / 3);
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (performance.now() < warmEnd) await callOnce(performance.now());
  }));
  latencies.length = 0;
  errors = 0;
}
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
    const p = callOnce(performance.now());
    inflight.add(p);
    p.finally(() => inflight.delete(p));
  }
  await Promise.all(inflight);
} else {
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (performance.now() < end) await callOnce(performance.now());
  }));
}
const seconds = (performance.now() - start) / 1000;
process.stdout.write(`${JSON.stringify(summary(latencies, errors, seconds, { totalCalls: counter, ...(firstError ? { firstError } : {}) }))}\n`);
await pool.close();
process.exit(0);
