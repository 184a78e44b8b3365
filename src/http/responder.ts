// Answers a POST that carried requests. The answer is plain JSON when the responses are ready
// quickly and nothing else needs saying first; it becomes an SSE stream of the session (event
// ids, replay on Last-Event-ID) the moment a related message (progress, a server-initiated
// request) must go out, or once the request has run for STREAM_AFTER_MS, so a long call
// survives a dropped connection. When the upstream answering it answers as a stream itself, the
// answer to a client of 2025-11-25 or later is a stream too, opened with the answer (head,
// priming event and answer in one write) unless one of those opened it sooner. Both forms are
// allowed by basic/transports.mdx ("Sending Messages to the Server", item 5). A client closing
// the stream does not cancel anything.
import type { JsonRpcId, JsonRpcMessage, JsonRpcResponse } from '../mcp/jsonrpc.js';
import type { RequestChannel } from '../router/router.js';
import type { DownstreamSession } from '../links/session.js';
import type { SessionStream, StreamKind } from '../session/streams.js';
import { SSE_HEADERS, SseConnection, type QueueBounds } from './sse-connection.js';
import type { KeepAlives } from './keep-alives.js';
import { JsonReply, type Reply } from './reply.js';

/** A request still running after this long is answered over SSE, which a client can resume. */
export const STREAM_AFTER_MS = 250;

export interface StreamSettings {
  keepAliveMs: number;
  /** One keep-alive timer for every connection (else each has its own, every keepAliveMs). */
  keepAlives?: KeepAlives;
  retryMs: number;
  /** What may wait for a client that does not read, per connection, by the kind of its stream (queueBounds()). */
  bounds?: Readonly<Record<StreamKind, QueueBounds>>;
}

/**
 * The queue bounds of each kind of stream, made once (every POST answered as a stream takes
 * them): `onoverflow` hears which kind of stream's connection was closed for not reading.
 */
export function queueBounds(queue: QueueBounds, onoverflow?: (kind: StreamKind) => void): Record<StreamKind, QueueBounds> {
  if (!onoverflow) return { request: queue, standalone: queue };
  return { request: { ...queue, onoverflow: () => onoverflow('request') }, standalone: { ...queue, onoverflow: () => onoverflow('standalone') } };
}

/** Priming events and retry hints are for clients of 2025-11-25 and later (transports.mdx). */
export function primes(session: DownstreamSession): boolean {
  return session.info.protocolVersion >= '2025-11-25';
}

/**
 * Attaches a new SSE connection to `stream`, detaching it again when the client goes away.
 * `keepAlive` false: the stream ends in the tick it opens (a POST's, opened with its answer),
 * so it needs no keep-alive comments and does not join their timer.
 */
export function connect(session: DownstreamSession, stream: SessionStream, settings: StreamSettings, after?: number, keepAlive = true): SseConnection | undefined {
  const connection = new SseConnection({}, keepAlive ? (settings.keepAlives ?? settings.keepAliveMs) : 0, settings.bounds?.[stream.kind]);
  const options = after !== undefined ? { after } : primes(session) ? { primeRetryMs: settings.retryMs } : {};
  if (!stream.attach(connection, options)) {
    connection.close();
    return undefined;
  }
  connection.detachFrom = stream;
  return connection;
}

/** What a POST's requests came to: one response, a batch's, or undefined for a cancelled request. */
export type Answers = JsonRpcResponse | undefined | (JsonRpcResponse | undefined)[];

/**
 * Runs one request or a batch: `run` hands its answers to `done` (undefined stands for a
 * request cancelled by the client, which gets no response) and never fails; `resolve` gets the
 * POST's reply, once: JSON, or the SSE stream as soon as one is opened. No promise.
 */
export function respond(
  session: DownstreamSession,
  run: (channel: RequestChannel, done: (answers: Answers) => void) => void,
  settings: StreamSettings,
  resolve: (reply: Reply) => void,
  requests: readonly JsonRpcId[] = [],
): void {
  const responder = new Responder(session, settings, resolve, requests);
  try {
    run(responder, responder.answered);
  } catch (err) {
    responder.abandon();
    throw err;
  }
}

/**
 * One POST's way to its reply, and the channel of its requests: JSON when the answers come
 * first, else its SSE stream. One object per POST (every call's path), its steps methods.
 */
class Responder implements RequestChannel {
  readonly #session: DownstreamSession;
  readonly #settings: StreamSettings;
  readonly #resolve: (reply: Reply) => void;
  readonly #requests: readonly JsonRpcId[];
  readonly #timer: NodeJS.Timeout;
  #stream: SessionStream | undefined;
  /** The answer goes out as a stream even if nothing opens one before it (stream()). */
  #streamed = false;
  #settled = false;

  constructor(session: DownstreamSession, settings: StreamSettings, resolve: (reply: Reply) => void, requests: readonly JsonRpcId[]) {
    this.#session = session;
    this.#settings = settings;
    this.#resolve = resolve;
    this.#requests = requests;
    this.#timer = setTimeout(upgradeLate, STREAM_AFTER_MS, this);
  }

  send(message: JsonRpcMessage): void {
    // After the answer, related messages (a task's progress) go to the standalone stream.
    if (this.#settled) this.#session.deliver(message);
    else this.upgrade().send(message);
  }

  stream(): void {
    this.#streamed = true;
  }

  /** The POST's SSE stream, opened (and handed to `resolve`) the first time; `ending`: by its answer, which ends it. */
  upgrade(ending = false): SessionStream {
    if (this.#stream) return this.#stream;
    const opened = this.#session.openRequestStream(this.#requests);
    this.#stream = opened;
    this.#resolve(connect(this.#session, opened, this.#settings, undefined, !ending)!);
    return opened;
  }

  /** What the requests came to (the `done` of run). */
  readonly answered = (results: Answers): void => {
    this.#settled = true;
    clearTimeout(this.#timer);
    const answer = Array.isArray(results) ? results.filter((r): r is JsonRpcResponse => r !== undefined) : results;
    const empty = answer === undefined || (Array.isArray(answer) && answer.length === 0);
    // A stream opened with its answer and ended at once is worth its cost to a client that
    // primes (2025-11-25 on): the priming event's id lets it resume an answer cut off midway. To
    // an older client it is one event whose id arrives with it, nothing a JSON body is not.
    const stream = this.#stream ?? (this.#streamed && !empty && primes(this.#session) ? this.upgrade(true) : undefined);
    if (stream) {
      for (const response of Array.isArray(answer) ? answer : answer ? [answer] : []) stream.send(response);
      stream.finish();
    } else if (empty) {
      // Every request was cancelled: no response is due, so the stream ends empty.
      this.#resolve(new Response(null, { status: 200, headers: SSE_HEADERS }));
    } else {
      this.#resolve(JsonReply.json(answer));
    }
  };

  /** `run` threw: no stream is due later, and one opened already ends here. */
  abandon(): void {
    this.#settled = true;
    clearTimeout(this.#timer);
    this.#stream?.finish();
  }
}

/** The timer's callback (one function for every POST, its responder the argument). */
function upgradeLate(responder: Responder): void {
  responder.upgrade();
}
