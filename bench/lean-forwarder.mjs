// A diagnostic floor for `npm run bench:ab` (kind `lean`): the least an MCP-aware HTTP forwarder
// does per call, with none of the gateway's features: read the body, JSON.parse, find the
// upstream session by the client's, strip the `b__` prefix from the tool name, give the request
// an id of its own, JSON.stringify, dispatch on an undici pool; then parse the answer, restore
// the client's id, stringify and write it with its length. initialize gets a session of its own,
// notifications a 202. An upstream that issues no session id gets none; an answer that comes as
// an SSE stream is read for its one response (the shapes section, bench/shapes.mjs). Knobs to price one mechanism at a time (bench/README.md, "Sixth pass"):
//   LEAN_PROMISES=n  n promise turns between the upstream's answer and the reply
//   LEAN_TIMERS=1    two timers set and cleared per call (a deadline and a streaming timer)
//   LEAN_AGENT=1     an undici Agent with onRequestStart … onResponseEnd hooks instead of a Pool
//                    with onConnect … onComplete
// Usage: UPSTREAM=http://... node lean-forwarder.mjs (prints `listening on URL`).
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { Agent, Pool } from 'undici';

const upstream = new URL(process.env.UPSTREAM);
const PROMISES = Number(process.env.LEAN_PROMISES ?? 0);
const TIMERS = process.env.LEAN_TIMERS === '1';
const AGENT = process.env.LEAN_AGENT === '1';
const pool = new Pool(upstream.origin, { connections: 256, keepAliveTimeout: 60_000 });
const agent = new Agent({ keepAliveTimeout: 30_000, headersTimeout: 0, bodyTimeout: 0 });
/** Client session id → upstream session id. */
const sessions = new Map();
let nextId = 0;

const textOf = (chunks) => (chunks.length === 1 ? chunks[0].toString() : Buffer.concat(chunks).toString());

/** POSTs `body`; `done(status, sessionId, text, sse)` once the answer is in (502 and '' on failure). */
function post(headers, body, done) {
  const chunks = [];
  let status = 0;
  let sessionId;
  let sse = false;
  if (AGENT) {
    agent.dispatch(
      { origin: upstream.origin, path: upstream.pathname, method: 'POST', headers, body },
      {
        onRequestStart() {},
        onResponseStart(_controller, statusCode, responseHeaders) {
          status = statusCode;
          sessionId = responseHeaders['mcp-session-id'];
          sse = String(responseHeaders['content-type'] ?? '').startsWith('text/event-stream');
        },
        onResponseData(_controller, chunk) {
          chunks.push(chunk);
        },
        onResponseEnd: () => done(status, sessionId, textOf(chunks), sse),
        onResponseError: () => done(502, undefined, ''),
      },
    );
    return;
  }
  pool.dispatch(
    { path: upstream.pathname, method: 'POST', headers, body },
    {
      onConnect() {},
      onHeaders(statusCode, raw) {
        status = statusCode;
        for (let i = 0; i < raw.length; i += 2) {
          const name = raw[i].toString('latin1').toLowerCase();
          if (name === 'mcp-session-id') sessionId = raw[i + 1].toString('latin1');
          else if (name === 'content-type') sse = raw[i + 1].toString('latin1').startsWith('text/event-stream');
        }
        return true;
      },
      onData(chunk) {
        chunks.push(chunk);
        return true;
      },
      onComplete: () => done(status, sessionId, textOf(chunks), sse),
      onError: () => done(502, undefined, ''),
    },
  );
}

/** The data of the SSE stream's event that answers a request (one without a method). */
function sseAnswer(text) {
  let found = '';
  for (const line of text.split('\n')) if (line.startsWith('data: ') && !line.includes('"method"')) found = line.slice(6);
  return found;
}

const turns = async (n, value) => (n === 0 ? value : await turns(n - 1, value));

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    const message = JSON.parse(textOf(chunks));
    const base = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    if (message.method === 'initialize') {
      post(base, JSON.stringify(message), (status, upstreamSession, text) => {
        const id = randomUUID();
        sessions.set(id, upstreamSession);
        res.writeHead(status, { 'content-type': 'application/json', 'mcp-session-id': id }).end(text);
      });
      return;
    }
    const upstreamSession = sessions.get(req.headers['mcp-session-id']);
    const headers = upstreamSession === undefined ? { ...base, 'mcp-protocol-version': req.headers['mcp-protocol-version'] } : { ...base, 'mcp-session-id': upstreamSession, 'mcp-protocol-version': req.headers['mcp-protocol-version'] };
    if (message.id === undefined) {
      post(headers, JSON.stringify(message), () => res.writeHead(202, { 'content-length': '0' }).end());
      return;
    }
    const params = message.params?.name ? { ...message.params, name: message.params.name.replace(/^b__/, '') } : message.params;
    const deadline = TIMERS ? setTimeout(() => {}, 60_000) : undefined;
    const streaming = TIMERS ? setTimeout(() => {}, 250) : undefined;
    const reply = (text) => {
      clearTimeout(deadline);
      clearTimeout(streaming);
      const answer = JSON.parse(text);
      const body = JSON.stringify('error' in answer ? { jsonrpc: '2.0', id: message.id, error: answer.error } : { jsonrpc: '2.0', id: message.id, result: answer.result });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) }).end(body);
    };
    post(headers, JSON.stringify({ jsonrpc: '2.0', id: ++nextId, method: message.method, params }), (status, _session, raw, sse) => {
      if (status !== 200) return void res.writeHead(502, { 'content-length': '0' }).end();
      const text = sse ? sseAnswer(raw) : raw;
      if (PROMISES > 0) void turns(PROMISES, text).then(reply);
      else reply(text);
    });
  });
});
server.keepAliveTimeout = 65_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(`listening on http://127.0.0.1:${server.address().port}/mcp\n`));
process.on('SIGTERM', () => process.exit(0));
