// The floor any Node gateway sits on: an HTTP pass-through (node:http in, an undici pool out)
// with no MCP logic at all. Usage: UPSTREAM=http://... node naive-hop.mjs
import http from 'node:http';
import { Pool } from 'undici';

const upstream = new URL(process.env.UPSTREAM);
const pool = new Pool(upstream.origin, { connections: 256, keepAliveTimeout: 60_000 });
const HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'host', 'content-length']);

const server = http.createServer(async (req, res) => {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  const headers = {};
  for (const [name, value] of Object.entries(req.headers)) if (!HOP.has(name)) headers[name] = value;
  try {
    const { statusCode, headers: answer, body } = await pool.request({ path: upstream.pathname, method: req.method, headers, body: chunks.length ? Buffer.concat(chunks) : undefined });
    const out = {};
    for (const [name, value] of Object.entries(answer)) if (!HOP.has(name)) out[name] = value;
    res.writeHead(statusCode, out);
    for await (const chunk of body) res.write(chunk);
    res.end();
  } catch {
    res.writeHead(502).end();
  }
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(`listening on http://127.0.0.1:${server.address().port}/mcp\n`));
process.on('SIGTERM', () => process.exit(0));
