// A minimal, fast MCP upstream over Streamable HTTP on node:http (no SDK): initialize (with a
// session id), notifications (202), tools/list and an `echo` tool, always answered as JSON.
// GET gets 405 (no server-initiated stream). Prints `listening on URL`.
import http from 'node:http';
import { randomUUID } from 'node:crypto';

const TOOLS = [{ name: 'echo', description: 'echoes its message', inputSchema: { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] } }];

function answer(message) {
  switch (message.method) {
    case 'initialize':
      return { protocolVersion: message.params?.protocolVersion ?? '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 'bench-upstream', version: '1' } };
    case 'ping':
      return {};
    case 'tools/list':
      return { tools: TOOLS };
    case 'tools/call':
      return { content: [{ type: 'text', text: String(message.params?.arguments?.message ?? '') }] };
    default:
      return undefined;
  }
}

const server = http.createServer((req, res) => {
  if (req.method === 'GET') return res.writeHead(405, { allow: 'POST, DELETE' }).end();
  if (req.method === 'DELETE') return res.writeHead(200).end();
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const message = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    if (message.id === undefined) return res.writeHead(202).end();
    const result = answer(message);
    const headers = { 'content-type': 'application/json' };
    if (message.method === 'initialize') headers['mcp-session-id'] = randomUUID();
    const body = result === undefined ? { jsonrpc: '2.0', id: message.id, error: { code: -32601, message: 'Method not found' } } : { jsonrpc: '2.0', id: message.id, result };
    res.writeHead(200, headers).end(JSON.stringify(body));
  });
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => process.stdout.write(`listening on http://127.0.0.1:${server.address().port}/mcp\n`));
process.on('SIGTERM', () => process.exit(0));
