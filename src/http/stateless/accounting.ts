// The accounting of a 2026-07-28 request the edge answers itself, as the router accounts every
// other one (router.ts): its SERVER span (tracing.md), its counts in switchyard_requests_total,
// switchyard_endpoint_requests_total and switchyard_team_requests_total, its `call` log line
// (operations.md). What the edge answers: server/discover, the task methods of the gateway's own
// tasks, a subscriptions/listen up to its acknowledgement, and every refusal made before the
// router sees the request (validation, the principal's rate limit, the drain, the caps).
import { isStatelessVersion } from '../../mcp/era.js';
import { ErrorCode, toJsonRpcError } from '../../mcp/errors.js';
import { failure, isFailure, isObject, type JsonRpcErrorObject, type JsonRpcRequest, type JsonRpcResponse } from '../../mcp/jsonrpc.js';
import { isSupportedVersion } from '../../mcp/versions.js';
import type { Metrics } from '../../metrics/metrics.js';
import type { Tracing, RequestTrace } from '../../telemetry/tracing.js';
import { MCP_PROTOCOL_VERSION } from '../../telemetry/request-trace.js';
import type { Caller } from '../../session/context.js';
import type { DownstreamSession } from '../../links/session.js';
import type { Logger } from '../../util/log.js';
import { traceInitialize } from '../../router/call-observer.js';
import { describeCall } from '../../router/call-log.js';

export interface EdgeAccounting {
  metrics: Metrics;
  logger: Logger;
  tracing?: Tracing | undefined;
  /** The teams of the caller's principal, as policy gives them (read at each request). */
  teams?: ((caller: Caller) => readonly string[]) | undefined;
}

/**
 * One request as the edge accounts it, if the edge answers it: nothing is begun until `begin`
 * (a request the router answers is the router's to account), and it is ended at most once.
 */
export class EdgeCall {
  readonly #accounting: EdgeAccounting;
  readonly #request: JsonRpcRequest;
  readonly #caller: Caller;
  /** The version the request declared, when it is one the gateway knows (a client's string otherwise). */
  readonly #version: string | undefined;
  #started: number | undefined;
  #trace: RequestTrace | undefined;
  #ended = false;

  constructor(accounting: EdgeAccounting, request: JsonRpcRequest, caller: Caller, version: string | undefined) {
    this.#accounting = accounting;
    this.#request = request;
    this.#caller = caller;
    this.#version = isStatelessVersion(version) || isSupportedVersion(version) ? version : undefined;
  }

  /** The edge answers this request: its span and its duration start now (once). */
  begin(): this {
    if (this.#started !== undefined) return this;
    this.#started = performance.now();
    const { tracing } = this.#accounting;
    // The router's SERVER span of a request that has no session to name (as an initialize's).
    this.#trace = tracing && traceInitialize(tracing, this.#request, this.#caller);
    if (this.#version !== undefined) this.#trace?.span.setAttribute(MCP_PROTOCOL_VERSION, this.#version);
    return this;
  }

  /** Ends it with what the client was answered (before it is shaped for the client), in `session` if any. */
  end(response: JsonRpcResponse, session?: DownstreamSession): void {
    if (this.#ended) return;
    this.begin();
    this.#ended = true;
    const { metrics, logger, teams } = this.#accounting;
    const caller = this.#caller;
    const seconds = (performance.now() - this.#started!) / 1_000;
    const failed = isFailure(response);
    const outcome = failed ? 'error' : 'ok';
    const method = metrics.method(this.#request.method);
    metrics.countRequest(method, 'none', outcome, caller.endpoint);
    for (const team of teams?.(caller) ?? []) metrics.countTeam(team, method, outcome);
    this.#trace?.end(failed ? { error: response.error } : { result: response.result });
    if (!logger.isEnabled('info')) return;
    // The router's call line, with no upstream.
    const record = { started: this.#started!, ...(failed ? { error: new Error(response.error.message) } : {}) };
    logger.info('call', describeCall(this.#request, session, caller, record, outcome, seconds, 'shape'));
  }

  /** A refusal the edge answers (a JSON-RPC error body): accounted with its error, and returned. */
  async refused(answer: Response, session?: DownstreamSession): Promise<Response> {
    if (this.#ended) return answer;
    const body: unknown = await answer
      .clone()
      .json()
      .catch(() => undefined);
    const given = isObject(body) && isObject(body.error) ? body.error : {};
    const error: JsonRpcErrorObject =
      typeof given.code === 'number' && typeof given.message === 'string' ? { code: given.code, message: given.message } : { code: ErrorCode.InternalError, message: `HTTP ${answer.status}` };
    this.end(failure(this.#request.id, error), session);
    return answer;
  }

  /** A request the edge had taken (begun) that failed with `err`: ended with the error it maps to. */
  failed(err: unknown): void {
    if (this.#started !== undefined) this.end(failure(this.#request.id, toJsonRpcError(err)));
  }
}
