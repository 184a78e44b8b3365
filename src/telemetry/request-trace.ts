// The spans of one client request: its SERVER span, named and attributed by the MCP semantic
// conventions (gen-ai/mcp.md), the CLIENT span of each request it makes upstream, and the span
// events of what the gateway decided on the way (a policy refusal, a rate limit).
import { SpanStatusCode, type Attributes, type Span } from '@opentelemetry/api';
import { GatewayError, RpcError } from '../mcp/errors.js';
import { isObject, type JsonObject } from '../mcp/jsonrpc.js';
import { asError } from '../util/callbacks.js';

// Attribute names of the MCP semantic conventions (incubating there, so copied rather than
// imported from @opentelemetry/semantic-conventions/incubating, as that package advises).
export const MCP_METHOD_NAME = 'mcp.method.name';
export const MCP_PROTOCOL_VERSION = 'mcp.protocol.version';
export const MCP_SESSION_ID = 'mcp.session.id';
export const MCP_RESOURCE_URI = 'mcp.resource.uri';
export const GEN_AI_TOOL_NAME = 'gen_ai.tool.name';
export const GEN_AI_PROMPT_NAME = 'gen_ai.prompt.name';
export const GEN_AI_OPERATION_NAME = 'gen_ai.operation.name';
export const GEN_AI_TOOL_CALL_ARGUMENTS = 'gen_ai.tool.call.arguments';
export const GEN_AI_TOOL_CALL_RESULT = 'gen_ai.tool.call.result';
export const JSONRPC_REQUEST_ID = 'jsonrpc.request.id';
export const RPC_RESPONSE_STATUS_CODE = 'rpc.response.status_code';
export const ERROR_TYPE = 'error.type';
export const SERVER_ADDRESS = 'server.address';
export const SERVER_PORT = 'server.port';
export const NETWORK_TRANSPORT = 'network.transport';
/** The gateway's own: which configured upstream a CLIENT span went to. */
export const UPSTREAM_NAME = 'switchyard.upstream.name';

/**
 * The client's session id as a span names it: its first 8 characters, as log lines do. Without
 * authentication the id is the session's only credential, and a trace backend is no place for one.
 */
export function sessionAttribute(id: string): string {
  return id.slice(0, 8);
}

/** Where an upstream is: an HTTP server's host and port, or a child on pipes. */
export interface UpstreamAddress {
  transport: 'tcp' | 'pipe';
  address?: string;
  port?: number;
}

/** The span name and attributes of an MCP request (method, its target, the request id). */
export function requestAttributes(method: string, params: JsonObject | undefined, id?: string | number): { name: string; attributes: Attributes } {
  const attributes: Attributes = { [MCP_METHOD_NAME]: method };
  if (id !== undefined && id !== null) attributes[JSONRPC_REQUEST_ID] = String(id);
  let target: string | undefined;
  if (method === 'tools/call' && typeof params?.name === 'string') {
    target = params.name;
    attributes[GEN_AI_TOOL_NAME] = target;
    attributes[GEN_AI_OPERATION_NAME] = 'execute_tool';
  } else if (method === 'prompts/get' && typeof params?.name === 'string') {
    target = params.name;
    attributes[GEN_AI_PROMPT_NAME] = target;
  } else if (method.startsWith('resources/') && typeof params?.uri === 'string') {
    // Never in the span name: URIs are not low-cardinality (gen-ai/mcp.md, "Span name").
    attributes[MCP_RESOURCE_URI] = params.uri;
  }
  return { name: target === undefined ? method : `${method} ${target}`, attributes };
}

/** A low-cardinality word for what went wrong: the gateway's error code, or the upstream's JSON-RPC code. */
export function errorKindOf(err: unknown): string {
  if (err instanceof GatewayError) return err.code;
  if (err instanceof RpcError) return String(err.error.code);
  return 'internal';
}

/**
 * Marks a span failed (gen-ai/mcp.md: status ERROR whenever error.type is set). The message may
 * quote what the client sent (`Unknown tool: …`), and span limits never cut a status: redacted
 * and cut here (host.text).
 */
function fail(host: TraceHost, span: Span, type: string, message: string | undefined, code?: number): void {
  span.setAttribute(ERROR_TYPE, type);
  if (code !== undefined) span.setAttribute(RPC_RESPONSE_STATUS_CODE, String(code));
  span.setStatus(message === undefined ? { code: SpanStatusCode.ERROR } : { code: SpanStatusCode.ERROR, message: host.text(message) });
}

/** What a request's spans need of the gateway's tracing (tracing.ts). */
export interface TraceHost {
  readonly payloads: boolean;
  startClient(name: string, attributes: Attributes, parent: Span): Span;
  contextFields(span: Span): { traceparent?: string; tracestate?: string };
  addressOf(upstream: string): UpstreamAddress | undefined;
  payload(value: unknown): string;
  /** A client's string (a name, URI, message) redacted and cut to TEXT_LIMIT. */
  text(value: string): string;
}

export interface RequestFacts {
  /** The JSON-RPC error answered, if the answer was one. */
  error?: { code: number; message: string };
  /** The request was cancelled: no answer. */
  cancelled?: boolean;
  /** The result, when the answer was one. */
  result?: JsonObject;
}

export class RequestTrace {
  readonly #tracing: TraceHost;
  readonly span: Span;

  constructor(tracing: TraceHost, span: Span) {
    this.#tracing = tracing;
    this.span = span;
  }

  /** The trace this request belongs to (hex), for audit records and logs. */
  get traceId(): string {
    return this.span.spanContext().traceId;
  }

  /** Something the gateway decided on the way, as a span event (`switchyard.policy.denied` …). */
  event(name: string, attributes?: Attributes): void {
    this.span.addEvent(name, attributes);
  }

  /** Tool arguments as an attribute, when tracing.payloads is on. */
  arguments(args: unknown): void {
    if (this.#tracing.payloads && args !== undefined) this.span.setAttribute(GEN_AI_TOOL_CALL_ARGUMENTS, this.#tracing.payload(args));
  }

  /** The CLIENT span of a request to `upstream`, a child of this request's span. */
  upstream(upstream: string, method: string, params: JsonObject): UpstreamTrace {
    // Under a span that is not recorded (not sampled), the child is not either: no attributes to make.
    if (!this.span.isRecording()) return new UpstreamTrace(this.#tracing, this.#tracing.startClient(method, {}, this.span));
    const { name, attributes } = requestAttributes(method, params);
    attributes[UPSTREAM_NAME] = upstream;
    const where = this.#tracing.addressOf(upstream);
    if (where) {
      attributes[NETWORK_TRANSPORT] = where.transport;
      if (where.address !== undefined) attributes[SERVER_ADDRESS] = where.address;
      if (where.port !== undefined) attributes[SERVER_PORT] = where.port;
    }
    return new UpstreamTrace(this.#tracing, this.#tracing.startClient(name, attributes, this.span));
  }

  /**
   * This request waiting for `upstream`'s session to open (a lazy upstream's first use, or one
   * left out and tried again): a CLIENT span `initialize` of that upstream for the wait, so the
   * trace of a first call shows where its time went. The wait itself is returned, unchanged.
   */
  opening(upstream: string, wait: Promise<void>): Promise<void> {
    const hop = this.upstream(upstream, 'initialize', {});
    return wait.then(
      () => hop.end({}),
      (err: unknown) => {
        hop.end(asError(err));
        throw err;
      },
    );
  }

  /** Ends the SERVER span with what the client was answered. */
  end(facts: RequestFacts): void {
    const { span } = this;
    if (facts.error) fail(this.#tracing, span, String(facts.error.code), facts.error.message, facts.error.code);
    else if (facts.cancelled) fail(this.#tracing, span, 'cancelled', undefined);
    else if (facts.result?.isError === true) fail(this.#tracing, span, 'tool_error', undefined);
    if (this.#tracing.payloads && facts.result !== undefined && span.isRecording()) span.setAttribute(GEN_AI_TOOL_CALL_RESULT, this.#tracing.payload(facts.result));
    span.end();
  }
}

export class UpstreamTrace {
  readonly #tracing: TraceHost;
  readonly span: Span;

  constructor(tracing: TraceHost, span: Span) {
    this.#tracing = tracing;
    this.span = span;
  }

  /**
   * The upstream request's params with this span's context in `_meta` (gen-ai/mcp.md, "Context
   * propagation"); whatever trace fields the client sent there are replaced.
   */
  carry(params: JsonObject): JsonObject {
    const meta = isObject(params._meta) ? params._meta : undefined;
    const { traceparent: _traceparent, tracestate: _tracestate, ...rest } = meta ?? {};
    return { ...params, _meta: { ...rest, ...this.#tracing.contextFields(this.span) } };
  }

  /** Ends the CLIENT span with the upstream's answer (or what went wrong). */
  end(outcome: JsonObject | Error): void {
    if (outcome instanceof RpcError) fail(this.#tracing, this.span, String(outcome.error.code), outcome.error.message, outcome.error.code);
    else if (outcome instanceof Error) fail(this.#tracing, this.span, errorKindOf(outcome), outcome.message);
    else if (outcome.isError === true) fail(this.#tracing, this.span, 'tool_error', undefined);
    this.span.end();
  }
}
