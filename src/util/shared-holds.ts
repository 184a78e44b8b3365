// One upstream resource subscription held for many: the first holder of a key opens it (a
// resources/subscribe), later ones share that opening, and the last to let go closes it (a
// resources/unsubscribe). A shared child's hub holds subscriptions for the sessions it serves,
// a 2026-07-28 client's session for its subscriptions/listen streams; both count here.

interface Hold<H> {
  readonly holders: Set<H>;
  /** The opening every holder shares; it rejects when the upstream refused. */
  readonly opened: Promise<void>;
}

export class SharedHolds<K, H> {
  readonly #holds = new Map<K, Hold<H>>();

  /**
   * Takes `holder`'s hold of `key`, opening it when no one held it (counted before the opening
   * answers, so a concurrent hold waits for the same one). Rejects as the opening did; the
   * failed hold is then given back (a later hold opens afresh).
   */
  async hold(key: K, holder: H, open: () => Promise<unknown>): Promise<void> {
    let hold = this.#holds.get(key);
    if (!hold) {
      hold = { holders: new Set(), opened: open().then(() => undefined) };
      this.#holds.set(key, hold);
    }
    hold.holders.add(holder);
    try {
      await hold.opened;
    } catch (err) {
      const failed = hold;
      failed.holders.delete(holder);
      if (failed.holders.size === 0 && this.#holds.get(key) === failed) this.#holds.delete(key);
      throw err;
    }
  }

  /**
   * Gives `holder`'s hold of `key` back; the last holder's closes it once it had opened (the
   * closing's outcome is returned; undefined when others still hold it, or it never opened).
   */
  release(key: K, holder: H, close: () => unknown): Promise<unknown> | undefined {
    const hold = this.#holds.get(key);
    if (!hold?.holders.delete(holder) || hold.holders.size > 0) return undefined;
    this.#holds.delete(key);
    return hold.opened.then(close, () => undefined);
  }

  /** Every hold of `holder` given back (it is gone). */
  releaseAll(holder: H, close: (key: K) => unknown): void {
    for (const key of [...this.#holds.keys()]) void this.release(key, holder, () => close(key))?.catch(() => {});
  }

  /** Every key held now. */
  keys(): IterableIterator<K> {
    return this.#holds.keys();
  }

  /** Who holds `key` now. */
  holders(key: K): ReadonlySet<H> {
    return this.#holds.get(key)?.holders ?? EMPTY;
  }

  get size(): number {
    return this.#holds.size;
  }
}

const EMPTY: ReadonlySet<never> = new Set();
