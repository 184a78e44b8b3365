// A list linked through its own entries: adding and removing one hashes and allocates nothing,
// and a removed entry points at nothing any more. Per-request entries go here rather than in a
// Set, whose table, rebuilt as entries come and go, kept answered requests reachable for the
// young-generation collector (bench/HISTORY.md, "Fifteenth pass").

/** What an entry carries to be linked. */
export interface Linked<E> {
  prev: E | undefined;
  next: E | undefined;
}

export class LinkedList<E extends Linked<E>> {
  #first: E | undefined;
  #size = 0;

  get size(): number {
    return this.#size;
  }

  add(entry: E): void {
    entry.prev = undefined;
    entry.next = this.#first;
    if (this.#first) this.#first.prev = entry;
    this.#first = entry;
    this.#size++;
  }

  /** Unlinks `entry`; nothing when it is not in the list (removed before, or taken). */
  delete(entry: E): void {
    if (entry !== this.#first && entry.prev === undefined) return;
    if (entry.prev) entry.prev.next = entry.next;
    else this.#first = entry.next;
    if (entry.next) entry.next.prev = entry.prev;
    entry.prev = entry.next = undefined;
    this.#size--;
  }

  /** Every entry, each visited once; `each` may delete the one it is given. */
  forEach(each: (entry: E) => void): void {
    for (let entry = this.#first; entry; ) {
      const next = entry.next;
      each(entry);
      entry = next;
    }
  }

  /** Empties the list and returns what it held, each entry unlinked. */
  takeAll(): E[] {
    const taken: E[] = [];
    for (let entry = this.#first; entry; ) {
      const next: E | undefined = entry.next;
      entry.prev = entry.next = undefined;
      taken.push(entry);
      entry = next;
    }
    this.#first = undefined;
    this.#size = 0;
    return taken;
  }
}
