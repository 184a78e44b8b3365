// A minimal MCP upstream on node:http that answers tools/call as an SSE stream of one event, as
// TypeScript-SDK servers do by default (the gateway then answers its clients as a stream too),
// and everything else as JSON; initialize issues a session id.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SseUpstream {
  url: string;
  close(): Promise<void>;
}

export async function startSseUpstream(): Promise<SseUpstream> {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (req.method === 'DELETE') return void res.writeHead(200).end();
      if (req.method !== 'POST') return void res.writeHead(405).end();
      const message = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id?: number; method: string; params?: { protocolVersion?: string } };
      if (message.id === undefined) return void res.writeHead(202).end();
      const result =
        message.method === 'initialize'
          ? { protocolVersion: message.params?.protocolVersion ?? '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'sse-answers', version: '1' } }
          : message.method === 'tools/list'
            ? { tools: [{ name: 'echo', inputSchema: { type: 'object' } }] }
            : { content: [{ type: 'text', text: 'hi' }] };
      const body = JSON.stringify({ jsonrpc: '2.0', id: message.id, result });
      if (message.method === 'tools/call') return void res.writeHead(200, { 'content-type': 'text/event-stream' }).end(`event: message\ndata: ${body}\n\n`);
      res.writeHead(200, { 'content-type': 'application/json', ...(message.method === 'initialize' ? { 'mcp-session-id': 'upstream-1' } : {}) }).end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
