// Serving 2026-07-28 clients, which have no session (spec/2026-07-28: basic/index.mdx "_meta",
// basic/patterns/mrtr.mdx, basic/patterns/subscriptions.mdx). The gateway keeps a session of its
// own per (principal, client capabilities, client info), never named to the client, so upstream
// sessions of the sessions era are opened once and reused. A request runs under an id of the
// gateway's (clients of this era may reuse ids across concurrent HTTP requests); its answer
// goes back under the client's id.
//
// Multi round-trip requests: when an upstream of the sessions era sends a server-initiated
// request (elicitation, sampling, roots) while serving the client's request, the client gets
// `resultType: "input_required"` listing it, and the call stays parked under a random
// requestState. The client's retry carries that requestState and its inputResponses; they answer
// the pending upstream requests and the same call continues. Parked calls live on the replica
// that started them (for `sessions.inputTimeout` at most).
import { createHash, randomBytes } from 'node:crypto';
import { INPUT_METHODS, META, mirroredName } from '../mcp/era.js';
import { ErrorCode, GatewayError, RpcError } from '../mcp/errors.js';
import { MAX_TIMER_MS } from '../mcp/pending.js';
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
} from '../mcp/jsonrpc.js';
import type { DownstreamSession } from '../session/session.js';
import type { SessionStore } from '../session/store.js';
import type { Logger } from '../util/log.js';
import type { RequestContext } from './call-log.js';
import { answerFromClient } from './relay.js';
import type { Router } from './router.js';


/** Where one HTTP exchange's messages go: related notifications, then exactly one answer. */
export interface Sink {
  notify(message: JsonRpcNotification): void;
  finish(response: JsonRpcResponse): void;
}

/** A client request of this era, already validated: its `_meta` protocol fields removed. */
export interface StatelessRequest {
  id: JsonRpcId;
  method: string;
  params: JsonObject;
  clientCapabilities: JsonObject;
  clientInfo: JsonObject;
  logLevel: string | undefined;
}

/** Fingerprints remembered before ended sessions' are swept out. */
const MAX_KEYS = 10_000;

const LEVELS = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'];

function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  if (isObject(value)) return `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${stableJson(value[k])}`).join(',')}}`;
  return JSON.stringify(value) ?? 'null';
}

/** The channel of the gateway's own requests: nothing to relay, and no one to ask for input. */
function internalChannel(session: DownstreamSession): { send(message: JsonRpcMessage): void } {
  return {
    send(message) {
      if (isRequest(message)) answerFromClient(session, message.id, new RpcError({ code: ErrorCode.MethodNotFound, message: `Method not found: ${message.method}` }));
    },
  };
}

/** One upstream resource subscription shared by a session's listeners. */
interface ResourceListen {
  count: number;
  /** Whether the upstream took the subscription. */
  ready: Promise<boolean>;
}

/** A request's method and params without `_meta` and the fields that change between rounds. */
function digestOf(request: Pick<StatelessRequest, 'method' | 'params'>): string {
  const { _meta: _m, inputResponses: _i, requestState: _s, ...rest } = request.params;
  return createHash('sha256').update(`${request.method}\0${stableJson(rest)}`).digest('base64url');
}

interface Listener {
  id: JsonRpcId;
  filter: JsonObject;
  sink: Sink;
}

/** One client request, over as many rounds as its input requests take. */
class Exchange {
  readonly handle = randomBytes(16).toString('base64url');
  readonly #owner: StatelessSessions;
  readonly session: DownstreamSession;
  readonly internalId: string;
  readonly method: string;
  readonly name: string | undefined;
  readonly principal: string | undefined;
  /** What the request asks, without its per-round fields: a retry must ask the same. */
  readonly digest: string;
  /** Input requests sent to the client and not yet answered, by the key the client sees. */
  readonly outstanding = new Map<string, { id: number; method: string; params: JsonObject | undefined }>();
  #sink: Sink | undefined;
  #clientId: JsonRpcId;
  #progressToken: unknown;
  #logLevel: string | undefined;
  #final: JsonRpcResponse | undefined;
  #done = false;
  #flush: NodeJS.Immediate | undefined;
  #expiry: NodeJS.Timeout | undefined;

  constructor(owner: StatelessSessions, session: DownstreamSession, request: StatelessRequest, internalId: string, principal: string | undefined) {
    this.#owner = owner;
    this.session = session;
    this.internalId = internalId;
    this.method = request.method;
    this.name = mirroredName(request);
    this.principal = principal;
    this.digest = digestOf(request);
    this.#clientId = request.id;
    this.#progressToken = metaOf(request.params)?.progressToken;
    this.#logLevel = request.logLevel;
  }

  /** Whether `sink` still waits for this exchange's answer. */
  answers(sink: Sink): boolean {
    return this.#sink === sink;
  }

  attach(sink: Sink, request: StatelessRequest): void {
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
      const level = typeof message.params?.level === 'string' ? LEVELS.indexOf(message.params.level) : -1;
      if (sink && this.#logLevel !== undefined && level >= LEVELS.indexOf(this.#logLevel)) sink.notify(message);
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
      const outcome = isObject(value) ? value : new RpcError({ code: ErrorCode.InvalidParams, message: `inputResponses["${key}"] must be an object` });
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
    this.#owner.forget(this);
    if (this.#done) return;
    this.#done = true;
    for (const entry of this.outstanding.values()) this.session.clientRequests.settle(entry.id, new GatewayError('cancelled', reason));
    this.outstanding.clear();
    this.session.cancel(this.internalId);
  }

  #ask(request: JsonRpcRequest): void {
    if (!INPUT_METHODS.has(this.method) || typeof request.id !== 'number') {
      answerFromClient(this.session, request.id, new RpcError({ code: ErrorCode.MethodNotFound, message: `Method not found: ${request.method} (input cannot be asked for within ${this.method})` }));
      return;
    }
    let params = request.params;
    const meta = metaOf(params);
    if (params && meta && 'progressToken' in meta) {
      const { progressToken: _token, ...rest } = meta;
      params = Object.keys(rest).length === 0 ? (({ _meta: _m, ...bare }) => bare)(params) : { ...params, _meta: rest };
    }
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

export interface StatelessDeps {
  router: Router;
  sessions: SessionStore;
  logger: Logger;
  /** How long a request answered input_required waits for the client's retry. */
  inputTimeoutMs: number;
}

export class StatelessSessions {
  readonly #deps: StatelessDeps;
  /** Session id by (principal, capabilities, client info) fingerprint. */
  readonly #byKey = new Map<string, string>();
  readonly #opening = new Map<string, Promise<DownstreamSession>>();
  readonly #parked = new Map<string, Exchange>();
  /** Requests running per session: log messages of its upstreams reach those that asked for them. */
  readonly #running = new Map<DownstreamSession, Set<Exchange>>();
  readonly #listeners = new Map<DownstreamSession, Set<Listener>>();
  /** Resource URIs (as the client sees them) listened for, with how many listeners want each. */
  readonly #resourceListens = new Map<DownstreamSession, Map<string, ResourceListen>>();
  #nextId = 0;

  constructor(deps: StatelessDeps) {
    this.#deps = deps;
  }

  get inputTimeoutMs(): number {
    return this.#deps.inputTimeoutMs;
  }

  get logger(): Logger {
    return this.#deps.logger;
  }

  /** Calls parked waiting for a retry. */
  get parkedCount(): number {
    return this.#parked.size;
  }

  /** The gateway's session for this client, opened on first use. */
  async session(request: StatelessRequest, context: RequestContext): Promise<DownstreamSession> {
    const key = this.#key(request, context);
    const id = this.#byKey.get(key);
    const existing = id === undefined ? undefined : this.#deps.sessions.get(id);
    if (existing && !existing.closed) {
      existing.touch(this.#deps.sessions.now());
      return existing;
    }
    if (id !== undefined) this.#byKey.delete(key);
    if (this.#byKey.size >= MAX_KEYS) {
      for (const [k, sid] of this.#byKey) if (!this.#deps.sessions.get(sid)) this.#byKey.delete(k);
    }
    const pending = this.#opening.get(key);
    if (pending) return pending;
    const opening = this.#deps.router
      .openStateless(request.clientCapabilities, request.clientInfo, context)
      .then((session) => {
        this.#byKey.set(key, session.id);
        session.ondeliver = (message) => this.#fanOut(session, message);
        return session;
      })
      .finally(() => this.#opening.delete(key));
    this.#opening.set(key, opening);
    return opening;
  }

  /** Whether this client already has its session here (opening one counts against the limits). */
  has(request: StatelessRequest, context: RequestContext): boolean {
    const key = this.#key(request, context);
    const id = this.#byKey.get(key);
    return this.#opening.has(key) || (id !== undefined && this.#deps.sessions.get(id)?.closed === false);
  }

  #key(request: StatelessRequest, context: RequestContext): string {
    const principal = context.principal?.id ?? '';
    return createHash('sha256').update(`${principal}\0${stableJson(request.clientCapabilities)}\0${stableJson(request.clientInfo)}`).digest('base64url');
  }

  /** Runs a request; its answer (or input_required) reaches `sink`. */
  run(session: DownstreamSession, request: StatelessRequest, sink: Sink, context: RequestContext): Exchange {
    const internalId = `s-${++this.#nextId}`;
    const exchange = new Exchange(this, session, request, internalId, context.principal?.id);
    exchange.attach(sink, request);
    const running = this.#running.get(session) ?? new Set<Exchange>();
    this.#running.set(session, running);
    running.add(exchange);
    const message: JsonRpcRequest = { jsonrpc: '2.0', id: internalId, method: request.method, params: request.params };
    void this.#level(session, request.logLevel, context)
      .then(() => this.#deps.router.handleRequest(session, message, { send: (m) => exchange.send(m) }, context))
      .then(
      (response) => exchange.complete(response),
      (err: unknown) => exchange.complete(failure(internalId, { code: ErrorCode.InternalError, message: err instanceof Error ? err.message : 'Internal error' })),
    );
    return exchange;
  }

  /**
   * A retry of a parked call: the same principal, method and name, else it is refused (the
   * requestState is not a credential). Undefined when the state is unknown or expired.
   */
  resume(requestState: string, request: StatelessRequest, sink: Sink, context: RequestContext): Exchange | RpcError {
    const exchange = this.#parked.get(requestState);
    if (!exchange || exchange.principal !== context.principal?.id) {
      return new RpcError({ code: ErrorCode.InvalidParams, message: 'Invalid params: unknown or expired requestState' });
    }
    if (exchange.method !== request.method || exchange.name !== mirroredName(request) || exchange.digest !== digestOf(request)) {
      return new RpcError({ code: ErrorCode.InvalidParams, message: `Invalid params: the requestState belongs to another ${exchange.method} request (method, name and arguments must be those of the first round)` });
    }
    this.#parked.delete(requestState);
    exchange.attach(sink, request);
    exchange.answer(isObject(request.params.inputResponses) ? request.params.inputResponses : {});
    return exchange;
  }

  park(exchange: Exchange): void {
    this.#parked.set(exchange.handle, exchange);
  }

  forget(exchange: Exchange): void {
    if (this.#parked.get(exchange.handle) === exchange) this.#parked.delete(exchange.handle);
    const running = this.#running.get(exchange.session);
    running?.delete(exchange);
    if (running?.size === 0) this.#running.delete(exchange.session);
  }

  /**
   * The level a request asks for in `_meta` becomes the session's (logging/setLevel to its
   * sessions-era upstreams, the envelope's logLevel for 2026-07-28 ones), when it changed.
   */
  async #level(session: DownstreamSession, level: string | undefined, context: RequestContext): Promise<void> {
    if (level === undefined || session.logLevel === level || !LEVELS.includes(level)) return;
    const request: JsonRpcRequest = { jsonrpc: '2.0', id: `s-${++this.#nextId}`, method: 'logging/setLevel', params: { level } };
    await this.#deps.router.handleRequest(session, request, internalChannel(session), context);
  }

  /**
   * subscriptions/listen: what the session can deliver of `filter` (resource subscriptions are
   * made upstream, and count across the session's listeners). Returns the agreed filter and
   * the function that ends the subscription.
   */
  async listen(session: DownstreamSession, id: JsonRpcId, filter: JsonObject, sink: Sink, context: RequestContext): Promise<{ agreed: JsonObject; close: () => void }> {
    const agreed: JsonObject = {};
    const caps = session.capabilities;
    const announces = (feature: string): boolean => isObject(caps[feature]);
    if (filter.toolsListChanged === true && announces('tools')) agreed.toolsListChanged = true;
    if (filter.promptsListChanged === true && announces('prompts')) agreed.promptsListChanged = true;
    if (filter.resourcesListChanged === true && announces('resources')) agreed.resourcesListChanged = true;
    const uris = Array.isArray(filter.resourceSubscriptions) ? filter.resourceSubscriptions.filter((u): u is string => typeof u === 'string') : [];
    const held = this.#resourceListens.get(session) ?? new Map<string, ResourceListen>();
    this.#resourceListens.set(session, held);
    // Counted before the upstream answers, so a concurrent listen for the same URI waits for
    // the same subscription rather than making (and later dropping) its own.
    const claimed = [...new Set(uris)].map((uri) => {
      let entry = held.get(uri);
      if (!entry) {
        entry = { count: 0, ready: this.#subscription(session, 'resources/subscribe', uri, context) };
        held.set(uri, entry);
      }
      entry.count++;
      return { uri, entry };
    });
    const subscribed: string[] = [];
    for (const { uri, entry } of claimed) if (await entry.ready) subscribed.push(uri);
    const release = (uri: string, entry: ResourceListen): void => {
      if (--entry.count > 0 || held.get(uri) !== entry) return;
      held.delete(uri);
      if (held.size === 0 && this.#resourceListens.get(session) === held) this.#resourceListens.delete(session);
      void entry.ready.then((ok) => {
        if (ok && !session.closed) void this.#subscription(session, 'resources/unsubscribe', uri, context);
      });
    };
    // A URI that could not be subscribed is not held by this listener.
    for (const { uri, entry } of claimed) if (!subscribed.includes(uri)) release(uri, entry);
    if (uris.length > 0) agreed.resourceSubscriptions = subscribed;
    const listener: Listener = { id, filter: agreed, sink };
    const listeners = this.#listeners.get(session) ?? new Set<Listener>();
    this.#listeners.set(session, listeners);
    listeners.add(listener);
    // An open subscription keeps the session from being reaped as idle; the session ending
    // (shutdown) ends the subscription gracefully (subscriptions.mdx "Graceful Closure").
    const internalId = `s-${++this.#nextId}`;
    const signal = session.begin(internalId);
    signal.addEventListener('abort', () => {
      close();
      sink.finish({ jsonrpc: '2.0', id, result: { resultType: 'complete', _meta: { [META.subscriptionId]: id } } });
    });
    let closed = false;
    const close = (): void => {
      if (closed) return;
      closed = true;
      session.end(internalId, signal);
      listeners.delete(listener);
      if (listeners.size === 0) this.#listeners.delete(session);
      for (const { uri, entry } of claimed) if (subscribed.includes(uri)) release(uri, entry);
    };
    return { agreed, close };
  }

  async #subscription(session: DownstreamSession, method: string, uri: string, context: RequestContext): Promise<boolean> {
    const request: JsonRpcRequest = { jsonrpc: '2.0', id: `s-${++this.#nextId}`, method, params: { uri } };
    const response = await this.#deps.router.handleRequest(session, request, internalChannel(session), context);
    return response !== undefined && 'result' in response;
  }

  /** A message for the session's standalone stream goes to the listeners that asked for it. */
  #fanOut(session: DownstreamSession, message: JsonRpcMessage): void {
    if (!('method' in message) || isRequest(message)) return;
    if (message.method === 'notifications/message') {
      // No stream outlives a request in this era: a log line reaches the requests running.
      for (const exchange of this.#running.get(session) ?? []) exchange.send(message);
      return;
    }
    const listeners = this.#listeners.get(session);
    if (!listeners) return;
    const wanted = (filter: JsonObject): boolean => {
      switch (message.method) {
        case 'notifications/tools/list_changed':
          return filter.toolsListChanged === true;
        case 'notifications/prompts/list_changed':
          return filter.promptsListChanged === true;
        case 'notifications/resources/list_changed':
          return filter.resourcesListChanged === true;
        case 'notifications/resources/updated':
          return Array.isArray(filter.resourceSubscriptions) && filter.resourceSubscriptions.includes(message.params?.uri ?? null);
        default:
          return false;
      }
    };
    for (const listener of listeners) {
      if (!wanted(listener.filter)) continue;
      listener.sink.notify(notification(message.method, { ...message.params, _meta: { ...metaOf(message.params), [META.subscriptionId]: listener.id } }));
    }
  }

}

export type { Exchange };
