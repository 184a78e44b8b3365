// Records a real MCP server's tools/list for the search section's retrieval set (bench/search.mjs):
//   node bench/search-capture.mjs --source "npm @modelcontextprotocol/server-github@2025.4.8" \
//     -- node DIR/node_modules/@modelcontextprotocol/server-github/dist/index.js > bench/search-recorded-github.json
// Speaks plain JSON-RPC over the child's stdio (initialize, notifications/initialized, tools/list
// with every cursor followed) and prints { source, server, recordedAt, tools } with the tools
// exactly as the server listed them. bench/search-recorded.mjs serves such a file back.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';

const { values, positionals } = parseArgs({ options: { source: { type: 'string' } }, allowPositionals: true });
if (!values.source || positionals.length === 0) {
  process.stderr.write('usage: node bench/search-capture.mjs --source TEXT -- COMMAND [ARGS…]\n');
  process.exit(2);
}
const child = spawn(positionals[0], positionals.slice(1), { stdio: ['pipe', 'pipe', 'ignore'] });
const waiting = new Map();
createInterface({ input: child.stdout }).on('line', (line) => {
  let message;
  try {
    message = JSON.parse(line);
  } catch {
    return;
  }
  const pending = waiting.get(message.id);
  if (!pending) return;
  waiting.delete(message.id);
  if (message.error) pending.reject(new Error(JSON.stringify(message.error)));
  else pending.resolve(message.result);
});
let nextId = 1;
const request = (method, params) =>
  new Promise((resolve, reject) => {
    const id = nextId++;
    waiting.set(id, { resolve, reject });
    child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, ...(params ? { params } : {}) })}\n`);
  });
const timer = setTimeout(() => {
  process.stderr.write('no answer within 30 s\n');
  child.kill();
  process.exit(1);
}, 30_000);
const init = await request('initialize', { protocolVersion: '2024-11-05', capabilities: {}, clientInfo: { name: 'switchyard-bench-capture', version: '1' } });
child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
const tools = [];
let cursor;
do {
  const page = await request('tools/list', cursor ? { cursor } : undefined);
  tools.push(...page.tools);
  cursor = page.nextCursor;
} while (cursor);
clearTimeout(timer);
child.kill();
process.stdout.write(`${JSON.stringify({ source: values.source, server: init.serverInfo, recordedAt: new Date().toISOString().slice(0, 10), tools }, null, 2)}\n`);
