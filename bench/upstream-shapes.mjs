// An MCP upstream over Streamable HTTP on node:http (no SDK) whose shape is set by env, for the
// bench's shapes section (bench/shapes.mjs): what a call costs as the server behind it changes.
//   SESSIONS=1|0  initialize issues an Mcp-Session-Id (1, the default) or none
//   GET=0|1       GET is answered 405 (0, the default) or with an SSE stream held open, a
//                 keep-alive comment every GET_KEEPALIVE_MS (default 1000)
//   TOOLS=n       tools/list offers `echo` and n − 1 more tools (default 1), each with a schema
//   SSE=0|1       tools/call is answered as JSON (0, the default) or as an SSE stream of one event
// Prints `listening on URL`.
import http from 'node:http';
import { randomUUID } from 'node:crypto';

const SESSIONS = process.env.SESSIONS !== '0';
const GET = process.env.GET === '1';
const SSE = process.env.SSE === '1';
const TOOL_COUNT = Math.max(1, Number(process.env.TOOLS ?? 1));
const KEEPALIVE_MS = Number(process.env.GET_KEEPALIVE_MS ?? 1000);

const schema = { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] };
const TOOLS = [{ name: 'echo', description: 'echoes its message', inputSchema: schema }];
for (let i = 1; i < TOOL_COUNT; i++) TOOLS.push({ name: `tool_${i}`, description: `bench tool number ${i}, does nothing useful`, inputSchema: schema });

function answer(message) {
  switch (message.method) {
    case 'initialize':
      return { protocolVersion: message.params?.protocolVersion ?? '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 'bench-shapes', version: '1' } };
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

/** Open GET streams, so SIGTERM can end them and each gets its keep-alive comments. */
const streams = new Set();
if (GET) setInterval(() => { for (const res of streams) res.write(': keep-alive\n\n'); }, KEEPALIVE_MS).unref();

const server = http.createServer((req, res) => {
  if (req.method === 'GET') {
    if (!GET) return res.writeHead(405, { allow: 'POST, DELETE' }).end();
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.write(': open\n\n');
    streams.add(res);
    res.on('close', () => streams.delete(res));
    return;
  }
  if (req.method === 'DELETE') return res.writeHead(200).end();
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const message = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    if (message.id === undefined) return res.writeHead(202).end();
    const result = answer(message);
    const body = JSON.stringify(result === undefined ? { jsonrpc: '2.0', id: message.id, error: { code: -32601, message: 'Method not found' } } : { jsonrpc: '2.0', id: message.id, result });
    const headers = {};
    if (message.method === 'initialize' && SESSIONS) headers['mcp-session-id'] = randomUUID();
    if (SSE && message.method === 'tools/call') {
      headers['content-type'] = 'text/event-stream';
      headers['cache-control'] = 'no-cache';
      return res.writeHead(200, headers).end(`event: message\ndata: ${body}\n\n`);
    }
    headers['content-type'] = 'application/json';
    res.writeHead(200, headers).end(body);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => process.stdout.write(`listening on http://127.0.0.1:${server.address().port}/mcp\n`));
process.on('SIGTERM', () => {
  for (const res of streams) res.destroy();
  process.exit(0);
});
