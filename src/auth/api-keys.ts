// API keys for machine clients: the config stores only a SHA-256 hash of each key; a presented
// key is hashed and compared in constant time with every stored hash.
import { createHash, timingSafeEqual } from 'node:crypto';
import { AuthError, type Principal } from './principal.js';

export interface ApiKeyEntry {
  id: string;
  /** "sha256:<64 hex digits>" of the key. */
  hash: string;
  team?: string;
  scopes: readonly string[];
}

/** What to put in the config for `key`. */
export function hashApiKey(key: string): string {
  return `sha256:${createHash('sha256').update(key, 'utf8').digest('hex')}`;
}

export class ApiKeys {
  /** Each key's one principal: the same object on every request (a session sees its principal unchanged). */
  readonly #entries: { principal: Principal; digest: Buffer }[];

  constructor(entries: readonly ApiKeyEntry[]) {
    this.#entries = entries.map((entry) => ({ principal: principalOf(entry), digest: Buffer.from(entry.hash.slice('sha256:'.length), 'hex') }));
  }

  get size(): number {
    return this.#entries.length;
  }

  verify(key: string): Principal {
    const digest = createHash('sha256').update(key, 'utf8').digest();
    let found: Principal | undefined;
    // Compare with every entry, matched or not, so timing says nothing about which matched.
    for (const { principal, digest: stored } of this.#entries) if (timingSafeEqual(digest, stored)) found = principal;
    if (!found) throw new AuthError('unknown_api_key', 'the API key is not valid');
    return found;
  }
}

function principalOf(entry: ApiKeyEntry): Principal {
  const principal: Principal = { id: `apikey:${entry.id}`, kind: 'apikey', scopes: entry.scopes, claims: Object.freeze({}) };
  if (entry.team !== undefined) principal.team = entry.team;
  return Object.freeze(principal);
}
