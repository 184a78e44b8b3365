// What the request path uses in place of a promise per layer (bench/README.md, Ninth pass): a
// step that runs from a callback, an event or a settled promise has no caller to throw to, so
// what it throws goes to the `fail` it was given, and what nothing is left to hear is surfaced.

/** Runs `step`; what it throws goes to `fail` (undefined thrown becomes an Error). */
export function guarded(fail: (err: unknown) => void, step: () => void): void {
  try {
    step();
  } catch (err) {
    fail(err ?? new Error('thrown without a reason'));
  }
}

/** `next` with what `promise` gives; what it throws, or the promise's failure, goes to `fail`. */
export function after<T>(promise: Promise<T>, next: (value: T) => void, fail: (err: unknown) => void): void {
  promise.then(
    (value) => guarded(fail, () => next(value)),
    (err: unknown) => fail(err ?? new Error('rejected without a reason')),
  );
}

/** What was thrown, as an Error (a thrown string is an internal error like any other). */
export function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}

/** A failure found before anything started, told a turn later: never before the call that found it returns. */
export function later(done: (err: Error) => void, err: Error): void {
  queueMicrotask(() => done(err));
}

/**
 * An error no caller is left to hear (the answer it belongs to has gone out): thrown again on a
 * microtask, where the process's uncaughtException handler logs it, rather than lost.
 */
export function surface(err: unknown): void {
  queueMicrotask(() => {
    throw err;
  });
}
