// One 2026-07-28 client request as the gateway serves it, over as many rounds as its input
// requests take (spec/2026-07-28: basic/patterns/mrtr.mdx). When an upstream of the sessions era
// sends a server-initiated request (elicitation, sampling, roots) while serving the client's
// request, the client gets `resultType: "input_required"` listing it, and the call stays parked
// under a random requestState. The client's retry carries that requestState and its
// inputResponses; they answer the pending upstream requests and the same call continues.
import { createHash } from 'node:crypto';
import { MCP_LOG_LEVELS } from '../../mcp/era.js';
import { asksInput, mirroredName } from '../../mcp/methods.js';
import { ErrorCode, GatewayError } from '../../mcp/errors.js';
import { MAX_TIMER_MS, type RequestSink } from '../../mcp/pending.js';
import {
  failure,
  isObject,
  isRequest,
  metaOf,
  notification,
  type JsonObject,
  type JsonRpcId,
  type JsonRpcMessage,
  type JsonRpcNotification,
  type JsonRpcRequest,
  type JsonRpcResponse,
} from '../../mcp/jsonrpc.js';
import { answerFromClient } from '../../links/relay.js';
import type { RequestChannel } from '../../session/context.js';
import type { DownstreamSession } from '../../links/session.js';
import type { Logger } from '../../util/log.js';
import { stableJson } from '../../util/stable-json.js';
import { quote } from '../../util/cut.js';

/** A client request of this era, already validated: its `_meta` protocol fields removed. */
export interface StatelessRequest {
  id: JsonRpcId;
  /** The version the request declared (the same in its header and its `_meta`). */
  protocolVersion: string;
  method: string;
  params: JsonObject;
  clientCapabilities: JsonObject;
  clientInfo: JsonObject;
  logLevel: string | undefined;
  /** A tools/call's Mcp-Param-* headers, by lower-case name. */
  paramHeaders?: Readonly<Record<string, string>>;
}

/** A request's method and params without `_meta` and the fields that change between rounds. */
export function digestOf(request: Pick<StatelessRequest, 'method' | 'params'>): string {
  const { _meta: _m, inputResponses: _i, requestState: _s, ...rest } = request.params;
  return createHash('sha256').update(`${request.method}\0${stableJson(rest)}`).digest('base64url');
}

/** What a round trip needs of the sessions that run it. */
export interface RoundTripOwner {
  readonly inputTimeoutMs: number;
  /** A new requestState for a parked call. */
  issueState(): string;
  readonly logger: Logger;
  /** Keeps a call waiting for its retry, under its requestState. */
  park(roundTrip: RoundTrip): void;
  /** The call is over (answered or abandoned). */
  forget(roundTrip: RoundTrip): void;
}

/** One client request and its round trips: one, and one more per round of input it asks for. */
export class RoundTrip implements RequestChannel {
  #handle: string | undefined;
  readonly #owner: RoundTripOwner;
  readonly session: DownstreamSession;
  readonly internalId: string;
  readonly method: string;
  readonly name: string | undefined;
  readonly principal: string | undefined;
  /** What the request asks, without its per-round fields: a retry must ask the same. */
  readonly digest: string;
  /** Input requests sent to the client and not yet answered, by the key the client sees. */
  readonly outstanding = new Map<string, { id: number; method: string; params: JsonObject | undefined }>();
  /** Only a request that can take input may be asked for it (mrtr.mdx); the relay refuses the rest. */
  readonly canAsk: boolean;
  #sink: RequestSink | undefined;
  #clientId: JsonRpcId;
  #progressToken: unknown;
  #logLevel: string | undefined;
  #final: JsonRpcResponse | undefined;
  #done = false;
  #flush: NodeJS.Immediate | undefined;
  #expiry: NodeJS.Timeout | undefined;

  constructor(owner: RoundTripOwner, session: DownstreamSession, request: StatelessRequest, internalId: string, principal: string | undefined) {
    this.#owner = owner;
    this.session = session;
    this.internalId = internalId;
    this.method = request.method;
    this.name = mirroredName(request);
    this.principal = principal;
    this.digest = digestOf(request);
    this.canAsk = asksInput(request.method);
    this.#clientId = request.id;
    this.#progressToken = metaOf(request.params)?.progressToken;
    this.#logLevel = request.logLevel;
  }

  /**
   * The requestState the client retries with (sessions.ts issues it, so it can tell it from an
   * upstream's); made when the call is first parked (most calls never are).
   */
  get handle(): string {
    this.#handle ??= this.#owner.issueState();
    return this.#handle;
  }

  /** Its requestState if it was ever parked. */
  get issuedHandle(): string | undefined {
    return this.#handle;
  }

  /** Whether the gateway may make a task of this call (its sink is a TaskingSink): see RequestChannel. */
  get lasting(): boolean {
    return this.#sink !== undefined && 'tasked' in this.#sink;
  }

  /** Whether `sink` still waits for this round trip's answer. */
  answers(sink: RequestSink): boolean {
    return this.#sink === sink;
  }

  attach(sink: RequestSink, request: StatelessRequest): void {
    this.#sink = sink;
    this.#clientId = request.id;
    this.#progressToken = metaOf(request.params)?.progressToken;
    this.#logLevel = request.logLevel;
    clearTimeout(this.#expiry);
    this.#expiry = undefined;
  }

  /** The router's channel for the call: progress and logs pass, server requests become input. */
  send(message: JsonRpcMessage): void {
    if (this.#done) return;
    if (isRequest(message)) return this.#ask(message);
    if (!('method' in message)) return;
    const sink = this.#sink;
    if (message.method === 'notifications/progress') {
      if (this.#progressToken === undefined || !sink) return;
      sink.notify(notification(message.method, { ...message.params, progressToken: this.#progressToken as string | number }));
    } else if (message.method === 'notifications/message') {
      const level = typeof message.params?.level === 'string' ? MCP_LOG_LEVELS.indexOf(message.params.level) : -1;
      if (sink && this.#logLevel !== undefined && level >= MCP_LOG_LEVELS.indexOf(this.#logLevel)) sink.notify(message);
    } else if (message.method === 'notifications/cancelled') {
      // The upstream gave up an input request it had asked for.
      for (const [key, entry] of this.outstanding) if (entry.id === message.params?.requestId) this.outstanding.delete(key);
    } else {
      // List changes and resource updates are not the request's: they go to subscriptions.
      this.session.deliver(message);
    }
  }

  /** The call ended: answer now, or keep the answer for the retry that is due. */
  complete(response: JsonRpcResponse | undefined): void {
    this.#done = true;
    clearImmediate(this.#flush);
    const answer = response ?? failure(this.internalId, { code: ErrorCode.InternalError, message: 'Request cancelled' });
    if (this.#sink) {
      this.#deliver(answer);
      this.#owner.forget(this);
    } else this.#final = answer;
  }

  /** The client's retry: its answers go to the upstream requests waiting for them. */
  answer(inputResponses: JsonObject): void {
    for (const [key, value] of Object.entries(inputResponses)) {
      const entry = this.outstanding.get(key);
      if (!entry) continue;
      this.outstanding.delete(key);
      const outcome = isObject(value) ? value : new GatewayError('invalid_params', `inputResponses["${quote(key)}"] must be an object`);
      answerFromClient(this.session, entry.id, outcome);
    }
    this.#pruneWithdrawn();
    if (this.#final) {
      this.#deliver(this.#final);
      this.#owner.forget(this);
    } else if (this.outstanding.size > 0) this.#listInput();
  }

  /** Input requests the upstream withdrew (cancelled, timed out) are not asked again. */
  #pruneWithdrawn(): void {
    for (const [key, entry] of this.outstanding) if (!this.session.clientRequests.get(entry.id)) this.outstanding.delete(key);
  }

  /** The client went away, or never came back: the call is cancelled upstream. */
  abandon(reason: string): void {
    this.#sink = undefined;
    clearTimeout(this.#expiry);
    clearImmediate(this.#flush);
    if (!this.#done) {
      this.#done = true;
      for (const entry of this.outstanding.values()) this.session.clientRequests.settle(entry.id, new GatewayError('cancelled', reason));
      this.outstanding.clear();
      this.session.cancel(this.internalId);
    }
    this.#owner.forget(this);
  }

  #ask(request: JsonRpcRequest): void {
    // The relay refused already what this request cannot be asked (canAsk); the gateway's ids are numbers.
    if (typeof request.id !== 'number') {
      answerFromClient(this.session, request.id, new GatewayError('method_not_found', `Method not found: ${quote(request.method)} (input cannot be asked for within ${this.method})`));
      return;
    }
    let params = request.params;
    const meta = metaOf(params);
    if (params && meta && 'progressToken' in meta) {
      const { progressToken: _token, ...rest } = meta;
      params = Object.keys(rest).length === 0 ? (({ _meta: _m, ...bare }) => bare)(params) : { ...params, _meta: rest };
    }
    // 2026-07-28 removed a URL elicitation's elicitationId (its retry carries the outcome; changelog §11).
    if (request.method === 'elicitation/create' && params && 'elicitationId' in params) params = (({ elicitationId: _id, ...rest }) => rest)(params);
    this.outstanding.set(String(request.id), { id: request.id, method: request.method, params });
    // Requests sent together are listed together.
    this.#flush ??= setImmediate(() => {
      this.#flush = undefined;
      if (this.#sink && this.outstanding.size > 0) this.#listInput();
    });
  }

  #listInput(): void {
    this.#pruneWithdrawn();
    if (this.outstanding.size === 0) return;
    const inputRequests: JsonObject = {};
    for (const [key, entry] of this.outstanding) inputRequests[key] = entry.params === undefined ? { method: entry.method } : { method: entry.method, params: entry.params };
    this.#deliver({ jsonrpc: '2.0', id: this.internalId, result: { resultType: 'input_required', inputRequests, requestState: this.handle } });
    this.#expiry = setTimeout(() => {
      this.#owner.logger.info('a request waiting for input expired', { method: this.method, waitedMs: this.#owner.inputTimeoutMs });
      this.abandon('the client did not retry in time');
    }, Math.min(this.#owner.inputTimeoutMs, MAX_TIMER_MS));
    this.#expiry.unref();
    this.#owner.park(this);
  }

  #deliver(response: JsonRpcResponse): void {
    const sink = this.#sink;
    this.#sink = undefined;
    sink?.finish({ ...response, id: this.#clientId });
  }
}
