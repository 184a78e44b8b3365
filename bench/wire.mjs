// The bench's wire client: MCP JSON-RPC over a keep-alive undici pool, no SDK, as
// bench/loadgen.mjs sends it (the lazy and sizing sections use it).
import { Pool } from 'undici';

/** The protocol version the wire client speaks. */
export const PROTOCOL = '2025-06-18';

/**
 * JSON-RPC over a keep-alive undici pool of `connections` (as bench/loadgen.mjs sends it), any
 * number of sessions on it, introduced as `client` (clientInfo). Accepts JSON and SSE answers;
 * throws on an HTTP or JSON-RPC error.
 */
export function wire(href, { connections = 1, client = { name: 'switchyard-bench', version: '1' } } = {}) {
  const url = new URL(href);
  const pool = new Pool(url.origin, { connections, pipelining: 1, keepAliveTimeout: 60_000 });
  const base = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  let id = 0;
  async function post(message, session) {
    const headers = session ? { ...base, 'mcp-session-id': session, 'mcp-protocol-version': PROTOCOL } : base;
    const { statusCode, headers: answer, body } = await pool.request({ path: url.pathname, method: 'POST', headers, body: JSON.stringify(message), headersTimeout: 120_000, bodyTimeout: 120_000 });
    const text = await body.text();
    if (message.id === undefined) {
      if (statusCode !== 202 && statusCode !== 200) throw new Error(`${message.method}: HTTP ${statusCode} ${text.slice(0, 200)}`);
      return {};
    }
    if (statusCode !== 200) throw new Error(`${message.method}: HTTP ${statusCode} ${text.slice(0, 200)}`);
    let reply;
    if (String(answer['content-type']).startsWith('text/event-stream')) {
      for (const line of text.split('\n')) {
        if (!line.startsWith('data: {')) continue;
        const event = JSON.parse(line.slice(6));
        if (event.id === message.id && !('method' in event)) reply = event;
      }
    } else reply = JSON.parse(text);
    if (!reply) throw new Error(`${message.method}: no response in the answer`);
    if (reply.error) throw new Error(`${message.method}: ${reply.error.message}`);
    return { session: answer['mcp-session-id'], result: reply.result };
  }
  /** tools/call of `tool` with `args`; its result, which must not be an error. */
  async function call(session, tool, args) {
    const { result } = await post({ jsonrpc: '2.0', id: id++, method: 'tools/call', params: { name: tool, arguments: args } }, session);
    if (!result || result.isError) throw new Error(`tools/call ${tool}: ${JSON.stringify(result).slice(0, 200)}`);
    return result;
  }
  return {
    /** initialize + notifications/initialized; the session id. */
    async open() {
      const { session, result } = await post({ jsonrpc: '2.0', id: id++, method: 'initialize', params: { protocolVersion: PROTOCOL, capabilities: {}, clientInfo: client } });
      if (!session || !result?.protocolVersion) throw new Error(`initialize: no session id or no result (${JSON.stringify(result).slice(0, 200)})`);
      await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, session);
      return session;
    },
    /** tools/list, every page; the names. */
    async list(session) {
      const names = [];
      let cursor;
      do {
        const { result } = await post({ jsonrpc: '2.0', id: id++, method: 'tools/list', ...(cursor ? { params: { cursor } } : {}) }, session);
        for (const tool of result.tools) names.push(tool.name);
        cursor = result.nextCursor;
      } while (cursor);
      return names;
    },
    call,
    /** tools/call of an echo tool, its answer checked. */
    async echo(session, tool, message) {
      const result = await call(session, tool, { message });
      const text = result.content?.[0]?.text;
      if (typeof text !== 'string' || !text.includes(message)) throw new Error(`tools/call ${tool}: ${JSON.stringify(result).slice(0, 200)}`);
    },
    async del(session) {
      const { statusCode, body } = await pool.request({ path: url.pathname, method: 'DELETE', headers: { 'mcp-session-id': session, 'mcp-protocol-version': PROTOCOL } });
      await body.dump();
      if (statusCode >= 300 && statusCode !== 404) throw new Error(`DELETE: HTTP ${statusCode}`);
    },
    close: () => pool.close(),
  };
}
