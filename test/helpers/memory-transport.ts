// An in-memory linked transport pair, for unit tests with fake timers: what one end sends, the
// other end's onmessage receives on a microtask (never synchronously, as over a real pipe or
// socket), as a copy (JSON round trip: nothing is shared by reference). No timers are used, so
// `vi.advanceTimersByTimeAsync` (or `flush()` below) drives everything.
//
// Plus a tiny scripted MCP server for the far end: it answers initialize (and refuses the
// 2026-07-28 server/discover probe, as a sessions-era server does), answers what a test tells
// it to, holds the rest until the test answers them, and can send notifications and requests.
import { vi } from 'vitest';
import { ErrorCode } from '../../src/mcp/errors.js';
import {
  isRequest,
  isResponse,
  type JsonObject,
  type JsonRpcErrorObject,
  type JsonRpcId,
  type JsonRpcMessage,
  type JsonRpcNotification,
  type JsonRpcRequest,
  type JsonRpcResponse,
} from '../../src/mcp/jsonrpc.js';
import { TransportError, type MessageExtra, type SendDone, type SendOptions, type Transport } from '../../src/transport/types.js';
import { UpstreamClient, type UpstreamClientOptions } from '../../src/upstream/client.js';
import { silentLogger } from '../../src/util/log.js';
import { SESSIONS_ONLY } from '../../src/upstream/stateless-protocol.js';

/** Lets every queued microtask (and promise continuation) run; moves no fake clock forward. */
export async function flush(): Promise<void> {
  // advanceTimersByTimeAsync yields to the real event loop first, so every microtask drains.
  if (vi.isFakeTimers()) await vi.advanceTimersByTimeAsync(0);
  else await new Promise<void>((resolve) => setImmediate(resolve));
}

export interface MemoryTransportOptions {
  /**
   * Like Streamable HTTP: a request's send completes only once its response has come back
   * (or fails when the transport closes or the exchange is aborted first). Otherwise, like
   * stdio, a send completes as soon as the message is handed over.
   */
  settleOnAnswer?: boolean;
  /** Transport.cancelsByClosing (a 2026-07-28 HTTP upstream). */
  cancelsByClosing?: boolean;
  sessionId?: string;
}

interface OpenExchange {
  done: SendDone;
  cleanup: () => void;
}

/** One end of a linked pair. */
export class MemoryTransport implements Transport {
  peer!: MemoryTransport;
  readonly label: string;
  /** Every message this end sent (and did not refuse), in order. */
  readonly sent: JsonRpcMessage[] = [];
  /** The SendOptions each sent message came with, in the same order. */
  readonly sendOptions: (SendOptions | undefined)[] = [];
  started = false;
  closed = false;
  /** Why the transport ended when it ended unasked. */
  closeReason: Error | undefined;
  /** setProtocolVersion / sessionEstablished calls, in order. */
  readonly versions: (string | undefined)[] = [];
  established: string | undefined;
  /** Makes start() fail (a child that cannot be spawned). */
  startError: Error | undefined;
  /** Refuses a send with this error (an HTTP 404, a full queue); the message never arrives. */
  refuse: ((message: JsonRpcMessage) => Error | undefined) | undefined;
  readonly cancelsByClosing: boolean;
  readonly sessionId: string | undefined;
  readonly #settleOnAnswer: boolean;
  readonly #exchanges = new Map<JsonRpcId, OpenExchange>();

  onmessage?: (message: JsonRpcMessage, extra?: MessageExtra) => void;
  onerror?: (error: Error) => void;
  onclose?: (reason?: Error) => void;

  constructor(label: string, options: MemoryTransportOptions = {}) {
    this.label = label;
    this.#settleOnAnswer = options.settleOnAnswer ?? false;
    this.cancelsByClosing = options.cancelsByClosing ?? false;
    this.sessionId = options.sessionId;
  }

  async start(): Promise<void> {
    await Promise.resolve();
    if (this.startError) throw this.startError;
    if (this.closed) throw new TransportError('closed', `${this.label} is closed`);
    this.started = true;
  }

  send(message: JsonRpcMessage, options?: SendOptions): Promise<void> {
    return new Promise((resolve, reject) => this.post(message, options, (err) => (err === undefined ? resolve() : reject(err))));
  }

  post(message: JsonRpcMessage, options: SendOptions | undefined, done: SendDone): void {
    if (this.closed) return void queueMicrotask(() => done(new TransportError('closed', `${this.label} is closed`)));
    const refused = this.refuse?.(message);
    if (refused) return void queueMicrotask(() => done(refused));
    this.sent.push(message);
    this.sendOptions.push(options);
    const copy = JSON.parse(JSON.stringify(message)) as JsonRpcMessage;
    const holds = this.#settleOnAnswer && isRequest(message);
    if (holds) this.#hold(message.id, options, done);
    queueMicrotask(() => {
      const peer = this.peer;
      if (!peer.closed) peer.#receive(copy);
      if (!holds) done();
    });
  }

  setProtocolVersion(protocolVersion: string | undefined): void {
    this.versions.push(protocolVersion);
  }

  sessionEstablished(protocolVersion: string): void {
    this.established = protocolVersion;
  }

  /** Closed by its owner: onclose() without a reason; the peer hears the connection end. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.#end(undefined);
    this.peer.#endSoon(new TransportError('closed', `${this.peer.label}'s peer closed`));
    await Promise.resolve();
  }

  /**
   * The connection is lost unasked (a crash, a cut stream, an expired session): this end hears
   * onclose(reason), its open exchanges fail after that (as an aborted HTTP exchange does), and
   * the peer's connection ends too.
   */
  drop(reason: Error = new TransportError('closed', 'connection lost')): void {
    if (this.closed) return;
    this.#end(reason);
    this.peer.#endSoon(reason);
  }

  /** Requests whose exchange is still open (settleOnAnswer only). */
  get openExchanges(): number {
    return this.#exchanges.size;
  }

  #hold(id: JsonRpcId, options: SendOptions | undefined, done: SendDone): void {
    const signal = options?.cancel;
    const onAbort = (): void => this.#settle(id, new TransportError('closed', 'exchange aborted'));
    signal?.addEventListener('abort', onAbort);
    this.#exchanges.set(id, { done, cleanup: () => signal?.removeEventListener('abort', onAbort) });
  }

  #settle(id: JsonRpcId, err?: Error): void {
    const exchange = this.#exchanges.get(id);
    if (!exchange) return;
    this.#exchanges.delete(id);
    exchange.cleanup();
    queueMicrotask(() => exchange.done(err));
  }

  #receive(message: JsonRpcMessage): void {
    this.onmessage?.(message);
    // A response ends this end's exchange for that request (once it was delivered).
    if (isResponse(message) && message.id !== null) this.#settle(message.id);
  }

  #end(reason: Error | undefined): void {
    this.closed = true;
    this.closeReason = reason;
    queueMicrotask(() => {
      this.onclose?.(reason);
      // After onclose, as an HTTP transport's aborted exchanges call back after its close.
      for (const id of [...this.#exchanges.keys()]) this.#settle(id, new TransportError('closed', `${this.label} closed`));
    });
  }

  #endSoon(reason: Error): void {
    if (!this.closed) this.#end(reason);
  }
}

/** Two linked ends: `client` for the code under test, `server` for the test's fake peer. */
export function linkedTransports(options: MemoryTransportOptions = {}, labels: [string, string] = ['client', 'server']): { client: MemoryTransport; server: MemoryTransport } {
  const client = new MemoryTransport(labels[0], options);
  const server = new MemoryTransport(labels[1]);
  client.peer = server;
  server.peer = client;
  return { client, server };
}

/**
 * What a handler answers: a result, `{ error }` to answer with that JSON-RPC error, or
 * undefined to hold the request (the test answers it later through `held` / `take`).
 */
export type Handler = (request: JsonRpcRequest) => JsonObject | { error: JsonRpcErrorObject } | undefined;

/** A request the server holds: the test answers it, fails it or sends progress for it. */
export class HeldRequest {
  readonly request: JsonRpcRequest;
  readonly #server: ScriptedServer;
  answered = false;

  constructor(server: ScriptedServer, request: JsonRpcRequest) {
    this.#server = server;
    this.request = request;
  }

  get id(): JsonRpcId {
    return this.request.id;
  }

  respond(result: JsonObject): void {
    this.answered = true;
    this.#server.send({ jsonrpc: '2.0', id: this.request.id, result });
  }

  fail(error: JsonRpcErrorObject): void {
    this.answered = true;
    this.#server.send({ jsonrpc: '2.0', id: this.request.id, error });
  }

  /** notifications/progress with the token the request carried (it must have carried one). */
  progress(progress: number, total?: number): void {
    const meta = this.request.params?._meta as JsonObject | undefined;
    const token = meta?.progressToken;
    if (token === undefined) throw new Error(`${this.request.method} carried no progress token`);
    this.#server.notify('notifications/progress', total === undefined ? { progressToken: token, progress } : { progressToken: token, progress, total });
  }
}

export interface ScriptedServerOptions {
  capabilities?: JsonObject;
  serverInfo?: JsonObject;
  /** The version initialize answers; by default the one the client asked for. */
  protocolVersion?: string;
  instructions?: string;
}

/**
 * A sessions-era MCP server on the far end of a linked pair. initialize and ping are answered;
 * a method with a handler gets the handler's answer; anything else is held (see `held`).
 */
export class ScriptedServer {
  readonly transport: MemoryTransport;
  /** Every message received, in order. */
  readonly received: JsonRpcMessage[] = [];
  readonly #handlers = new Map<string, Handler>();
  readonly #held: HeldRequest[] = [];
  readonly #asked = new Map<JsonRpcId, (response: JsonRpcResponse) => void>();
  #nextId = 0;

  constructor(transport: MemoryTransport, options: ScriptedServerOptions = {}) {
    this.transport = transport;
    const capabilities = options.capabilities ?? { tools: {} };
    const serverInfo = options.serverInfo ?? { name: 'scripted', version: '1.0.0' };
    this.handle('initialize', (request) => {
      const result: JsonObject = { protocolVersion: options.protocolVersion ?? request.params?.protocolVersion, capabilities, serverInfo };
      if (options.instructions !== undefined) result.instructions = options.instructions;
      return result;
    });
    // A sessions-era server knows no server/discover.
    this.handle('server/discover', (request) => ({ error: { code: ErrorCode.MethodNotFound, message: `Method not found: ${request.method}` } }));
    this.handle('ping', () => ({}));
    transport.onmessage = (message) => this.#receive(message);
  }

  /** Answers `method` with `handler` from now on (undefined from the handler holds the request). */
  handle(method: string, handler: Handler): this {
    this.#handlers.set(method, handler);
    return this;
  }

  /** Requests received of `method` (every method when omitted), answered or not. */
  requests(method?: string): JsonRpcRequest[] {
    return this.received.filter((m): m is JsonRpcRequest => isRequest(m) && (method === undefined || m.method === method));
  }

  notifications(method?: string): JsonRpcNotification[] {
    return this.received.filter((m): m is JsonRpcNotification => !isRequest(m) && !isResponse(m) && (method === undefined || m.method === method));
  }

  /** Held requests not answered yet, of `method` (any when omitted). */
  held(method?: string): HeldRequest[] {
    return this.#held.filter((h) => !h.answered && (method === undefined || h.request.method === method));
  }

  /** The one unanswered held request of `method`; throws when there is none or more than one. */
  take(method: string): HeldRequest {
    const held = this.held(method);
    if (held.length !== 1) throw new Error(`expected one held ${method}, found ${held.length} (received: ${this.received.map(describeMessage).join(', ') || 'nothing'})`);
    return held[0]!;
  }

  send(message: JsonRpcMessage): void {
    this.transport.post(message, undefined, () => {});
  }

  notify(method: string, params?: JsonObject): void {
    this.send(params === undefined ? { jsonrpc: '2.0', method } : { jsonrpc: '2.0', method, params });
  }

  /** A server-initiated request; resolves with the client's response. */
  ask(method: string, params?: JsonObject): Promise<JsonRpcResponse> {
    const id = `server-${++this.#nextId}`;
    const answered = new Promise<JsonRpcResponse>((resolve) => this.#asked.set(id, resolve));
    this.send(params === undefined ? { jsonrpc: '2.0', id, method } : { jsonrpc: '2.0', id, method, params });
    return answered;
  }

  #receive(message: JsonRpcMessage): void {
    this.received.push(message);
    if (isResponse(message)) {
      const waiter = message.id === null ? undefined : this.#asked.get(message.id);
      if (waiter) {
        this.#asked.delete(message.id!);
        waiter(message);
      }
      return;
    }
    if (!isRequest(message)) return;
    const handler = this.#handlers.get(message.method);
    const answer = handler?.(message);
    if (answer === undefined) {
      this.#held.push(new HeldRequest(this, message));
      return;
    }
    if ('error' in answer && isErrorObject(answer.error)) this.send({ jsonrpc: '2.0', id: message.id, error: answer.error });
    else this.send({ jsonrpc: '2.0', id: message.id, result: answer as JsonObject });
  }
}

function isErrorObject(value: unknown): value is JsonRpcErrorObject {
  return typeof value === 'object' && value !== null && typeof (value as JsonRpcErrorObject).code === 'number' && typeof (value as JsonRpcErrorObject).message === 'string';
}

function describeMessage(message: JsonRpcMessage): string {
  if (isResponse(message)) return `response ${String(message.id)}`;
  return isRequest(message) ? `${message.method} #${String(message.id)}` : message.method;
}

export interface ConnectedClient {
  client: UpstreamClient;
  transport: MemoryTransport;
  server: ScriptedServer;
}

/**
 * An UpstreamClient over one end of a linked pair, with a scripted server on the other, past
 * its handshake (initialize answered, notifications/initialized delivered).
 */
export async function connectedClient(
  name: string,
  options: { client?: Partial<UpstreamClientOptions>; server?: ScriptedServerOptions; transport?: MemoryTransportOptions } = {},
): Promise<ConnectedClient> {
  const { client: transport, server: serverEnd } = linkedTransports(options.transport, [name, `${name}-server`]);
  const server = new ScriptedServer(serverEnd, options.server);
  const client = new UpstreamClient(name, transport, { timeoutMs: 60_000, maxTotalTimeoutMs: 600_000, logger: silentLogger, ...options.client });
  await settlesNow(client.connect({ protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'unit', version: '1' } }, 10_000, SESSIONS_ONLY), `${name}: connect`);
  if (server.notifications('notifications/initialized').length !== 1) throw new Error(`${name}: the handshake did not finish`);
  return { client, transport, server };
}

/**
 * What `promise` settles with once the microtasks queued now have run (no clock moves): a wait
 * that is always bounded, failing at once rather than at the test's timeout.
 */
export async function settlesNow<T>(promise: Promise<T>, what = 'the promise'): Promise<T> {
  let outcome: { value: T } | { error: unknown } | undefined;
  promise.then(
    (value) => (outcome = { value }),
    (error: unknown) => (outcome = { error }),
  );
  await flush();
  if (!outcome) throw new Error(`${what} did not settle`);
  if ('error' in outcome) throw outcome.error;
  return outcome.value;
}

/** A promise's outcome, readable at any moment without awaiting it. */
export function watch(promise: Promise<JsonObject>): { readonly outcome: JsonObject | Error | undefined } {
  const state: { outcome: JsonObject | Error | undefined } = { outcome: undefined };
  promise.then(
    (result) => (state.outcome = result),
    (err: unknown) => (state.outcome = err instanceof Error ? err : new Error(String(err))),
  );
  return state;
}
