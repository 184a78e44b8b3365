// One downstream SSE response (a connection of a session stream): a ReadableStream the HTTP
// adapter pipes to the socket, with keep-alive comments. Knows when the client went away (the
// adapter cancels the stream) so nothing writes into the void.
import type { StreamConnection } from '../session/streams.js';
import { encodeSseComment } from '../util/sse.js';

const encoder = new TextEncoder();

export const SSE_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache, no-transform',
  // Proxies such as nginx buffer responses unless told not to.
  'x-accel-buffering': 'no',
} as const;

export class SseConnection implements StreamConnection {
  readonly response: Response;
  #controller!: ReadableStreamDefaultController<Uint8Array>;
  #open = true;
  #keepAlive: NodeJS.Timeout | undefined;
  /** Called once when the connection ends, whichever side ended it. */
  onclose?: () => void;

  constructor(headers: Record<string, string> = {}, keepAliveMs = 0) {
    const body = new ReadableStream<Uint8Array>({
      start: (controller) => {
        this.#controller = controller;
      },
      cancel: () => this.#finish(),
    });
    this.response = new Response(body, { status: 200, headers: { ...SSE_HEADERS, ...headers } });
    if (keepAliveMs > 0) {
      this.#keepAlive = setInterval(() => this.write(encodeSseComment('keep-alive')), keepAliveMs);
      this.#keepAlive.unref();
    }
  }

  get open(): boolean {
    return this.#open;
  }

  close(): void {
    if (!this.#open) return;
    try {
      this.#controller.close();
    } catch {
      // already errored by the adapter
    }
    this.#finish();
  }

  write(text: string): void {
    if (!this.#open) return;
    try {
      this.#controller.enqueue(encoder.encode(text));
    } catch {
      this.#finish();
    }
  }

  #finish(): void {
    if (!this.#open) return;
    this.#open = false;
    clearInterval(this.#keepAlive);
    this.onclose?.();
  }
}
