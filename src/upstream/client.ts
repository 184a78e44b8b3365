// One MCP client per upstream session: the only place where the gateway's requests to an
// upstream are correlated with their responses. The progress token an upstream sees is the
// gateway's request id, mapped back to the caller's own token; progress restarts the idle
// deadline but never the total one. Abort and timeout send notifications/cancelled with the
// upstream's id; close rejects everything pending. Nothing waits forever.
//
// The era is chosen at connect: the client's own where the upstream speaks it (a dual-era server
// meets each client in its era), found by a server/discover probe and, for a sessions-era
// client of a server that answers it, an initialize tried. A 2026-07-28 upstream session is
// called statelessly, through the StatelessUpstream the client then holds (stateless.ts).
import { ErrorCode, GatewayError, RpcError, toJsonRpcError } from '../mcp/errors.js';
import { failure, isFailure, isObject, isRequest, isResponse, metaOf, notification, progressTokenOf, success } from '../mcp/jsonrpc.js';
import type { JsonObject, JsonRpcId, JsonRpcMessage, JsonRpcNotification, JsonRpcRequest, ProgressToken } from '../mcp/jsonrpc.js';
import { PendingRequests, promiseOf, type Deadlines, type Settled } from '../mcp/pending.js';
import { asError, later } from '../util/callbacks.js';
import { createdTaskId, isTerminalTaskStatus } from '../mcp/tasks.js';
import { isStatelessVersion, STATELESS_VERSION } from '../mcp/era.js';
import { isWork } from '../mcp/methods.js';
import { isSupportedVersion, LATEST_VERSION } from '../mcp/versions.js';
import { eraFromProbe, initFromDiscover, listenNamedBy, refusesInitialize, withEnvelope, type EraChoice, type Envelope, type UpstreamEra } from './stateless-protocol.js';
import { noClient, StatelessUpstream } from './stateless.js';
import { TaskProgressRoutes } from './task-progress.js';
import { parseInitializeResult, type InitializeResult, type ServerRequestHandler, type UpstreamClientOptions } from './client-options.js';
import { Lingering, type RequestOptions } from './lingering.js';

export type { InitializeResult, ServerRequestHandler, UpstreamClientOptions } from './client-options.js';
export type { RequestOptions } from './lingering.js';
import { sendThen, TransportError, type MessageExtra, type Transport } from '../transport/types.js';
import { Cancellation, type CancelSignal } from '../util/cancel.js';

/**
 * A request sent and not yet answered: what its answer and progress need, and its deadlines
 * (PendingRequests' Deadlines). One object per request, on every call's path.
 */
class Pending implements Deadlines {
  /** Aborts the transport's round trip of a request given up on (timeout, cancel, close). */
  readonly cancel = new Cancellation();

  constructor(
    readonly method: string,
    readonly progressToken: ProgressToken | undefined,
    readonly onProgress: ((params: JsonObject) => void) | undefined,
    readonly context: unknown,
    readonly timeoutMs: number,
    readonly maxTotalMs: number,
    readonly onTimeout: (elapsedMs: number) => void,
    /** The caller's signal and this request's listener on it, removed once it is settled. */
    readonly signal: CancelSignal | undefined,
    readonly onAbort: () => void,
  ) {}

  detach(): void {
    this.signal?.removeEventListener('abort', this.onAbort);
  }
}

/** A 2026-07-28 server that has not answered server/discover in this long is of the sessions era (stdio). */
const PROBE_TIMEOUT_MS = 3_000;

export class UpstreamClient {
  readonly name: string;
  readonly #transport: Transport;
  readonly #options: UpstreamClientOptions;
  readonly #pending = new PendingRequests<Pending>();
  readonly #taskRoutes = new TaskProgressRoutes();
  readonly #lingering = new Lingering(); // requests given up on that the upstream may still work on
  #nextId = 0;
  /** Requests made so far (the idle sweep compares counts: nothing on the call path). */
  #requests = 0;
  #closed = false;
  #init: InitializeResult | undefined;
  /** Set for a 2026-07-28 upstream: how the session's requests are made statelessly. */
  #stateless: StatelessUpstream | undefined;
  /** The handshake's last step (notifications/initialized) in flight; requests wait for it. */
  #handshake: Promise<void> | undefined;
  /** Responses whose id matched nothing pending (late, duplicate or bogus). */
  unknownResponses = 0;

  onnotification?: (message: JsonRpcNotification, context: unknown) => void;
  onrequest?: ServerRequestHandler;
  onclose?: (reason?: Error) => void;
  /** The upstream came back after a restart; its lists may have changed. */
  onreconnect?: () => void;
  /** The connection was lost (it is restarted) or its forgotten session renewed: what it asked the client is over. */
  ondisconnect?: () => void;
  #connection = 0; // lost connections and renewed sessions: a request of an earlier one is answered to nobody

  constructor(name: string, transport: Transport, options: UpstreamClientOptions) {
    this.name = name;
    this.#transport = transport;
    this.#options = options;
    transport.onmessage = (message, extra) => this.#receive(message, extra);
    transport.onerror = (err) => options.logger.debug('transport error', { err });
    transport.onclose = (reason) => this.#onTransportClose(reason);
    transport.ondisconnect = (reason) => {
      options.logger.warn('upstream connection lost; requests in flight failed', { reason, failed: this.#pending.size });
      this.#connection++; // its requests to the gateway die with it
      this.#abandonAll(new GatewayError('upstream_closed', `upstream ${this.name} crashed (${reason.message}); it is being restarted`));
      this.ondisconnect?.();
    };
    // A forgotten session renewed: what it asked ends as a crashed one's; requests in flight fail or are sent again on their own.
    transport.onrenew = () => {
      this.#connection++;
      this.ondisconnect?.();
    };
    transport.onreconnect = (result) => {
      const init = parseInitializeResult(result);
      if (init && isSupportedVersion(init.protocolVersion)) this.#init = init;
      options.onRestart?.();
      this.onreconnect?.();
    };
  }

  get initialized(): InitializeResult | undefined {
    return this.#init;
  }

  get capabilities(): JsonObject {
    return this.#init?.capabilities ?? {};
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Requests made through this client so far. */
  get requests(): number {
    return this.#requests;
  }

  /** Requests in flight (for tests and health). */
  get pendingCount(): number {
    return this.#pending.size;
  }

  /** Whether the upstream answers this session's requests as SSE streams (Streamable HTTP). */
  get streamsAnswers(): boolean {
    return this.#transport.streamsAnswers === true;
  }

  /** The upstream's era, known once connected. */
  get era(): UpstreamEra {
    return this.#stateless ? 'stateless' : 'sessions';
  }

  /**
   * Starts the transport and finds the upstream's era within `timeoutMs`: each client meets an
   * upstream in the client's own era where the upstream speaks it (`era.prefer`). Unless what is
   * known settles it, a server/discover probe goes first; a server that answers it is called
   * statelessly, except by a sessions-era client, for which initialize is tried (a dual-era
   * server takes it; a 2026-07-28-only one refuses it, and is then called statelessly, bridged).
   * A server that does not answer the probe is initialized. `era.learn` hears what was found.
   */
  async connect(params: JsonObject, timeoutMs: number, era: EraChoice = { prefer: 'sessions', known: {} }): Promise<InitializeResult> {
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new GatewayError('upstream_timeout', `upstream ${this.name} did not initialize within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      await Promise.race([this.#transport.start(), timedOut]);
      const { prefer, known, learn } = era;
      if (known.stateless === false || (prefer === 'sessions' && known.sessions === true)) return await this.#initialize(params, timeoutMs, timedOut);
      const envelope: Envelope = { clientCapabilities: isObject(params.capabilities) ? params.capabilities : {}, clientInfo: isObject(params.clientInfo) ? params.clientInfo : {} };
      const discovered = await Promise.race([this.#discover(envelope, Math.min(timeoutMs / 2, PROBE_TIMEOUT_MS)), timedOut]);
      learn?.({ stateless: discovered !== undefined });
      if (!discovered) return await this.#initialize(params, timeoutMs, timedOut);
      if (prefer === 'sessions' && known.sessions !== false) {
        this.#transport.setProtocolVersion?.(undefined);
        try {
          const init = await this.#initialize(params, timeoutMs, timedOut);
          learn?.({ sessions: true });
          return init;
        } catch (err) {
          if (!refusesInitialize(err)) throw err;
          learn?.({ sessions: false });
          this.#transport.setProtocolVersion?.(STATELESS_VERSION);
        }
      }
      return this.#callStatelessly(discovered, envelope);
    } catch (err) {
      // Tear down in the background: a client's initialize must not wait out a stuck child's
      // stop grace period.
      this.close().catch((closeErr: unknown) => this.#options.logger.debug('close after failed handshake failed', { err: closeErr }));
      throw err;
    } finally {
      if (!this.#handshake) clearTimeout(timer);
      else void this.#handshake.finally(() => clearTimeout(timer));
    }
  }

  /** From now on the session's requests are made statelessly (2026-07-28), with this discovery result as its handshake's. */
  #callStatelessly(discovered: InitializeResult, envelope: Envelope): InitializeResult {
    this.#init = discovered;
    this.#stateless = new StatelessUpstream(envelope, {
      name: this.name,
      send: (method, sent, options) => promiseOf((done) => this.#post(method, sent, options, done)),
      ask: (request, context) => (this.onrequest ? this.onrequest(request, context) : Promise.reject(noClient(request.method))),
      // As the upstream's own cancellation of it would: the relay settles it and tells the client.
      withdraw: (requestId, reason, context) => this.onnotification?.(notification('notifications/cancelled', { requestId, reason }), context),
      capabilities: () => this.capabilities,
    });
    this.#transport.sessionEstablished?.(discovered.protocolVersion);
    this.#stateless.listen();
    return discovered;
  }

  /** The initialize handshake (sessions era); the initialized notification goes on in the background. */
  async #initialize(params: JsonObject, timeoutMs: number, timedOut: Promise<never>): Promise<InitializeResult> {
    const legacyParams = isStatelessVersion(params.protocolVersion) ? { ...params, protocolVersion: LATEST_VERSION } : params;
    const result = await Promise.race([this.request('initialize', legacyParams, { timeoutMs, maxTotalMs: timeoutMs }), timedOut]);
    const init = parseInitializeResult(result);
    if (!init) throw new GatewayError('upstream_protocol', `upstream ${this.name} sent an invalid initialize result`);
    if (!isSupportedVersion(init.protocolVersion)) {
      throw new GatewayError('upstream_protocol', `upstream ${this.name} speaks unsupported protocol ${init.protocolVersion}`);
    }
    this.#init = init;
    // The initialized notification is not waited for here (an upstream round trip less for
    // the client's initialize); requests wait for it instead, so none overtakes it.
    this.#handshake = this.#finishHandshake(init, timedOut);
    return init;
  }

  /** Probes with server/discover: the discovery result of a 2026-07-28 server, undefined for a sessions-era one. */
  async #discover(envelope: Envelope, timeoutMs: number): Promise<InitializeResult | undefined> {
    this.#transport.setProtocolVersion?.(STATELESS_VERSION);
    const outcome = await this.request('server/discover', withEnvelope(undefined, envelope), { timeoutMs, maxTotalMs: timeoutMs }).catch((err: unknown) =>
      err instanceof Error ? err : new Error(String(err)),
    );
    const era = eraFromProbe(outcome instanceof Error ? unwrapTransportError(outcome) : outcome);
    if (era instanceof Error) throw new GatewayError('upstream_unavailable', `upstream ${this.name}: ${era.message}`, { cause: era });
    if (era === 'sessions') {
      this.#transport.setProtocolVersion?.(undefined);
      return undefined;
    }
    return initFromDiscover(outcome as JsonObject);
  }

  async #finishHandshake(init: InitializeResult, timedOut: Promise<never>): Promise<void> {
    try {
      await Promise.race([this.notify('notifications/initialized'), timedOut]);
      this.#transport.sessionEstablished?.(init.protocolVersion);
    } catch (err) {
      // Closed by its owner meanwhile (a health probe, a session ended at once): nothing failed.
      if (this.#closed) return;
      this.#options.logger.warn('upstream did not take notifications/initialized; closing it', { err });
      await this.close().catch(() => {});
    } finally {
      this.#handshake = undefined;
    }
  }

  /**
   * Takes over an upstream session already initialized (by another replica): no handshake, the
   * transport continues the upstream's session.
   */
  async resume(init: InitializeResult): Promise<void> {
    await this.#transport.start();
    this.#init = init;
    this.#transport.sessionEstablished?.(init.protocolVersion);
  }

  /** The upstream's own session id (Streamable HTTP), for the self-describing session id. */
  get upstreamSessionId(): string | undefined {
    return this.#transport.sessionId;
  }

  /**
   * Sends a request and hears its result or error: through `done` (never before this returns)
   * when given, else as a promise. A sessions-era upstream past its handshake, the common case
   * of a client's call, is sent to at once.
   */
  request(method: string, params?: JsonObject, options?: RequestOptions): Promise<JsonObject>;
  request(method: string, params: JsonObject | undefined, options: RequestOptions, done: Settled): void;
  request(method: string, params: JsonObject | undefined, options: RequestOptions = {}, done?: Settled): Promise<JsonObject> | void {
    if (!done) return promiseOf((settled) => this.request(method, params, options, settled));
    this.#requests++;
    if (!this.#handshake && !this.#stateless) return this.#post(method, params, options, done);
    this.#deferred(method, params, options).then(done, (err: unknown) => done(asError(err)));
  }

  /** A request that waits for the handshake's end, or is made statelessly. */
  async #deferred(method: string, params: JsonObject | undefined, options: RequestOptions): Promise<JsonObject> {
    if (this.#handshake && method !== 'initialize') await this.#handshake;
    if (this.#stateless) return this.#stateless.request(method, params, options);
    return promiseOf((done) => this.#post(method, params, options, done));
  }

  /** Sends one request; `done` hears its outcome (never before this returns). */
  #post(method: string, params: JsonObject | undefined, options: RequestOptions, done: Settled): void {
    if (this.#closed) return later(done, new GatewayError('upstream_closed', `upstream ${this.name} is closed`));
    if (options.signal?.aborted) return later(done, new GatewayError('cancelled', 'request cancelled'));
    const id = ++this.#nextId;
    const progressToken = progressTokenOf(params);
    const tokened = progressToken === undefined ? params : withProgressToken(params!, id);
    const outgoing = this.#stateless ? this.#stateless.withEnvelope(tokened) : tokened;
    const signal = options.signal;
    const onAbort = (): void => {
      const reason = signal?.reason;
      this.#cancel(id, typeof reason === 'string' ? reason : reason instanceof Error ? reason.message : 'cancelled', new GatewayError('cancelled', 'request cancelled'), options.onGiveUp);
    };
    const onTimeout = (elapsed: number): void => {
      const err = new GatewayError('upstream_timeout', `upstream ${this.name} did not answer ${method} within ${elapsed} ms`);
      this.#cancel(id, 'timeout', err, options.onGiveUp);
    };
    const timeoutMs = options.timeoutMs ?? this.#options.timeoutMs;
    const maxTotalMs = options.maxTotalMs ?? this.#options.maxTotalTimeoutMs;
    const pending = new Pending(method, progressToken, options.onProgress, options.context, timeoutMs, maxTotalMs, onTimeout, signal, onAbort);
    this.#pending.track(id, pending, pending, done);
    signal?.addEventListener('abort', onAbort, { once: true });
    const message: JsonRpcRequest = outgoing === undefined ? { jsonrpc: '2.0', id, method } : { jsonrpc: '2.0', id, method, params: outgoing };
    const sent = (err?: unknown): void => {
      if (err !== undefined) this.#settle(id, this.#wrap(err));
    };
    try {
      sendThen(this.#transport, message, options.headers ? { cancel: pending.cancel, headers: options.headers } : { cancel: pending.cancel }, sent);
    } catch (err) {
      sent(err ?? new Error('send failed'));
    }
  }

  async notify(method: string, params?: JsonObject): Promise<void> {
    if (this.#handshake && method !== 'notifications/initialized') await this.#handshake;
    if (this.#closed) throw new GatewayError('upstream_closed', `upstream ${this.name} is closed`);
    // A 2026-07-28 server takes one client notification, cancellation (and only on stdio).
    const message = this.#stateless ? this.#stateless.notification(method, params) : notification(method, params);
    if (!message) return;
    try {
      await this.#transport.send(message);
    } catch (err) {
      throw this.#wrap(err);
    }
  }

  /** From now on close() leaves the upstream's own session alive: another replica carries it on. */
  keepSession(): void {
    this.#transport.keepSession?.();
  }

  /** Holds the upstream's stream for server-initiated messages only while `hold` (see Transport.holdStream). */
  holdStream(hold: boolean): void {
    this.#transport.holdStream?.(hold);
  }

  async close(): Promise<void> {
    this.#stateless?.close();
    if (!this.#closed) {
      this.#closed = true;
      this.#abandonAll(new GatewayError('upstream_closed', `upstream ${this.name} closed`));
      this.#options.onEnd?.();
    }
    await this.#transport.close();
  }

  #settle(id: JsonRpcId, outcome: JsonObject | Error): Pending | undefined {
    const pending = this.#pending.settle(id, outcome);
    pending?.detach();
    return pending;
  }

  /** Gives up on a request; what `onGiveUp` holds for it is released once the upstream is done with it (lingering.ts). */
  #cancel(id: JsonRpcId, reason: string, err: Error, onGiveUp?: RequestOptions['onGiveUp']): void {
    const done = this.#pending.has(id) && !this.#closed ? onGiveUp?.() : undefined;
    const pending = this.#settle(id, err);
    if (!pending) return done?.();
    if (done) this.#lingering.hold(id, done);
    pending.cancel.abort();
    // The spec forbids cancelling initialize; a failed handshake closes the transport instead.
    // An unanswered era probe is not cancelled either: a sessions-era server that ignored it
    // must see initialize next. A 2026-07-28 server over HTTP took the closed exchange as the
    // cancellation.
    if (!this.#closed && pending.method !== 'initialize' && pending.method !== 'server/discover') {
      this.#options.onCancel?.(reason);
      if (!this.#transport.cancelsByClosing) this.notify('notifications/cancelled', { requestId: id, reason }).catch(() => {});
    }
  }

  #abandonAll(err: Error): void {
    for (const pending of this.#pending.rejectAll(err)) {
      pending.detach();
      pending.cancel.abort();
    }
    this.#lingering.endAll();
    this.#taskRoutes.clear();
  }

  #onTransportClose(reason?: Error): void {
    const wasClosed = this.#closed;
    this.#closed = true;
    this.#abandonAll(new GatewayError('upstream_closed', `upstream ${this.name} closed${reason ? `: ${reason.message}` : ''}`));
    if (!wasClosed) {
      this.#options.logger.warn('upstream connection ended', { reason });
      this.#options.onEnd?.(reason);
      this.onclose?.(reason);
    }
  }

  #wrap(err: unknown): Error {
    if (err instanceof GatewayError || err instanceof RpcError) return err;
    if (err instanceof TransportError) {
      // The request was too large to send: the caller's to fix (-32602), with the limit.
      if (err.code === 'request_too_large') return new GatewayError('invalid_params', `upstream ${this.name}: ${err.message}`, { cause: err });
      // Refused by the gateway itself (a header, serialisation): an internal error, whose
      // cause is logged and never described to the client (docs/security.md).
      if (err.code === 'unsendable') return new Error(`upstream ${this.name}: ${err.message}`, { cause: err });
      const code = err.code === 'closed' || err.code === 'stream_ended' ? 'upstream_closed' : 'upstream_unavailable';
      return new GatewayError(code, `upstream ${this.name}: ${err.message}`, { cause: err });
    }
    return new GatewayError('upstream_unavailable', `upstream ${this.name} failed`, { cause: err });
  }

  #receive(message: JsonRpcMessage, extra: MessageExtra | undefined): void {
    if (isResponse(message)) return this.#onResponse(message.id, isFailure(message) ? new RpcError(message.error) : message.result);
    if (isRequest(message)) {
      void this.#answer(message, this.#relatedContext(extra));
      return;
    }
    const related = (extra?.relatedRequestId === undefined ? this.#stateless && listenNamedBy(message.params, (id) => this.#pending.get(id)) : this.#pending.get(extra.relatedRequestId))?.context;
    if (this.#stateless) message = this.#stateless.received(message);
    if (message.method === 'notifications/progress' && this.#onProgress(message)) return;
    if (message.method === 'notifications/tasks/status') this.#onTaskStatus(message.params);
    this.onnotification?.(message, related);
  }

  #onResponse(id: JsonRpcId | null, outcome: JsonObject | Error): void {
    const pending = id === null ? undefined : this.#settle(id, outcome);
    if (!pending) {
      if (id !== null) this.#lingering.end(id); // a request given up on, answered late: the upstream is done with it
      this.unknownResponses++;
      this.#options.onUnknownResponse?.();
      this.#options.logger.debug('dropped a response with an unknown id', { id });
      return;
    }
    // A created task's progress keeps its route (task-progress.ts).
    const taskId = outcome instanceof Error ? undefined : createdTaskId(outcome);
    if (taskId !== undefined && pending.progressToken !== undefined && pending.onProgress) this.#taskRoutes.add(id!, taskId, pending.progressToken, pending.onProgress);
  }

  /**
   * The context of the request a server-initiated message belongs to: the request whose HTTP
   * response stream carried it, or (stdio has no streams) the only request in flight that can
   * ask for input. Otherwise none, and the message goes to the client's standalone stream.
   */
  #relatedContext(extra: MessageExtra | undefined): unknown {
    if (extra?.relatedRequestId !== undefined) return this.#pending.get(extra.relatedRequestId)?.context;
    let only: Pending | undefined;
    for (const [, pending] of this.#pending.values()) {
      if (!isWork(pending.method)) continue;
      if (only) return undefined;
      only = pending;
    }
    return only?.context;
  }

  /** Routes progress to the request (or task) that owns the token; false when nothing does. */
  #onProgress(message: JsonRpcNotification): boolean {
    const token = message.params?.progressToken;
    if (typeof token !== 'number' && typeof token !== 'string') return false;
    const pending = this.#pending.get(token);
    if (pending?.progressToken !== undefined) {
      this.#pending.touch(token);
      pending.onProgress?.({ ...message.params, progressToken: pending.progressToken });
      return true;
    }
    return this.#taskRoutes.deliver(token, message.params!);
  }

  #onTaskStatus(params: JsonObject | undefined): void {
    if (!params || typeof params.taskId !== 'string' || !isTerminalTaskStatus(params.status)) return;
    this.#taskRoutes.end(params.taskId);
  }

  async #answer(request: JsonRpcRequest, context: unknown): Promise<void> {
    const connection = this.#connection;
    let reply: JsonRpcMessage;
    if (request.method === 'ping') {
      reply = success(request.id, {});
    } else if (!this.onrequest) {
      reply = failure(request.id, { code: ErrorCode.MethodNotFound, message: `Method not found: ${request.method}` });
    } else {
      try {
        reply = success(request.id, await this.onrequest(request, context));
      } catch (err) {
        reply = failure(request.id, toJsonRpcError(err));
      }
    }
    // Not to a restarted upstream or renewed session: it numbers its requests afresh, and would take this for another's answer.
    if (this.#closed || connection !== this.#connection) return;
    this.#transport.send(reply).catch((err: unknown) => this.#options.logger.debug('could not answer upstream request', { err }));
  }
}

function withProgressToken(params: JsonObject, token: ProgressToken): JsonObject {
  return { ...params, _meta: { ...metaOf(params), progressToken: token } };
}

/** The transport's own error behind a wrapped one (what the probe's answer was: an HTTP status). */
function unwrapTransportError(err: Error): Error {
  return err instanceof GatewayError && err.cause instanceof TransportError ? err.cause : err;
}
