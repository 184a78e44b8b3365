// An upstream's maxConcurrent: the calls to it in flight on this replica, counted in its pool
// record so that nothing but a change of that upstream resets them (a reload of rate limits
// does not), and a smoothed call duration for the retry hint of a refusal. A slot is taken
// before the call's perTool token (router/tool-call.ts), so one may be given back by a call that
// never ran: its time says nothing of the upstream's and is left out of the duration.
export interface Busy {
  /** How long to wait before retrying: the smoothed call duration, in whole seconds, at least 1 s. */
  retryAfterMs: number;
  inFlight: number;
}

/** A slot taken: `release(false)` gives it back for a call that never reached the upstream. */
export interface Slot {
  release(ran?: boolean): void;
}

const UNLIMITED: Slot = { release: (): void => {} };

export class ConcurrencySlots {
  #inFlight = 0;
  /** Smoothed tools/call duration, for the retry hint. */
  #latencyMs: number | undefined;

  get inFlight(): number {
    return this.#inFlight;
  }

  /** Whether all `max` slots are taken now (a look, taking nothing). */
  busy(max: number | undefined): Busy | undefined {
    if (max === undefined || this.#inFlight < max) return undefined;
    return { retryAfterMs: Math.max(1_000, Math.ceil((this.#latencyMs ?? 1_000) / 1_000) * 1_000), inFlight: this.#inFlight };
  }

  /** Takes one of `max` slots: the release function, or the refusal when all are taken. */
  acquire(max: number | undefined): Slot | Busy {
    // Without a limit nothing is counted (a reload that sets one starts counting from the calls after it).
    if (max === undefined) return UNLIMITED;
    const busy = this.busy(max);
    if (busy) return busy;
    this.#inFlight++;
    const started = Date.now();
    let released = false;
    return {
      release: (ran = true) => {
        if (released) return;
        released = true;
        this.#inFlight--;
        if (!ran) return;
        const took = Date.now() - started;
        this.#latencyMs = 0.8 * (this.#latencyMs ?? took) + 0.2 * took;
      },
    };
  }
}
