// A cancellation that costs what it does: a flag, a reason and a short listener list. Every
// call through the gateway carries two (the client's request, the upstream exchange); Node's
// AbortController/AbortSignal pair is an EventTarget whose creation and listeners showed up as
// the largest single cost of the hot path in the profile (bench/README.md).
//
// It has the part of AbortSignal's shape undici accepts for a request's `signal` (`aborted`,
// `reason`, add/removeEventListener('abort')), so the exchange's cancellation is handed to
// undici as is.

/** The read side: what code that may be cancelled sees. */
export interface CancelSignal {
  readonly aborted: boolean;
  readonly reason: unknown;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

export class Cancellation implements CancelSignal {
  #aborted = false;
  #reason: unknown;
  #listeners: (() => void)[] | undefined;

  get aborted(): boolean {
    return this.#aborted;
  }

  get reason(): unknown {
    return this.#reason;
  }

  /** This object, typed as the read side. */
  get signal(): CancelSignal {
    return this;
  }

  /** Listeners run once, in the order added; a listener added after the abort never runs. */
  addEventListener(_type: 'abort', listener: () => void): void {
    if (this.#aborted) return;
    (this.#listeners ??= []).push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const listeners = this.#listeners;
    if (!listeners) return;
    const i = listeners.indexOf(listener);
    if (i !== -1) listeners.splice(i, 1);
  }

  abort(reason: unknown = new Error('aborted')): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason;
    const listeners = this.#listeners;
    this.#listeners = undefined;
    if (listeners) for (const listener of listeners) listener();
  }
}

/** Resolves after `ms`, or at once when `signal` aborts (never rejects: the caller reads the signal). */
export function pause(ms: number, signal: CancelSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}
