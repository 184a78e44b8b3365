// One client request on its way through the router, and the one way it reaches an upstream.
import { supportsMethod } from '../mcp/capabilities.js';
import { GatewayError } from '../mcp/errors.js';
import { isObject, notification, type JsonObject } from '../mcp/jsonrpc.js';
import { isStatelessVersion } from '../mcp/era.js';
import type { SessionLinks } from '../links/links.js';
import type { DownstreamSession } from '../links/session.js';
import type { RequestOptions, UpstreamClient } from '../upstream/client.js';
import { promiseOf, type Settled } from '../mcp/pending.js';
import { later } from '../util/callbacks.js';
import { upstreamRequestState } from '../ratelimit/continuation.js';
import { childTraceparent, continuedTraceparent, parseTraceparent, parseTracestate } from '../util/trace.js';
import type { CallRecord } from './call-log.js';
import type { RequestTrace } from '../telemetry/tracing.js';
import type { ActiveRequest, RequestContext } from '../session/context.js';
import { quote } from '../util/cut.js';

/** One client request on its way through the router, with what it turned out to be. */
export interface Call extends ActiveRequest<DownstreamSession> {
  readonly record: CallRecord;
  /** Its SERVER span, when tracing is on (call-observer.ts). */
  readonly trace?: RequestTrace | undefined;
}

/** What else a tools/call sends with: `headers` on its HTTP request (Mcp-Param-*), and what its slot does when it is given up on (`onGiveUp`, lingering.ts). */
export type ForwardOptions = Pick<RequestOptions, 'onGiveUp'> & { headers?: Record<string, string> | undefined };

/**
 * Sends the request to the upstream that owns it; never a method it did not declare. `done`
 * hears the upstream's result or the error (never before this returns); without it, a promise.
 */
export function forward(call: Call, client: UpstreamClient, method: string, params: JsonObject): Promise<JsonObject>;
export function forward(call: Call, client: UpstreamClient, method: string, params: JsonObject, done: Settled, more?: ForwardOptions): void;
export function forward(call: Call, client: UpstreamClient, method: string, params: JsonObject, done?: Settled, more: ForwardOptions = {}): Promise<JsonObject> | void {
  if (!done) return promiseOf((settled) => forward(call, client, method, params, settled));
  call.record.upstream = client.name;
  if (!supportsMethod(client.capabilities, method)) return later(done, new GatewayError('method_not_found', `Method not found: ${quote(method)}`));
  const { context, signal } = call;
  const { channel } = context;
  const options: RequestOptions = { signal, context, onProgress: (progress) => channel.send(notification('notifications/progress', progress)) };
  if (params.requestState !== undefined || params.inputResponses !== undefined) {
    const own = inputRound(client, params);
    if (own instanceof Error) return later(done, own);
    params = own;
  }
  // A 2026-07-28 client answers a 2026-07-28 upstream's input_required itself (mrtr.mdx).
  if (client.era === 'stateless' && isStatelessVersion(context.protocolVersion)) options.passInput = true;
  if (more.headers) options.headers = more.headers;
  if (more.onGiveUp) options.onGiveUp = more.onGiveUp;
  // Not bound by the upstream's silence, only by its maxTotalTimeoutMs: a call the gateway may
  // make a task of, and tasks/result, which blocks until the task ends (tasks.mdx).
  if (channel.lasting || method === 'tasks/result') options.timeoutMs = Infinity;
  if (client.streamsAnswers) channel.stream?.();
  // Traced: a CLIENT span whose context the upstream gets; else the caller's trace continued.
  const hop = call.trace?.upstream(client.name, method, params);
  if (hop === undefined) return client.request(method, withTraceContext(params, context), options, done);
  const settled = done;
  client.request(method, hop.carry(params), options, (outcome) => {
    hop.end(outcome);
    settled(outcome);
  });
}

/**
 * Opens `upstream` for the call's session if it is not open yet (links.ensure): undefined when
 * nothing is to do (every call on an open upstream), else the wait, traced as that upstream's
 * `initialize` when the call is traced.
 */
export function openFor(links: Pick<SessionLinks, 'ensure'>, call: Pick<Call, 'session' | 'trace'>, upstream: string | undefined): Promise<void> | undefined {
  const wait = links.ensure(call.session, upstream);
  return wait && call.trace && upstream !== undefined ? call.trace.opening(upstream, wait) : wait;
}

/**
 * The multi round-trip fields a 2026-07-28 client sent back (mrtr.mdx) are the upstream's own
 * when it made them (a 2026-07-28 upstream): they go on unchanged, but for the gateway's mark
 * around the requestState of a call under a perTool limit (ratelimit/continuation.ts), which the
 * upstream never sees: it gets its own state back. A sessions-era upstream made none (the
 * gateway's own requestStates never get here): its requestState is unknown, and inputResponses
 * without one answer nothing.
 */
function inputRound(client: UpstreamClient, params: JsonObject): JsonObject | GatewayError {
  if (client.era === 'stateless') {
    const state = upstreamRequestState(params.requestState);
    if (state === params.requestState) return params;
    const { requestState: _marked, ...rest } = params;
    return state === undefined ? rest : { ...rest, requestState: state as string };
  }
  if (params.requestState !== undefined) return new GatewayError('invalid_params', 'Invalid params: unknown or expired requestState');
  const { inputResponses: _stray, ...rest } = params;
  return rest;
}

/**
 * Continues the caller's trace (from `_meta.traceparent`, else the HTTP header) into the
 * upstream request as a child span; HTTP upstreams also get it as a header. A tracestate goes
 * with the traceparent it came with, and only when valid; invalid trace fields in `_meta` are
 * dropped, never forwarded and never an error for the client.
 */
function withTraceContext(params: JsonObject, context: RequestContext): JsonObject {
  const meta = isObject(params._meta) ? params._meta : undefined;
  const own = parseTraceparent(meta?.traceparent);
  const parent = continuedTraceparent(own, context.traceparent);
  const tracestate = own !== undefined ? parseTracestate(meta?.tracestate) : parent !== undefined ? parseTracestate(context.tracestate) : undefined;
  if (parent === undefined && meta?.traceparent === undefined && meta?.tracestate === undefined) return params;
  const { traceparent: _traceparent, tracestate: _tracestate, ...rest } = meta ?? {};
  const next: JsonObject = parent === undefined ? rest : { ...rest, traceparent: childTraceparent(parent) };
  if (parent !== undefined && tracestate !== undefined) next.tracestate = tracestate;
  return { ...params, _meta: next };
}

export function requireString(params: JsonObject, key: string): string {
  const value = params[key];
  if (typeof value !== 'string') throw new GatewayError('invalid_params', `${key} must be a string`);
  return value;
}

/** A tool result the model can act on (rather than a protocol error). */
export function toolError(text: string, meta?: JsonObject): JsonObject {
  return meta === undefined ? { content: [{ type: 'text', text }], isError: true } : { content: [{ type: 'text', text }], isError: true, _meta: meta };
}
