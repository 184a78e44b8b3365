// Streamable HTTP client transport on undici (spec: basic/transports.mdx "Streamable HTTP"):
// one POST per message, answered by JSON or an SSE stream; a GET stream for server-initiated
// messages once the session is established; DELETE on close.
import type { Dispatcher } from 'undici';
import { encodeHeaderValue, isStatelessVersion } from '../mcp/era.js';
import { mirroredName } from '../mcp/methods.js';
import { isRequest, type JsonRpcMessage } from '../mcp/jsonrpc.js';
import type { Logger } from '../util/log.js';
import { consumeSse, contentTypeOf, decodeMessages, ERROR_BODY_BYTES, mediaType, networkError, NO_HEADERS, publicTokenError, readStart, sessionAnswers, traceHeaders, withoutHeader } from './http-common.js';
import { sendByPost, TransportError, type SendDone, type SendOptions, type Transport } from './types.js';
import { SseParser } from '../util/sse.js';
import { after, asError, later } from '../util/callbacks.js';
import type { CircuitBreaker } from './circuit.js';
import { pause, type CancelSignal } from '../util/cancel.js';
import { BeforeResponseError, exchange, InFlight, NotSentError, type BodyPlan, type ExchangeDone, type ResponseHead } from './exchange.js';
import { namesLostSession, type GetStreamSupport } from './get-stream.js';

export { GetStreamSupport } from './get-stream.js';

/** A credential of the gateway's (or of one user) for an upstream, asked for on every request. */
export interface UpstreamCredential {
  /** The header value for the next request. */
  authorization(): Promise<string>;
  /** The header it goes in (default Authorization). */
  readonly header?: string;
  /** The upstream refused it (401): get a new one before the retry. */
  invalidate(): void;
  /** The upstream refused the renewed one too. */
  rejected?(): void;
  /** Whether failing to get one says the upstream is unavailable (its circuit counts it, like a 5xx). */
  unavailable?(err: unknown): boolean;
}

export interface StreamableHttpOptions {
  url: string;
  /** Configured headers (upstream credentials); never the client's. */
  headers: Readonly<Record<string, string>>;
  dispatcher: Dispatcher;
  logger: Logger;
  maxMessageBytes?: number;
  /** Shared by every session of this upstream. */
  breaker?: CircuitBreaker;
  /** The gateway's own credential for the upstream (client-credentials grant), per request. */
  credentials?: UpstreamCredential;
  /** Continue an upstream session another replica opened, instead of starting one. */
  resume?: { sessionId: string };
  /** Shared by every session of this upstream: a 405 to one session's GET spares the others. */
  getStream?: GetStreamSupport;
}

/** Bodies read only to be dropped (202, an expired session), and error bodies (64 KiB at most, else ignored). */
const SKIP: BodyPlan = { kind: 'skip' };
const ERROR_BODY: BodyPlan = { kind: 'text', max: ERROR_BODY_BYTES, lenient: true };
const POST_HEADERS: Readonly<Record<string, string>> = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
const GET_RETRY_MIN_MS = 500;
const GET_RETRY_MAX_MS = 30_000;
/** How long to wait before resuming a POST's stream when the server named no retry (its default). */
const RESUME_RETRY_MS = 1_000;
/** Resumptions of one POST's stream at most (the request's deadlines end it sooner). */
const MAX_RESUMES = 1_000;

/** A POST answered as an SSE stream: the parser holds its last event id; the server's retry delay. */
interface PostStream {
  parser: SseParser;
  retryMs: number;
}

export class StreamableHttpTransport implements Transport {
  readonly #options: StreamableHttpOptions;
  /**
   * The configured headers, less any the per-request credential goes in (names compared in any
   * letter case): its value replaces a static one, never goes beside it, and a credential that
   * cannot be had leaves the request without one rather than with the static value.
   */
  readonly #static: Readonly<Record<string, string>>;
  readonly #max: number;
  /** The URL split once: the dispatcher is called with these, never with a URL to parse. */
  readonly #origin: string;
  readonly #path: string;
  readonly #abort = new AbortController();
  /** POSTs in flight, cut on close. */
  readonly #inflight = new InFlight();
  #sessionId: string | undefined;
  #protocolVersion: string | undefined;
  #closed = false;
  /** close() leaves the upstream's session alive (another replica carries it on). */
  #keep = false;
  /** Whether the GET stream is wanted: undefined holds it from establishment on (holdStream). */
  #hold: boolean | undefined;
  /** Set once the session is established in an era with a GET stream. */
  #listens = false;
  /** Stops the GET stream while it is held. */
  #listener: AbortController | undefined;

  onmessage?: Transport['onmessage'];
  onerror?: Transport['onerror'];
  onclose?: Transport['onclose'];

  constructor(options: StreamableHttpOptions) {
    this.#options = options;
    this.#static = withoutHeader(options.headers, options.credentials && (options.credentials.header ?? 'authorization'));
    this.#max = options.maxMessageBytes ?? 16 * 1024 * 1024;
    const url = new URL(options.url);
    this.#origin = url.origin;
    this.#path = `${url.pathname}${url.search}`;
    this.#sessionId = options.resume?.sessionId;
  }

  get sessionId(): string | undefined {
    return this.#sessionId;
  }

  async start(): Promise<void> {}

  setProtocolVersion(protocolVersion: string | undefined): void {
    this.#protocolVersion = protocolVersion;
  }

  sessionEstablished(protocolVersion: string): void {
    this.#protocolVersion = protocolVersion;
    // 2026-07-28 has no GET stream: change notifications come from subscriptions/listen.
    this.#listens = !isStatelessVersion(protocolVersion);
    if (this.#listens && this.#hold !== false) this.#startListening();
  }

  keepSession(): void {
    this.#keep = true;
  }

  holdStream(hold: boolean): void {
    this.#hold = hold;
    if (hold && this.#listens) this.#startListening();
    if (!hold) {
      this.#listener?.abort();
      this.#listener = undefined;
    }
  }

  #startListening(): void {
    if (this.#listener || this.#closed) return;
    const stop = new AbortController();
    this.#listener = stop;
    void this.#listen(stop.signal).finally(() => {
      if (this.#listener === stop) this.#listener = undefined;
    });
  }

  /** Set once the upstream answered a POST as an SSE stream. */
  streamsAnswers = false;

  get cancelsByClosing(): boolean {
    return isStatelessVersion(this.#protocolVersion);
  }

  send(message: JsonRpcMessage, options?: SendOptions): Promise<void> {
    return sendByPost(this, message, options);
  }

  post(message: JsonRpcMessage, options: SendOptions | undefined, done: SendDone): void {
    if (this.#closed) return later(done, new TransportError('closed', 'transport closed'));
    const breaker = this.#options.breaker;
    if (breaker && !breaker.allow()) return later(done, new TransportError('circuit_open', 'circuit open after repeated upstream failures'));
    let healthy: boolean | undefined;
    const judge = (ok: boolean): void => {
      healthy = ok;
    };
    const finish = (err?: unknown): void => {
      if (healthy === true) breaker?.success();
      else if (healthy === false) breaker?.failure();
      else breaker?.release();
      done(err);
    };
    this.#exchange(message, options, judge, (err) => {
      // A refused token of our own: fetch a new one and try once more.
      const credentials = this.#options.credentials;
      if (!(err instanceof TransportError) || err.status !== 401 || !credentials) return finish(err);
      credentials.invalidate();
      this.#exchange(message, options, judge, (again) => {
        // Refused again with a credential just renewed: its owner decides (a user signs in anew).
        if (again instanceof TransportError && again.status === 401) credentials.rejected?.();
        finish(again);
      });
    });
  }

  /**
   * One POST exchange; `judge` learns whether the upstream itself behaved (for the breaker),
   * `done` how it ended. Closing this transport cuts it without aborting the caller's exchange
   * (a renewal that replaced this transport sends it again).
   */
  #exchange(message: JsonRpcMessage, options: SendOptions | undefined, judge: (healthy: boolean) => void, done: SendDone): void {
    if (!this.#options.credentials) return this.#exchangeWith(NO_HEADERS, message, options, judge, done);
    const credentials = this.#options.credentials;
    after(this.#authorization(), (authorization) => this.#exchangeWith(authorization, message, options, judge, done), (err) => {
      if (credentials.unavailable?.(err)) judge(false);
      done(err);
    });
  }

  #exchangeWith(
    authorization: Readonly<Record<string, string>>,
    message: JsonRpcMessage,
    options: SendOptions | undefined,
    judge: (healthy: boolean) => void,
    done: SendDone,
  ): void {
    const signal = options?.cancel;
    const expectId = isRequest(message) ? message.id : undefined;
    /** Whether this POST carried a session id (a 400 naming the session then says it is gone). */
    const carried = this.#sessionId !== undefined;
    let answered = expectId === undefined;
    /** The answer's SSE stream, if it came as one: where to resume it from, and when. */
    let stream: PostStream | undefined;
    // Answered once the receiver took the answer: if it throws instead, the send fails, and
    // its caller learns of it rather than waiting for a deadline.
    const deliver = (incoming: JsonRpcMessage): void => {
      this.onmessage?.(incoming, expectId === undefined ? undefined : { relatedRequestId: expectId });
      if (!('method' in incoming) && incoming.id === expectId) answered = true;
    };
    // What the body is for, decided by the status and the content type.
    const plan = (statusCode: number, head: ResponseHead): BodyPlan => {
      judge(statusCode < 500);
      const sessionId = head.get('mcp-session-id');
      if (sessionId && expectId !== undefined && isRequest(message) && message.method === 'initialize') this.#sessionId = sessionId;
      if (statusCode === 202 || (statusCode === 404 && this.#sessionId !== undefined)) return SKIP;
      // Many servers put a JSON-RPC error with the request's id in an error body; it is relayed.
      if (statusCode < 200 || statusCode >= 300) return ERROR_BODY;
      const type = mediaType(head.get('content-type'));
      // A JSON answer is read where its body ends (exchange.ts), in undici's last callback.
      if (type === 'application/json') {
        return {
          kind: 'text',
          max: this.#max,
          onText: (text) => {
            for (const m of decodeMessages(text)) deliver(m);
          },
        };
      }
      if (type !== 'text/event-stream') return SKIP;
      this.streamsAnswers = true;
      const opened: PostStream = { parser: new SseParser(this.#max), retryMs: RESUME_RETRY_MS };
      stream = opened;
      return {
        kind: 'sse',
        max: this.#max,
        parser: opened.parser,
        onEvent: (event) => {
          if (event.retry !== undefined) opened.retryMs = Math.min(Math.max(event.retry, 0), GET_RETRY_MAX_MS);
          if (event.event === 'message' && event.data !== '') for (const m of decodeMessages(event.data)) deliver(m);
        },
      };
    };
    const ended: ExchangeDone = (err, response) => {
      if (!response) {
        // undici refused the request before sending a byte: our fault, not the upstream's, so
        // the shared circuit is not told (one client's request must not open it for everyone).
        if (err instanceof NotSentError) {
          this.#options.logger.warn('request refused locally before it was sent upstream', { err: err.cause });
          return done(new TransportError('unsendable', 'the gateway could not send this request upstream', undefined, { cause: err.cause }));
        }
        if (err instanceof BeforeResponseError) {
          if (!signal?.aborted && !this.#closed) judge(false);
          return done(networkError(err.cause));
        }
        return done(answered ? undefined : networkError(err));
      }
      const { statusCode, text } = response;
      if (statusCode === 202) return done();
      if (statusCode === 404 && this.#sessionId !== undefined) return done(new TransportError('session_expired', 'upstream session expired', 404));
      if (carried && namesLostSession(statusCode, text)) return done(new TransportError('session_expired', 'upstream session expired', statusCode));
      if (statusCode < 200 || statusCode >= 300) {
        const answer = decodeMessages(text).find((m) => 'error' in m && m.id === expectId);
        if (answer && expectId !== undefined) {
          try {
            this.onmessage?.(answer, { relatedRequestId: expectId });
          } catch (err) {
            return done(err);
          }
          return done();
        }
        return done(new TransportError('http_status', `upstream answered HTTP ${statusCode}`, statusCode));
      }
      // Closed before its answer, after an event id: the server expects to be polled (resumed).
      if (!answered && stream?.parser.lastEventId !== undefined && this.#sessionId !== undefined) return void this.#resume(stream, deliver, () => answered, signal, done);
      done(answered ? undefined : new TransportError('stream_ended', 'upstream ended the response without answering'));
    };
    // Failures here are the gateway's, before any byte left: the breaker is never judged.
    let request: { origin: string; path: string; method: 'POST'; headers: Record<string, string>; body: string };
    try {
      request = { origin: this.#origin, path: this.#path, method: 'POST', headers: this.#headersOfPost(message, authorization, options?.headers), body: JSON.stringify(message) };
    } catch (err) {
      this.#options.logger.warn('cannot serialise a request for the upstream', { err });
      return later(done, new TransportError('unsendable', 'the gateway could not send this request upstream', undefined, { cause: asError(err) }));
    }
    // UTF-8 takes at most 3 bytes per UTF-16 unit: most bodies are cleared without counting.
    if (request.body.length * 3 > this.#max && Buffer.byteLength(request.body) > this.#max) {
      return later(done, new TransportError('request_too_large', `request exceeds the ${this.#max}-byte message limit of this upstream`));
    }
    exchange(this.#options.dispatcher, request, signal, plan, this.#inflight, ended);
  }

  /** The one close, which every caller waits for (the DELETE included, before the dispatcher goes). */
  #closing: Promise<void> | undefined;

  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#abort.abort();
    this.#listener?.abort();
    this.#inflight.cutAll(new TransportError('closed', 'transport closed'));
    if (this.#sessionId !== undefined && !this.#keep) {
      try {
        const { body } = await this.#options.dispatcher.request({
          origin: this.#origin,
          path: this.#path,
          method: 'DELETE',
          // No credential to be had: the DELETE goes without one (the static headers hold none in its place).
          headers: this.#headers(await this.#authorization().catch(() => NO_HEADERS)),
          signal: AbortSignal.timeout(2_000),
        });
        await body.dump();
      } catch (err) {
        this.#options.logger.debug('upstream session DELETE failed', { err });
      }
    }
    this.onclose?.();
  }

  async #authorization(): Promise<Readonly<Record<string, string>>> {
    const credentials = this.#options.credentials;
    if (!credentials) return NO_HEADERS;
    try {
      return { [credentials.header ?? 'authorization']: await credentials.authorization() };
    } catch (err) {
      // The token endpoint's answer is worth saying (401, 400 invalid_client); its address is not.
      // A credential that words its own failure (token exchange) is quoted as it is.
      const own = err instanceof Error && 'publicMessage' in err && typeof err.publicMessage === 'string' ? err.publicMessage : undefined;
      throw new TransportError('network', own ?? `cannot get a token for the upstream: ${publicTokenError(err)}`, undefined, { cause: err });
    }
  }

  /** 2026-07-28: the method and the name the body carries, mirrored for intermediaries. */
  #mirrorHeaders(message: JsonRpcMessage): Readonly<Record<string, string>> {
    if (!isStatelessVersion(this.#protocolVersion) || !('method' in message)) return NO_HEADERS;
    const name = 'id' in message ? mirroredName(message) : undefined;
    return name === undefined ? { 'mcp-method': message.method } : { 'mcp-method': message.method, 'mcp-name': encodeHeaderValue(name) };
  }

  /** The headers of a POST without per-message extras, built again only when the session or version changes. */
  #postHeaders: { sessionId: string | undefined; protocolVersion: string | undefined; headers: Record<string, string> } | undefined;

  #headersOfPost(message: JsonRpcMessage, authorization: Readonly<Record<string, string>>, extra: Readonly<Record<string, string>> | undefined): Record<string, string> {
    const trace = traceHeaders(message);
    const mirror = this.#mirrorHeaders(message);
    if (extra) return this.#headers(POST_HEADERS, trace, mirror, extra, authorization);
    if (trace !== NO_HEADERS || mirror !== NO_HEADERS || authorization !== NO_HEADERS) return this.#headers(POST_HEADERS, trace, mirror, authorization);
    const cached = this.#postHeaders;
    if (cached && cached.sessionId === this.#sessionId && cached.protocolVersion === this.#protocolVersion) return cached.headers;
    const headers = this.#headers(POST_HEADERS);
    this.#postHeaders = { sessionId: this.#sessionId, protocolVersion: this.#protocolVersion, headers };
    return headers;
  }

  #headers(...extra: Readonly<Record<string, string>>[]): Record<string, string> {
    const headers: Record<string, string> = Object.assign({}, this.#static, ...extra);
    if (this.#sessionId !== undefined) headers['mcp-session-id'] = this.#sessionId;
    if (this.#protocolVersion !== undefined) headers['mcp-protocol-version'] = this.#protocolVersion;
    return headers;
  }

  /**
   * Resumes a POST's SSE stream the server closed before the answer (2025-11-25 transports.mdx
   * "Resumability and Redelivery": a server may close it to be polled): GET with Last-Event-ID,
   * after the server's retry delay, until the answer comes, the request is given up or the
   * server will not resume it. The client's own stream stays open meanwhile.
   */
  async #resume(stream: PostStream, deliver: (message: JsonRpcMessage) => void, answered: () => boolean, signal: CancelSignal | undefined, done: SendDone): Promise<void> {
    const stop = new AbortController();
    const onAbort = (): void => stop.abort();
    signal?.addEventListener('abort', onAbort, { once: true });
    this.#abort.signal.addEventListener('abort', onAbort, { once: true });
    try {
      for (let attempt = 0; attempt < MAX_RESUMES && !answered(); attempt++) {
        await pause(stream.retryMs, stop.signal);
        if (stop.signal.aborted) return done(new TransportError('closed', 'the request was given up while its stream was being resumed'));
        const headers = this.#headers({ accept: 'text/event-stream', 'last-event-id': stream.parser.lastEventId!, ...(await this.#authorization()) });
        const { statusCode, headers: responseHeaders, body } = await this.#options.dispatcher.request({ origin: this.#origin, path: this.#path, method: 'GET', headers, signal: stop.signal });
        if (statusCode !== 200 || contentTypeOf(responseHeaders) !== 'text/event-stream') {
          await body.dump();
          return done(new TransportError('stream_ended', `upstream ended the response without answering, and answered HTTP ${statusCode} to its resumption`, statusCode));
        }
        await consumeSse(
          body,
          this.#max,
          (event) => {
            if (event.retry !== undefined) stream.retryMs = Math.min(Math.max(event.retry, 0), GET_RETRY_MAX_MS);
            if (event.event === 'message' && event.data !== '') for (const m of decodeMessages(event.data)) deliver(m);
            // The answer is in: the rest of this stream is not waited for.
            if (answered()) body.destroy();
          },
          stream.parser,
        ).catch((err: unknown) => {
          if (!answered()) throw err;
        });
      }
      done(answered() ? undefined : new TransportError('stream_ended', 'upstream ended the response without answering'));
    } catch (err) {
      done(answered() ? undefined : networkError(err));
    } finally {
      signal?.removeEventListener('abort', onAbort);
      this.#abort.signal.removeEventListener('abort', onAbort);
    }
  }

  /** Keeps a GET stream open for server-initiated messages, reconnecting with backoff, until `stop`. */
  async #listen(stop: AbortSignal): Promise<void> {
    if (this.#options.getStream && !this.#options.getStream.worthTrying) return;
    const parser = new SseParser(this.#max);
    let delay = GET_RETRY_MIN_MS;
    while (!this.#closed && !stop.aborted) {
      try {
        const headers = this.#headers({ accept: 'text/event-stream', ...(await this.#authorization()) });
        if (parser.lastEventId !== undefined) headers['last-event-id'] = parser.lastEventId;
        const { statusCode, headers: responseHeaders, body } = await this.#options.dispatcher.request({
          origin: this.#origin,
          path: this.#path,
          method: 'GET',
          headers,
          signal: stop,
        });
        if (statusCode === 405) {
          await body.dump();
          this.#options.getStream?.refused();
          return; // the server offers no GET stream
        }
        if (statusCode === 404 || statusCode === 400) {
          // An error body is read only as far as it can say something (a 400 naming the session).
          if (namesLostSession(statusCode, await readStart(body, ERROR_BODY_BYTES)) && (await this.#refusedAsLost(stop))) return;
          throw new TransportError('http_status', `GET stream answered HTTP ${statusCode}`, statusCode);
        }
        if (statusCode === 401) this.#options.credentials?.invalidate();
        if (statusCode !== 200 || contentTypeOf(responseHeaders) !== 'text/event-stream') {
          await body.dump().catch(() => {});
          throw new TransportError('http_status', `GET stream answered HTTP ${statusCode}`, statusCode);
        }
        delay = GET_RETRY_MIN_MS;
        await consumeSse(
          body,
          this.#max,
          (event) => {
            if (event.retry !== undefined) delay = Math.min(Math.max(event.retry, 0), GET_RETRY_MAX_MS);
            if (event.event === 'message' && event.data !== '') for (const m of decodeMessages(event.data)) this.onmessage?.(m);
          },
          parser,
        );
      } catch (err) {
        if (this.#closed || stop.aborted) return;
        this.#options.logger.debug('upstream GET stream failed; reconnecting', { err, delayMs: delay });
      }
      if (this.#closed || stop.aborted) return;
      await pause(delay, stop);
      delay = Math.min(delay * 2, GET_RETRY_MAX_MS);
    }
  }

  /**
   * The GET stream was refused as a lost session would be (404, or a 400 naming it), which alone
   * proves nothing: a server with no GET handler at all (Express answers "Cannot GET" 404), or a
   * replica that never saw the session, answers the same. A ping in the session decides: refused
   * too, the session is gone (onclose, session_expired: the owner starts a new one); answered,
   * the server offers no GET stream, as after a 405. Whether listening is over: not when the ping
   * told nothing (the GET is tried again after the backoff).
   */
  async #refusedAsLost(stop: AbortSignal): Promise<boolean> {
    const target = { origin: this.#origin, path: this.#path, headers: this.#headers(POST_HEADERS, await this.#authorization()) };
    const alive = await sessionAnswers(this.#options.dispatcher, target, stop);
    if (this.#closed || stop.aborted) return true;
    if (alive === undefined) return false;
    if (alive) {
      this.#options.logger.info('upstream refused the GET stream as an unknown session but answers in it: taken as no GET stream');
      this.#options.getStream?.refused();
      return true;
    }
    this.#closed = true;
    this.#abort.abort();
    this.onclose?.(new TransportError('session_expired', 'upstream session expired', 404));
    return true;
  }
}
