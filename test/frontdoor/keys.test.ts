// The front door's signing keys in a real (memory) credential store: the first key signs at once,
// a successor is published before it signs, three are kept, and replicas share them.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openCredentialStore, type CredentialStore } from '../../src/credentials/store.js';
import { SigningKeys } from '../../src/frontdoor/keys.js';

const KEY = 'keys-unit-test-credentials-key-of-forty-chars!';
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

let now = 0;
let store: CredentialStore;

beforeEach(async () => {
  now = 10 * DAY;
  store = await openCredentialStore('memory', [KEY], undefined, { now: () => now });
});

afterEach(async () => {
  await store.close();
});

function keys(): SigningKeys {
  return new SigningKeys({ store, now: () => now, rotateAfterMs: 30 * DAY, publishAheadMs: HOUR, reloadMs: 1 });
}

describe('signing keys', () => {
  it('the first key signs at once and is published', async () => {
    const ring = keys();
    const { kid } = await ring.signer();
    expect((await ring.jwks()).keys.map((key) => key.kid)).toEqual([kid]);
    expect((await ring.jwks()).keys.every((key) => key.d === undefined && key.alg === 'ES256')).toBe(true);
  });

  it('a successor is published when the key is due, and signs only after publishAhead', async () => {
    const ring = keys();
    const first = (await ring.signer()).kid;
    now += 30 * DAY;
    expect((await ring.signer()).kid).toBe(first);
    const published = (await ring.jwks()).keys.map((key) => key.kid);
    expect(published).toHaveLength(2);
    now += HOUR;
    const second = (await ring.signer()).kid;
    expect(second).not.toBe(first);
    expect(published).toContain(second);
  });

  it('keeps the three newest keys', async () => {
    const ring = keys();
    await ring.signer();
    for (let i = 0; i < 4; i++) {
      now += 31 * DAY;
      await ring.signer();
    }
    expect((await ring.jwks()).keys).toHaveLength(3);
  });

  it('replicas on one store sign with the same key, and find a key made by another', async () => {
    const a = keys();
    const b = keys();
    const [first, second] = await Promise.all([a.signer(), b.signer()]);
    expect(first.kid).toBe(second.kid);
    now += 31 * DAY;
    await a.signer();
    const newest = (await a.jwks()).keys.at(-1)!.kid!;
    now += 2 * 1_000;
    await expect(b.key({ alg: 'ES256', kid: newest })).resolves.toBeDefined();
    await expect(b.key({ alg: 'ES256', kid: 'unknown' })).rejects.toThrow();
  });
});
