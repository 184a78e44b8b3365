// A small SSE reader over fetch for tests, independent of the gateway's own parser: lines may
// be split across chunks, comments are kept, every wait is bounded. `parseSseText` and
// `sseMessages` read a body already read to its end with the same parser.
import { expect } from 'vitest';

/** Bounds every single wait for an event or the end of a stream. */
const WAIT_MS = 10_000;

export interface SseEvent {
  id?: string;
  event?: string;
  /** Undefined when the event had no data line at all. */
  data?: string;
  retry?: number;
}

export type JsonRpc = { jsonrpc: '2.0'; id?: string | number; method?: string; params?: Record<string, unknown>; result?: Record<string, unknown>; error?: unknown };

/**
 * SSE text in, whole events out (https://html.spec.whatwg.org/multipage/server-sent-events.html):
 * LF or CRLF line ends, possibly split across pushes; comments kept apart. An event is only
 * complete at its blank line, so a stream cut short loses its unfinished last event.
 */
export class SseTextParser {
  /** Comment lines seen so far, without the colon and its following space. */
  readonly comments: string[] = [];
  #buffer = '';
  #current: SseEvent = {};
  #hasFields = false;

  /** The events completed by `text`. */
  push(text: string): SseEvent[] {
    const events: SseEvent[] = [];
    const all = this.#buffer + text;
    let start = 0;
    for (let end = all.indexOf('\n'); end !== -1; end = all.indexOf('\n', start)) {
      let line = all.slice(start, end);
      start = end + 1;
      if (line.endsWith('\r')) line = line.slice(0, -1);
      const event = this.#line(line);
      if (event) events.push(event);
    }
    this.#buffer = all.slice(start);
    return events;
  }

  #line(line: string): SseEvent | undefined {
    if (line === '') {
      const event = this.#hasFields ? this.#current : undefined;
      this.#current = {};
      this.#hasFields = false;
      return event;
    }
    if (line.startsWith(':')) {
      this.comments.push(line.slice(1).replace(/^ /, ''));
      return undefined;
    }
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '');
    this.#hasFields = true;
    switch (field) {
      case 'id':
        this.#current.id = value;
        break;
      case 'event':
        this.#current.event = value;
        break;
      case 'data':
        this.#current.data = this.#current.data === undefined ? value : `${this.#current.data}\n${value}`;
        break;
      case 'retry':
        this.#current.retry = Number(value);
        break;
    }
    return undefined;
  }
}

/** Every whole event of an SSE body read to its end. */
export function parseSseText(text: string): SseEvent[] {
  return new SseTextParser().push(text);
}

/** True for an event that carries a message (not a priming event, a retry hint or an empty one). */
export function carriesData(event: SseEvent | undefined): boolean {
  return event !== undefined && event.data !== undefined && event.data !== '';
}

/** The JSON-RPC message of every event of an SSE body that carries data, in order. */
export function sseMessages<T = JsonRpc>(text: string): T[] {
  return parseSseText(text)
    .filter(carriesData)
    .map((event) => JSON.parse(event.data!) as T);
}

export class SseReader {
  readonly #parser = new SseTextParser();
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  readonly #decoder = new TextDecoder();
  readonly #events: SseEvent[] = [];
  #pending: ReturnType<ReadableStreamDefaultReader<Uint8Array>['read']> | undefined;
  #ended = false;

  /** Comment lines seen so far, without the colon and its following space. */
  get comments(): readonly string[] {
    return this.#parser.comments;
  }

  constructor(res: Response) {
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    this.#reader = res.body!.getReader();
  }

  /** The next event, or undefined once the stream has ended; rejects after `timeoutMs`. */
  async next(timeoutMs = WAIT_MS, what = 'an SSE event'): Promise<SseEvent | undefined> {
    const deadline = Date.now() + timeoutMs;
    while (this.#events.length === 0 && !this.#ended) await this.#pump(deadline, what);
    return this.#events.shift();
  }

  /** The next event that carries data (skipping priming events and retry hints). */
  async nextWithData(timeoutMs = WAIT_MS, what = 'an SSE message'): Promise<SseEvent | undefined> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const event = await this.next(Math.max(0, deadline - Date.now()), what);
      if (!event || carriesData(event)) return event;
    }
  }

  /** The JSON-RPC message of the next event that carries data. */
  async nextMessage(timeoutMs = WAIT_MS, what = 'an SSE message'): Promise<JsonRpc | undefined> {
    const event = await this.nextWithData(timeoutMs, what);
    return event && (JSON.parse(event.data!) as JsonRpc);
  }

  /** Messages up to and including the first that matches; rejects if the stream ends first. */
  async messagesUntil(predicate: (message: JsonRpc) => boolean, what: string, timeoutMs = WAIT_MS): Promise<JsonRpc[]> {
    const deadline = Date.now() + timeoutMs;
    const messages: JsonRpc[] = [];
    for (;;) {
      const message = await this.nextMessage(Math.max(0, deadline - Date.now()), what);
      if (!message) throw new Error(`the stream ended before ${what}; got ${JSON.stringify(messages)}`);
      messages.push(message);
      if (predicate(message)) return messages;
    }
  }

  /** Every event until the stream ends. */
  async rest(timeoutMs = WAIT_MS): Promise<SseEvent[]> {
    const deadline = Date.now() + timeoutMs;
    const events: SseEvent[] = [];
    for (;;) {
      const event = await this.next(Math.max(0, deadline - Date.now()), 'the end of the stream');
      if (!event) return events;
      events.push(event);
    }
  }

  /** Resolves once a comment with this text has arrived; rejects after `timeoutMs`. */
  async comment(text: string, timeoutMs = WAIT_MS): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.comments.includes(text)) {
      if (this.#ended) throw new Error(`the stream ended before the comment "${text}"`);
      await this.#pump(deadline, `the comment "${text}"`);
    }
  }

  /** True once the stream has ended (events that arrived meanwhile stay queued). */
  async endsWithin(timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    try {
      while (!this.#ended) await this.#pump(deadline, 'the end of the stream');
      return true;
    } catch {
      return false;
    }
  }

  async cancel(): Promise<void> {
    await this.#reader.cancel().catch(() => {});
  }

  /** Reads one chunk, waiting until `deadline` at most (a timed-out read is kept for next time). */
  async #pump(deadline: number, what: string): Promise<void> {
    if (!this.#pending) {
      this.#pending = this.#reader.read();
      this.#pending.catch(() => {}); // an aborted fetch rejects a read nobody waits for any more
    }
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), Math.max(0, deadline - Date.now()));
    });
    try {
      const result = await Promise.race([this.#pending, timeout]);
      if (result === 'timeout') throw new Error(`timed out waiting for ${what}`);
      this.#pending = undefined;
      if (result.done) {
        this.#ended = true;
        return;
      }
      for (const event of this.#parser.push(this.#decoder.decode(result.value, { stream: true }))) this.#events.push(event);
    } finally {
      clearTimeout(timer);
    }
  }
}
