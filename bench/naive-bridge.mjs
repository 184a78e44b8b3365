// The floor for stdio upstreams: HTTP in, one stdio child out, request ids rewritten so many
// clients share the child; initialize is answered once, from the child's own answer. No other
// MCP logic. Usage: node naive-bridge.mjs <command> [args...]
import http from 'node:http';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline';

const child = spawn(process.argv[2], process.argv.slice(3), { stdio: ['pipe', 'pipe', 'inherit'] });
const pending = new Map();
let next = 0;
createInterface({ input: child.stdout }).on('line', (line) => {
  const message = JSON.parse(line);
  const waiter = pending.get(message.id);
  if (!waiter) return;
  pending.delete(message.id);
  waiter(message);
});
function call(message) {
  const id = ++next;
  return new Promise((resolve) => {
    pending.set(id, (reply) => resolve({ ...reply, id: message.id }));
    child.stdin.write(`${JSON.stringify({ ...message, id })}\n`);
  });
}
const init = await call({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bridge', version: '1' } } });
child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);

const server = http.createServer(async (req, res) => {
  if (req.method !== 'POST') return res.writeHead(405).end();
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  const message = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  if (message.id === undefined) return res.writeHead(202).end();
  if (message.method === 'initialize') {
    return res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': randomUUID() }).end(JSON.stringify({ ...init, id: message.id }));
  }
  const reply = await call(message);
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(reply));
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(`listening on http://127.0.0.1:${server.address().port}/mcp\n`));
process.on('SIGTERM', () => {
  child.kill();
  process.exit(0);
});
