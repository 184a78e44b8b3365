// A circuit breaker for one HTTP upstream, shared by all its sessions: after `failures`
// consecutive 5xx answers or connection failures it opens and requests fail fast; after
// `openMs` one request goes through as a probe, and its outcome closes or reopens it.

export type CircuitState = 'closed' | 'open' | 'half-open';

export interface CircuitOptions {
  failures: number;
  openMs: number;
  now?: () => number;
}

export class CircuitBreaker {
  readonly #options: CircuitOptions;
  readonly #now: () => number;
  #state: CircuitState = 'closed';
  #failures = 0;
  #openedAt = 0;
  #probing = false;
  /** Called when the state changes (for health and metrics). */
  onchange?: (state: CircuitState) => void;

  constructor(options: CircuitOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
  }

  get state(): CircuitState {
    return this.#state;
  }

  /** Whether a request may go now. In half-open, one probe at a time may. */
  allow(): boolean {
    if (this.#state === 'closed') return true;
    if (this.#state === 'open') {
      if (this.#now() - this.#openedAt < this.#options.openMs) return false;
      this.#set('half-open');
    }
    if (this.#probing) return false;
    this.#probing = true;
    return true;
  }

  success(): void {
    this.#probing = false;
    this.#failures = 0;
    if (this.#state !== 'closed') this.#set('closed');
  }

  failure(): void {
    this.#probing = false;
    this.#failures++;
    if (this.#state === 'half-open' || (this.#state === 'closed' && this.#failures >= this.#options.failures)) {
      this.#openedAt = this.#now();
      this.#set('open');
    }
  }

  /** A request that ended without telling anything about the upstream (we abandoned it). */
  release(): void {
    this.#probing = false;
  }

  #set(state: CircuitState): void {
    this.#state = state;
    this.onchange?.(state);
  }
}
