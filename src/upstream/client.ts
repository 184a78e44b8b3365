// One MCP client per upstream session: the only place where requests are correlated with
// responses. Each request has one Pending record (resolve, reject, timer, the caller's progress
// token and context). Abort and timeout send notifications/cancelled upstream; close rejects
// everything pending. Nothing waits forever.
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
import { isSupportedVersion } from '../mcp/versions.js';
import type { Logger } from '../util/log.js';
import { TransportError, type MessageExtra, type Transport } from '../transport/types.js';

export interface RequestOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
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
  resolve: (result: JsonObject) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout | undefined;
  progressToken: ProgressToken | undefined;
  onProgress: ((params: JsonObject) => void) | undefined;
  context: unknown;
  /** Aborts the transport exchange of a request given up on (timeout, cancel, close). */
  exchange: AbortController;
  detach: () => void;
}

export interface UpstreamClientOptions {
  timeoutMs: number;
  logger: Logger;
  /** Called once when the client ends: closed by its owner (no reason) or lost (reason). */
  onEnd?: (reason?: Error) => void;
}

export class UpstreamClient {
  readonly name: string;
  readonly #transport: Transport;
  readonly #options: UpstreamClientOptions;
  readonly #pending = new Map<JsonRpcId, Pending>();
  #nextId = 0;
  #closed = false;
  #init: InitializeResult | undefined;
  /** Responses whose id matched nothing pending (late, duplicate or bogus). */
  unknownResponses = 0;

  onnotification?: (message: JsonRpcNotification, context: unknown) => void;
  onrequest?: ServerRequestHandler;
  onclose?: (reason?: Error) => void;

  constructor(name: string, transport: Transport, options: UpstreamClientOptions) {
    this.name = name;
    this.#transport = transport;
    this.#options = options;
    transport.onmessage = (message, extra) => this.#receive(message, extra);
    transport.onerror = (err) => options.logger.debug('transport error', { err });
    transport.onclose = (reason) => this.#onTransportClose(reason);
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

  /** Starts the transport and performs the initialize handshake within `timeoutMs`. */
  async connect(params: JsonObject, timeoutMs: number): Promise<InitializeResult> {
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new GatewayError('upstream_timeout', `upstream ${this.name} did not initialize within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      await Promise.race([this.#transport.start(), timedOut]);
      const result = await Promise.race([this.request('initialize', params, { timeoutMs }), timedOut]);
      const init = parseInitializeResult(result);
      if (!init) throw new GatewayError('upstream_protocol', `upstream ${this.name} sent an invalid initialize result`);
      if (!isSupportedVersion(init.protocolVersion)) {
        throw new GatewayError('upstream_protocol', `upstream ${this.name} speaks unsupported protocol ${init.protocolVersion}`);
      }
      this.#init = init;
      await Promise.race([this.notify('notifications/initialized'), timedOut]);
      this.#transport.sessionEstablished?.(init.protocolVersion);
      return init;
    } catch (err) {
      // Tear down in the background: a client's initialize must not wait out a stuck child's
      // stop grace period.
      this.close().catch((closeErr: unknown) => this.#options.logger.debug('close after failed handshake failed', { err: closeErr }));
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  request(method: string, params?: JsonObject, options: RequestOptions = {}): Promise<JsonObject> {
    if (this.#closed) return Promise.reject(new GatewayError('upstream_closed', `upstream ${this.name} is closed`));
    if (options.signal?.aborted) return Promise.reject(new GatewayError('cancelled', 'request cancelled'));
    const id = ++this.#nextId;
    const progressToken = progressTokenOf(params);
    const outgoing = progressToken === undefined ? params : withProgressToken(params!, id);
    return new Promise<JsonObject>((resolve, reject) => {
      const onAbort = (): void => this.#cancel(id, 'cancelled by client', new GatewayError('cancelled', 'request cancelled'));
      const pending: Pending = {
        method,
        resolve,
        reject,
        timer: undefined,
        progressToken,
        onProgress: options.onProgress,
        context: options.context,
        exchange: new AbortController(),
        detach: () => options.signal?.removeEventListener('abort', onAbort),
      };
      const timeoutMs = options.timeoutMs ?? this.#options.timeoutMs;
      pending.timer = setTimeout(() => {
        const err = new GatewayError('upstream_timeout', `upstream ${this.name} did not answer ${method} within ${timeoutMs} ms`);
        this.#cancel(id, 'timeout', err);
      }, timeoutMs);
      options.signal?.addEventListener('abort', onAbort, { once: true });
      this.#pending.set(id, pending);
      const message: JsonRpcRequest = outgoing === undefined ? { jsonrpc: '2.0', id, method } : { jsonrpc: '2.0', id, method, params: outgoing };
      this.#transport.send(message, { signal: pending.exchange.signal }).catch((err: unknown) => this.#settle(id, undefined, this.#wrap(err)));
    });
  }

  async notify(method: string, params?: JsonObject): Promise<void> {
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
      this.#rejectAll(new GatewayError('upstream_closed', `upstream ${this.name} closed`));
      this.#options.onEnd?.();
    }
    await this.#transport.close();
  }

  #cancel(id: JsonRpcId, reason: string, err: Error): void {
    const pending = this.#pending.get(id);
    if (!pending) return;
    this.#settle(id, undefined, err);
    pending.exchange.abort();
    // The spec forbids cancelling initialize; a failed handshake closes the transport instead.
    if (!this.#closed && pending.method !== 'initialize') {
      this.#transport.send(notification('notifications/cancelled', { requestId: id, reason })).catch(() => {});
    }
  }

  #settle(id: JsonRpcId, result: JsonObject | undefined, err?: Error): void {
    const pending = this.#pending.get(id);
    if (!pending) return;
    this.#pending.delete(id);
    clearTimeout(pending.timer);
    pending.detach();
    if (err) pending.reject(err);
    else pending.resolve(result!);
  }

  #rejectAll(err: Error): void {
    for (const [id, pending] of [...this.#pending]) {
      this.#settle(id, undefined, err);
      pending.exchange.abort();
    }
  }

  #onTransportClose(reason?: Error): void {
    const wasClosed = this.#closed;
    this.#closed = true;
    this.#rejectAll(new GatewayError('upstream_closed', `upstream ${this.name} closed${reason ? `: ${reason.message}` : ''}`));
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
    if (isResponse(message)) {
      const id = message.id;
      if (id === null || !this.#pending.has(id)) {
        this.unknownResponses++;
        this.#options.logger.debug('dropped a response with an unknown id', { id });
        return;
      }
      if (isFailure(message)) this.#settle(id, undefined, new RpcError(message.error));
      else this.#settle(id, message.result);
      return;
    }
    const context = extra?.relatedRequestId === undefined ? undefined : this.#pending.get(extra.relatedRequestId)?.context;
    if (isRequest(message)) {
      void this.#answer(message, context);
      return;
    }
    if (message.method === 'notifications/progress' && this.#onProgress(message)) return;
    this.onnotification?.(message, context);
  }

  /** Routes progress to the request that owns the token; false when nothing does. */
  #onProgress(message: JsonRpcNotification): boolean {
    const token = message.params?.progressToken;
    if (typeof token !== 'number' && typeof token !== 'string') return false;
    const pending = this.#pending.get(token);
    if (!pending || pending.progressToken === undefined) return false;
    pending.onProgress?.({ ...message.params, progressToken: pending.progressToken });
    return true;
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
