// What the edge tests (test/e2e/edge-*.test.ts) share: the protocol version they speak, raw
// pings and initializes, and opening and deleting a session over raw HTTP(S).
import {
  httpExchange as exchange,
  initializeHttp,
  initializeMessage,
  type HttpOptions,
  type HttpReply,
  type HttpTransportOptions,
} from './raw-http.js';

export const LATEST = '2025-11-25';
// JSON-RPC 2.0 §5.1.
export const INVALID_REQUEST = -32600;

export const ping = (id: number | string) => ({ jsonrpc: '2.0', id, method: 'ping' });

const CLIENT_INFO = { name: 'edge-test', version: '1.0.0' };

export function initializeRequest(id: number | string = 1) {
  return initializeMessage({ protocolVersion: LATEST, id, clientInfo: CLIENT_INFO });
}

/** Opens a session with a raw initialize (and notifications/initialized); returns its id. */
export async function openSession(url: URL, http: HttpTransportOptions = {}): Promise<string> {
  return (await initializeHttp(url, { protocolVersion: LATEST, id: 1, clientInfo: CLIENT_INFO, http })).id;
}

export function deleteSession(url: URL, session: string, options: HttpOptions = {}): Promise<HttpReply> {
  return exchange(url, { ...options, method: 'DELETE', session, protocolVersion: LATEST });
}
