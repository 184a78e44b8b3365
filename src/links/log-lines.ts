// A session's log level: set by logging/setLevel (checked), and which sessions hear an upstream's
// log lines (notifications/message), asked by both ways an upstream's notifications reach
// sessions, a session's own upstream session (relay.ts) and a shared child's fan-out (shared.ts),
// so every line a session is relayed passes the same test.
import { supportsMethod } from '../mcp/capabilities.js';
import type { JsonObject, JsonRpcNotification } from '../mcp/jsonrpc.js';
import { belowLogLevel, requestedLogLevel } from '../mcp/logging.js';
import type { UpstreamClient } from '../upstream/client.js';
import type { DownstreamSession } from './session.js';

/**
 * False for a log line of `upstream` (as the client sees it) that `session` must not hear: one
 * from an upstream its teams cannot see, or below the level it set with logging/setLevel. The
 * gateway holds those back itself: a shared child has one level for every session it serves, and
 * an upstream may send what it was told not to. True for anything else.
 */
export function hearsLogLine(session: DownstreamSession, upstream: string, forwarded: JsonRpcNotification): boolean {
  if (forwarded.method !== 'notifications/message') return true;
  return session.access.canSeeUpstream(upstream) && !belowLogLevel(forwarded, session.logLevel);
}

/**
 * logging/setLevel in `session`: the level becomes the session's (a level that is not one of
 * MCP's is -32602, and nothing is kept, so nothing is replayed to upstream sessions opened later),
 * and the upstream sessions to tell: its own that have logging. A shared child keeps the config's
 * level (one for every session it serves); the session's applies as its lines are relayed.
 */
export function setLogLevel(session: DownstreamSession, params: JsonObject): UpstreamClient[] {
  session.logLevel = requestedLogLevel(params);
  return [...session.upstreams].filter(([name, c]) => !session.links.isShared(name) && !c.closed && supportsMethod(c.capabilities, 'logging/setLevel')).map(([, c]) => c);
}
