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
 * each caller's own cancellation. A list linked through the entries: adding and removing one
 * hashes nothing and allocates only the entry.
 */
export class InFlight {
  readonly #head: InFlightEntry = { cut: () => {}, prev: undefined, next: undefined };
  readonly #report: (err: unknown) => void;

  /** `report` hears what a cut throws (by default it is surfaced: the process logs it). */
  constructor(report: (err: unknown) => void = surface) {
    this.#report = report;
  }

  add(cut: (err: Error) => void): InFlightEntry {
    const head = this.#head;
    const entry: InFlightEntry = { cut, prev: head, next: head.next };
    if (head.next) head.next.prev = entry;
    head.next = entry;
    return entry;
  }

  delete(entry: InFlightEntry): void {
    if (!entry.prev) return;
    entry.prev.next = entry.next;
    if (entry.next) entry.next.prev = entry.prev;
    entry.prev = entry.next = undefined;
  }

  /**
   * Cuts every exchange, a turn later: whoever is closing finishes first (a renewal puts the new
   * transport in place), as it did when exchanges were promises, before their owners hear of it.
   */
  cutAll(err: Error): void {
    const cuts: ((err: Error) => void)[] = [];
    let entry = this.#head.next;
    this.#head.next = undefined;
    while (entry) {
      const next = entry.next;
      cuts.push(entry.cut);
      entry.prev = entry.next = undefined;
      entry = next;
    }
    if (cuts.length > 0) {
      queueMicrotask(() => {
        // One owner's failure must not leave the others uncut.
        for (const cut of cuts) guarded(this.#report, () => cut(err));
      });
    }
  }
}

export interface InFlightEntry {
  readonly cut: (err: Error) => void;
  prev: InFlightEntry | undefined;
  next: InFlightEntry | undefined;
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
  let abort: ((err: Error) => void) | undefined;
  let aborted = false;
  const stop = (err: Error): void => {
    if (aborted || !abort) return;
    aborted = true;
    abort(err);
  };
  let body: BodyPlan | undefined;
  let statusCode = 0;
  let head: ResponseHead = NO_HEAD;
  const chunks: Buffer[] = [];
  let length = 0;
  let settled = false;
  // undici reports some failures (a closed dispatcher) from inside dispatch(): those wait a turn.
  let dispatched = false;
  const settle = (err: unknown, result?: ExchangeResult): void => {
    if (settled) return;
    settled = true;
    signal?.removeEventListener('abort', onAbort);
    inflight.delete(registered);
    const failure = result ? undefined : body === undefined ? beforeResponse(err) : err;
    if (dispatched) done(failure, result);
    else queueMicrotask(() => done(failure, result));
  };
  const cut = (err: Error): void => {
    settle(err);
    stop(err);
  };
  const onAbort = (): void => {
    const reason = signal!.reason instanceof Error ? signal!.reason : new Error(String(signal!.reason ?? 'aborted'));
    cut(reason);
  };
  signal?.addEventListener('abort', onAbort);
  const registered = inflight.add(cut);

  // undici's own handler form (raw headers): its newer one wraps each request in an adapter that
  // parses every response header into an object, where a plan reads two (Tenth pass).
  const handler: Dispatcher.DispatchHandler = {
    onConnect(abortRequest) {
      abort = abortRequest;
      if (settled) stop(new Error('aborted'));
    },
    onHeaders(status, rawHeaders) {
      statusCode = status;
      head = new ResponseHead(rawHeaders as Buffer[]);
      try {
        body = plan(status, head);
      } catch (err) {
        body = { kind: 'skip' };
        cut(err as Error);
      }
      return true;
    },
    onData(chunk) {
      if (settled || !body) return true;
      if (body.kind === 'text') {
        length += chunk.length;
        if (length > body.max) {
          if (body.lenient) {
            settle(undefined, { statusCode, head, text: '' });
            stop(new Error('body too large'));
          } else cut(new TransportError('oversized', `upstream response exceeds ${body.max} bytes`));
          return true;
        }
        chunks.push(chunk);
      } else if (body.kind === 'sse') {
        let events: SseEvent[];
        try {
          events = (body.parser ??= new SseParser(body.max)).push(chunk);
        } catch (err) {
          cut(sseOversized(err));
          return true;
        }
        try {
          for (const event of events) body.onEvent(event);
        } catch (err) {
          cut(err as Error);
        }
      }
      return true;
    },
    onComplete() {
      if (settled) return;
      const text = chunks.length === 0 ? '' : chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8');
      if (body?.kind === 'text' && body.onText) {
        try {
          body.onText(text);
        } catch (err) {
          settle(err);
          return;
        }
      }
      settle(undefined, { statusCode, head, text });
    },
    onError(err) {
      // An error body that breaks off is as good as none.
      if (body?.kind === 'text' && body.lenient) settle(undefined, { statusCode, head, text: '' });
      else settle(err);
    },
  };
  try {
    dispatcher.dispatch(request, handler);
  } catch (err) {
    settle(err);
  }
  dispatched = true;
}

function beforeResponse(err: unknown): BeforeResponseError {
  const message = err instanceof Error ? err.message : String(err);
  return isLocalRefusal(err) ? new NotSentError(message, { cause: err }) : new BeforeResponseError(message, { cause: err });
}
