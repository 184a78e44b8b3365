// Server-Sent Events: encoding for the downstream streams and an incremental parser for
// upstream ones (https://html.spec.whatwg.org/multipage/server-sent-events.html).
import { StringDecoder } from 'node:string_decoder';

export interface SseEvent {
  event: string; // "message" when the stream named none
  data: string;
  id?: string;
  retry?: number;
}

/** One SSE event; `data` must not contain CR or LF (JSON.stringify output never does). */
export function encodeSseEvent(data: string, id?: string): string {
  return id === undefined ? `event: message\ndata: ${data}\n\n` : `id: ${id}\nevent: message\ndata: ${data}\n\n`;
}

export function encodeSseComment(text: string): string {
  return `: ${text}\n\n`;
}

export function encodeSseRetry(ms: number): string {
  return `retry: ${ms}\n\n`;
}

/**
 * Feeds bytes in, gets whole events out. Handles CRLF, CR and LF line ends split across chunks
 * and multi-line data. Bounded: a line, or an event's data, longer than `maxLine` characters raises.
 */
export class SseParser {
  /** UTF-8 split across chunks is held until whole (lighter to make than a TextDecoder: one per upstream stream). */
  readonly #decoder = new StringDecoder('utf8');
  /** No text decoded yet: a byte order mark leading it is dropped, as UTF-8 decode does (and TextDecoder). */
  #atStart = true;
  readonly #maxLine: number;
  #buffer = '';
  #sawCr = false;
  #event = '';
  #data: string[] = [];
  #dataLength = 0;
  #id: string | undefined;
  #retry: number | undefined;
  /** The last event id seen, kept across events as the SSE spec says. */
  lastEventId: string | undefined;

  constructor(maxLine = 16 * 1024 * 1024) {
    this.#maxLine = maxLine;
  }

  push(chunk: Uint8Array | string): SseEvent[] {
    let text = typeof chunk === 'string' ? chunk : this.#decode(chunk);
    const events: SseEvent[] = [];
    if (text === '') return events; // keeps a pending CR pending
    // A CR at the end of the previous chunk may be half of a CRLF.
    if (this.#sawCr && text.startsWith('\n')) text = text.slice(1);
    this.#sawCr = false;
    let start = 0;
    // The next LF and CR at or after `start` (-1: none left), each looked up again once passed.
    let lf = text.indexOf('\n');
    let cr = text.indexOf('\r');
    for (;;) {
      if (lf !== -1 && lf < start) lf = text.indexOf('\n', start);
      if (cr !== -1 && cr < start) cr = text.indexOf('\r', start);
      let i = lf === -1 ? cr : cr === -1 ? lf : Math.min(lf, cr);
      if (i === -1) break;
      const line = this.#buffer + text.slice(start, i);
      this.#buffer = '';
      if (line.length > this.#maxLine) throw new Error('SSE line exceeds the size limit');
      if (i === cr) {
        if (i + 1 < text.length) {
          if (text.charCodeAt(i + 1) === 10) i++;
        } else {
          this.#sawCr = true;
        }
      }
      start = i + 1;
      const event = this.#line(line);
      if (event) events.push(event);
    }
    this.#buffer += text.slice(start);
    if (this.#buffer.length > this.#maxLine) throw new Error('SSE line exceeds the size limit');
    return events;
  }

  #decode(chunk: Uint8Array): string {
    const text = this.#decoder.write(chunk);
    if (!this.#atStart || text === '') return text;
    this.#atStart = false;
    return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  }

  #line(line: string): SseEvent | undefined {
    if (line === '') return this.#dispatch();
    if (line.startsWith(':')) return undefined;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    switch (field) {
      case 'event':
        this.#event = value;
        break;
      case 'data':
        this.#data.push(value);
        this.#dataLength += value.length + 1;
        if (this.#dataLength > this.#maxLine) throw new Error('SSE event exceeds the size limit');
        break;
      case 'id':
        if (!value.includes('\0')) this.#id = value;
        break;
      case 'retry':
        if (/^\d+$/.test(value)) this.#retry = Number(value);
        break;
    }
    return undefined;
  }

  #dispatch(): SseEvent | undefined {
    if (this.#id !== undefined) this.lastEventId = this.#id;
    const hasData = this.#data.length > 0;
    const event: SseEvent = { event: this.#event || 'message', data: this.#data.join('\n') };
    if (this.#id !== undefined) event.id = this.#id;
    if (this.#retry !== undefined) event.retry = this.#retry;
    this.#event = '';
    this.#data = [];
    this.#dataLength = 0;
    this.#id = undefined;
    this.#retry = undefined;
    // An event with only an id (the spec's priming event) or only a retry still matters.
    return hasData || event.id !== undefined || event.retry !== undefined ? event : undefined;
  }
}
