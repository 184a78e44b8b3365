// Where pins live: the credential store (memory, a file, or Redis shared by every replica), one
// sealed value per upstream, changed only under the store's lock. A change an operator makes is
// published on the store's channel, so every replica reads it again at once (Redis pub/sub; the
// memory and file stores reach their own process only).
import type { CredentialStore } from '../credentials/store.js';
import { decide, type Decision, type DecisionTarget } from './approval.js';
import { pinsFrom, type PinEntry, type UpstreamPins } from './rules.js';

/** A decision made: the pins after it, and the entry as it was when decided (under the lock). */
export interface Decided {
  pins: UpstreamPins;
  decided: PinEntry;
}

const KEY_PREFIX = 'pins:';
const CHANNEL = 'switchyard:pins';
/** A change holds the upstream's lock at most this long (a dead holder's lock lapses). */
const LOCK_TTL_MS = 10_000;

export class PinStore {
  readonly #store: CredentialStore;

  constructor(store: CredentialStore) {
    this.#store = store;
  }

  async read(upstream: string): Promise<UpstreamPins> {
    return (await this.readStored(upstream)) ?? pinsFrom(undefined);
  }

  /**
   * The stored pins, or undefined when the store holds no value for the upstream (never pinned,
   * or lost: pins are never deleted, so a value that was there and is gone went with the store).
   */
  async readStored(upstream: string): Promise<UpstreamPins | undefined> {
    const value = await this.#store.get(KEY_PREFIX + upstream);
    return value === undefined ? undefined : pinsFrom(value);
  }

  /**
   * Applies `change` to the stored pins under the upstream's lock (`stored`: whether the store
   * held a value); undefined from it: nothing to write.
   */
  async update(upstream: string, change: (pins: UpstreamPins, stored: boolean) => UpstreamPins | undefined): Promise<UpstreamPins> {
    return this.#store.withLock(KEY_PREFIX + upstream, LOCK_TTL_MS, async () => {
      const stored = await this.readStored(upstream);
      const pins = stored ?? pinsFrom(undefined);
      const next = change(pins, stored !== undefined);
      if (next === undefined) return pins;
      await this.#store.set(KEY_PREFIX + upstream, next);
      return next;
    });
  }

  /**
   * An operator's decision, stored and announced to every replica; a string says why it was not
   * made. Without a digest it applies to whatever waits when the lock is held, which may be newer
   * than what the operator listed: `decided` is that entry, read under the lock, for the audit.
   */
  async decide(upstream: string, target: DecisionTarget, decision: Decision, by: string): Promise<Decided | string> {
    let refusal: string | undefined;
    let decided: PinEntry | undefined;
    const pins = await this.update(upstream, (current) => {
      const next = decide(current, target, decision, by, new Date().toISOString());
      if (typeof next === 'string') refusal = next;
      else decided = current[target.kind][target.name];
      return typeof next === 'string' ? undefined : next;
    });
    if (refusal !== undefined || decided === undefined) return refusal ?? `nothing of ${target.kind} ${target.name} waits for approval`;
    await this.announce(upstream);
    return { pins, decided };
  }

  /** Tells every replica sharing the store that `upstream`'s pins changed. */
  announce(upstream: string): Promise<void> {
    return this.#store.publish(CHANNEL, upstream);
  }

  subscribe(listener: (upstream: string) => void): () => void {
    return this.#store.subscribe(CHANNEL, listener);
  }
}
