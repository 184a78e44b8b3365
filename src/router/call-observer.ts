// What the router tells tracing and the audit log about each client request: its SERVER span
// (begun with the request, ended with its answer), the refusals decided on the way, and one
// audit record per tool call, prompt get and resource read. Nothing here runs when neither is
// configured.
import type { AuditLog } from '../audit/audit.js';
import type { AuditEvent } from '../audit/record.js';
import { isStatelessVersion } from '../mcp/era.js';
import { isFailure, isObject, type JsonRpcRequest, type JsonRpcResponse } from '../mcp/jsonrpc.js';
import type { Metrics, Outcome } from '../metrics/metrics.js';
import { MCP_PROTOCOL_VERSION, MCP_SESSION_ID, sessionAttribute } from '../telemetry/request-trace.js';
import { errorKindOf, requestAttributes, type RequestTrace, type Tracing } from '../telemetry/tracing.js';
import type { DownstreamSession } from '../links/session.js';
import type { Caller, RequestContext } from '../session/context.js';
import { continuedTraceparent, traceIdOf } from '../util/trace.js';
import type { Call } from './call.js';

export interface CallObservers {
  tracing?: Tracing | undefined;
  audit?: AuditLog | undefined;
  /** The main endpoint's path (listen.path), for records of requests that came there. */
  mainEndpoint?: string;
}

/**
 * Why the gateway itself refused a call: its span event and the audit record's `reason`
 * (`confirmation`: a destructive tool the user declined, did not confirm in time, or whose
 * client cannot ask the user).
 */
export type Refusal = 'policy' | 'rate_limit' | 'concurrency' | 'pinning' | 'confirmation';

const REFUSAL_EVENTS: Record<Refusal, string> = {
  policy: 'switchyard.policy.denied',
  rate_limit: 'switchyard.rate_limited',
  concurrency: 'switchyard.upstream.busy',
  pinning: 'switchyard.pin.withheld',
  confirmation: 'switchyard.confirmation.refused',
};

const AUDITED: Readonly<Record<string, AuditEvent>> = { 'tools/call': 'tool.call', 'prompts/get': 'prompt.get', 'resources/read': 'resource.read' };

/**
 * The SERVER span of a request: its parent is `_meta`'s trace context, else the HTTP headers'.
 * Undefined when sampling could not record it (the request then takes the untraced path).
 */
export function traceRequest(tracing: Tracing, session: DownstreamSession, request: JsonRpcRequest, context: RequestContext): RequestTrace | undefined {
  const { params } = request;
  const meta = isObject(params?._meta) ? params._meta : undefined;
  const parent = tracing.parentOf(meta, context);
  if (!tracing.mayRecord(parent)) return undefined;
  const { name, attributes } = requestAttributes(request.method, params, request.id);
  attributes[MCP_PROTOCOL_VERSION] = context.protocolVersion;
  // A 2026-07-28 request has no session: the one the gateway keeps for it is never named to the client.
  if (!isStatelessVersion(context.protocolVersion)) attributes[MCP_SESSION_ID] = sessionAttribute(session.id);
  const trace = tracing.request(name, attributes, parent);
  if (request.method === 'tools/call') trace.arguments(params?.arguments);
  return trace;
}

/** The SERVER span of an initialize, which the edge answers by opening a session (not the router). */
export function traceInitialize(tracing: Tracing, request: JsonRpcRequest, caller: Caller): RequestTrace {
  const { params } = request;
  const { name, attributes } = requestAttributes(request.method, params, request.id);
  if (typeof params?.protocolVersion === 'string') attributes[MCP_PROTOCOL_VERSION] = params.protocolVersion;
  return tracing.request(name, attributes, tracing.parentOf(isObject(params?._meta) ? params._meta : undefined, caller));
}

/** Ends an initialize's span with its answer, naming the session it opened (by its prefix). */
export function endInitialize(trace: RequestTrace | undefined, response: JsonRpcResponse, sessionId?: string): void {
  if (!trace) return;
  if (sessionId !== undefined) trace.span.setAttribute(MCP_SESSION_ID, sessionAttribute(sessionId));
  trace.end(isFailure(response) ? { error: response.error } : {});
}

/** Records that the gateway refused the call itself (a span event now; the audit record's reason later). */
export function refuse(call: Call, refusal: Refusal, attributes?: Record<string, string | number>): void {
  call.record.refused = refusal;
  call.trace?.event(REFUSAL_EVENTS[refusal], attributes);
}

/** The trace id a request carried, when it is not traced here. */
function carriedTraceId(request: JsonRpcRequest, context: RequestContext): string | undefined {
  const meta = request.params?._meta;
  return traceIdOf(continuedTraceparent(isObject(meta) ? meta.traceparent : undefined, context.traceparent));
}

/** The OAuth client a token was issued to (RFC 9068 §2.2 `client_id`; else OpenID Connect's `azp`). */
function clientIdOf(context: RequestContext): string | undefined {
  const claims = context.principal?.claims;
  const id = claims?.client_id ?? claims?.azp;
  return typeof id === 'string' ? id : undefined;
}

/** Ends the request's span and writes its audit record (when configured). */
export function observeCall(observers: CallObservers, metrics: Metrics, request: JsonRpcRequest, call: Call, response: JsonRpcResponse | undefined, outcome: Outcome, seconds: number): void {
  const { context, record } = call;
  const { teams } = call.session.access;
  for (const team of teams) metrics.countTeam(team, metrics.method(request.method), outcome);
  if (call.trace) {
    if (response === undefined) call.trace.end({ cancelled: true });
    else if (isFailure(response)) call.trace.end({ error: response.error });
    else call.trace.end({ result: response.result });
  }
  const event = AUDITED[request.method];
  const { audit } = observers;
  if (!audit || event === undefined) return;
  const params = request.params ?? {};
  const refused = record.refused;
  audit.write({
    event,
    requestId: context.requestId,
    traceId: call.trace?.traceId ?? carriedTraceId(request, context),
    principal: context.principal?.id,
    team: teams.length > 0 ? teams.join(',') : undefined,
    clientId: clientIdOf(context),
    endpoint: call.session.info.endpoint ?? observers.mainEndpoint,
    upstream: record.upstream ?? record.owner,
    name: typeof params.name === 'string' ? params.name : typeof params.uri === 'string' ? params.uri : undefined,
    upstreamName: record.tool,
    decision: refused === undefined ? 'allow' : 'deny',
    reason: refused,
    outcome: refused === undefined ? outcome : 'refused',
    // A refusal answered as a tool result (a rate limit, an unconfirmed call) is no tool's error: the tool never ran.
    errorKind: record.error !== undefined ? errorKindOf(record.error) : record.toolError && refused === undefined ? 'tool_error' : undefined,
    durationMs: Math.round(seconds * 1_000_000) / 1_000,
    arguments: event === 'tool.call' && audit.recordsArguments ? params.arguments : undefined,
  });
}
