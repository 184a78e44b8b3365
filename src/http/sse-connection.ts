// One downstream SSE response (a connection of a session stream): its keep-alive comments, and
// what waits for a client that does not read. Its bytes go to a sink (sse-sinks.ts): written
// straight to Node's response for a stream the listener serves (every GET stream, a POST's on the
// direct path: writeTo), or a web ReadableStream Response (`response`: Hono's routes, in-process
// requests). Until one of the two is chosen, what is written waits in the queue. The connection
// knows when the client went away, so nothing writes into the void.
//
// What waits for a client that does not read is bounded: the sink takes what the client can take
// (the socket's buffer, or the web stream's one chunk), the rest waits in a queue of this
// connection's, bounded in bytes and messages. Past the bound the oldest progress and log
// notifications go first (the spec lets a server drop those), and if the queue is still over,
// the connection is closed: the stream stays resumable from the session's replay log.
import type { ServerResponse } from 'node:http';
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import type { StreamConnection } from '../session/streams.js';
export { droppableMethod } from '../session/streams.js';
import { KeepAlives, type KeepAliveTarget } from './keep-alives.js';
import { NodeSseSink, WebSseSink, type SinkOwner, type SseSink } from './sse-sinks.js';

export const SSE_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache, no-transform',
  // Proxies such as nginx buffer responses unless told not to.
  'x-accel-buffering': 'no',
} as const;

/** What may wait for the client on one connection (sessions.streamQueueBytes / streamQueueMessages). */
export interface QueueBounds {
  bytes: number;
  messages: number;
  /** A droppable message (by method) was dropped to stay within the bounds. */
  ondrop?: (method: string) => void;
  /** The connection was closed because the client did not read what was queued. */
  onoverflow?: () => void;
}

/** Generous enough for any reading client; the gateway's config sets its own. */
export const DEFAULT_QUEUE_BOUNDS: QueueBounds = { bytes: 4 * 1024 * 1024, messages: 10_000 };

interface Queued {
  text: string;
  bytes: number;
  /** The method, for a message that may be dropped. */
  droppable: string | undefined;
}

export class SseConnection implements StreamConnection, KeepAliveTarget, SinkOwner {
  readonly #headers: Record<string, string>;
  readonly #bounds: QueueBounds;
  readonly #keepAlives: KeepAlives | undefined;
  #sink: SseSink | undefined;
  #response: Response | undefined;
  /** The sink can take more now (none chosen yet: it cannot). */
  #ready = false;
  #open = true;
  /** close() was called: the queue drains first, then the response ends. */
  #closing = false;
  /** What waits for the client; none most of the time. */
  #queue: Queued[] | undefined;
  #queuedBytes = 0;
  /** @internal (KeepAlives) */
  lastTick = 0;
  /** @internal (KeepAlives) */
  slot = 0;
  /** Called once when the connection ends, whichever side ended it. */
  onclose?: () => void;
  /**
   * The session stream this connection serves, told when the connection ends (after onclose).
   * A field, not a closure in onclose: with a closure per POST stream, V8's allocation-site
   * pretenuring made the young-generation collector keep every answered POST's objects alive
   * until a full collection (5.6 KB per call promoted; bench/HISTORY.md, "Eighteenth pass" and
   * "Nineteenth pass").
   */
  detachFrom: { detach(connection: StreamConnection): void } | undefined;

  /** `keepAlive`: the shared keep-alive timer, or an interval for a timer of this connection's own (0: none). */
  constructor(headers: Record<string, string> = {}, keepAlive: number | KeepAlives = 0, bounds: QueueBounds = DEFAULT_QUEUE_BOUNDS) {
    this.#headers = Object.keys(headers).length === 0 ? SSE_HEADERS : { ...SSE_HEADERS, ...headers };
    this.#bounds = bounds;
    if (typeof keepAlive !== 'number') this.#keepAlives = keepAlive;
    else if (keepAlive > 0) this.#keepAlives = new KeepAlives(keepAlive);
  }

  /** The connection as a web Response (its body a ReadableStream). */
  get response(): Response {
    if (!this.#sink) {
      const sink = new WebSseSink(this, this.#headers);
      this.#response = sink.response;
      this.#bind(sink);
    }
    if (!this.#response) throw new Error('this SSE connection is written to a Node response');
    return this.#response;
  }

  /** Writes the connection to Node's response (head now, then events as they come); `extra`: the edge's headers, where the stream's own win. */
  writeTo(res: ServerResponse, extra?: Readonly<Record<string, string>>): void {
    if (this.#sink) throw new Error('this SSE connection is already answered');
    this.#bind(new NodeSseSink(this, res, this.#headers, extra));
  }

  get open(): boolean {
    return this.#open;
  }

  /** Bytes and messages waiting for the client. */
  get queued(): { bytes: number; messages: number } {
    return { bytes: this.#queuedBytes, messages: this.#queue?.length ?? 0 };
  }

  /** A keep-alive comment (KeepAlives, when this connection has been silent for the interval), unless the client has not taken what it was sent. */
  keepAlive(): void {
    if (this.#ready && this.#queue === undefined && this.#open && !this.#closing) this.#ready = this.#sink!.keepAlive();
  }

  /** Ends the response once what is queued was handed over. */
  close(): void {
    if (!this.#open || this.#closing) return;
    this.#closing = true;
    if (this.#sink && this.#queue === undefined) this.#end();
  }

  /** Writes `text` (`bytes` long in UTF-8); `droppable` names the method of a notification that may be dropped for a slow reader. */
  write(text: string, droppable?: string, bytes = Buffer.byteLength(text)): void {
    if (!this.#open || this.#closing) return;
    if (this.#keepAlives) this.lastTick = this.#keepAlives.now;
    if (this.#ready && this.#queue === undefined) {
      this.#ready = this.#sink!.write(text, bytes);
      return;
    }
    (this.#queue ??= []).push({ text, bytes, droppable });
    this.#queuedBytes += bytes;
    this.#bound();
  }

  /** @internal (sinks) The client took what it was handed: what waits goes next. */
  drained(): void {
    if (!this.#open) return;
    this.#ready = true;
    const queue = this.#queue;
    while (queue && queue.length > 0 && this.#ready && this.#open) {
      const next = queue.shift()!;
      this.#queuedBytes -= next.bytes;
      this.#ready = this.#sink!.write(next.text, next.bytes);
    }
    if (queue?.length === 0) this.#queue = undefined;
    if (this.#closing && this.#queue === undefined && this.#open) this.#end();
  }

  /** @internal (sinks) The client went away. */
  gone(): void {
    this.#finish();
  }

  #bind(sink: SseSink): void {
    this.#sink = sink;
    if (!this.#open) return sink.abort();
    this.drained();
    // A stream written whole at once (a POST's, opened with its answer) is over already.
    if (this.#open) this.#keepAlives?.add(this);
  }

  /** Drops the oldest droppable messages while over the bounds; closes when that is not enough. */
  #bound(): void {
    const queue = this.#queue!;
    const { bytes, messages } = this.#bounds;
    // The newest message alone may exceed the byte bound: a big answer to a reading client.
    const over = (): boolean => queue.length > messages || (this.#queuedBytes > bytes && queue.length > 1);
    if (!over()) return;
    let i = 0;
    while (over()) {
      while (i < queue.length && queue[i]!.droppable === undefined) i++;
      if (i >= queue.length) return this.#overflow();
      const [dropped] = queue.splice(i, 1);
      this.#queuedBytes -= dropped!.bytes;
      this.#bounds.ondrop?.(dropped!.droppable!);
    }
  }

  #overflow(): void {
    this.#bounds.onoverflow?.();
    this.#sink?.abort();
    this.#finish();
  }

  #end(): void {
    this.#sink!.end();
    this.#finish();
  }

  #finish(): void {
    if (!this.#open) return;
    this.#open = false;
    this.#queue = undefined;
    this.#queuedBytes = 0;
    this.#keepAlives?.delete(this);
    this.onclose?.();
    this.detachFrom?.detach(this);
  }
}

/**
 * A GET's answer as a Hono route returns it: a stream served by the listener is written to
 * Node's response here, and the adapter told it was (RESPONSE_ALREADY_SENT, the adapter's own
 * sentinel: a platform Response made when this module loads, before any listener replaces the
 * global class, as reply.ts's PlatformResponse); anything else is a Response.
 */
export function streamReply(answer: Response | SseConnection, outgoing: ServerResponse | undefined): Response {
  if (!(answer instanceof SseConnection)) return answer;
  if (!outgoing) return answer.response;
  answer.writeTo(outgoing);
  return RESPONSE_ALREADY_SENT;
}
