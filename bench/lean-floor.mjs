// The floor every verdict of the shapes section is taken against: the leanest honest HTTP
// pass-through, with no MCP logic. node:http in, one undici Pool out; only the headers MCP needs
// are forwarded (content-type, accept, mcp-session-id, mcp-protocol-version, authorization,
// last-event-id; back: content-type, mcp-session-id, content-length), `content-length` is kept
// both ways, the request body is read with `data`/`end`, the answer's body is written chunk by
// chunk as it comes. Knobs, to show that no variation is faster (bench/README.md, "Tenth pass"):
//   FLOOR_API=dispatch  undici's handler API, the answer written from its callbacks (default)
//   FLOOR_API=request   pool.request(), the answer's body stream read with `data`/`end`
//   FLOOR_API=stream    pool.stream() into the Node response itself
//   FLOOR_BODY=pipe     the client's request stream handed to undici as the body, not a Buffer
// Usage: UPSTREAM=http://... node lean-floor.mjs (prints `listening on URL`).
import http from 'node:http';
import { Pool } from 'undici';

const upstream = new URL(process.env.UPSTREAM);
const API = process.env.FLOOR_API ?? 'dispatch';
const PIPE = process.env.FLOOR_BODY === 'pipe';
if (!['dispatch', 'request', 'stream'].includes(API)) throw new Error(`FLOOR_API=${API}: dispatch, request or stream`);
const pool = new Pool(upstream.origin, { connections: 256, keepAliveTimeout: 60_000 });
const path = upstream.pathname;
const REQUEST_HEADERS = ['content-type', 'accept', 'mcp-session-id', 'mcp-protocol-version', 'authorization', 'last-event-id', 'content-length'];
const ANSWER_HEADERS = new Set(['content-type', 'mcp-session-id', 'content-length']);

function requestHeaders(req) {
  const headers = {};
  for (const name of REQUEST_HEADERS) {
    const value = req.headers[name];
    if (value !== undefined) headers[name] = value;
  }
  return headers;
}

/** The answer's headers worth passing on, from undici's object form. */
function answerHeaders(from) {
  const out = {};
  for (const name in from) if (ANSWER_HEADERS.has(name)) out[name] = from[name];
  return out;
}

function forward(req, res, body) {
  const options = { path, method: req.method, headers: requestHeaders(req), body };
  if (API === 'dispatch') {
    pool.dispatch(options, {
      onConnect() {},
      onHeaders(statusCode, raw) {
        const out = [];
        for (let i = 0; i < raw.length; i += 2) {
          const name = raw[i].toString('latin1').toLowerCase();
          if (ANSWER_HEADERS.has(name)) out.push(name, raw[i + 1].toString('latin1'));
        }
        res.writeHead(statusCode, out);
        return true;
      },
      onData(chunk) {
        res.write(chunk);
        return true;
      },
      onComplete() {
        res.end();
      },
      onError() {
        if (res.headersSent) res.destroy();
        else res.writeHead(502).end();
      },
    });
  } else if (API === 'request') {
    pool.request(options).then(
      ({ statusCode, headers, body: answer }) => {
        res.writeHead(statusCode, answerHeaders(headers));
        answer.on('data', (chunk) => res.write(chunk));
        answer.on('end', () => res.end());
        answer.on('error', () => res.destroy());
      },
      () => res.writeHead(502).end(),
    );
  } else {
    pool.stream(options, ({ statusCode, headers }) => res.writeHead(statusCode, answerHeaders(headers))).catch(() => {
      if (res.headersSent) res.destroy();
      else res.writeHead(502).end();
    });
  }
}

const server = http.createServer((req, res) => {
  if (req.method !== 'POST') return forward(req, res, undefined);
  if (PIPE) return forward(req, res, req);
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => forward(req, res, chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)));
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(`listening on http://127.0.0.1:${server.address().port}/mcp\n`));
process.on('SIGTERM', () => process.exit(0));
