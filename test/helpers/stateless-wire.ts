// 2026-07-28 requests on the wire for tests: a request with the `_meta` every request of that
// revision carries, POSTed with MCP-Protocol-Version, Mcp-Method (and Mcp-Name where the
// caller gives it), and its answer read as JSON or as every SSE message.
import { postRpc } from './raw-http.js';

export const V = '2026-07-28';

/** The `_meta` of a request from a client named `name` that declares `capabilities`. */
export function statelessMeta(capabilities: Record<string, unknown> = { elicitation: { form: {} } }, name = 'wire-test'): Record<string, unknown> {
  return {
    'io.modelcontextprotocol/protocolVersion': V,
    'io.modelcontextprotocol/clientInfo': { name, version: '1.0.0' },
    'io.modelcontextprotocol/clientCapabilities': capabilities,
  };
}

export const META = statelessMeta();

export interface Sent {
  status: number;
  /** The JSON body, or the last SSE message (the answer). */
  body: Record<string, unknown> | undefined;
  /** Every SSE message, the answer last (empty for a JSON answer). */
  messages: Record<string, unknown>[];
}

export const statelessRequest = (id: number | string, method: string, params: Record<string, unknown> = {}, meta: Record<string, unknown> = META) => ({ jsonrpc: '2.0', id, method, params: { ...params, _meta: meta } });

export const statelessCall = (id: number | string, name: string, args: Record<string, unknown> = {}, extra: Record<string, unknown> = {}, meta: Record<string, unknown> = META) =>
  statelessRequest(id, 'tools/call', { name, arguments: args, ...extra }, meta);

/**
 * POSTs one message as a 2026-07-28 client does (MCP-Protocol-Version and Mcp-Method unless
 * `headers` replace or leave them out); reads a JSON body or every SSE message. Unbounded
 * unless `signal` ends it.
 */
export async function sendStateless(url: URL, message: Record<string, unknown>, headers: Record<string, string | undefined> = {}, signal?: AbortSignal): Promise<Sent> {
  const reply = await postRpc(url, message, {
    protocolVersion: V,
    headers: { 'mcp-method': typeof message.method === 'string' ? message.method : undefined, ...headers },
    signal: signal ?? null,
  });
  if (reply.sse) {
    const messages = reply.messages as Record<string, unknown>[];
    return { status: reply.status, body: messages.at(-1), messages };
  }
  return { status: reply.status, body: reply.text ? (JSON.parse(reply.text) as Record<string, unknown>) : undefined, messages: [] };
}

/** A tools/call sent with its Mcp-Name. */
export function callStateless(url: URL, id: number | string, name: string, args: Record<string, unknown> = {}, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}, meta: Record<string, unknown> = META): Promise<Sent> {
  return sendStateless(url, statelessCall(id, name, args, extra, meta), { 'mcp-name': name, ...headers });
}
