// Keep-alive comments for every open SSE connection on one timer (sessions.keepAlive): ten
// thousand idle GET streams would otherwise be ten thousand timers, each waking the process on
// its own. The timer ticks SLOTS times per interval and visits only the connections due at that
// tick (a timing wheel): a connection gets a comment once it has been silent for the interval,
// never later, and one written to meanwhile waits for the interval after its last byte. So no
// client sees a silence longer than the interval (a proxy's idle timeout counts from the last
// byte), and the comments of many streams are spread over the interval, not written in one burst.

/** What the wheel keeps: a connection that can be sent a keep-alive. */
export interface KeepAliveTarget {
  /** @internal (KeepAlives) The tick of its last byte. */
  lastTick: number;
  /** @internal (KeepAlives) Its place in the wheel. */
  slot: number;
  /** Writes a keep-alive comment, unless the client has not taken what it was sent. */
  keepAlive(): void;
}

/** Ticks per interval: a comment comes at most a sixteenth of the interval before it is due. */
const SLOTS = 16;

export class KeepAlives {
  readonly everyMs: number;
  /** Each slot's connections, made on first use (a wheel of one connection's own holds one). */
  readonly #slots: (Set<KeepAliveTarget> | undefined)[] = new Array<undefined>(SLOTS).fill(undefined);
  readonly #tickMs: number;
  #tick = 0;
  #size = 0;
  #timer: NodeJS.Timeout | undefined;

  constructor(everyMs: number) {
    this.everyMs = everyMs;
    this.#tickMs = Math.max(1, Math.floor(everyMs / SLOTS));
  }

  /** Connections kept. */
  get size(): number {
    return this.#size;
  }

  /** Whether its one timer runs (only while it keeps a connection). */
  get ticking(): boolean {
    return this.#timer !== undefined;
  }

  /** The current tick, which a connection records as the time of its last byte. */
  get now(): number {
    return this.#tick;
  }

  add(target: KeepAliveTarget): void {
    if (this.everyMs <= 0) return;
    target.lastTick = this.#tick;
    this.#place(target, this.#tick % SLOTS);
    this.#size++;
    if (this.#timer) return;
    this.#timer = setInterval(() => this.#visit(), this.#tickMs);
    this.#timer.unref();
  }

  delete(target: KeepAliveTarget): void {
    if (!this.#slots[target.slot]?.delete(target)) return;
    if (--this.#size > 0) return;
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  #place(target: KeepAliveTarget, slot: number): void {
    target.slot = slot;
    (this.#slots[slot] ??= new Set()).add(target);
  }

  /**
   * One tick: the connections of this slot silent for a whole interval get a comment; the
   * others were written to since, and move to the slot where their comment falls due.
   */
  #visit(): void {
    const tick = ++this.#tick;
    const due = this.#slots[tick % SLOTS];
    if (!due) return;
    for (const target of due) {
      if (tick - target.lastTick >= SLOTS) {
        target.keepAlive();
        target.lastTick = tick;
        continue;
      }
      due.delete(target);
      this.#place(target, target.lastTick % SLOTS);
    }
  }
}
