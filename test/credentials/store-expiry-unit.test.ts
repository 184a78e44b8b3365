// The memory and file credential stores forget expired entries that nobody reads again (abandoned
// sign-ins, unredeemed codes, used-code markers): writes sweep them a few at a time, so the map
// stays near what is live whatever the traffic, with no timer per entry.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Sealer } from '../../src/credentials/sealed.js';
import { FileCredentialStore, MemoryCredentialStore } from '../../src/credentials/store.js';

const KEY = 'store-expiry-unit-test-credentials-key-0123';
const TTL_MS = 10 * 60_000;
const ABANDONED = 2_000;

/** The memory store with the size of its whole map in view (expired entries included). */
class ProbedStore extends MemoryCredentialStore {
  get held(): number {
    return this.entries.size;
  }
}

let now = 1_000_000;
let dir: string;

beforeEach(async () => {
  now = 1_000_000;
  dir = await mkdtemp(join(tmpdir(), 'switchyard-store-expiry-'));
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('expired entries nobody reads again', () => {
  it('are dropped by later writes, which leave what is live', async () => {
    const store = new ProbedStore(new Sealer([KEY]), { now: () => now });
    await store.set('user:kept', 'no expiry');
    for (let i = 0; i < ABANDONED; i++) await store.set(`frontdoor:flow:${i}`, { state: i }, TTL_MS);
    expect(store.held).toBe(ABANDONED + 1);
    now += 24 * 3_600_000;
    // A quarter as many writes as there are expired entries sweep all of them.
    const fresh = ABANDONED / 4;
    for (let i = 0; i < fresh; i++) await store.setIfAbsent(`frontdoor:code-used:${i}`, 'grant', TTL_MS);
    expect(store.held).toBe(fresh + 1);
    expect(await store.get('user:kept')).toBe('no expiry');
    expect(await store.get('frontdoor:code-used:0')).toBe('grant');
    await store.close();
  });

  it('are never swept before their expiry', async () => {
    const store = new ProbedStore(new Sealer([KEY]), { now: () => now });
    for (let i = 0; i < ABANDONED; i++) await store.set(`frontdoor:flow:${i}`, { state: i }, TTL_MS);
    now += TTL_MS - 1;
    for (let i = 0; i < ABANDONED; i++) await store.set(`other:${i}`, i);
    expect(store.held).toBe(2 * ABANDONED);
    expect(await store.get(`frontdoor:flow:${ABANDONED - 1}`)).toEqual({ state: ABANDONED - 1 });
    await store.close();
  });

  it('are neither written to the credentials file nor read back from one', async () => {
    const path = join(dir, 'credentials.json');
    const sealer = new Sealer([KEY]);
    const store = await FileCredentialStore.open(path, sealer, { now: () => now });
    await store.set('user:kept', 'no expiry');
    for (let i = 0; i < 50; i++) await store.set(`frontdoor:flow:${i}`, { state: i }, TTL_MS);
    await store.close();
    // Reopened after they expired: the map holds only what is live, and so does the next file.
    now += 24 * 3_600_000;
    const reopened = await FileCredentialStore.open(path, sealer, { now: () => now });
    expect((reopened as unknown as { entries: Map<string, unknown> }).entries.size).toBe(1);
    await reopened.set('user:other', 1);
    const data = JSON.parse(await readFile(path, 'utf8')) as { entries: Record<string, unknown> };
    expect(Object.keys(data.entries).sort()).toEqual(['user:kept', 'user:other']);
    await reopened.close();
  });
});
