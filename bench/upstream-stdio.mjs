// The same minimal MCP server over stdio: one JSON-RPC message per line.
import { createInterface } from 'node:readline';

const TOOLS = [{ name: 'echo', description: 'echoes its message', inputSchema: { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] } }];

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
      result = { tools: TOOLS };
      break;
    case 'tools/call':
      result = { content: [{ type: 'text', text: String(message.params?.arguments?.message ?? '') }] };
      break;
  }
  const reply = result === undefined ? { jsonrpc: '2.0', id: message.id, error: { code: -32601, message: 'Method not found' } } : { jsonrpc: '2.0', id: message.id, result };
  process.stdout.write(`${JSON.stringify(reply)}\n`);
}).on('close', () => process.exit(0));
