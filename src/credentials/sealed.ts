// AES-256-GCM sealing for stored credentials, with key rotation: the first key seals, every key
// opens. The AAD (the store key) binds a sealed value to where it is kept.
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

/** Key strings shorter than this are refused: they are passphrases, not keys. */
export const MIN_KEY_LENGTH = 32;

const VERSION = 'v1';
const SALT = 'switchyard credentials v1';
const IV_BYTES = 12; // NIST SP 800-38D §8.2: 96-bit IVs for GCM
const TAG_BYTES = 16;

interface DerivedKey {
  /** 8 base64url chars naming the key in sealed values; derived separately, so it reveals nothing of the key. */
  id: string;
  key: Buffer;
}

function derive(secret: string): DerivedKey {
  const key = Buffer.from(hkdfSync('sha256', secret, SALT, 'aes-256-gcm key', 32));
  const id = Buffer.from(hkdfSync('sha256', secret, SALT, 'key id', 6)).toString('base64url');
  return { id, key };
}

export class Sealer {
  readonly #keys: readonly DerivedKey[];

  constructor(keys: readonly string[]) {
    if (keys.length === 0) throw new Error('credentials.key needs at least one key');
    keys.forEach((key, index) => {
      if (key.length < MIN_KEY_LENGTH) throw new Error(`credentials.key #${index + 1} is shorter than ${MIN_KEY_LENGTH} characters`);
    });
    this.#keys = keys.map(derive);
  }

  seal(plaintext: string, aad: string): string {
    const { id, key } = this.#keys[0]!;
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(Buffer.from(aad, 'utf8'));
    const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    const tag = cipher.getAuthTag();
    return [VERSION, id, iv.toString('base64url'), tag.toString('base64url'), ciphertext.toString('base64url')].join('.');
  }

  /** The plaintext, or undefined when the value is malformed or no key opens it under this AAD. */
  open(sealed: string, aad: string): string | undefined {
    const parts = sealed.split('.');
    if (parts.length !== 5 || parts[0] !== VERSION) return undefined;
    const [, id, ivText, tagText, ciphertextText] = parts as [string, string, string, string, string];
    const iv = Buffer.from(ivText, 'base64url');
    const tag = Buffer.from(tagText, 'base64url');
    if (iv.length !== IV_BYTES || tag.length !== TAG_BYTES) return undefined;
    const ciphertext = Buffer.from(ciphertextText, 'base64url');
    for (const candidate of this.#keys) {
      if (candidate.id !== id) continue; // ids are public; only the tag check needs to be constant-time
      try {
        const decipher = createDecipheriv('aes-256-gcm', candidate.key, iv, { authTagLength: TAG_BYTES });
        decipher.setAAD(Buffer.from(aad, 'utf8'));
        decipher.setAuthTag(tag);
        return Buffer.concat([decipher.update(ciphertext), decipher.final()]).toString('utf8');
      } catch {
        // Wrong key with a colliding id, or tampered/moved value: try the next key.
      }
    }
    return undefined;
  }

  /** True when `sealed` was sealed with the first (current) key; false means it should be re-sealed. */
  isCurrent(sealed: string): boolean {
    return sealed.split('.')[1] === this.#keys[0]!.id;
  }

  sealJson(value: unknown, aad: string): string {
    const text = JSON.stringify(value);
    if (text === undefined) throw new TypeError('a credential value must be JSON-serialisable');
    return this.seal(text, aad);
  }

  /** The parsed value (unvalidated: the caller narrows it), or undefined when it does not open. */
  openJson<T = unknown>(sealed: string, aad: string): T | undefined {
    const text = this.open(sealed, aad);
    return text === undefined ? undefined : (JSON.parse(text) as T);
  }
}
