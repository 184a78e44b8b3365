// A bounded queue in front of a slow writer (a file, stdout): offering a line never waits and
// never grows memory past the bound; what does not fit is dropped and counted. One writer loop
// takes everything queued at each turn as one batch.
import { CLOSE_TIMEOUT_MS } from '../telemetry/limits.js';

/** Writes batches of lines; the queue never calls it again before the last write settled. */
export interface LineWriter {
  write(lines: readonly string[]): Promise<void>;
  close(): Promise<void>;
}

export interface QueueOptions {
  /** Lines held at most while the writer is busy. */
  limit: number;
  /** Hears every line dropped (the queue was full, or the writer failed). */
  ondrop: (count: number) => void;
  onerror?: (err: unknown) => void;
  /** How long close() waits for the writer to finish what is queued. */
  closeTimeoutMs?: number;
}

export class BoundedQueue {
  readonly #writer: LineWriter;
  readonly #options: QueueOptions;
  #queue: string[] = [];
  #writing = false;
  #scheduled = false;
  #closed = false;
  /** Resolves when the writer loop has nothing left (or stopped). */
  #idle: Promise<void> = Promise.resolve();
  #settleIdle: (() => void) | undefined;

  constructor(writer: LineWriter, options: QueueOptions) {
    this.#writer = writer;
    this.#options = options;
  }

  /** Lines waiting for the writer. */
  get size(): number {
    return this.#queue.length;
  }

  /** Whether a line offered now would be taken (so a caller can skip making one that would not). */
  get accepting(): boolean {
    return !this.#closed && this.#queue.length < this.#options.limit;
  }

  /** Queues a line; false when it was dropped (the queue is full, or closed). */
  offer(line: string): boolean {
    if (!this.accepting) {
      this.#options.ondrop(1);
      return false;
    }
    this.#queue.push(line);
    if (!this.#writing && !this.#scheduled) {
      // The next turn: what is offered in this one goes out in the same batch.
      this.#scheduled = true;
      this.#idle = new Promise((resolve) => (this.#settleIdle = resolve));
      setImmediate(() => void this.#drain());
    }
    return true;
  }

  async #drain(): Promise<void> {
    this.#scheduled = false;
    this.#writing = true;
    try {
      while (this.#queue.length > 0) {
        const batch = this.#queue;
        this.#queue = [];
        try {
          await this.#writer.write(batch);
        } catch (err) {
          this.#options.onerror?.(err);
          this.#options.ondrop(batch.length);
        }
      }
    } finally {
      this.#writing = false;
      this.#settleIdle?.();
      this.#settleIdle = undefined;
    }
  }

  /** Stops taking lines, waits (bounded) for the queued ones, and closes the writer. */
  async close(): Promise<void> {
    this.#closed = true;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), this.#options.closeTimeoutMs ?? CLOSE_TIMEOUT_MS)));
    try {
      const finished = await Promise.race([this.#idle.then(() => true), timeout]);
      if (!finished) {
        // A stalled writer: what it never took is lost, and counted.
        this.#options.ondrop(this.#queue.length);
        this.#queue = [];
      }
      await Promise.race([this.#writer.close(), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}
