// The parts of an HTTP request the gateway reads, straight from Node's IncomingMessage when the
// request came through @hono/node-server (no Headers object, no web stream: the hot path), or
// from a fetch Request otherwise (in-process `app.request` in tests).
import type { IncomingMessage, ServerResponse } from 'node:http';

export interface HttpInput {
  readonly method: string;
  /** Header value by lower-case name (the first, when repeated). */
  header(name: string): string | undefined;
  /** The headers whose lower-case names start with `prefix`, by those names (the first value of each). */
  headersStartingWith(prefix: string): Record<string, string>;
  /** The request target's path, without the query. */
  readonly path: string;
  /** Whether the query string has a parameter of this name (case-insensitive). */
  hasQueryParam(name: string): boolean;
  /**
   * Whether every percent-escape in the request target decodes (RFC 3986 §2.1, as UTF-8): a
   * target that does not is the client's fault, refused at the edge, never a decoder's throw.
   */
  readonly wellEncoded: boolean;
  /** The Host, lower-case, without port or IPv6 brackets. */
  hostname(): string;
  /**
   * Reads the body: `done` gets it as text, or undefined once it exceeds `max` bytes (reading
   * stops there); `failed` hears of a broken request. Either is called once, never before this returns.
   */
  readBody(max: number, done: (text: string | undefined) => void, failed: (err: Error) => void): void;
  /** Calls `listener` once if the client goes away before the response is complete. */
  onGone(listener: () => void): void;
}

/** The Host without its port (`:digits` at the end) or IPv6 brackets, lower-case; no regex but for an IPv6 literal, as it runs per request. */
function bareHost(host: string): string {
  // An IPv6 literal: nothing may follow its bracket but a port (else the whole, which names no host allowed).
  if (host.startsWith('[')) {
    const close = host.indexOf(']');
    return close > 0 && /^(:\d*)?$/.test(host.slice(close + 1)) ? host.slice(1, close).toLowerCase() : host.toLowerCase();
  }
  let digits = host.length;
  while (digits > 0 && host.charCodeAt(digits - 1) >= 48 && host.charCodeAt(digits - 1) <= 57) digits--;
  const hasPort = digits < host.length && digits > 0 && host.charCodeAt(digits - 1) === 58;
  return (hasPort ? host.slice(0, digits - 1) : host).toLowerCase();
}

/** Whether `text` holds no percent-escape, or only ones that decode; cheap when there is none (the usual case). */
export function decodesCleanly(text: string): boolean {
  if (text.indexOf('%') === -1) return true;
  try {
    decodeURIComponent(text);
    return true;
  } catch {
    return false;
  }
}

function queryHas(search: string, name: string): boolean {
  if (search === '') return false;
  const wanted = name.toLowerCase();
  return search
    .slice(1)
    .split('&')
    .some((pair) => {
      const key = pair.split('=', 1)[0]!.replace(/\+/g, ' ');
      // The edge refuses such targets first; should one get here, a key that does not decode is not `name`.
      return decodesCleanly(key) && decodeURIComponent(key).toLowerCase() === wanted;
    });
}

/** A request served by @hono/node-server, read from the IncomingMessage itself. */
class NodeInput implements HttpInput {
  readonly #incoming: IncomingMessage;
  readonly #outgoing: ServerResponse | undefined;
  readonly #search: string;
  readonly method: string;
  readonly path: string;
  readonly wellEncoded: boolean;

  constructor(incoming: IncomingMessage, outgoing: ServerResponse | undefined) {
    this.#incoming = incoming;
    this.#outgoing = outgoing;
    const target = incoming.url ?? '/';
    const q = target.indexOf('?');
    this.path = q === -1 ? target : target.slice(0, q);
    this.#search = q === -1 ? '' : target.slice(q);
    this.wellEncoded = decodesCleanly(target);
    this.method = incoming.method ?? 'GET';
  }

  header(name: string): string | undefined {
    const value = this.#incoming.headers[name];
    return Array.isArray(value) ? value[0] : value;
  }

  headersStartingWith(prefix: string): Record<string, string> {
    const found: Record<string, string> = {};
    for (const [name, value] of Object.entries(this.#incoming.headers)) {
      if (!name.startsWith(prefix) || value === undefined) continue;
      found[name] = Array.isArray(value) ? value[0]! : value;
    }
    return found;
  }

  hasQueryParam(name: string): boolean {
    return queryHas(this.#search, name);
  }

  hostname(): string {
    return bareHost(this.#incoming.headers.host ?? '');
  }

  onGone(listener: () => void): void {
    const outgoing = this.#outgoing;
    if (!outgoing) return;
    // Gone already (while the request was being looked at): say so at once.
    if (outgoing.destroyed || this.#incoming.socket?.destroyed) return queueMicrotask(listener);
    outgoing.once('close', () => {
      if (!outgoing.writableFinished) listener();
    });
  }

  readBody(max: number, received: (text: string | undefined) => void, failed: (err: Error) => void): void {
    const incoming = this.#incoming;
    const declared = Number(incoming.headers['content-length'] ?? NaN);
    if (declared > max) return queueMicrotask(() => received(undefined));
    const chunks: Buffer[] = [];
    let length = 0;
    let settled = false;
    const stop = (): void => {
      settled = true;
      incoming.off('data', onData);
      incoming.off('end', onEnd);
      incoming.off('error', onError);
      incoming.off('aborted', onAborted);
    };
    const onData = (chunk: Buffer): void => {
      length += chunk.length;
      if (length > max) {
        // Stop reading; the adapter drains or drops the rest after the 413 goes out.
        stop();
        incoming.pause();
        received(undefined);
        return;
      }
      chunks.push(chunk);
    };
    // After the end nothing more arrives; the listeners stay (a late error finds it settled).
    const onEnd = (): void => {
      if (settled) return;
      settled = true;
      received(chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8'));
    };
    const onError = (err: Error): void => {
      const first = !settled;
      stop();
      if (first) failed(err);
    };
    const onAborted = (): void => onError(new Error('client aborted the request'));
    incoming.on('data', onData);
    incoming.on('end', onEnd);
    incoming.on('error', onError);
    incoming.on('aborted', onAborted);
  }
}

export function fromIncoming(incoming: IncomingMessage, outgoing?: ServerResponse): HttpInput {
  return new NodeInput(incoming, outgoing);
}

export function fromRequest(request: Request): HttpInput {
  const url = new URL(request.url);
  return {
    method: request.method,
    path: url.pathname,
    header: (name) => request.headers.get(name) ?? undefined,
    headersStartingWith: (prefix) => {
      const found: Record<string, string> = {};
      request.headers.forEach((value, name) => {
        if (name.startsWith(prefix)) found[name] = value;
      });
      return found;
    },
    hasQueryParam: (name) => queryHas(url.search, name),
    // The URL parser keeps a malformed escape as it came ("%" stays "%").
    wellEncoded: decodesCleanly(url.pathname + url.search),
    hostname: () => url.hostname.replace(/^\[|\]$/g, '').toLowerCase(),
    onGone: (listener) => (request.signal.aborted ? queueMicrotask(listener) : request.signal.addEventListener('abort', listener, { once: true })),
    readBody(max, done, failed) {
      readRequestBody(request, max).then(done, failed);
    },
  };
}

/**
 * The body of a request Hono routes, as text, or undefined once it exceeds `max` bytes, as
 * HttpInput.readBody reads it: whether its length was declared or it came chunked, reading stops
 * at the bound, so a client cannot make us hold more. From the Node request when the listener
 * served it (the adapter drains or drops what a 413 leaves unread), from the Request otherwise.
 */
export function readBodyWithin(max: number, request: Request, incoming?: IncomingMessage): Promise<string | undefined> {
  if (!incoming) return readRequestBody(request, max);
  const input = fromIncoming(incoming);
  return new Promise((resolve, reject) => input.readBody(max, resolve, reject));
}

async function readRequestBody(request: Request, max: number): Promise<string | undefined> {
  const declared = Number(request.headers.get('content-length') ?? NaN);
  if (declared > max) return undefined;
  if (!request.body) return '';
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let length = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    length += value.byteLength;
    if (length > max) {
      await reader.cancel();
      return undefined;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}
