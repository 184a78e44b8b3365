// One HTTP request on undici's handler API (Dispatcher.dispatch), its body handed over as it
// arrives: no Readable stream, no listeners and no promise per chunk, which is what
// `dispatcher.request` costs on every call. The caller looks at the status and headers and says
// what the body is for: text (collected, bounded), SSE (each event as it completes), or nothing.
import type { Dispatcher } from 'undici';
import { SseParser, type SseEvent } from '../util/sse.js';
import type { CancelSignal } from '../util/cancel.js';
import { sseOversized } from './http-common.js';
import { TransportError } from './types.js';
import { guarded, later, surface } from '../util/callbacks.js';
import { LinkedList, type Linked } from '../util/linked-list.js';

export type BodyPlan =
  /**
   * Collect the body as text; beyond `max` bytes the exchange fails (`lenient`: the text is '',
   * also when the body breaks off). `onText` gets the whole text the moment the body ends, before
   * the exchange settles: a JSON answer reaches its reader in the same turn as its last byte.
   * If it throws, the exchange rejects with what it threw.
   */
  | { kind: 'text'; max: number; lenient?: boolean; onText?: (text: string) => void }
  /** Parse the body as SSE, each event to `onEvent` as it completes. */
  | { kind: 'sse'; max: number; onEvent: (event: SseEvent) => void; parser?: SseParser }
  /** Read and drop the body. */
  | { kind: 'skip' };

/** A response's headers as undici read them (name, value, name, value …), looked up by name. */
export class ResponseHead {
  readonly #raw: readonly Buffer[];

  constructor(raw: readonly Buffer[]) {
    this.#raw = raw;
  }

  /** The first value of the header named `name` (lower-case), if it came. */
  get(name: string): string | undefined {
    const raw = this.#raw;
    for (let i = 0; i + 1 < raw.length; i += 2) {
      const key = raw[i]!;
      if (key.length === name.length && key.toString('latin1').toLowerCase() === name) return raw[i + 1]!.toString('latin1');
    }
    return undefined;
  }
}

const NO_HEAD = new ResponseHead([]);

export interface ExchangeResult {
  statusCode: number;
  head: ResponseHead;
  /** The body, for a `text` plan. */
  text: string;
}

/**
 * Exchanges in flight, so their owner can cut them all (a transport closing) without aborting
 * each caller's own cancellation. Each exchange is its own entry of the list.
 */
export class InFlight {
  readonly #list = new LinkedList<InFlightEntry>();
  readonly #report: (err: unknown) => void;

  /** `report` hears what a cut throws (by default it is surfaced: the process logs it). */
  constructor(report: (err: unknown) => void = surface) {
    this.#report = report;
  }

  add(entry: InFlightEntry): void {
    this.#list.add(entry);
  }

  delete(entry: InFlightEntry): void {
    this.#list.delete(entry);
  }

  /**
   * Cuts every exchange, a turn later: whoever is closing finishes first (a renewal puts the new
   * transport in place), as it did when exchanges were promises, before their owners hear of it.
   */
  cutAll(err: Error): void {
    const cut = this.#list.takeAll();
    if (cut.length > 0) {
      queueMicrotask(() => {
        // One owner's failure must not leave the others uncut.
        for (const each of cut) guarded(this.#report, () => each.cut(err));
      });
    }
  }
}

/** One exchange in an InFlight list. */
export interface InFlightEntry extends Linked<InFlightEntry> {
  cut(err: Error): void;
}

/** Thrown (wrapped by the caller) for failures before the response's headers arrived. */
export class BeforeResponseError extends Error {}

/**
 * A failure before the response that undici raised locally, before any byte reached the
 * upstream: a header value or name it refuses (CR/LF, control characters), an option it does
 * not support, its own dispatcher closed. It says nothing about the upstream's health.
 */
export class NotSentError extends BeforeResponseError {}

/** undici's codes for requests it refused to send (undici/lib/core/errors.js). */
const LOCAL_CODES = new Set(['UND_ERR_INVALID_ARG', 'UND_ERR_NOT_SUPPORTED', 'UND_ERR_REQ_CONTENT_LENGTH_MISMATCH', 'UND_ERR_DESTROYED', 'UND_ERR_CLOSED']);

function isLocalRefusal(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  // Node's own header validation (http.validateHeaderValue), should a dispatcher use it.
  return (typeof code === 'string' && LOCAL_CODES.has(code)) || code === 'ERR_INVALID_CHAR' || code === 'ERR_INVALID_HTTP_TOKEN';
}

type Request = Pick<Dispatcher.DispatchOptions, 'origin' | 'path' | 'method' | 'headers' | 'body'>;

/** Told once how an exchange ended: with its result, or (result undefined) with why it failed. */
export type ExchangeDone = (err: unknown, result?: ExchangeResult) => void;

/**
 * Sends `request` and tells `done` once the whole response is in; never before this returns.
 * `plan` runs when the headers arrive. A failure before them is a BeforeResponseError whose
 * cause is the error; one while reading the body is the error itself. `signal` aborting cuts
 * the exchange, and so does `inflight.cutAll` (with its own error). A request undici refused
 * locally fails with a NotSentError. No promise: `done` runs in undici's last callback, the
 * turn the last byte arrives.
 */
export function exchange(
  dispatcher: Dispatcher,
  request: Request,
  signal: CancelSignal | undefined,
  plan: (statusCode: number, head: ResponseHead) => BodyPlan,
  inflight: InFlight,
  done: ExchangeDone,
): void {
  if (signal?.aborted) {
    later(done, new BeforeResponseError('aborted', { cause: signal.reason }));
    return;
  }
  new Exchange(signal, plan, inflight, done).start(dispatcher, request);
}

/**
 * One exchange's state, and undici's handler for it in undici's own form (raw headers: its
 * newer form wraps each request in an adapter that parses every response header into an
 * object, where a plan reads two; Thirteenth pass). One object per exchange, its steps methods:
 * this is every call's path, where a closure per step was what it used to cost.
 */
class Exchange implements Dispatcher.DispatchHandler, InFlightEntry {
  readonly #signal: CancelSignal | undefined;
  readonly #plan: (statusCode: number, head: ResponseHead) => BodyPlan;
  readonly #inflight: InFlight;
  readonly #done: ExchangeDone;
  /** The signal's listener (the one function an exchange makes). */
  readonly #onAbort: (() => void) | undefined;
  #abort: ((err: Error) => void) | undefined;
  #aborted = false;
  #body: BodyPlan | undefined;
  #statusCode = 0;
  #head: ResponseHead = NO_HEAD;
  #chunks: Buffer[] | undefined;
  #length = 0;
  #settled = false;
  // undici reports some failures (a closed dispatcher) from inside dispatch(): those wait a turn.
  #dispatched = false;
  prev: InFlightEntry | undefined;
  next: InFlightEntry | undefined;

  constructor(signal: CancelSignal | undefined, plan: (statusCode: number, head: ResponseHead) => BodyPlan, inflight: InFlight, done: ExchangeDone) {
    this.#signal = signal;
    this.#plan = plan;
    this.#inflight = inflight;
    this.#done = done;
    this.#onAbort = signal && (() => this.cut(signal.reason instanceof Error ? signal.reason : new Error(String(signal.reason ?? 'aborted'))));
  }

  start(dispatcher: Dispatcher, request: Request): void {
    if (this.#onAbort) this.#signal!.addEventListener('abort', this.#onAbort);
    this.#inflight.add(this);
    try {
      dispatcher.dispatch(request, this);
    } catch (err) {
      this.#settle(err);
    }
    this.#dispatched = true;
  }

  /** Ends the exchange with `err` (the caller's cancellation, the transport closing, a plan's throw). */
  cut(err: Error): void {
    this.#settle(err);
    this.#stop(err);
  }

  #stop(err: Error): void {
    if (this.#aborted || !this.#abort) return;
    this.#aborted = true;
    this.#abort(err);
  }

  #settle(err: unknown, result?: ExchangeResult): void {
    if (this.#settled) return;
    this.#settled = true;
    if (this.#onAbort) this.#signal!.removeEventListener('abort', this.#onAbort);
    this.#inflight.delete(this);
    const failure = result ? undefined : this.#body === undefined ? beforeResponse(err) : err;
    if (this.#dispatched) this.#done(failure, result);
    else queueMicrotask(() => this.#done(failure, result));
  }

  onConnect(abort: (err?: Error) => void): void {
    this.#abort = abort;
    if (this.#settled) this.#stop(new Error('aborted'));
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[] | string[] | null): boolean {
    this.#statusCode = statusCode;
    this.#head = new ResponseHead((rawHeaders ?? []) as Buffer[]);
    try {
      this.#body = this.#plan(statusCode, this.#head);
    } catch (err) {
      this.#body = SKIP_BODY;
      this.cut(err as Error);
    }
    return true;
  }

  onData(chunk: Buffer): boolean {
    const body = this.#body;
    if (this.#settled || !body) return true;
    if (body.kind === 'text') {
      this.#length += chunk.length;
      if (this.#length > body.max) {
        if (body.lenient) {
          this.#settle(undefined, { statusCode: this.#statusCode, head: this.#head, text: '' });
          this.#stop(new Error('body too large'));
        } else this.cut(new TransportError('oversized', `upstream response exceeds ${body.max} bytes`));
        return true;
      }
      (this.#chunks ??= []).push(chunk);
    } else if (body.kind === 'sse') {
      let events: SseEvent[];
      try {
        events = (body.parser ??= new SseParser(body.max)).push(chunk);
      } catch (err) {
        this.cut(sseOversized(err));
        return true;
      }
      try {
        for (const event of events) body.onEvent(event);
      } catch (err) {
        this.cut(err as Error);
      }
    }
    return true;
  }

  onComplete(): void {
    if (this.#settled) return;
    const chunks = this.#chunks;
    const text = chunks === undefined ? '' : chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8');
    const body = this.#body;
    if (body?.kind === 'text' && body.onText) {
      try {
        body.onText(text);
      } catch (err) {
        this.#settle(err);
        return;
      }
    }
    this.#settle(undefined, { statusCode: this.#statusCode, head: this.#head, text });
  }

  onError(err: Error): void {
    // An error body that breaks off is as good as none.
    if (this.#body?.kind === 'text' && this.#body.lenient) this.#settle(undefined, { statusCode: this.#statusCode, head: this.#head, text: '' });
    else this.#settle(err);
  }
}

const SKIP_BODY: BodyPlan = { kind: 'skip' };

function beforeResponse(err: unknown): BeforeResponseError {
  const message = err instanceof Error ? err.message : String(err);
  return isLocalRefusal(err) ? new NotSentError(message, { cause: err }) : new BeforeResponseError(message, { cause: err });
}
