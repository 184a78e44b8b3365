// What continues an upstream MCP session somewhere else (another replica taking a client
// session over): the upstream's own session id and what its handshake negotiated.
import type { JsonObject } from './jsonrpc.js';

export interface UpstreamSessionState {
  /** The upstream's Mcp-Session-Id (HTTP upstreams); absent for stdio, which a replica starts afresh. */
  session?: string;
  protocolVersion: string;
  capabilities: JsonObject;
}
