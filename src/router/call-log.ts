// What the gateway records about each client call: its request context (from the HTTP layer),
// what it turned out to be (upstream, tool, outcome), and the one log line it earns. Tool
// arguments are logged by shape (keys and types) unless the config asks for values.
import { GatewayError } from '../mcp/errors.js';
import { isObject, type JsonRpcRequest } from '../mcp/jsonrpc.js';
import type { Outcome } from '../metrics/metrics.js';
import type { Caller } from '../session/context.js';
import type { DownstreamSession } from '../links/session.js';
import type { LogFields } from '../util/log.js';


export interface CallRecord {
  started: number;
  /** The upstream the request went to. */
  upstream?: string;
  /** The upstream that owns what it names, once known (audited as its upstream when it went nowhere). */
  owner?: string;
  /** The tool's original name at its upstream. */
  tool?: string;
  /** A tools/call answered with isError: true. */
  toolError?: boolean;
  error?: unknown;
  /** The gateway refused it itself (call-observer.ts): audited as a deny. */
  refused?: 'policy' | 'rate_limit' | 'concurrency' | 'pinning' | 'confirmation';
}

export function outcomeOf(record: CallRecord): Outcome {
  const { error } = record;
  if (error === undefined) return record.toolError ? 'error' : 'ok';
  if (error instanceof GatewayError) {
    if (error.code === 'upstream_timeout') return 'timeout';
    if (error.code === 'cancelled') return 'cancelled';
    if (error.code === 'upstream_unavailable' || error.code === 'upstream_closed' || error.code === 'upstream_protocol') return 'unavailable';
  }
  return 'error';
}

/** The fields of a call's log line (`session` undefined: one the edge answered without a session). */
export function describeCall(
  request: JsonRpcRequest,
  session: DownstreamSession | undefined,
  context: Caller,
  record: CallRecord,
  outcome: Outcome,
  seconds: number,
  argumentsMode: 'shape' | 'values',
): LogFields {
  const fields: LogFields = {
    requestId: context.requestId,
    ...(session ? { session: session.id.slice(0, 8) } : {}),
    method: request.method,
    outcome,
    durationMs: Math.round(seconds * 1_000_000) / 1_000,
  };
  if (context.principal !== undefined) fields.principal = context.principal.id;
  if (record.upstream !== undefined) fields.upstream = record.upstream;
  if (record.tool !== undefined) fields.tool = record.tool;
  if (record.error instanceof Error && outcome !== 'ok') fields.error = record.error.message;
  const args = request.params?.arguments;
  if (request.method === 'tools/call' && isObject(args)) fields.arguments = argumentsMode === 'values' ? args : shapeOf(args);
  return fields;
}

/** Keys and JSON types of an arguments object, one level deep: never the values. */
export function shapeOf(args: Record<string, unknown>): Record<string, string> {
  const shape: Record<string, string> = {};
  for (const [key, value] of Object.entries(args)) {
    shape[key] = value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value;
  }
  return shape;
}
