// The gateway's one credential store, opened on first use: an opening that failed (Redis down, a
// file not readable yet) is tried again by the next caller rather than kept for the process's
// life, with one attempt in flight at a time; a subscription made before the store could be
// opened is made once it opens.
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { configFromObject } from '../../src/config/load.js';
import { credentialStoreOpener, openingOnce, waitingStore } from '../../src/credentials/opener.js';
import { openCredentialStore, type CredentialStore } from '../../src/credentials/store.js';
import { silentLogger } from '../../src/util/log.js';

const KEY = 'opener-unit-test-credentials-key-0123456789';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'switchyard-opener-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A promise and its settlers, for an opening the test finishes when it wants. */
function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void; reject: (err: Error) => void } {
  let resolve!: (value: T) => void;
  let reject!: (err: Error) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

describe('openingOnce', () => {
  it('shares one attempt among callers, forgets a failed one, keeps a successful one', async () => {
    const attempts: ReturnType<typeof deferred<string>>[] = [];
    const opening = openingOnce(() => {
      const attempt = deferred<string>();
      attempts.push(attempt);
      return attempt.promise;
    });
    const [a, b] = [opening.open(), opening.open()];
    expect(attempts).toHaveLength(1);
    attempts[0]!.reject(new Error('Redis is down'));
    await expect(a).rejects.toThrow('Redis is down');
    await expect(b).rejects.toThrow('Redis is down');
    const c = opening.open();
    expect(attempts).toHaveLength(2);
    attempts[1]!.resolve('store');
    expect(await c).toBe('store');
    expect(await opening.open()).toBe('store');
    expect(attempts).toHaveLength(2);
    expect(await opening.close()).toBe('store');
    await expect(opening.open()).rejects.toThrow(/closed/);
    expect(attempts).toHaveLength(2);
  });
});

describe('credentialStoreOpener', () => {
  it('opens the store on a later call once what failed the first opening is fixed', async () => {
    const path = join(dir, 'credentials.json');
    await mkdir(path); // a directory where the file should be: the first opening fails
    const config = configFromObject({ credentials: { key: KEY, store: { file: { path } } }, upstreams: {} }, { file: join(dir, 'gateway.yaml'), env: {} });
    const opener = credentialStoreOpener(config, silentLogger)!;
    try {
      await expect(opener.open()).rejects.toThrow(/cannot read the credentials file/);
      await rm(path, { recursive: true });
      const store = await opener.open();
      await store.set('a', 1);
      expect(await (await opener.open()).get('a')).toBe(1);
    } finally {
      await opener.close();
    }
  });
});

describe('waitingStore', () => {
  it('makes a subscription asked for before the store opened once a later use opens it', async () => {
    const real = await openCredentialStore('memory', [KEY]);
    let up = false;
    const store = waitingStore(async (): Promise<CredentialStore> => {
      if (!up) throw new Error('Redis is down');
      return real;
    });
    const heard: string[] = [];
    const stop = store.subscribe('ch', (message) => heard.push(message));
    await expect(store.get('a')).rejects.toThrow('Redis is down');
    up = true;
    expect(await store.get('a')).toBeUndefined();
    await store.publish('ch', 'one');
    expect(heard).toEqual(['one']);
    stop();
    await store.publish('ch', 'two');
    expect(heard).toEqual(['one']);
    await real.close();
  });
});
