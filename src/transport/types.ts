// The one interface every upstream transport implements (after the MCP SDK's Transport).
// A transport owns bytes: framing, connections, processes. It never correlates requests.
import type { JsonObject, JsonRpcId, JsonRpcMessage } from '../mcp/jsonrpc.js';
import type { Cancellation } from '../util/cancel.js';

export interface MessageExtra {
  /**
   * The id of the gateway's request whose response stream carried this message (a Streamable
   * HTTP POST answered with SSE). Lets server-initiated requests find their related request.
   */
  relatedRequestId?: JsonRpcId;
}

export interface SendOptions {
  /**
   * Cancels this message's round trip: the caller aborts it when the request timed out or was
   * cancelled, the transport when it closes. One controller per request, nothing derived from it
   * (AbortSignal.any per call costs more than the rest of the hop). A transport that queues
   * messages (stdio, behind a child that reads slowly) withdraws one aborted before it was written.
   */
  cancel?: Cancellation;
  /** Extra HTTP headers for this message's request (Streamable HTTP; others ignore them). */
  headers?: Readonly<Record<string, string>>;
}

/** Told once how a send ended: no argument when it is over, else why it failed. Never before post() returns. */
export type SendDone = (err?: unknown) => void;

export interface Transport {
  /** Connects or spawns; resolves when messages can be sent. */
  start(): Promise<void>;
  /**
   * Sends one message. For a request over HTTP it resolves when the exchange is over and
   * rejects when it failed before the response arrived, so the caller can fail that request.
   */
  send(message: JsonRpcMessage, options?: SendOptions): Promise<void>;
  /**
   * send() without a promise, what a request on the call's path uses: `done` hears how it ended.
   * Transports without it are sent to through send() (see `sendThen`).
   */
  post?(message: JsonRpcMessage, options: SendOptions | undefined, done: SendDone): void;
  /** Ends the session and releases everything; idempotent. */
  close(): Promise<void>;
  /**
   * From now on, close() releases the connection but leaves the upstream's session alive
   * (Streamable HTTP sends no DELETE): another replica carries the session on.
   */
  keepSession?(): void;
  /**
   * Whether to hold the upstream's stream for server-initiated messages (Streamable HTTP's GET
   * stream). Never called: it is held from the session's establishment on. Once called, it is
   * held only while the last call said so.
   */
  holdStream?(hold: boolean): void;
  /**
   * The protocol version messages are sent under, from the first one (a 2026-07-28
   * server/discover probe) on: Streamable HTTP puts it, and for 2026-07-28 the Mcp-Method and
   * Mcp-Name headers, on every POST. Undefined goes back to none (a legacy initialize).
   */
  setProtocolVersion?(protocolVersion: string | undefined): void;
  /**
   * Called by the client once the session is established: after the initialize handshake (HTTP
   * opens its GET stream), or once a 2026-07-28 server was discovered (nothing to open).
   */
  sessionEstablished?(protocolVersion: string): void;
  /**
   * Whether closing a request's exchange is its cancellation (2026-07-28 over HTTP: the server
   * treats a closed response stream as cancellation and expects no notifications/cancelled).
   */
  readonly cancelsByClosing?: boolean;
  /**
   * Whether the upstream has answered a POST of this session as an SSE stream (Streamable HTTP
   * servers may answer either way, transports.mdx "Sending Messages to the Server"): the gateway
   * then answers its own clients' requests to it as streams too.
   */
  readonly streamsAnswers?: boolean;
  /** The upstream's own session id, when it has one (Streamable HTTP). */
  readonly sessionId?: string | undefined;
  /** Ended for good (closed, or given up), where the transport knows it. */
  readonly closed?: boolean;

  onmessage?: (message: JsonRpcMessage, extra?: MessageExtra) => void;
  onerror?: (error: Error) => void;
  /** Called once when the transport ends, with the reason when it was not asked to close. */
  onclose?: (reason?: Error) => void;
  /** (Reconnecting transports) The connection was lost; requests in flight will not be answered. */
  ondisconnect?: (reason: Error) => void;
  /**
   * (Reconnecting transports) The upstream forgot the session and a new one replaces it: what the
   * old one asked of the gateway is over (the new one numbers its requests afresh), while requests
   * in flight fail, or are sent again, each on its own.
   */
  onrenew?: (reason: Error) => void;
  /** (Reconnecting transports) A new connection is initialized; `result` is its initialize result. */
  onreconnect?: (result: JsonObject) => void;
}

/**
 * A failure of the transport itself (process exit, HTTP status, stream cut), or a message it
 * could not send: `unsendable` (refused locally: a header, serialisation), `request_too_large`
 * (over the message limit) and `queue_full` (a stdio child not reading) never reached the
 * upstream and say nothing about its health.
 */
export type TransportErrorCode =
  | 'closed'
  | 'spawn_failed'
  | 'http_status'
  | 'session_expired'
  | 'stream_ended'
  | 'oversized'
  | 'network'
  | 'circuit_open'
  | 'unsendable'
  | 'request_too_large'
  | 'queue_full';

export class TransportError extends Error {
  override readonly name = 'TransportError';
  constructor(
    readonly code: TransportErrorCode,
    message: string,
    readonly status?: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** Sends through `post` when the transport has it, else through send(). */
export function sendThen(transport: Transport, message: JsonRpcMessage, options: SendOptions | undefined, done: SendDone): void {
  if (transport.post) transport.post(message, options, done);
  else transport.send(message, options).then(() => done(), (err: unknown) => done(err ?? new TransportError('closed', 'send failed')));
}

/** send() made from post(): one promise, settled by `done`. */
export function sendByPost(transport: Required<Pick<Transport, 'post'>>, message: JsonRpcMessage, options: SendOptions | undefined): Promise<void> {
  return new Promise((resolve, reject) => transport.post(message, options, (err) => (err === undefined ? resolve() : reject(err))));
}

/** The system error code of an error or of its causes (ECONNREFUSED, ENOTFOUND, UND_ERR_…). */
export function systemCodeOf(err: unknown): string | undefined {
  for (let at = err, depth = 0; at instanceof Error && depth < 4; at = at.cause, depth++) {
    const code = (at as { code?: unknown }).code;
    if (typeof code === 'string' && /^[A-Z][A-Z0-9_]{2,40}$/.test(code)) return code;
  }
  return undefined;
}
