// One upstream resource subscription held for many: the first holder of a key opens it (a
// resources/subscribe), later ones share that opening, and the last to let go closes it (a
// resources/unsubscribe). A shared child's hub holds subscriptions for the sessions it serves,
// a 2026-07-28 client's session for its subscriptions/listen streams; both count here.

interface Hold<H> {
  readonly holders: Set<H>;
  /** The opening every holder shares; it rejects when the upstream refused. */
  readonly opened: Promise<void>;
  /** The last holder's closing, pending until it is answered (or cancelled before it was sent). */
  closing?: Closing;
}

interface Closing {
  /** The close went out (the opening had answered); a new hold must wait for it. */
  sent: boolean;
  /** A new hold came before the close went out: it is never sent. */
  cancelled: boolean;
  /** Settles once the close answered (or was skipped); the entry is gone by then. */
  done: Promise<unknown>;
}

// Operations on one key are ordered: a close not yet sent is cancelled by a new hold (which
// shares the opening still standing), and a close already sent is followed by the new hold's
// opening only once it answered. So the upstream never sees a close after a newer opening.
export class SharedHolds<K, H> {
  readonly #holds = new Map<K, Hold<H>>();

  /**
   * Takes `holder`'s hold of `key`, opening it when no one held it (counted before the opening
   * answers, so a concurrent hold waits for the same one). Rejects as the opening did; the
   * failed hold is then given back (a later hold opens afresh).
   */
  async hold(key: K, holder: H, open: () => Promise<unknown>): Promise<void> {
    let hold = this.#holds.get(key);
    if (hold?.closing && !hold.closing.sent) {
      hold.closing.cancelled = true;
      hold.closing = undefined;
    } else if (!hold || hold.closing) {
      const after = hold?.closing?.done;
      const opened = after ? after.then(open, open) : open();
      hold = { holders: new Set(), opened: opened.then(() => undefined) };
      this.#holds.set(key, hold);
    }
    hold.holders.add(holder);
    try {
      await hold.opened;
    } catch (err) {
      const failed = hold;
      failed.holders.delete(holder);
      if (failed.holders.size === 0 && !failed.closing && this.#holds.get(key) === failed) this.#holds.delete(key);
      throw err;
    }
  }

  /**
   * Gives `holder`'s hold of `key` back; the last holder's closes it once it had opened (the
   * closing's outcome is returned; undefined when others still hold it, it never opened, or a
   * new holder came before the close went out).
   */
  release(key: K, holder: H, close: () => unknown): Promise<unknown> | undefined {
    const hold = this.#holds.get(key);
    if (!hold?.holders.delete(holder) || hold.holders.size > 0) return undefined;
    const closing: Closing = { sent: false, cancelled: false, done: Promise.resolve() };
    closing.done = hold.opened
      .then(
        () => {
          if (closing.cancelled) return undefined;
          closing.sent = true;
          return close();
        },
        () => undefined,
      )
      .finally(() => {
        if (hold.closing !== closing) return;
        hold.closing = undefined;
        if (this.#holds.get(key) === hold) this.#holds.delete(key);
      });
    hold.closing = closing;
    return closing.done;
  }

  /** Every hold of `holder` given back (it is gone). */
  releaseAll(holder: H, close: (key: K) => unknown): void {
    for (const key of [...this.#holds.keys()]) void this.release(key, holder, () => close(key))?.catch(() => {});
  }

  /** Every key held now (not those whose last holder let go, their close pending). */
  *keys(): IterableIterator<K> {
    for (const [key, hold] of this.#holds) if (hold.holders.size > 0) yield key;
  }

  /** Who holds `key` now. */
  holders(key: K): ReadonlySet<H> {
    return this.#holds.get(key)?.holders ?? EMPTY;
  }

  /** How many keys are held now. */
  get size(): number {
    let held = 0;
    for (const hold of this.#holds.values()) if (hold.holders.size > 0) held++;
    return held;
  }
}

const EMPTY: ReadonlySet<never> = new Set();
