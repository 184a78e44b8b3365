// Where an SSE connection's bytes go (sse-connection.ts holds the queue in front of them):
// straight to Node's response and its socket, for the streams the listener serves (every GET
// stream, and a POST's on the direct path), or a web ReadableStream for a Response (Hono's
// routes, in-process requests).
// A GET stream lives for hours and is mostly idle: written straight to the socket, a keep-alive
// is one write of bytes made once, with no stream, promise, encoder or tick of its own, and the
// stream keeps no object beside Node's own but this sink.
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { encodeSseComment } from '../util/sse.js';

/** What a sink tells the connection it serves. */
export interface SinkOwner {
  /** The client took what it was handed: the sink can take more. */
  drained(): void;
  /** The client went away. */
  gone(): void;
}

export interface SseSink {
  /** Hands `text` (`bytes` long in UTF-8) to the client; false when it must take it before more is handed over. */
  write(text: string, bytes: number): boolean;
  /** Hands a keep-alive comment over, as write() does. */
  keepAlive(): boolean;
  /** Ends the response after what was handed over. */
  end(): void;
  /** Drops the connection, what was handed over with it: the client did not read. */
  abort(): void;
}

const KEEP_ALIVE = encodeSseComment('keep-alive');
/** The comment as bytes, made once: ten thousand streams get it every interval. */
const KEEP_ALIVE_BYTES = Buffer.from(KEEP_ALIVE);
/** The same as one chunk of a chunked response (RFC 9112 §7.1): size in hex, CRLF, data, CRLF. */
const KEEP_ALIVE_CHUNK = Buffer.from(`${KEEP_ALIVE_BYTES.length.toString(16)}\r\n${KEEP_ALIVE}\r\n`);

/**
 * The response head goes through Node's response; the events go straight to its socket, framed
 * here as chunks (one write each, where the response's own write() frames in three). The socket
 * is corked with the head until the next tick, so a stream written whole at once (a POST's,
 * opened with its answer) leaves in one write. The response still ends itself (its last chunk)
 * and learns of the client's leaving. A response not yet given its socket (behind another answer
 * on a pipelined connection) is written through, and buffers and frames itself.
 */
export class NodeSseSink implements SseSink {
  readonly #owner: SinkOwner;
  readonly #res: ServerResponse;
  readonly #socket: Socket | null;
  readonly #chunked: boolean;
  #drained: (() => void) | undefined;

  /** `extra`: the edge's headers (a request id, CORS), each unless `headers` names it too. */
  constructor(owner: SinkOwner, res: ServerResponse, headers: Readonly<Record<string, string>>, extra?: Readonly<Record<string, string>>) {
    this.#owner = owner;
    this.#res = res;
    // One flat list, which Node takes as it is, where an object goes through setHeader per name.
    const head: string[] = [];
    for (const name in headers) head.push(name, headers[name]!);
    if (extra) for (const name in extra) if (!(name in headers)) head.push(name, extra[name]!);
    res.writeHead(200, head);
    const socket = res.socket;
    // The head and what follows in this tick (a priming event, an answer ready now, the end) in
    // one write, as Node's own res.write() corks.
    if (socket !== null && !socket.writableCorked) {
      socket.cork();
      process.nextTick(uncork, socket);
    }
    res.flushHeaders();
    this.#socket = socket;
    this.#chunked = res.chunkedEncoding;
    if (res.destroyed) queueMicrotask(() => owner.gone());
    else res.on('close', () => owner.gone());
  }

  write(text: string, bytes: number): boolean {
    const socket = this.#socket;
    if (socket === null) return this.#wrote(this.#res.write(text), this.#res);
    return this.#wrote(socket.write(this.#chunked ? `${bytes.toString(16)}\r\n${text}\r\n` : text), socket);
  }

  keepAlive(): boolean {
    const socket = this.#socket;
    if (socket === null) return this.#wrote(this.#res.write(KEEP_ALIVE_BYTES), this.#res);
    return this.#wrote(socket.write(this.#chunked ? KEEP_ALIVE_CHUNK : KEEP_ALIVE_BYTES), socket);
  }

  end(): void {
    this.#res.end();
  }

  abort(): void {
    this.#res.destroy();
  }

  /** A write the socket (or response) could not take at once: the owner hears when it drained. */
  #wrote(taken: boolean, to: Socket | ServerResponse): boolean {
    if (!taken) to.once('drain', (this.#drained ??= () => this.#owner.drained()));
    return taken;
  }
}

function uncork(socket: Socket): void {
  socket.uncork();
}

const encoder = new TextEncoder();
const KEEP_ALIVE_ENCODED = encoder.encode(KEEP_ALIVE);

/**
 * A web Response whose body hands the adapter one chunk at a time: it asks for the next (pull)
 * only when the client took the last; cancelling it is the client going away.
 */
export class WebSseSink implements SseSink {
  readonly response: Response;
  readonly #owner: SinkOwner;
  #controller!: ReadableStreamDefaultController<Uint8Array>;

  constructor(owner: SinkOwner, headers: Record<string, string>) {
    this.#owner = owner;
    // The default strategy holds one chunk.
    const body = new ReadableStream<Uint8Array>({
      start: (controller) => {
        this.#controller = controller;
      },
      pull: () => owner.drained(),
      cancel: () => owner.gone(),
    });
    this.response = new Response(body, { status: 200, headers });
  }

  write(text: string): boolean {
    return this.#enqueue(encoder.encode(text));
  }

  keepAlive(): boolean {
    return this.#enqueue(KEEP_ALIVE_ENCODED);
  }

  end(): void {
    try {
      this.#controller.close();
    } catch {
      // already errored by the adapter
    }
  }

  abort(): void {
    try {
      // Errored, not closed: the adapter drops the socket instead of flushing to a client that does not read.
      this.#controller.error(new Error('the client did not read its stream'));
    } catch {
      // already closed by the adapter
    }
  }

  #enqueue(chunk: Uint8Array): boolean {
    try {
      this.#controller.enqueue(chunk);
    } catch {
      this.#owner.gone();
      return false;
    }
    return (this.#controller.desiredSize ?? 0) > 0;
  }
}
