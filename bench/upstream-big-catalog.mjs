// A stdio MCP server with a big catalog: TOOLS tools (default 100,000), each with a schema of its
// own, listed in pages of PAGE (default 1,000). For the bench's catalog section.
import { createInterface } from 'node:readline';

const COUNT = Number(process.env.TOOLS ?? 100_000);
const PAGE = Number(process.env.PAGE ?? 1_000);
const tool = (i) => ({
  name: `tool-${i}`,
  description: `tool number ${i} of a big catalog`,
  inputSchema: { type: 'object', properties: { [`arg${i}`]: { type: 'string', maxLength: 100 + (i % 50) }, count: { type: 'integer', minimum: i % 10 } }, required: [`arg${i}`] },
});

createInterface({ input: process.stdin }).on('line', (line) => {
  if (!line) return;
  const message = JSON.parse(line);
  if (message.id === undefined || message.method === undefined) return;
  let result;
  switch (message.method) {
    case 'initialize':
      result = { protocolVersion: message.params?.protocolVersion ?? '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 'bench-big-catalog', version: '1' } };
      break;
    case 'ping':
      result = {};
      break;
    case 'tools/list': {
      const start = message.params?.cursor === undefined ? 0 : Number(message.params.cursor);
      const end = Math.min(COUNT, start + PAGE);
      const tools = [];
      for (let i = start; i < end; i++) tools.push(tool(i));
      result = end < COUNT ? { tools, nextCursor: String(end) } : { tools };
      break;
    }
    case 'tools/call':
      result = { content: [{ type: 'text', text: 'ok' }] };
      break;
  }
  const reply = result === undefined ? { jsonrpc: '2.0', id: message.id, error: { code: -32601, message: 'Method not found' } } : { jsonrpc: '2.0', id: message.id, result };
  process.stdout.write(`${JSON.stringify(reply)}\n`);
}).on('close', () => process.exit(0));
