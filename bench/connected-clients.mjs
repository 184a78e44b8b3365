// The connected section's client, in a process of its own: opens N sessions the way an SDK
// client does (initialize, notifications/initialized, tools/list, then a GET stream it keeps
// reading), `CONNECT` at a time, and holds them. Reports on stdout as JSON lines:
//   {"connected": n, "errors": e, "firstError": "..."}   once all are open
// then waits for "close" on stdin, ends every stream and exits.
// Usage: node bench/connected-clients.mjs URL N
import http from 'node:http';
import { createInterface } from 'node:readline';

const [url, count] = [new URL(process.argv[2]), Number(process.argv[3])];
const CONNECT = 64;
const VERSION = '2025-06-18';
const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECT });
const streams = [];

function request(method, headers, body) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, agent, headers: { accept: 'application/json, text/event-stream', ...headers, ...(body ? { 'content-type': 'application/json' } : {}) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, text }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

/** A GET stream on a connection of its own, read and discarded while it lasts. */
function hold(session) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'GET', agent: false, headers: { accept: 'text/event-stream', 'mcp-session-id': session, 'mcp-protocol-version': VERSION } }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`GET answered ${res.statusCode}`));
      res.on('data', () => {});
      streams.push(req);
      resolve();
    });
    req.on('error', reject);
    req.end();
  });
}

async function open(i) {
  const init = await request('POST', {}, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: 'connected-bench', version: String(i) } } });
  const session = init.headers['mcp-session-id'];
  if (init.status !== 200 || !session) throw new Error(`initialize answered ${init.status}: ${init.text.slice(0, 200)}`);
  const headers = { 'mcp-session-id': session, 'mcp-protocol-version': VERSION };
  await request('POST', headers, { jsonrpc: '2.0', method: 'notifications/initialized' });
  const listed = await request('POST', headers, { jsonrpc: '2.0', id: 2, method: 'tools/list' });
  if (listed.status !== 200) throw new Error(`tools/list answered ${listed.status}`);
  await hold(session);
}

let next = 0;
let errors = 0;
let firstError;
await Promise.all(
  Array.from({ length: CONNECT }, async () => {
    while (next < count) {
      const i = next++;
      await open(i).catch((err) => {
        errors++;
        firstError ??= err.message;
      });
    }
  }),
);
process.stdout.write(`${JSON.stringify({ connected: streams.length, errors, firstError })}\n`);
for await (const line of createInterface({ input: process.stdin })) {
  if (line.trim() === 'close') break;
}
for (const req of streams) req.destroy();
agent.destroy();
process.exit(0);
