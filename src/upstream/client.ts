// One MCP client per upstream session: the only place where the gateway's requests to an
// upstream are correlated with their responses. The progress token an upstream sees is the
// gateway's request id, mapped back to the caller's own token; progress restarts the idle
// deadline but never the total one. Abort and timeout send notifications/cancelled with the
// upstream's id; close rejects everything pending. Nothing waits forever.
import { ErrorCode, GatewayError, RpcError, toJsonRpcError } from '../mcp/errors.js';
import {
  failure,
  isFailure,
  isObject,
  isRequest,
  isResponse,
  metaOf,
  notification,
  progressTokenOf,
  success,
  type JsonObject,
  type JsonRpcId,
  type JsonRpcMessage,
  type JsonRpcNotification,
  type JsonRpcRequest,
  type ProgressToken,
} from '../mcp/jsonrpc.js';
import { PendingRequests } from '../mcp/pending.js';
import { createdTaskId, isTerminalTaskStatus } from '../mcp/tasks.js';
import { isSupportedVersion } from '../mcp/versions.js';
import type { Logger } from '../util/log.js';
import { TransportError, type MessageExtra, type Transport } from '../transport/types.js';
import { Cancellation, type CancelSignal } from '../util/cancel.js';

export interface RequestOptions {
  signal?: CancelSignal;
  /** Idle deadline; progress restarts it. Defaults to the upstream's timeoutMs. */
  timeoutMs?: number;
  /** Total deadline, however much progress arrives. Defaults to the upstream's maxTotalTimeoutMs. */
  maxTotalMs?: number;
  /** Receives notifications/progress params with the caller's own progress token restored. */
  onProgress?: (params: JsonObject) => void;
  /** Opaque caller state handed back with messages the upstream relates to this request. */
  context?: unknown;
}

export interface InitializeResult {
  protocolVersion: string;
  capabilities: JsonObject;
  serverInfo: JsonObject;
  instructions?: string;
}

/** Handles a server-initiated request; `context` is that of the related request, if known. */
export type ServerRequestHandler = (request: JsonRpcRequest, context: unknown) => Promise<JsonObject>;

interface Pending {
  method: string;
  progressToken: ProgressToken | undefined;
  onProgress: ((params: JsonObject) => void) | undefined;
  context: unknown;
  /** Aborts the transport exchange of a request given up on (timeout, cancel, close). */
  exchange: Cancellation;
  detach: () => void;
}

/** Where progress for a task goes after the request that created it has been answered. */
interface TaskProgressRoute {
  taskId: string;
  progressToken: ProgressToken;
  onProgress: (params: JsonObject) => void;
  expires: number;
}

export interface UpstreamClientOptions {
  timeoutMs: number;
  maxTotalTimeoutMs: number;
  logger: Logger;
  /** Called once when the client ends: closed by its owner (no reason) or lost (reason). */
  onEnd?: (reason?: Error) => void;
  /** The upstream restarted (or its session was renewed) and is initialized again. */
  onRestart?: () => void;
  /** A request was cancelled upstream; `reason` is what the upstream was told. */
  onCancel?: (reason: string) => void;
  /** A response matched nothing in flight and was dropped. */
  onUnknownResponse?: () => void;
}

/** Requests whose server-initiated messages may belong to them (not lists or pings). */
const WORK_METHODS = new Set(['tools/call', 'prompts/get', 'resources/read', 'completion/complete', 'tasks/result']);
const MAX_TASK_ROUTES = 1_000;
const TASK_ROUTE_LIFETIME_MS = 60 * 60_000;

export class UpstreamClient {
  readonly name: string;
  readonly #transport: Transport;
  readonly #options: UpstreamClientOptions;
  readonly #pending = new PendingRequests<Pending>();
  readonly #taskRoutes = new Map<ProgressToken, TaskProgressRoute>();
  #nextId = 0;
  #closed = false;
  #init: InitializeResult | undefined;
  /** The handshake's last step (notifications/initialized) in flight; requests wait for it. */
  #handshake: Promise<void> | undefined;
  /** Responses whose id matched nothing pending (late, duplicate or bogus). */
  unknownResponses = 0;

  onnotification?: (message: JsonRpcNotification, context: unknown) => void;
  onrequest?: ServerRequestHandler;
  onclose?: (reason?: Error) => void;
  /** The upstream came back after a restart; its lists may have changed. */
  onreconnect?: () => void;

  constructor(name: string, transport: Transport, options: UpstreamClientOptions) {
    this.name = name;
    this.#transport = transport;
    this.#options = options;
    transport.onmessage = (message, extra) => this.#receive(message, extra);
    transport.onerror = (err) => options.logger.debug('transport error', { err });
    transport.onclose = (reason) => this.#onTransportClose(reason);
    transport.ondisconnect = (reason) => {
      options.logger.warn('upstream connection lost; requests in flight failed', { reason, failed: this.#pending.size });
      this.#abandonAll(new GatewayError('upstream_closed', `upstream ${this.name} crashed (${reason.message}); it is being restarted`));
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

  /** Requests in flight (for tests and health). */
  get pendingCount(): number {
    return this.#pending.size;
  }

  /** Starts the transport and performs the initialize handshake within `timeoutMs`. */
  async connect(params: JsonObject, timeoutMs: number): Promise<InitializeResult> {
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new GatewayError('upstream_timeout', `upstream ${this.name} did not initialize within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      await Promise.race([this.#transport.start(), timedOut]);
      const result = await Promise.race([this.request('initialize', params, { timeoutMs, maxTotalMs: timeoutMs }), timedOut]);
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

  async #finishHandshake(init: InitializeResult, timedOut: Promise<never>): Promise<void> {
    try {
      await Promise.race([this.notify('notifications/initialized'), timedOut]);
      this.#transport.sessionEstablished?.(init.protocolVersion);
    } catch (err) {
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

  request(method: string, params?: JsonObject, options: RequestOptions = {}): Promise<JsonObject> {
    if (this.#handshake && method !== 'initialize') return this.#handshake.then(() => this.request(method, params, options));
    if (this.#closed) return Promise.reject(new GatewayError('upstream_closed', `upstream ${this.name} is closed`));
    if (options.signal?.aborted) return Promise.reject(new GatewayError('cancelled', 'request cancelled'));
    const id = ++this.#nextId;
    const progressToken = progressTokenOf(params);
    const outgoing = progressToken === undefined ? params : withProgressToken(params!, id);
    const signal = options.signal;
    const onAbort = (): void => {
      const reason = signal?.reason;
      this.#cancel(id, typeof reason === 'string' ? reason : reason instanceof Error ? reason.message : 'cancelled', new GatewayError('cancelled', 'request cancelled'));
    };
    const pending: Pending = {
      method,
      progressToken,
      onProgress: options.onProgress,
      context: options.context,
      exchange: new Cancellation(),
      detach: () => signal?.removeEventListener('abort', onAbort),
    };
    const result = this.#pending.add(id, pending, {
      timeoutMs: options.timeoutMs ?? this.#options.timeoutMs,
      maxTotalMs: options.maxTotalMs ?? this.#options.maxTotalTimeoutMs,
      onTimeout: (elapsed) => {
        const err = new GatewayError('upstream_timeout', `upstream ${this.name} did not answer ${method} within ${elapsed} ms`);
        this.#cancel(id, 'timeout', err);
      },
    });
    signal?.addEventListener('abort', onAbort, { once: true });
    const message: JsonRpcRequest = outgoing === undefined ? { jsonrpc: '2.0', id, method } : { jsonrpc: '2.0', id, method, params: outgoing };
    this.#transport.send(message, { exchange: pending.exchange }).catch((err: unknown) => this.#settle(id, this.#wrap(err)));
    return result;
  }

  async notify(method: string, params?: JsonObject): Promise<void> {
    if (this.#handshake && method !== 'notifications/initialized') await this.#handshake;
    if (this.#closed) throw new GatewayError('upstream_closed', `upstream ${this.name} is closed`);
    try {
      await this.#transport.send(notification(method, params));
    } catch (err) {
      throw this.#wrap(err);
    }
  }

  async close(): Promise<void> {
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

  #cancel(id: JsonRpcId, reason: string, err: Error): void {
    const pending = this.#settle(id, err);
    if (!pending) return;
    pending.exchange.abort();
    // The spec forbids cancelling initialize; a failed handshake closes the transport instead.
    if (!this.#closed && pending.method !== 'initialize') {
      this.#options.onCancel?.(reason);
      this.#transport.send(notification('notifications/cancelled', { requestId: id, reason })).catch(() => {});
    }
  }

  #abandonAll(err: Error): void {
    for (const pending of this.#pending.rejectAll(err)) {
      pending.detach();
      pending.exchange.abort();
    }
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
    if (message.method === 'notifications/progress' && this.#onProgress(message)) return;
    if (message.method === 'notifications/tasks/status') this.#onTaskStatus(message.params);
    const related = extra?.relatedRequestId === undefined ? undefined : this.#pending.get(extra.relatedRequestId)?.context;
    this.onnotification?.(message, related);
  }

  #onResponse(id: JsonRpcId | null, outcome: JsonObject | Error): void {
    const pending = id === null ? undefined : this.#settle(id, outcome);
    if (!pending) {
      this.unknownResponses++;
      this.#options.onUnknownResponse?.();
      this.#options.logger.debug('dropped a response with an unknown id', { id });
      return;
    }
    // "The progressToken provided in the initial request remains valid throughout the task
    // lifetime" (basic/utilities/tasks.mdx): keep routing it once the task is created.
    const taskId = outcome instanceof Error ? undefined : createdTaskId(outcome);
    if (taskId !== undefined && pending.progressToken !== undefined && pending.onProgress) {
      if (this.#taskRoutes.size >= MAX_TASK_ROUTES) this.#taskRoutes.delete(this.#taskRoutes.keys().next().value!);
      this.#taskRoutes.set(id!, { taskId, progressToken: pending.progressToken, onProgress: pending.onProgress, expires: Date.now() + TASK_ROUTE_LIFETIME_MS });
    }
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
      if (!WORK_METHODS.has(pending.method)) continue;
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
    const route = this.#taskRoutes.get(token);
    if (!route) return false;
    if (route.expires < Date.now()) {
      this.#taskRoutes.delete(token);
      return false;
    }
    route.onProgress({ ...message.params, progressToken: route.progressToken });
    return true;
  }

  #onTaskStatus(params: JsonObject | undefined): void {
    if (!params || typeof params.taskId !== 'string' || !isTerminalTaskStatus(params.status)) return;
    for (const [token, route] of this.#taskRoutes) if (route.taskId === params.taskId) this.#taskRoutes.delete(token);
  }

  async #answer(request: JsonRpcRequest, context: unknown): Promise<void> {
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
    if (this.#closed) return;
    this.#transport.send(reply).catch((err: unknown) => this.#options.logger.debug('could not answer upstream request', { err }));
  }
}

function withProgressToken(params: JsonObject, token: ProgressToken): JsonObject {
  return { ...params, _meta: { ...metaOf(params), progressToken: token } };
}

function parseInitializeResult(result: JsonObject): InitializeResult | undefined {
  if (typeof result.protocolVersion !== 'string' || !isObject(result.capabilities)) return undefined;
  const init: InitializeResult = {
    protocolVersion: result.protocolVersion,
    capabilities: result.capabilities,
    serverInfo: isObject(result.serverInfo) ? result.serverInfo : {},
  };
  if (typeof result.instructions === 'string') init.instructions = result.instructions;
  return init;
}
