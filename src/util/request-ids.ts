// Request ids the gateway makes for callers that sent none: UUID-shaped (8-4-4-4-12 hex) so
// log pipelines that expect one keep working, and unique without drawing randomness per request:
// the first 20 digits are random, drawn once per generator (per process), the last 12 count.
// They are for correlating logs, never a secret or a capability.
import { randomBytes } from 'node:crypto';

/** Ids after which the random part is drawn again (the 12 counting digits are then used up). */
const PER_PREFIX = 2 ** 48;
const HEX = [...'0123456789abcdef'].map((digit) => digit.charCodeAt(0));

export class RequestIds {
  /**
   * The id's characters, its last 12 rewritten per id. An id is read from here as one flat
   * string: joined from two parts it would be flattened again where Node checks it as a header
   * value (a regular expression runs on flat strings only).
   */
  readonly #text = Buffer.alloc(36);
  #count = PER_PREFIX;

  next(): string {
    if (this.#count >= PER_PREFIX) {
      const hex = randomBytes(10).toString('hex');
      this.#text.write(`${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-`, 0, 'latin1');
      this.#count = 0;
    }
    let n = this.#count++;
    for (let at = 35; at >= 24; at--) {
      this.#text[at] = HEX[n % 16]!;
      n = Math.floor(n / 16);
    }
    return this.#text.toString('latin1');
  }
}
