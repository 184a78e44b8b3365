// The credential stores (memory, file, Redis) against one contract, plus what only some of them
// promise: sealing at rest, reopening, key checks and rotation, locks and events across replicas.
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { RedisCredentialStore } from '../../src/credentials/redis-store.js';
import { Sealer } from '../../src/credentials/sealed.js';
import {
  CredentialKeyError,
  openCredentialStore,
  type CredentialStore,
  type CredentialStoreConfig,
  type CredentialStoreOptions,
} from '../../src/credentials/store.js';
import { silentLogger } from '../../src/util/log.js';
import { freePort, startRedis, type TestRedis } from '../helpers/redis.js';

const OLD_KEY = 'old-key-0123456789-0123456789-0123456789';
const NEW_KEY = 'new-key-0123456789-0123456789-0123456789';
const SECRET = 'hunter2-upstream-refresh-token';

/** Resolves with `promise`, or rejects after `ms` so a lost event fails the test instead of hanging it. */
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([promise, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: nothing within ${ms} ms`)), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/** Polls `check` (each try is a round trip to Redis) until it holds, at most `ms`. */
async function until(check: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
  }
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve: () => void = () => {};
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/** A clock the memory and file stores read for TTLs. */
function manualClock(): { now: () => number; advance: (ms: number) => void } {
  let time = 1_700_000_000_000;
  return { now: () => time, advance: (ms) => void (time += ms) };
}

type Kind = 'memory' | 'file' | 'redis';

interface Harness {
  /** A store on this test's backing (the same file / redis prefix each call; memory: a fresh Map). */
  open(keys?: readonly string[], options?: CredentialStoreOptions): Promise<CredentialStore>;
  /** A second store sharing locks and events with `first` (memory/file: the same instance). */
  replica(first: CredentialStore): Promise<CredentialStore>;
  clock?: ReturnType<typeof manualClock>;
}

let redis: TestRedis;
let raw: Redis;
let dir: string;
let redisPrefix: string;
const opened: CredentialStore[] = [];

beforeAll(async () => {
  redis = await startRedis();
  raw = new Redis(redis.url, { lazyConnect: true, maxRetriesPerRequest: 2 });
  await raw.connect();
});

afterAll(async () => {
  await raw?.quit();
  await redis?.close();
});

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'switchyard-credentials-'));
  redisPrefix = `${redis.prefix}${randomBytes(4).toString('hex')}:`;
});

afterEach(async () => {
  await Promise.all(opened.splice(0).map((store) => store.close()));
  await rm(dir, { recursive: true, force: true });
  const keys = await raw.keys(`${redisPrefix}*`);
  if (keys.length > 0) await raw.del(...keys);
});

function configOf(kind: Kind): CredentialStoreConfig {
  if (kind === 'memory') return 'memory';
  if (kind === 'file') return { file: { path: join(dir, 'credentials.json') } };
  return { redis: { url: redis.url, prefix: redisPrefix } };
}

function harness(kind: Kind): Harness {
  const clock = kind === 'redis' ? undefined : manualClock();
  const open = async (keys: readonly string[] = [NEW_KEY], options: CredentialStoreOptions = {}): Promise<CredentialStore> => {
    const store = await openCredentialStore(configOf(kind), keys, silentLogger, { ...(clock ? { now: clock.now } : {}), ...options });
    opened.push(store);
    return store;
  };
  return { open, replica: async (first) => (kind === 'redis' ? open() : first), ...(clock ? { clock } : {}) };
}

describe.each<Kind>(['memory', 'file', 'redis'])('the %s credential store', (kind) => {
  let h: Harness;
  beforeEach(() => {
    h = harness(kind);
  });

  it('gets what was set and forgets what was deleted', async () => {
    const store = await h.open();
    const value = { accessToken: SECRET, scopes: ['read'], expiresAt: 42 };
    await store.set('token:abc', value);
    expect(await store.get('token:abc')).toEqual(value);
    expect(await store.get('token:other')).toBeUndefined();
    expect(await store.delete('token:abc')).toBe(true);
    expect(await store.delete('token:abc')).toBe(false);
    expect(await store.get('token:abc')).toBeUndefined();
  });

  it('does not return an entry past its ttl', async () => {
    const store = await h.open();
    if (h.clock) {
      await store.set('token:a', SECRET, 1_000);
      h.clock.advance(999);
      expect(await store.get('token:a')).toBe(SECRET);
      h.clock.advance(1);
      expect(await store.get('token:a')).toBeUndefined();
      expect(await store.count('token:')).toBe(0);
    } else {
      await store.set('token:a', SECRET, 50);
      expect(await store.get('token:a')).toBe(SECRET);
      await until(async () => (await store.get('token:a')) === undefined, 5_000, 'the key expiring');
      expect(await raw.exists(`${redisPrefix}token:a`)).toBe(0);
    }
  });

  it('sets a single-use marker only once', async () => {
    const store = await h.open();
    expect(await store.setIfAbsent('state:xyz', { first: true }, 60_000)).toBe(true);
    expect(await store.setIfAbsent('state:xyz', { first: false }, 60_000)).toBe(false);
    expect(await store.get('state:xyz')).toEqual({ first: true });
    if (h.clock) {
      h.clock.advance(60_000);
      expect(await store.setIfAbsent('state:xyz', { again: true }, 60_000)).toBe(true);
    }
  });

  it('counts keys by prefix, glob characters taken literally', async () => {
    const store = await h.open();
    await Promise.all(['token:1', 'token:2', 'state:1', 'g[1]', 'g*x'].map((key) => store.set(key, 1)));
    expect(await store.count('token:')).toBe(2);
    expect(await store.count('state:')).toBe(1);
    expect(await store.count('g[')).toBe(1);
    expect(await store.count('g*')).toBe(1);
    expect(await store.count('t*')).toBe(0);
    expect(await store.count('')).toBe(5); // the key check and locks are not counted
  });

  it('never lets two withLock calls on the same key overlap', async () => {
    const first = await h.open();
    const second = await h.replica(first);
    const order: string[] = [];
    const aEntered = deferred();
    const aMayLeave = deferred();
    const a = first.withLock('refresh:abc', 10_000, async () => {
      order.push('a in');
      aEntered.resolve();
      await aMayLeave.promise;
      order.push('a out');
      return 'a';
    });
    await within(aEntered.promise, 5_000, 'a entering');
    const b = second.withLock('refresh:abc', 10_000, async () => {
      order.push('b in');
      order.push('b out');
      return 'b';
    });
    await second.count(''); // on Redis: answered after b's first SET NX, sent on the same connection before it
    expect(order).toEqual(['a in']);
    aMayLeave.resolve();
    expect(await within(Promise.all([a, b]), 10_000, 'both locks')).toEqual(['a', 'b']);
    expect(order).toEqual(['a in', 'a out', 'b in', 'b out']);
  });

  it('gives up waiting for a held lock after waitMs', async () => {
    const store = await h.open();
    const entered = deferred();
    const leave = deferred();
    const holder = store.withLock('refresh:abc', 10_000, async () => {
      entered.resolve();
      await leave.promise;
    });
    await within(entered.promise, 5_000, 'holder entering');
    await expect(store.withLock('refresh:abc', 10_000, async () => 'never', 100)).rejects.toThrow(/still held after 100 ms/);
    leave.resolve();
    await holder;
  });

  it('lets the lock lapse at its ttl when the holder never returns', async () => {
    const first = await h.open();
    const second = await h.replica(first);
    const entered = deferred();
    void first.withLock('refresh:abc', 100, () => {
      entered.resolve();
      return new Promise<never>(() => {});
    });
    await within(entered.promise, 5_000, 'holder entering');
    expect(await second.withLock('refresh:abc', 1_000, async () => 'taken after the lapse', 5_000)).toBe('taken after the lapse');
  });

  it('delivers published messages to subscribers until they unsubscribe', async () => {
    const publisher = await h.open();
    const subscriber = await h.replica(publisher);
    const received: string[] = [];
    const gotFirst = deferred();
    const gotMarker = deferred();
    const unsubscribe = subscriber.subscribe('changed', (message) => {
      received.push(message);
      gotFirst.resolve();
    });
    const unsubscribeMarker = subscriber.subscribe('marker', () => gotMarker.resolve());
    if (subscriber instanceof RedisCredentialStore) await subscriber.subscriptionsSettled();
    await publisher.publish('changed', 'token:abc');
    await within(gotFirst.promise, 5_000, 'the message');
    unsubscribe();
    await publisher.publish('changed', 'token:late');
    await publisher.publish('marker', 'after'); // arrives after 'token:late' would have
    await within(gotMarker.promise, 5_000, 'the marker');
    expect(received).toEqual(['token:abc']);
    unsubscribeMarker();
  });
});

describe.each<Exclude<Kind, 'memory'>>(['file', 'redis'])('the %s credential store across restarts', (kind) => {
  let h: Harness;
  beforeEach(() => {
    h = harness(kind);
  });

  async function rawValue(key: string): Promise<string> {
    return kind === 'file' ? readFile(join(dir, 'credentials.json'), 'utf8') : ((await raw.get(`${redisPrefix}${key}`)) ?? '');
  }

  it('keeps values sealed, never in plaintext', async () => {
    const store = await h.open();
    await store.set('token:abc', { refreshToken: SECRET });
    const stored = await rawValue('token:abc');
    expect(stored).toMatch(/v1\.[\w-]{8}\./);
    expect(stored).not.toContain(SECRET);
    expect(stored).not.toContain('refreshToken');
  });

  it('hands a new store what the old one wrote', async () => {
    const before = await h.open();
    await before.set('token:abc', { refreshToken: SECRET });
    await before.close();
    const after = await h.open();
    expect(await after.get('token:abc')).toEqual({ refreshToken: SECRET });
  });

  it('refuses to start with a key that does not open the stored credentials', async () => {
    const before = await h.open([OLD_KEY]);
    await before.set('token:abc', SECRET);
    await before.close();
    const failure = await h.open([NEW_KEY]).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(failure).toBeInstanceOf(CredentialKeyError);
    const message = (failure as Error).message;
    expect(message).not.toContain('\n');
    expect(message).toMatch(/^credentials\.key does not open the stored credentials in .+ \(was the key changed\? list the old key second in credentials\.key to rotate\)$/);
    expect(message).toContain(kind === 'file' ? join(dir, 'credentials.json') : redisPrefix);
  });

  it('rotates: [new, old] reads what old sealed and re-seals the check with new', async () => {
    const before = await h.open([OLD_KEY]);
    await before.set('token:abc', { refreshToken: SECRET });
    await before.close();
    const checkBefore = await rawCheck(kind);
    const rotated = await h.open([NEW_KEY, OLD_KEY]);
    expect(await rotated.get('token:abc')).toEqual({ refreshToken: SECRET });
    await rotated.set('token:new', 'fresh');
    await rotated.close();
    const checkAfter = await rawCheck(kind);
    expect(checkAfter).not.toEqual(checkBefore);
    const newOnly = await h.open([NEW_KEY]); // would throw CredentialKeyError had the check kept the old key
    expect(await newOnly.get('token:new')).toBe('fresh');
  });
});

async function rawCheck(kind: Exclude<Kind, 'memory'>): Promise<string | null> {
  if (kind === 'redis') return raw.get(`${redisPrefix}check`);
  const data = JSON.parse(await readFile(join(dir, 'credentials.json'), 'utf8')) as { check: string };
  return data.check;
}

describe('the credentials file', () => {
  const path = (): string => join(dir, 'credentials.json');

  it('is written with mode 0600 and leaves no temp file behind', async () => {
    const store = await harness('file').open();
    await store.set('token:abc', SECRET);
    expect((await stat(path())).mode & 0o777).toBe(0o600);
    expect(await readdir(dir)).toEqual(['credentials.json']);
  });

  it('has the documented shape, expired entries dropped at the next write', async () => {
    const h = harness('file');
    const store = await h.open();
    await store.set('token:short', 1, 1_000);
    await store.set('token:long', 2);
    h.clock!.advance(1_000);
    await store.set('token:other', 3);
    const data = JSON.parse(await readFile(path(), 'utf8')) as Record<string, unknown>;
    expect(data).toMatchObject({ version: 1, check: expect.stringMatching(/^v1\./) });
    expect(Object.keys(data.entries as object).sort()).toEqual(['token:long', 'token:other']);
  });

  it('refuses a file that is not JSON, in one line naming the path', async () => {
    await writeFile(path(), 'not json {');
    await expect(harness('file').open()).rejects.toThrow(new Error(`the credentials file ${path()} is not JSON`));
  });

  it('refuses JSON of another shape, in one line naming the path', async () => {
    await writeFile(path(), JSON.stringify({ version: 2, entries: {} }));
    const failure = await harness('file').open().catch((err: unknown) => err as Error);
    expect(failure).toBeInstanceOf(Error);
    expect((failure as Error).message).toContain(path());
    expect((failure as Error).message).not.toContain('\n');
  });
});

describe('the Redis credential store', () => {
  it('fails to open, in one line, when Redis cannot be reached', async () => {
    const url = `redis://user:pa55word@127.0.0.1:${await freePort()}`;
    const failure = await openCredentialStore({ redis: { url, prefix: 'x:' } }, [NEW_KEY], silentLogger, { connectTimeoutMs: 300 }).catch((err: unknown) => err as Error);
    expect(failure).toBeInstanceOf(Error);
    const message = (failure as Error).message;
    expect(message).toMatch(/^cannot reach Redis redis:\/\/127\.0\.0\.1:\d+ \(prefix "x:"\) for credentials within 0\.3 s \(.+\)$/);
    expect(message).not.toContain('pa55word');
  });

  it('refuses keys that would collide with its key check and locks', async () => {
    const store = await harness('redis').open();
    await expect(store.set('check', 1)).rejects.toThrow(/reserved/);
    await expect(store.get('lock:token:abc')).rejects.toThrow(/reserved/);
  });
});

describe('the Sealer', () => {
  it('opens only under the AAD it was sealed with, so a value cannot move to another key', () => {
    const sealer = new Sealer([NEW_KEY]);
    const sealed = sealer.seal(SECRET, 'token:alice');
    expect(sealer.open(sealed, 'token:alice')).toBe(SECRET);
    expect(sealer.open(sealed, 'token:mallory')).toBeUndefined();
  });

  it('seals with the first key, opens with any, and refuses tampering and unknown keys', () => {
    const old = new Sealer([OLD_KEY]);
    const rotated = new Sealer([NEW_KEY, OLD_KEY]);
    const byOld = old.sealJson({ a: 1 }, 'k');
    expect(rotated.openJson(byOld, 'k')).toEqual({ a: 1 });
    expect(rotated.isCurrent(byOld)).toBe(false);
    const byNew = rotated.sealJson({ a: 2 }, 'k');
    expect(rotated.isCurrent(byNew)).toBe(true);
    expect(old.openJson(byNew, 'k')).toBeUndefined();
    const parts = byNew.split('.');
    const flipped = Buffer.from(parts[4]!, 'base64url');
    flipped[0] = flipped[0]! ^ 1;
    expect(rotated.open([...parts.slice(0, 4), flipped.toString('base64url')].join('.'), 'k')).toBeUndefined();
    expect(rotated.open('not-sealed', 'k')).toBeUndefined();
  });

  it('uses a fresh iv every time and rejects short keys', () => {
    const sealer = new Sealer([NEW_KEY]);
    expect(sealer.seal('same', 'k')).not.toEqual(sealer.seal('same', 'k'));
    expect(sealer.seal('same', 'k')).toMatch(/^v1\.[\w-]{8}\.[\w-]{16}\.[\w-]{22}\.[\w-]+$/);
    expect(() => new Sealer(['short'])).toThrow(/shorter than 32/);
    expect(() => new Sealer([])).toThrow(/at least one key/);
  });
});
