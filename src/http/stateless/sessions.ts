// Serving 2026-07-28 clients, which have no session (spec/2026-07-28: basic/index.mdx "_meta",
// basic/patterns/subscriptions.mdx). Each request runs in a session the gateway keeps, never
// named to the client. An authenticated principal's requests share one per (principal, client
// capabilities, client info), so upstream sessions of the sessions era are opened once and
// reused: what one of its requests creates upstream, its others see. Without a principal
// nothing tells one client from another, so each request (and each subscriptions/listen
// stream) gets a session of its own, ended with it: nothing one request created upstream is
// seen by another. A request runs under an id of the gateway's (clients of this era may reuse
// ids across concurrent HTTP requests); its answer goes back under the client's id. What
// belongs to no request (list changes, resource updates) reaches the client's
// subscriptions/listen streams; a log line reaches only the request it belongs to. Parked calls
// live on the replica that started them (for `sessions.inputTimeout` at most), under a
// requestState the gateway signs, so a requestState an upstream made passes through untouched.
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { META, MCP_LOG_LEVELS, STATELESS_VERSION } from '../../mcp/era.js';
import { listChangeOf, mirroredName } from '../../mcp/methods.js';
import { ErrorCode, GatewayError } from '../../mcp/errors.js';
import {
  failure,
  isObject,
  isRequest,
  metaOf,
  notification,
  type JsonObject,
  type JsonRpcId,
  type JsonRpcMessage,
  type JsonRpcRequest,
} from '../../mcp/jsonrpc.js';
import type { Delivery, SessionInfo } from '../../session/session.js';
import { requestContext, type Caller, type RequestChannel } from '../../session/context.js';
import { answerFromClient } from '../../links/relay.js';
import type { Router } from '../../router/router.js';
import type { TaskFollow } from '../../router/task-follow.js';
import type { SessionLinks } from '../../links/links.js';
import type { DownstreamSession, SessionStore } from '../../links/session.js';
import type { Logger } from '../../util/log.js';
import { digestOf, RoundTrip, type StatelessRequest } from './round-trip.js';
import type { RequestSink } from '../../mcp/pending.js';
import { stableJson } from '../../util/stable-json.js';
import { SharedHolds } from '../../util/shared-holds.js';
import { quote } from '../../util/cut.js';

/** Fingerprints remembered before ended sessions' are swept out. */
const MAX_KEYS = 10_000;

/**
 * A subscriptions/listen refused: its principal has `max` open already (the endpoint answers
 * it 429, as one session too many of a principal).
 */
export class TooManyListens extends Error {
  constructor(readonly max: number) {
    super(`at most ${max} subscriptions/listen streams open per principal`);
  }
}

/** The channel of the gateway's own requests: nothing to relay, and no one to ask for input. */
function internalChannel(session: DownstreamSession): RequestChannel {
  return {
    canAsk: false,
    send(message) {
      if (isRequest(message)) answerFromClient(session, message.id, new GatewayError('method_not_found', `Method not found: ${quote(message.method)}`));
    },
  };
}

/** An open subscriptions/listen (StatelessSessions.listen). */
export interface Subscription {
  agreed: JsonObject;
  /** Ends it without a final result (the client closed the stream, or it failed opening). */
  close: () => void;
  /** Its acknowledgement was written: a drain may end it from now on (at once, if one began). */
  acknowledged: () => void;
}

interface Listener {
  id: JsonRpcId;
  filter: JsonObject;
  sink: RequestSink;
  /** The resources it holds, each by the one URI the gateway exposes it under (namespaced), as updates carry it. */
  readonly resources: Set<string>;
  /** Its acknowledgement was written: what follows may end it. */
  acknowledged: boolean;
  /** Ends it with its final result (subscriptions.mdx "Graceful Closure"); once. */
  end(): void;
}

/**
 * Where a session the gateway keeps for 2026-07-28 clients sends what belongs to no request:
 * its subscriptions/listen streams. Each holds a request in flight of the session (which keeps
 * it from being reaped, and ends the stream when the session ends), yet none is a request a
 * drain waits for: like a sessions-era GET stream, a drain ends them (gateway.ts), each with
 * its final result, so their clients reconnect to another replica.
 */
export class ListenStreams implements Delivery {
  readonly canAsk = false;
  readonly addressable = false;
  /** Its listens, from their subscription to their close. */
  readonly listeners = new Set<Listener>();
  readonly #fanOut: (message: JsonRpcMessage) => void;
  /** A drain began: a listen acknowledged from now on ends at once. */
  #ending = false;

  constructor(fanOut: (message: JsonRpcMessage) => void) {
    this.#fanOut = fanOut;
  }

  deliver(message: JsonRpcMessage): void {
    this.#fanOut(message);
  }

  /** The session's requests in flight (DownstreamSession.inflight) that are listen streams. */
  get inflight(): number {
    return this.listeners.size;
  }

  get ending(): boolean {
    return this.#ending;
  }

  /** Ends every listen stream with its final result, and any acknowledged later at its acknowledgement; returns how many it ended. */
  end(): number {
    this.#ending = true;
    let ended = 0;
    for (const listener of [...this.listeners]) {
      if (!listener.acknowledged) continue;
      listener.end();
      ended++;
    }
    return ended;
  }
}

/** What the gateway keeps with one session it holds for 2026-07-28 clients. */
interface Held {
  /** A session of one request or listen stream (no principal), ended with it. */
  readonly own: boolean;
  /** Requests running in it: a log line of its upstreams reaches the request it belongs to. */
  readonly running: Set<RoundTrip>;
  /** Its subscriptions/listen streams (the session's delivery). */
  readonly streams: ListenStreams;
  /** Resources subscribed upstream, by exposed (namespaced) URI, held for the listeners that asked. */
  readonly resources: SharedHolds<string, Listener>;
}

export interface StatelessDeps {
  router: Router;
  links: SessionLinks;
  sessions: SessionStore;
  logger: Logger;
  /** How long a request answered input_required waits for the client's retry. */
  inputTimeoutMs: number;
  /**
   * subscriptions/listen streams open at once per principal (anonymous ones count under one),
   * as a principal of the sessions era has at most one GET stream per session.
   */
  maxListensPerPrincipal: number;
}

export class StatelessSessions {
  readonly #deps: StatelessDeps;
  /** Session id by (principal, capabilities, client info) fingerprint. */
  readonly #byKey = new Map<string, string>();
  readonly #opening = new Map<string, Promise<DownstreamSession>>();
  readonly #parked = new Map<string, RoundTrip>();
  /** Open subscriptions/listen streams by principal ('' without one). */
  readonly #listens = new Map<string, number>();
  /** One record per session held (it goes with the session). */
  readonly #held = new WeakMap<DownstreamSession, Held>();
  /** Signs the requestStates this gateway issues, to tell them from an upstream's. */
  readonly #stateKey = randomBytes(32);
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

  /**
   * The gateway's session for this request: its principal's (opened on first use), or, without
   * a principal, one of its own, which `release` ends.
   */
  async session(request: StatelessRequest, caller: Caller): Promise<DownstreamSession> {
    if (caller.principal === undefined) return this.#open(request, caller, true);
    const key = this.#key(request, caller);
    const id = this.#byKey.get(key);
    const existing = id === undefined ? undefined : this.#deps.sessions.get(id);
    if (existing && !existing.closed) {
      existing.touch(this.#deps.sessions.now());
      // A renewed token of the same principal: its teams now (the key names the principal, not its claims).
      if (caller.principal !== existing.principal) await this.#deps.links.renewPrincipal(existing, caller.principal);
      return existing;
    }
    if (id !== undefined) this.#byKey.delete(key);
    if (this.#byKey.size >= MAX_KEYS) {
      for (const [k, sid] of this.#byKey) if (!this.#deps.sessions.get(sid)) this.#byKey.delete(k);
    }
    const pending = this.#opening.get(key);
    if (pending) return pending;
    const opening = this.#open(request, caller, false)
      .then((session) => {
        this.#byKey.set(key, session.id);
        return session;
      })
      .finally(() => this.#opening.delete(key));
    this.#opening.set(key, opening);
    return opening;
  }

  async #open(request: StatelessRequest, caller: Caller, own: boolean): Promise<DownstreamSession> {
    // What belongs to no request goes to the session's listeners; nothing may ask the client
    // outside a request of its own (mrtr.mdx).
    let opened: DownstreamSession | undefined;
    const streams = new ListenStreams((message) => opened && this.#fanOut(opened, message));
    // Its upstream sessions meet upstreams in this era where they speak it (a sessions-era
    // upstream is initialized with the newest version of its era).
    const info: Omit<SessionInfo, 'principal'> = { protocolVersion: STATELESS_VERSION, clientCapabilities: request.clientCapabilities, clientInfo: request.clientInfo };
    opened = await this.#deps.links.open(info, caller, streams);
    this.#held.set(opened, { own, running: new Set(), streams, resources: new SharedHolds() });
    return opened;
  }

  /** The request (or listen stream) served in `session` is over: a session of its own ends with it. */
  release(session: DownstreamSession): void {
    const held = this.#held.get(session);
    if (!held?.own) return;
    this.#held.delete(session);
    void this.#deps.sessions.delete(session.id, 'the request ended', { remember: false });
  }

  /** A requestState for a parked call: random, and signed so that `issued` knows it again. */
  issueState(): string {
    const nonce = randomBytes(16).toString('base64url');
    return `${nonce}.${this.#sign(nonce)}`;
  }

  /** Whether this gateway issued `state` (else it is an upstream's, passed through to it). */
  issued(state: string): boolean {
    const dot = state.indexOf('.');
    if (dot <= 0) return false;
    const given = Buffer.from(state.slice(dot + 1));
    const expected = Buffer.from(this.#sign(state.slice(0, dot)));
    return given.length === expected.length && timingSafeEqual(given, expected);
  }

  #sign(nonce: string): string {
    return createHmac('sha256', this.#stateKey).update(nonce).digest('base64url').slice(0, 22);
  }

  /**
   * Whether `request` is the retry of a call parked here (its requestState names one; resume()
   * checks the rest): only this replica can take it, also while draining.
   */
  resumes(request: StatelessRequest): boolean {
    const state = request.params.requestState;
    return typeof state === 'string' && this.#parked.has(state);
  }

  /** Whether this client already has its session here (opening one counts against the limits). */
  has(request: StatelessRequest, caller: Caller): boolean {
    // A retry of a parked call opens nothing: that call holds its session already.
    if (this.resumes(request)) return true;
    // An anonymous request's session is always its own, opened for it.
    if (caller.principal === undefined) return false;
    const key = this.#key(request, caller);
    const id = this.#byKey.get(key);
    return this.#opening.has(key) || (id !== undefined && this.#deps.sessions.get(id)?.closed === false);
  }

  #key(request: StatelessRequest, caller: Caller): string {
    const principal = caller.principal?.id ?? '';
    return createHash('sha256').update(`${principal}\0${caller.endpoint ?? ''}\0${stableJson(request.clientCapabilities)}\0${stableJson(request.clientInfo)}`).digest('base64url');
  }

  /** Runs a request; its answer (or input_required) reaches `sink`. */
  run(session: DownstreamSession, request: StatelessRequest, sink: RequestSink, caller: Caller): RoundTrip {
    const internalId = `s-${++this.#nextId}`;
    const roundTrip = new RoundTrip(this, session, request, internalId, caller.principal?.id);
    roundTrip.attach(sink, request);
    this.#held.get(session)?.running.add(roundTrip);
    const message: JsonRpcRequest = { jsonrpc: '2.0', id: internalId, method: request.method, params: request.params };
    void this.#level(session, request.logLevel, caller)
      .then(() => this.#deps.router.answer(session, message, requestContext(caller, request, roundTrip)))
      .then(
      (response) => roundTrip.complete(response),
      (err: unknown) => roundTrip.complete(failure(internalId, { code: ErrorCode.InternalError, message: err instanceof Error ? err.message : 'Internal error' })),
    );
    return roundTrip;
  }

  /**
   * A retry of a parked call: the same principal, method and name, else it is refused (the
   * requestState is not a credential). Undefined when the state is unknown or expired.
   */
  resume(requestState: string, request: StatelessRequest, sink: RequestSink, caller: Caller): RoundTrip | GatewayError {
    const roundTrip = this.#parked.get(requestState);
    if (!roundTrip || roundTrip.principal !== caller.principal?.id) {
      return new GatewayError('invalid_params', 'Invalid params: unknown or expired requestState');
    }
    if (roundTrip.method !== request.method || roundTrip.name !== mirroredName(request) || roundTrip.digest !== digestOf(request)) {
      return new GatewayError('invalid_params', `Invalid params: the requestState belongs to another ${roundTrip.method} request (method, name and arguments must be those of the first round)`);
    }
    this.#parked.delete(requestState);
    roundTrip.attach(sink, request);
    roundTrip.answer(isObject(request.params.inputResponses) ? request.params.inputResponses : {});
    return roundTrip;
  }

  park(roundTrip: RoundTrip): void {
    this.#parked.set(roundTrip.handle, roundTrip);
  }

  forget(roundTrip: RoundTrip): void {
    const handle = roundTrip.issuedHandle;
    if (handle !== undefined && this.#parked.get(handle) === roundTrip) this.#parked.delete(handle);
    this.#held.get(roundTrip.session)?.running.delete(roundTrip);
    this.release(roundTrip.session);
  }

  /**
   * The level a request asks for in `_meta` becomes the session's (logging/setLevel to its
   * sessions-era upstreams, the envelope's logLevel for 2026-07-28 ones), when it changed.
   */
  async #level(session: DownstreamSession, level: string | undefined, caller: Caller): Promise<void> {
    if (level === undefined || session.logLevel === level || !MCP_LOG_LEVELS.includes(level)) return;
    const request: JsonRpcRequest = { jsonrpc: '2.0', id: `s-${++this.#nextId}`, method: 'logging/setLevel', params: { level } };
    await this.#deps.router.answer(session, request, this.#internal(session, caller));
  }

  /**
   * subscriptions/listen: what the session can deliver of `filter` (resource subscriptions are
   * made upstream, and count across the session's listeners). Returns the agreed filter, the
   * function that ends the subscription, and the one the endpoint calls once the stream's
   * acknowledgement is written (from then on a drain may end it). Throws TooManyListens when
   * the principal has its `maxListensPerPrincipal` open (counted before anything waits, so
   * listens that arrive together cannot all pass).
   */
  async listen(session: DownstreamSession, id: JsonRpcId, filter: JsonObject, sink: RequestSink, caller: Caller): Promise<Subscription> {
    const uncount = this.#countListen(caller.principal?.id ?? '');
    try {
      return await this.#listen(session, id, filter, sink, caller, uncount);
    } catch (err) {
      uncount();
      throw err;
    }
  }

  /** Counts one more listen of `principal`, or throws TooManyListens; returns what uncounts it (once). */
  #countListen(principal: string): () => void {
    const max = this.#deps.maxListensPerPrincipal;
    const open = this.#listens.get(principal) ?? 0;
    if (open >= max) throw new TooManyListens(max);
    this.#listens.set(principal, open + 1);
    let counted = true;
    return () => {
      if (!counted) return;
      counted = false;
      const left = (this.#listens.get(principal) ?? 1) - 1;
      if (left > 0) this.#listens.set(principal, left);
      else this.#listens.delete(principal);
    };
  }

  async #listen(session: DownstreamSession, id: JsonRpcId, filter: JsonObject, sink: RequestSink, caller: Caller, uncount: () => void): Promise<Subscription> {
    const agreed: JsonObject = {};
    const caps = session.capabilities;
    const announces = (feature: string): boolean => isObject(caps[feature]);
    if (filter.toolsListChanged === true && announces('tools')) agreed.toolsListChanged = true;
    if (filter.promptsListChanged === true && announces('prompts')) agreed.promptsListChanged = true;
    if (filter.resourcesListChanged === true && announces('resources')) agreed.resourcesListChanged = true;
    const uris = Array.isArray(filter.resourceSubscriptions) ? filter.resourceSubscriptions.filter((u): u is string => typeof u === 'string') : [];
    const held = this.#held.get(session)!;
    const listener: Listener = { id, filter: agreed, sink, resources: new Set(), acknowledged: false, end: () => {} };
    // Each URI is held by the one spelling the gateway exposes it under (a bare one resolved to
    // the upstream that serves it, as a resources/subscribe resolves it), so two listens naming
    // it bare and namespaced share one subscription and both hear its updates. Held before the
    // upstream answers, so a concurrent listen for the same resource waits for the same
    // subscription rather than making (and later dropping) its own. A URI that could not be
    // subscribed is not held by this listener.
    const subscribe = async (uri: string): Promise<boolean> => {
      const exposed = await this.#deps.router.exposedResourceUri(session, uri, this.#internal(session, caller));
      if (exposed === undefined) return false;
      const refused = new Error('subscription refused');
      const open = async (): Promise<void> => {
        if (!(await this.#subscription(session, 'resources/subscribe', exposed, caller))) throw refused;
      };
      return held.resources.hold(exposed, listener, open).then(
        () => {
          listener.resources.add(exposed);
          return true;
        },
        () => false,
      );
    };
    const unique = [...new Set(uris)];
    const outcomes = await Promise.all(unique.map(subscribe));
    const subscribed = unique.filter((_, i) => outcomes[i]);
    if (uris.length > 0) agreed.resourceSubscriptions = subscribed;
    const { streams } = held;
    streams.listeners.add(listener);
    // An open subscription keeps the session from being reaped as idle (a request in flight of
    // the session, which ListenStreams tells the drain from real ones).
    const internalId = `s-${++this.#nextId}`;
    const signal = session.begin(internalId);
    let closed = false;
    const close = (): void => {
      if (closed) return;
      closed = true;
      session.end(internalId, signal);
      uncount();
      streams.listeners.delete(listener);
      for (const uri of listener.resources) {
        void held.resources.release(uri, listener, () => (session.closed ? undefined : this.#subscription(session, 'resources/unsubscribe', uri, caller)));
      }
      this.release(session);
    };
    // The session ending (shutdown) or a drain (ListenStreams.end) ends the subscription
    // gracefully: its final result (subscriptions.mdx "Graceful Closure").
    listener.end = () => {
      if (closed) return;
      close();
      sink.finish({ jsonrpc: '2.0', id, result: { resultType: 'complete', _meta: { [META.subscriptionId]: id } } });
    };
    signal.addEventListener('abort', listener.end);
    const acknowledged = (): void => {
      listener.acknowledged = true;
      if (streams.ending) listener.end();
    };
    return { agreed, close, acknowledged };
  }

  async #subscription(session: DownstreamSession, method: string, uri: string, caller: Caller): Promise<boolean> {
    const request: JsonRpcRequest = { jsonrpc: '2.0', id: `s-${++this.#nextId}`, method, params: { uri } };
    const response = await this.#deps.router.answer(session, request, this.#internal(session, caller));
    return response !== undefined && 'result' in response;
  }

  /** Follows an upstream's task a listen of `session` named (src/router/task-follow.ts). */
  followTask(session: DownstreamSession, handle: string, caller: Caller, onTask: (task: JsonObject) => void): Promise<TaskFollow | undefined> {
    return this.#deps.router.followTask(session, handle, this.#internal(session, caller), onTask);
  }

  /** The context of a request the gateway makes in the session on the client's behalf. */
  #internal(session: DownstreamSession, caller: Caller) {
    const { info, logLevel } = session;
    return requestContext(caller, { protocolVersion: info.protocolVersion, clientCapabilities: info.clientCapabilities, logLevel }, internalChannel(session));
  }

  /** A message for the session's standalone stream goes to the listeners that asked for it. */
  #fanOut(session: DownstreamSession, message: JsonRpcMessage): void {
    if (!('method' in message) || isRequest(message)) return;
    if (message.method === 'notifications/message') {
      // A log line is the request's own (logging.mdx): one with no related request (a stdio
      // upstream's) reaches the session's request only when it runs alone, else none.
      const running = this.#held.get(session)?.running;
      if (running?.size === 1) for (const roundTrip of running) roundTrip.send(message);
      return;
    }
    const listeners = this.#held.get(session)?.streams.listeners;
    if (!listeners) return;
    const flag = listChangeOf(message.method)?.listenFlag;
    const wanted = (filter: JsonObject, resources: ReadonlySet<string>): boolean => {
      if (flag !== undefined) return filter[flag] === true;
      // Updates carry the exposed URI, the one the listen holds the resource by (any spelling it named).
      return message.method === 'notifications/resources/updated' && typeof message.params?.uri === 'string' && resources.has(message.params.uri);
    };
    for (const listener of listeners) {
      if (!wanted(listener.filter, listener.resources)) continue;
      listener.sink.notify(notification(message.method, { ...message.params, _meta: { ...metaOf(message.params), [META.subscriptionId]: listener.id } }));
    }
  }

}
