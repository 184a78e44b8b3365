// Requests the gateway gave up on (the caller cancelled, a deadline passed) that the upstream may
// still be working on: cancellation is only a request (a server may finish anyway, as the rogue
// fixture does), so what was held for such a request (its upstream's maxConcurrent slot) stays
// held until the upstream is done with it: its late answer comes, its connection ends (a crash,
// a close), or LINGER_MS pass, whichever is first. Nothing lingers longer than that.
import type { JsonRpcId } from '../mcp/jsonrpc.js';
import type { RequestOptions as BaseRequestOptions } from './client-options.js';

/** The longest a request given up on keeps what it held after the gateway stopped waiting for it. */
export const LINGER_MS = 5_000;

/** A request's options (client-options.ts), and what it holds while the upstream may still work on it. */
export interface RequestOptions extends BaseRequestOptions {
  /**
   * The request is given up on (cancelled, timed out) while the upstream may still work on it:
   * called then, before the caller hears the error. What it returns is called once, when the
   * upstream is done with the request (its late answer, its connection's end) or LINGER_MS
   * later; undefined when nothing is to be held.
   */
  onGiveUp?: () => (() => void) | undefined;
}

export class Lingering {
  readonly #held = new Map<JsonRpcId, { done: () => void; timer: NodeJS.Timeout }>();
  readonly #ms: number;

  constructor(ms = LINGER_MS) {
    this.#ms = ms;
  }

  /** Requests given up on whose upstream may still be at work. */
  get size(): number {
    return this.#held.size;
  }

  /** Request `id` was given up on: `done` is called when the upstream is done with it, or at the latest in LINGER_MS. */
  hold(id: JsonRpcId, done: () => void): void {
    const timer = setTimeout(() => this.end(id), this.#ms);
    timer.unref?.();
    this.#held.set(id, { done, timer });
  }

  /** The upstream is done with request `id` (it answered, late); whether it was held. */
  end(id: JsonRpcId): boolean {
    const held = this.#held.get(id);
    if (!held) return false;
    this.#held.delete(id);
    clearTimeout(held.timer);
    held.done();
    return true;
  }

  /** The connection ended (crashed, closed): nothing it was working on goes on. */
  endAll(): void {
    for (const id of [...this.#held.keys()]) this.end(id);
  }
}
