// One downstream SSE response (a connection of a session stream): a ReadableStream the HTTP
// adapter pipes to the socket, with keep-alive comments. Knows when the client went away (the
// adapter cancels the stream) so nothing writes into the void.
//
// What waits for a client that does not read is bounded: the stream hands the adapter one chunk
// at a time (it asks for the next only when the socket drained), the rest waits in a queue of
// this connection's, bounded in bytes and messages. Past the bound the oldest progress and log
// notifications go first (the spec lets a server drop those), and if the queue is still over,
// the connection is closed: the stream stays resumable from the session's replay log.
import type { StreamConnection } from '../session/streams.js';
export { droppableMethod } from '../session/streams.js';
import { encodeSseComment } from '../util/sse.js';

const encoder = new TextEncoder();
/** The keep-alive comment, encoded once: ten thousand streams get it every tick. */
const KEEP_ALIVE = encoder.encode(encodeSseComment('keep-alive'));

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

/**
 * Keep-alive comments for every open SSE connection on one timer, not one per connection: ten
 * thousand idle streams would otherwise be ten thousand timers, each waking the process on its
 * own. A connection written to since the last tick is skipped (it is not idle).
 */
export class KeepAlives {
  readonly everyMs: number;
  readonly #open = new Set<SseConnection>();
  #timer: NodeJS.Timeout | undefined;

  constructor(everyMs: number) {
    this.everyMs = everyMs;
  }

  get size(): number {
    return this.#open.size;
  }

  add(connection: SseConnection): void {
    if (this.everyMs <= 0) return;
    this.#open.add(connection);
    if (this.#timer) return;
    this.#timer = setInterval(() => {
      for (const open of this.#open) open.keepAlive();
    }, this.everyMs);
    this.#timer.unref();
  }

  delete(connection: SseConnection): void {
    if (!this.#open.delete(connection) || this.#open.size > 0) return;
    clearInterval(this.#timer);
    this.#timer = undefined;
  }
}

interface Queued {
  chunk: Uint8Array;
  /** The method, for a message that may be dropped. */
  droppable: string | undefined;
}

export class SseConnection implements StreamConnection {
  readonly response: Response;
  readonly #bounds: QueueBounds;
  #controller!: ReadableStreamDefaultController<Uint8Array>;
  #open = true;
  /** close() was called: the queue drains first, then the stream ends. */
  #closing = false;
  #queue: Queued[] = [];
  #queuedBytes = 0;
  #keepAlive: NodeJS.Timeout | undefined;
  #keepAlives: KeepAlives | undefined;
  /** Written to since the last keep-alive tick. */
  #wrote = false;
  /** Called once when the connection ends, whichever side ended it. */
  onclose?: () => void;

  /** `keepAlive`: the shared keep-alive timer, or an interval for a timer of this connection's own (0: none). */
  constructor(headers: Record<string, string> = {}, keepAlive: number | KeepAlives = 0, bounds: QueueBounds = DEFAULT_QUEUE_BOUNDS) {
    this.#bounds = bounds;
    // The default strategy holds one chunk: the adapter pulls the next when the socket drained.
    const body = new ReadableStream<Uint8Array>({
      start: (controller) => {
        this.#controller = controller;
      },
      pull: () => this.#pull(),
      cancel: () => this.#finish(),
    });
    this.response = new Response(body, { status: 200, headers: { ...SSE_HEADERS, ...headers } });
    if (typeof keepAlive !== 'number') {
      this.#keepAlives = keepAlive;
      keepAlive.add(this);
    } else if (keepAlive > 0) {
      // A connection with something queued needs no keep-alive: the client is not reading.
      this.#keepAlive = setInterval(() => this.#queue.length === 0 && this.write(encodeSseComment('keep-alive')), keepAlive);
      this.#keepAlive.unref();
    }
  }

  /** A keep-alive tick (KeepAlives): a comment, unless something was written since the last or is queued. */
  keepAlive(): void {
    const idle = !this.#wrote && this.#queue.length === 0;
    this.#wrote = false;
    if (idle && this.#open && !this.#closing && (this.#controller.desiredSize ?? 0) > 0) this.#enqueue(KEEP_ALIVE);
  }

  get open(): boolean {
    return this.#open;
  }

  /** Bytes and messages waiting for the client. */
  get queued(): { bytes: number; messages: number } {
    return { bytes: this.#queuedBytes, messages: this.#queue.length };
  }

  /** Ends the response once what is queued was handed over. */
  close(): void {
    if (!this.#open || this.#closing) return;
    this.#closing = true;
    if (this.#queue.length === 0) this.#end();
  }

  /** Writes `text`; `droppable` names the method of a notification that may be dropped for a slow reader. */
  write(text: string, droppable?: string): void {
    if (!this.#open || this.#closing) return;
    this.#wrote = true;
    const chunk = encoder.encode(text);
    if (this.#queue.length === 0 && (this.#controller.desiredSize ?? 0) > 0) {
      this.#enqueue(chunk);
      return;
    }
    this.#queue.push({ chunk, droppable });
    this.#queuedBytes += chunk.byteLength;
    this.#bound();
  }

  /** Drops the oldest droppable messages while over the bounds; closes when that is not enough. */
  #bound(): void {
    const { bytes, messages } = this.#bounds;
    // The newest message alone may exceed the byte bound: a big answer to a reading client.
    const over = (): boolean => this.#queue.length > messages || (this.#queuedBytes > bytes && this.#queue.length > 1);
    if (!over()) return;
    let i = 0;
    while (over()) {
      while (i < this.#queue.length && this.#queue[i]!.droppable === undefined) i++;
      if (i >= this.#queue.length) return this.#overflow();
      const [dropped] = this.#queue.splice(i, 1);
      this.#queuedBytes -= dropped!.chunk.byteLength;
      this.#bounds.ondrop?.(dropped!.droppable!);
    }
  }

  #overflow(): void {
    this.#queue = [];
    this.#queuedBytes = 0;
    this.#bounds.onoverflow?.();
    try {
      // Errored, not closed: the adapter drops the socket instead of flushing to a client that does not read.
      this.#controller.error(new Error('the client did not read its stream'));
    } catch {
      // already closed by the adapter
    }
    this.#finish();
  }

  #pull(): void {
    const next = this.#queue.shift();
    if (next) {
      this.#queuedBytes -= next.chunk.byteLength;
      this.#enqueue(next.chunk);
    }
    if (this.#closing && this.#queue.length === 0) this.#end();
  }

  #enqueue(chunk: Uint8Array): void {
    try {
      this.#controller.enqueue(chunk);
    } catch {
      this.#finish();
    }
  }

  #end(): void {
    try {
      this.#controller.close();
    } catch {
      // already errored by the adapter
    }
    this.#finish();
  }

  #finish(): void {
    if (!this.#open) return;
    this.#open = false;
    this.#queue = [];
    this.#queuedBytes = 0;
    clearInterval(this.#keepAlive);
    this.#keepAlives?.delete(this);
    this.onclose?.();
  }
}
