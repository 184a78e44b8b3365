// One downstream SSE response: a ReadableStream the HTTP adapter pipes to the socket. Knows
// when the client went away (the adapter cancels the stream) so nothing writes into the void.
import type { JsonRpcMessage } from '../mcp/jsonrpc.js';
import type { MessageSink } from '../session/session.js';
import { encodeSseComment, encodeSseEvent } from '../util/sse.js';

const encoder = new TextEncoder();

export const SSE_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache, no-transform',
  // Proxies such as nginx buffer responses unless told not to.
  'x-accel-buffering': 'no',
} as const;

export class SseStream implements MessageSink {
  readonly response: Response;
  #controller!: ReadableStreamDefaultController<Uint8Array>;
  #open = true;
  /** Called once when the stream ends, whichever side ended it. */
  onclose?: () => void;

  constructor(headers: Record<string, string> = {}) {
    const body = new ReadableStream<Uint8Array>({
      start: (controller) => {
        this.#controller = controller;
      },
      cancel: () => this.#finish(),
    });
    this.response = new Response(body, { status: 200, headers: { ...SSE_HEADERS, ...headers } });
  }

  get open(): boolean {
    return this.#open;
  }

  send(message: JsonRpcMessage): void {
    this.#write(encodeSseEvent(JSON.stringify(message)));
  }

  comment(text: string): void {
    this.#write(encodeSseComment(text));
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

  #write(text: string): void {
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
    this.onclose?.();
  }
}
