// Request ids the gateway makes for callers that sent none: UUID-shaped (8-4-4-4-12 hex) so
// log pipelines that expect one keep working, and unique without drawing randomness per request:
// the first 20 digits are random, drawn once per generator (per process), the last 12 count.
// They are for correlating logs, never a secret or a capability.
import { randomBytes } from 'node:crypto';

/** Ids after which the random part is drawn again (the 12 counting digits are then used up). */
const PER_PREFIX = 2 ** 48;

export class RequestIds {
  #prefix = '';
  #count = PER_PREFIX;

  next(): string {
    if (this.#count >= PER_PREFIX) {
      const hex = randomBytes(10).toString('hex');
      this.#prefix = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-`;
      this.#count = 0;
    }
    return this.#prefix + (this.#count++).toString(16).padStart(12, '0');
  }
}
