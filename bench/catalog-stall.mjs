// The catalog section of `npm run bench`: how long another session's ping waits while one
// session lists an upstream of 100,000 tools (issue "Hold under hostile load", item 2). One
// session follows tools/list to its end; another pings back to back meanwhile; the pings'
// p50/p99/max are the figure (target: p99 ≤ 50 ms). The big upstream's maxTools is raised to
// 100,000 so the whole list is read, not the default's first 10,000.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gatewayConfig, here, start } from './parts.mjs';

const ACCEPT = 'application/json, text/event-stream';

async function rpc(url, session, message) {
  const headers = { 'content-type': 'application/json', accept: ACCEPT };
  if (session) Object.assign(headers, { 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' });
  const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify(message), signal: AbortSignal.timeout(300_000) });
  const text = await res.text();
  if (message.id === undefined) return { session: res.headers.get('mcp-session-id') };
  const body = res.headers.get('content-type')?.startsWith('text/event-stream')
    ? JSON.parse(text.split('\n').filter((l) => l.startsWith('data: {')).pop().slice(6))
    : JSON.parse(text);
  if (body.error) throw new Error(`${message.method}: ${body.error.message}`);
  return { session: res.headers.get('mcp-session-id'), result: body.result };
}

async function open(url) {
  const { session } = await rpc(url, undefined, { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } });
  await rpc(url, session, { jsonrpc: '2.0', method: 'notifications/initialized' });
  return session;
}

const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];

/** Runs `rounds` rounds against a fresh gateway of `buildDir`; returns the figures of each. */
export async function catalogStall({ buildDir, dir, rounds = 3, tools = 100_000, limits = true }) {
  const file = join(dir, 'catalog.yaml');
  const big = { stdio: { command: process.execPath, args: [join(here, 'upstream-stdio.mjs')], env: { TOOLS: String(tools) } }, ...(limits ? { maxTools: tools + 1, maxToolBytes: 1024 * 1024 * 1024 } : {}) };
  const small = { stdio: { command: process.execPath, args: [join(here, 'upstream-stdio.mjs')] } };
  await writeFile(file, gatewayConfig({ big, small }, { sessions: 100 }));
  const results = [];
  for (let round = 0; round < rounds; round++) {
    const gw = await start('gateway (catalog)', process.execPath, [join(buildDir, 'main.js'), '--config', file, '--port', '0']);
    try {
      const lister = await open(gw.url);
      const pinger = await open(gw.url);
      const waits = [];
      let listing = true;
      const pinging = (async () => {
        for (let id = 1; listing; id++) {
          const t0 = performance.now();
          await rpc(gw.url, pinger, { jsonrpc: '2.0', id, method: 'ping' });
          waits.push(performance.now() - t0);
        }
      })();
      const t0 = performance.now();
      let listed = 0;
      let cursor;
      try {
        for (let id = 1; ; id++) {
          const { result } = await rpc(gw.url, lister, { jsonrpc: '2.0', id, method: 'tools/list', ...(cursor ? { params: { cursor } } : {}) });
          listed += result.tools.length;
          cursor = result.nextCursor;
          if (!cursor) break;
        }
      } finally {
        listing = false;
      }
      const listSeconds = (performance.now() - t0) / 1000;
      await pinging;
      const sorted = [...waits].sort((a, b) => a - b);
      results.push({ listed, listSeconds, pings: waits.length, p50: quantile(sorted, 0.5), p99: quantile(sorted, 0.99), max: sorted[sorted.length - 1] });
    } finally {
      await gw.stop();
    }
  }
  return results;
}
