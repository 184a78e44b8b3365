// What a client request carries besides its message, built at the HTTP edge for either era (a
// sessions-era POST takes the session's negotiated facts, a 2026-07-28 request its own `_meta`),
// so that the router, relay and session never ask which era a request came from. The router
// adds the cancel signal when the request begins (ActiveRequest).
import type { Principal } from '../auth/principal.js';
import type { JsonObject, JsonRpcMessage } from '../mcp/jsonrpc.js';
import type { CancelSignal } from '../util/cancel.js';

/** Who is calling and under which trace: what the edge knows before it knows the session. */
export interface Caller {
  /** Also sent back to the client in the x-request-id header. */
  requestId: string;
  /** W3C trace context from the HTTP headers, when valid. */
  traceparent?: string;
  tracestate?: string;
  /** Who is calling, when auth is configured. */
  principal?: Principal;
  /** The endpoint beside the main one the request came to (its path); undefined: the main one. */
  endpoint?: string;
}

/** Where messages related to one client request go ahead of its response (its SSE stream, or its exchange). */
export interface RequestChannel {
  send(message: JsonRpcMessage): void;
  /**
   * Whether a server-initiated request (sampling, elicitation, roots) may be sent here: true on
   * a sessions-era POST stream; for a 2026-07-28 request only when its method can take input.
   */
  readonly canAsk?: boolean;
  /**
   * Answer this request as a stream (a sessions-era POST's SSE): the upstream answers so, and a
   * client gets what it would get from the upstream directly. The stream opens with the answer
   * at the latest (sooner if a related message or the request's running time opens it).
   */
  stream?(): void;
  /**
   * The gateway may answer this request with a task of its own and run it on (a 2026-07-28
   * tools/call of a client that declared the tasks extension): nobody waits on the upstream's
   * silence, so only its maxTotalTimeoutMs bounds the call, not its timeoutMs.
   */
  readonly lasting?: boolean;
}

export interface RequestContext extends Caller {
  /** The protocol version the client speaks. */
  readonly protocolVersion: string;
  /** What the client declared it can do (sampling, elicitation, roots …). */
  readonly clientCapabilities: JsonObject;
  /** The least severe log level the client asked to hear, if any. */
  readonly logLevel: string | undefined;
  /** Where the request's notifications and server requests go. */
  readonly channel: RequestChannel;
  /** A 2026-07-28 tools/call's Mcp-Param-* headers (lower-case names), checked against the tool's schema. */
  readonly paramHeaders: Readonly<Record<string, string>> | undefined;
}

/** A request the router has begun: its context, the session it runs in, and its cancel signal. */
export interface ActiveRequest<S> {
  readonly session: S;
  readonly context: RequestContext;
  /** Aborts when the client cancels the request, or the session ends. */
  readonly signal: CancelSignal;
}

/**
 * The context of one request: the caller, what the client declared, and its channel. Built
 * field by field, so every context has one shape (a spread of callers of varying shapes was
 * measurably slow on every call's path).
 */
export function requestContext(
  caller: Caller,
  client: { protocolVersion: string; clientCapabilities: JsonObject; logLevel: string | undefined; paramHeaders?: Readonly<Record<string, string>> | undefined },
  channel: RequestChannel,
): RequestContext {
  return contextOf(caller, client.protocolVersion, client.clientCapabilities, client.logLevel, channel, client.paramHeaders);
}

/** The context of a request in a session the client opened: what it negotiated there. */
export function sessionContext(
  caller: Caller,
  session: { readonly info: { readonly protocolVersion: string; readonly clientCapabilities: JsonObject }; readonly logLevel: string | undefined },
  channel: RequestChannel,
): RequestContext {
  return contextOf(caller, session.info.protocolVersion, session.info.clientCapabilities, session.logLevel, channel, undefined);
}

function contextOf(
  caller: Caller,
  protocolVersion: string,
  clientCapabilities: JsonObject,
  logLevel: string | undefined,
  channel: RequestChannel,
  paramHeaders: Readonly<Record<string, string>> | undefined,
): RequestContext {
  return {
    requestId: caller.requestId,
    traceparent: caller.traceparent,
    tracestate: caller.tracestate,
    principal: caller.principal,
    protocolVersion,
    clientCapabilities,
    logLevel,
    channel,
    paramHeaders,
  };
}
