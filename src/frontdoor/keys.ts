// The front door's signing keys (ES256), sealed in the credential store so every replica signs
// and verifies with the same ones. A key signs for `rotateAfter`; then a successor is made and
// published at once, and only signs once `publishAhead` has passed, so every verifier and every
// host's JWKS cache knows it before a token signed by it arrives. The three newest are kept.
import { randomBytes } from 'node:crypto';
import { errors, exportJWK, generateKeyPair, importJWK, type CryptoKey, type JWK, type JWSHeaderParameters } from 'jose';
import type { KeySource } from '../auth/jwt.js';
import type { CredentialStore } from '../credentials/store.js';

interface StoredKey {
  kid: string;
  privateJwk: JWK;
  publicJwk: JWK;
  created: number;
}

interface Ring {
  keys: StoredKey[];
  loadedAt: number;
  publicKeys: Map<string, CryptoKey>;
}

export interface SigningKeyOptions {
  store: CredentialStore;
  now?: () => number;
  /** How long a key signs before a successor is made (default 30 days). */
  rotateAfterMs?: number;
  /** How long a successor is published before it signs (default 1 hour). */
  publishAheadMs?: number;
  /** How long the keys read from the store are used before they are read again (default 1 minute). */
  reloadMs?: number;
}

const STORE_KEY = 'frontdoor:keys';
const KEPT = 3;
const UNKNOWN_KID_COOLDOWN_MS = 1_000;
export const ALGORITHM = 'ES256';

export class SigningKeys implements KeySource {
  readonly #store: CredentialStore;
  readonly #now: () => number;
  readonly #rotateAfterMs: number;
  readonly #publishAheadMs: number;
  readonly #reloadMs: number;
  #ring: Ring | undefined;
  #loading: Promise<Ring> | undefined;
  #version = 1;

  constructor(options: SigningKeyOptions) {
    this.#store = options.store;
    this.#now = options.now ?? Date.now;
    this.#rotateAfterMs = options.rotateAfterMs ?? 30 * 24 * 60 * 60_000;
    this.#publishAheadMs = options.publishAheadMs ?? 60 * 60_000;
    this.#reloadMs = options.reloadMs ?? 60_000;
  }

  /** The key that signs now, rotating first when its time is up. */
  async signer(): Promise<{ kid: string; key: CryptoKey }> {
    const ring = await this.#current();
    const signing = this.#signingKey(ring.keys);
    return { kid: signing.kid, key: (await importJWK(signing.privateJwk, ALGORITHM)) as CryptoKey };
  }

  /** The public keys (the signing key, its successor, and the last one before it): the jwks_uri document. */
  async jwks(): Promise<{ keys: JWK[] }> {
    const ring = await this.#current();
    return { keys: ring.keys.map((key) => key.publicJwk) };
  }

  /** KeySource: the public key a token names (an unknown kid reads the store again, at most once a second). */
  readonly key = async (header?: JWSHeaderParameters): Promise<CryptoKey> => {
    let ring = await this.#current();
    const kid = header?.kid;
    if (kid === undefined) throw new errors.JWKSNoMatchingKey();
    if (!ring.publicKeys.has(kid) && this.#now() - ring.loadedAt >= UNKNOWN_KID_COOLDOWN_MS) ring = await this.#reload();
    const key = ring.publicKeys.get(kid);
    if (!key) throw new errors.JWKSNoMatchingKey();
    return key;
  };

  version(): number {
    return this.#version;
  }

  fresh(): boolean {
    return true;
  }

  /** Tokens verified before must be verified again (a grant was revoked somewhere). */
  invalidate(): void {
    this.#version++;
  }

  #signingKey(keys: readonly StoredKey[]): StoredKey {
    const now = this.#now();
    const ready = keys.filter((key) => key.created + this.#publishAheadMs <= now);
    // The first key of a new ring signs at once: there is nothing it could be published ahead of.
    return ready.at(-1) ?? keys[0]!;
  }

  async #current(): Promise<Ring> {
    const ring = this.#ring;
    if (ring && this.#now() - ring.loadedAt < this.#reloadMs) return ring;
    return this.#reload();
  }

  #reload(): Promise<Ring> {
    this.#loading ??= this.#load().finally(() => (this.#loading = undefined));
    return this.#loading;
  }

  async #load(): Promise<Ring> {
    let keys = ringOf(await this.#store.get(STORE_KEY));
    if (this.#needsKey(keys)) {
      keys = await this.#store.withLock(STORE_KEY, 10_000, async () => {
        const stored = ringOf(await this.#store.get(STORE_KEY));
        if (!this.#needsKey(stored)) return stored;
        const next = [...stored, await newKey(this.#now())].slice(-KEPT);
        await this.#store.set(STORE_KEY, { keys: next });
        return next;
      });
    }
    const before = this.#ring?.keys.map((key) => key.kid).join(',');
    const publicKeys = new Map<string, CryptoKey>();
    for (const key of keys) publicKeys.set(key.kid, (await importJWK(key.publicJwk, ALGORITHM)) as CryptoKey);
    const ring: Ring = { keys, loadedAt: this.#now(), publicKeys };
    if (before !== undefined && before !== keys.map((key) => key.kid).join(',')) this.#version++;
    this.#ring = ring;
    return ring;
  }

  /** A ring needs a key when empty, or when its newest key has signed (or waited) for rotateAfter. */
  #needsKey(keys: readonly StoredKey[]): boolean {
    const newest = keys.at(-1);
    return newest === undefined || newest.created + this.#rotateAfterMs <= this.#now();
  }
}

async function newKey(now: number): Promise<StoredKey> {
  const { privateKey, publicKey } = await generateKeyPair(ALGORITHM, { extractable: true });
  const kid = randomBytes(9).toString('base64url');
  const meta = { kid, alg: ALGORITHM, use: 'sig' };
  return { kid, created: now, privateJwk: { ...(await exportJWK(privateKey)), ...meta }, publicJwk: { ...(await exportJWK(publicKey)), ...meta } };
}

/** The stored ring, validated (unknown until then); anything else reads as empty. */
function ringOf(value: unknown): StoredKey[] {
  const keys = (value as { keys?: unknown } | undefined)?.keys;
  if (!Array.isArray(keys)) return [];
  return keys.filter(
    (key): key is StoredKey =>
      typeof key === 'object' && key !== null && typeof key.kid === 'string' && typeof key.created === 'number' && typeof key.privateJwk === 'object' && typeof key.publicJwk === 'object',
  );
}
