// The same minimal MCP server over stdio: one JSON-RPC message per line. With TOOLS=n it lists
// n more tools (`tool-<i>`, each with a schema of its own) in pages of PAGE (default 1,000): the
// big catalog of the bench's catalog section.
import { createInterface } from 'node:readline';

const TOOLS = [{ name: 'echo', description: 'echoes its message', inputSchema: { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] } }];
const COUNT = Number(process.env.TOOLS ?? 0);
const PAGE = Number(process.env.PAGE ?? 1_000);
const tool = (i) => ({
  name: `tool-${i}`,
  description: `tool number ${i} of a big catalog`,
  inputSchema: { type: 'object', properties: { [`arg${i}`]: { type: 'string', maxLength: 100 + (i % 50) }, count: { type: 'integer', minimum: i % 10 } }, required: [`arg${i}`] },
});

/** A page of the catalog: echo, then the big catalog's tools from `cursor` on. */
function list(cursor) {
  if (COUNT === 0) return { tools: TOOLS };
  const start = cursor === undefined ? 0 : Number(cursor);
  const end = Math.min(COUNT, start + PAGE);
  const tools = start === 0 ? [...TOOLS] : [];
  for (let i = start; i < end; i++) tools.push(tool(i));
  return end < COUNT ? { tools, nextCursor: String(end) } : { tools };
}

createInterface({ input: process.stdin }).on('line', (line) => {
  if (!line) return;
  const message = JSON.parse(line);
  if (message.id === undefined || message.method === undefined) return;
  let result;
  switch (message.method) {
    case 'initialize':
      result = { protocolVersion: message.params?.protocolVersion ?? '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 'bench-upstream', version: '1' } };
      break;
    case 'ping':
      result = {};
      break;
    case 'tools/list':
      result = list(message.params?.cursor);
      break;
    case 'tools/call':
      result = { content: [{ type: 'text', text: String(message.params?.arguments?.message ?? '') }] };
      break;
  }
  const reply = result === undefined ? { jsonrpc: '2.0', id: message.id, error: { code: -32601, message: 'Method not found' } } : { jsonrpc: '2.0', id: message.id, result };
  process.stdout.write(`${JSON.stringify(reply)}\n`);
}).on('close', () => process.exit(0));
