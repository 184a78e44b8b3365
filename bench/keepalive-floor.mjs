// The connected section's floor: what holding the same streams costs a server that does nothing
// else. It answers the clients' handshake (initialize, notifications/initialized, tools/list)
// with the least JSON they take, holds each GET stream's socket, and writes each the gateway's
// keep-alive chunk (`: keep-alive`, chunk-framed) once per interval on one timer of 16 slots, as
// src/http/keep-alives.ts paces them, one socket write each, as src/http/sse-sinks.ts writes.
// Usage: EVERY_MS=15000 node keepalive-floor.mjs (prints `listening on URL`).
import http from 'node:http';
import { randomUUID } from 'node:crypto';

const EVERY_MS = Number(process.env.EVERY_MS ?? 15_000);
const SLOTS = 16;
const COMMENT = ': keep-alive\n\n';
const CHUNK = Buffer.from(`${Buffer.byteLength(COMMENT).toString(16)}\r\n${COMMENT}\r\n`);
const slots = Array.from({ length: SLOTS }, () => new Set());
let tick = 0;

const server = http.createServer((req, res) => {
  if (req.method === 'GET') {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.flushHeaders();
    const socket = res.socket;
    const slot = slots[tick % SLOTS];
    slot.add(socket);
    res.on('close', () => slot.delete(socket));
    return;
  }
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (chunk) => (body += chunk));
  req.on('end', () => {
    const message = JSON.parse(body);
    if (message.id === undefined) return void res.writeHead(202).end();
    const initialize = message.method === 'initialize';
    const result = initialize ? { protocolVersion: message.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'keepalive-floor', version: '1' } } : { tools: [] };
    res.writeHead(200, { 'content-type': 'application/json', ...(initialize ? { 'mcp-session-id': randomUUID() } : {}) });
    res.end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result }));
  });
});
server.keepAliveTimeout = 65_000;
setInterval(() => {
  tick++;
  for (const socket of slots[tick % SLOTS]) socket.write(CHUNK);
}, Math.max(1, Math.floor(EVERY_MS / SLOTS))).unref();
server.listen(0, '127.0.0.1', () => process.stdout.write(`listening on http://127.0.0.1:${server.address().port}/mcp\n`));
process.on('SIGTERM', () => process.exit(0));
