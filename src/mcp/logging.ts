// MCP's log levels on the sessions-era path (server/utilities/logging): the level a client sets
// with logging/setLevel, checked against MCP_LOG_LEVELS (era.ts, the one list), and the test each
// log line relayed to a session passes. The 2026-07-28 edge checks its `_meta` logLevel against
// the same list (requestMetaOf), and each request's round trip keeps to its own level.
import { MCP_LOG_LEVELS } from './era.js';
import { GatewayError } from './errors.js';
import type { JsonObject, JsonRpcMessage } from './jsonrpc.js';

/** The level a logging/setLevel asks for; -32602 when it is not one of MCP's (logging.mdx, "Error Handling"). */
export function requestedLogLevel(params: JsonObject): string {
  const { level } = params;
  if (typeof level !== 'string' || !MCP_LOG_LEVELS.includes(level)) throw new GatewayError('invalid_params', `Invalid params: level must be one of ${MCP_LOG_LEVELS.join(', ')}`);
  return level;
}

/**
 * Whether `message` is a log line less severe than `level`, the one a session set (RFC 5424's
 * order, as MCP lists it): the session does not hear it. A session that set no level hears every
 * line; a line whose level is not one of MCP's is below any level set.
 */
export function belowLogLevel(message: JsonRpcMessage, level: string | undefined): boolean {
  if (level === undefined || !('method' in message) || message.method !== 'notifications/message') return false;
  return MCP_LOG_LEVELS.indexOf(String(message.params?.level)) < MCP_LOG_LEVELS.indexOf(level);
}
