// Request correlation: one record per outstanding request (resolve, reject, deadline, the
// caller's extra state), whichever peer the request went to. Two deadlines, as the lifecycle
// page asks (basic/lifecycle.mdx "Timeouts"): an idle timeout that progress may reset, and a
// total timeout that nothing extends.
import type { JsonObject, JsonRpcId, JsonRpcNotification, JsonRpcResponse } from './jsonrpc.js';

/** setTimeout's largest delay; a longer (or infinite) deadline is no deadline. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

export interface Deadlines {
  /** Time allowed without an answer; touch() restarts it. */
  timeoutMs: number;
  /** Time allowed in all, however much progress arrives. */
  maxTotalMs: number;
  /** Called (once) when either deadline passes; the entry is still pending at that moment. */
  onTimeout: (elapsedMs: number) => void;
}

/** Told once how a request we sent ended: its result, or the error (a response's error, a deadline, a close). */
export type Settled = (outcome: JsonObject | Error) => void;

/** Where the messages of a request we answer go: the notifications related to it, then exactly one response. */
export interface RequestSink {
  notify(message: JsonRpcNotification): void;
  finish(response: JsonRpcResponse): void;
}

/** The one promise of a callback-style request: resolved with its result, rejected with its error. */
export function promiseOf(start: (done: Settled) => void): Promise<JsonObject> {
  return new Promise((resolve, reject) => start((outcome) => (outcome instanceof Error ? reject(outcome) : resolve(outcome))));
}

interface Entry<E> {
  done: Settled;
  extra: E;
  started: number;
  deadlines: Deadlines;
  timer: NodeJS.Timeout | undefined;
}

export class PendingRequests<E> {
  readonly #entries = new Map<JsonRpcId, Entry<E>>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  get size(): number {
    return this.#entries.size;
  }

  has(id: JsonRpcId): boolean {
    return this.#entries.has(id);
  }

  get(id: JsonRpcId): E | undefined {
    return this.#entries.get(id)?.extra;
  }

  *values(): IterableIterator<[JsonRpcId, E]> {
    for (const [id, entry] of this.#entries) yield [id, entry.extra];
  }

  /** Registers a request; the promise settles through settle(), rejectAll() or a deadline. */
  add(id: JsonRpcId, extra: E, deadlines: Deadlines): Promise<JsonObject> {
    return promiseOf((done) => this.track(id, extra, deadlines, done));
  }

  /** add() without a promise: `done` hears the outcome (the request path's form). */
  track(id: JsonRpcId, extra: E, deadlines: Deadlines, done: Settled): void {
    const entry: Entry<E> = { done, extra, started: this.#now(), deadlines, timer: undefined };
    this.#entries.set(id, entry);
    this.#arm(id, entry);
  }

  /** Restarts the idle deadline (progress arrived), never past the total deadline. */
  touch(id: JsonRpcId): void {
    const entry = this.#entries.get(id);
    if (entry) this.#arm(id, entry);
  }

  /** Settles a request with its result or error; returns its extra state, or undefined if unknown. */
  settle(id: JsonRpcId, outcome: JsonObject | Error): E | undefined {
    const entry = this.#entries.get(id);
    if (!entry) return undefined;
    this.#entries.delete(id);
    clearTimeout(entry.timer);
    entry.done(outcome);
    return entry.extra;
  }

  /** Rejects everything pending; returns the extra state of what was pending. */
  rejectAll(err: Error): E[] {
    const extras: E[] = [];
    for (const id of [...this.#entries.keys()]) {
      const extra = this.settle(id, err);
      if (extra !== undefined) extras.push(extra);
    }
    return extras;
  }

  #arm(id: JsonRpcId, entry: Entry<E>): void {
    clearTimeout(entry.timer);
    const elapsed = this.#now() - entry.started;
    const wait = Math.max(0, Math.min(entry.deadlines.timeoutMs, entry.deadlines.maxTotalMs - elapsed));
    // No deadline at all (a subscriptions/listen stream): setTimeout would fire at once past 2^31-1.
    if (wait > MAX_TIMER_MS) {
      entry.timer = undefined;
      return;
    }
    entry.timer = setTimeout(() => {
      if (this.#entries.get(id) === entry) entry.deadlines.onTimeout(this.#now() - entry.started);
    }, wait);
  }
}
