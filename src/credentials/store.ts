// Encrypted key-value storage for per-user upstream credentials: the CredentialStore interface,
// the memory and file stores, and openCredentialStore, which refuses a key that cannot open what is stored.
import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { silentLogger, type Logger } from '../util/log.js';
import { RedisCredentialStore } from './redis-store.js';
import { Sealer } from './sealed.js';

export interface CredentialStore {
  /** Stored plaintext JSON value (already decrypted) or undefined. */
  get(key: string): Promise<unknown | undefined>;
  set(key: string, value: unknown, ttlMs?: number): Promise<void>;
  delete(key: string): Promise<boolean>;
  /** Sets only when absent (single-use markers); true when this call set it. */
  setIfAbsent(key: string, value: unknown, ttlMs: number): Promise<boolean>;
  /** How many keys start with `prefix` (for /healthz counts; no names returned). */
  count(prefix: string): Promise<number>;
  /** Runs fn while holding a lock on `key` across every user of the same store (replicas for redis); waits (bounded by waitMs, default 10s, then throws) while another holds it; the lock expires after ttlMs if its holder dies. */
  withLock<T>(key: string, ttlMs: number, fn: () => Promise<T>, waitMs?: number): Promise<T>;
  /** Publish/subscribe "something changed for key" between replicas sharing the store (memory/file: in-process listeners only). Returns an unsubscribe function. */
  publish(channel: string, message: string): Promise<void>;
  subscribe(channel: string, listener: (message: string) => void): () => void;
  close(): Promise<void>;
}

export type CredentialStoreConfig = 'memory' | { file: { path: string } } | { redis: { url: string; prefix: string } };

export interface CredentialStoreOptions {
  /** Clock for TTLs of the memory and file stores (Redis expires keys on its own clock). */
  now?: () => number;
  /** How long to wait for Redis at start (default 5 s). */
  connectTimeoutMs?: number;
}

/** The configured keys cannot open the stored key check: starting would orphan every credential. */
export class CredentialKeyError extends Error {
  readonly code = 'CREDENTIAL_KEY_MISMATCH';
  override readonly name = 'CredentialKeyError';
}

/** What openCredentialStore needs of a store to check the key. */
interface KeyCheckSlot {
  readonly location: string;
  readKeyCheck(): Promise<string | undefined>;
  writeKeyCheck(sealed: string, onlyIfAbsent: boolean): Promise<boolean>;
}

const CHECK_PLAINTEXT = 'switchyard credentials key check';
const CHECK_AAD = 'switchyard:key-check';
const DEFAULT_LOCK_WAIT_MS = 10_000;
/**
 * Entries each write looks at for expiry, resuming where the last one stopped: more than one, so
 * sweeping outpaces growth and an expired entry nobody reads again lasts at most one pass.
 */
const SWEEP_STEP = 8;

export async function openCredentialStore(
  config: CredentialStoreConfig,
  keys: readonly string[],
  logger: Logger = silentLogger,
  options: CredentialStoreOptions = {},
): Promise<CredentialStore> {
  const sealer = new Sealer(keys);
  const local = { logger, ...(options.now ? { now: options.now } : {}) };
  let store: CredentialStore & KeyCheckSlot;
  if (config === 'memory') store = new MemoryCredentialStore(sealer, local);
  else if ('file' in config) store = await FileCredentialStore.open(config.file.path, sealer, local);
  else {
    const redis = new RedisCredentialStore({ ...config.redis, sealer, logger, ...(options.connectTimeoutMs ? { connectTimeoutMs: options.connectTimeoutMs } : {}) });
    await redis.connect();
    // Redis back after a loss may have come back empty: the key check is written again (else a
    // replica started with another key would take the store), and a foreign one is reported.
    redis.onReconnect(() => {
      verifyKeyCheck(redis, sealer, logger).then(
        (outcome) => {
          if (outcome === 'written') logger.warn('the credentials key check was missing from Redis when it came back (restarted empty or flushed?); written again', { store: redis.location });
        },
        (err: unknown) => logger.error('the credentials key check could not be verified after Redis came back', { store: redis.location, err }),
      );
    });
    store = redis;
  }
  try {
    await verifyKeyCheck(store, sealer, logger);
    return store;
  } catch (err) {
    await store.close();
    throw err;
  }
}

/** Opens the stored check with the keys; writes it when absent, re-seals it with the first key after a rotation. */
async function verifyKeyCheck(store: KeyCheckSlot, sealer: Sealer, logger: Logger): Promise<'written' | 'checked'> {
  for (let attempt = 0; attempt < 2; attempt++) {
    const sealed = await store.readKeyCheck();
    if (sealed === undefined) {
      if (await store.writeKeyCheck(sealer.seal(CHECK_PLAINTEXT, CHECK_AAD), true)) return 'written';
      continue; // another replica wrote one first: check that one
    }
    if (sealer.open(sealed, CHECK_AAD) !== CHECK_PLAINTEXT) {
      throw new CredentialKeyError(
        `credentials.key does not open the stored credentials in ${store.location} (was the key changed? list the old key second in credentials.key to rotate)`,
      );
    }
    if (!sealer.isCurrent(sealed)) {
      await store.writeKeyCheck(sealer.seal(CHECK_PLAINTEXT, CHECK_AAD), false);
      logger.info('credentials key check re-sealed with the first credentials.key; keep the old key listed until the values it sealed have been rewritten or expired', { store: store.location });
    }
    return 'checked';
  }
  throw new Error(`the credentials key check in ${store.location} was written and removed while starting; start again`);
}

interface Entry {
  /** Sealed JSON value, the store key as AAD. */
  v: string;
  /** Expiry, epoch milliseconds. */
  exp?: number;
}

export interface LocalStoreOptions {
  now?: () => number;
  logger?: Logger;
}

/** Keeps sealed values in a Map; locks and events reach only this process. */
export class MemoryCredentialStore implements CredentialStore, KeyCheckSlot {
  readonly location: string = 'memory';
  protected readonly entries = new Map<string, Entry>();
  protected check: string | undefined;
  protected readonly now: () => number;
  protected readonly logger: Logger;
  readonly #sealer: Sealer;
  readonly #locks = new LocalLocks();
  readonly #channels: LocalChannels;
  /** Where the sweep resumes: a Map iterator stays valid while entries are added and deleted. */
  #sweep: Iterator<[string, Entry]> | undefined;
  #closed = false;

  constructor(sealer: Sealer, options: LocalStoreOptions = {}) {
    this.#sealer = sealer;
    this.now = options.now ?? Date.now;
    this.logger = options.logger ?? silentLogger;
    this.#channels = new LocalChannels(this.logger);
  }

  async get(key: string): Promise<unknown | undefined> {
    this.#assertOpen();
    const entry = this.#live(key);
    if (!entry) return undefined;
    const value = this.#sealer.openJson(entry.v, key);
    if (value === undefined) this.logger.warn('a stored credential does not open with any credentials.key; treated as absent');
    return value;
  }

  async set(key: string, value: unknown, ttlMs?: number): Promise<void> {
    this.#assertOpen();
    const entry: Entry = { v: this.#sealer.sealJson(value, key) };
    if (ttlMs !== undefined) entry.exp = this.now() + positiveMs('ttlMs', ttlMs);
    this.#sweepSome();
    this.entries.set(key, entry);
    await this.persist();
  }

  async delete(key: string): Promise<boolean> {
    this.#assertOpen();
    const existed = this.#live(key) !== undefined;
    if (!this.entries.delete(key)) return false;
    await this.persist();
    return existed;
  }

  async setIfAbsent(key: string, value: unknown, ttlMs: number): Promise<boolean> {
    this.#assertOpen();
    if (this.#live(key)) return false;
    this.#sweepSome();
    this.entries.set(key, { v: this.#sealer.sealJson(value, key), exp: this.now() + positiveMs('ttlMs', ttlMs) });
    await this.persist();
    return true;
  }

  async count(prefix: string): Promise<number> {
    this.#assertOpen();
    let found = 0;
    for (const key of [...this.entries.keys()]) if (key.startsWith(prefix) && this.#live(key)) found++;
    return found;
  }

  async withLock<T>(key: string, ttlMs: number, fn: () => Promise<T>, waitMs = DEFAULT_LOCK_WAIT_MS): Promise<T> {
    this.#assertOpen();
    return this.#locks.run(key, positiveMs('ttlMs', ttlMs), fn, positiveMs('waitMs', waitMs));
  }

  async publish(channel: string, message: string): Promise<void> {
    this.#assertOpen();
    this.#channels.publish(channel, message);
  }

  subscribe(channel: string, listener: (message: string) => void): () => void {
    this.#assertOpen();
    return this.#channels.subscribe(channel, listener);
  }

  async readKeyCheck(): Promise<string | undefined> {
    return this.check;
  }

  async writeKeyCheck(sealed: string, onlyIfAbsent: boolean): Promise<boolean> {
    if (onlyIfAbsent && this.check !== undefined) return false;
    this.check = sealed;
    await this.persist();
    return true;
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#locks.close();
    this.#channels.clear();
  }

  /** Called after every change; the file store writes itself out here. */
  protected async persist(): Promise<void> {}

  /** The entry when present and unexpired; an expired one is dropped (the file forgets it at its next write, as it does those the sweep dropped). */
  #live(key: string): Entry | undefined {
    const entry = this.entries.get(key);
    if (entry?.exp !== undefined && entry.exp <= this.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return entry;
  }

  /**
   * Drops the expired among the next SWEEP_STEP entries: what nobody reads again (an abandoned
   * sign-in, an unredeemed code) is forgotten without a timer, at a bounded cost per write.
   */
  #sweepSome(): void {
    const now = this.now();
    for (let seen = 0; seen < SWEEP_STEP; seen++) {
      const next = (this.#sweep ??= this.entries.entries()).next();
      if (next.done) {
        this.#sweep = undefined; // the next write starts a new pass
        return;
      }
      const [key, entry] = next.value;
      if (entry.exp !== undefined && entry.exp <= now) this.entries.delete(key);
    }
  }

  #assertOpen(): void {
    if (this.#closed) throw new Error('the credential store is closed');
  }
}

/**
 * The memory store, written out after every change as `{ version: 1, check, entries }` (temp file
 * with mode 0600, then rename, so a crash leaves the old or the new file). One process per file.
 */
export class FileCredentialStore extends MemoryCredentialStore {
  override readonly location: string;
  readonly #path: string;
  #writing: Promise<void> = Promise.resolve();

  private constructor(path: string, sealer: Sealer, options: LocalStoreOptions) {
    super(sealer, options);
    this.#path = path;
    this.location = path;
  }

  /** Reads the file once (absent: empty); a file that is not ours throws one line naming the path. */
  static async open(path: string, sealer: Sealer, options: LocalStoreOptions = {}): Promise<FileCredentialStore> {
    const store = new FileCredentialStore(path, sealer, options);
    const text = await readFile(path, 'utf8').catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return undefined;
      throw new Error(`cannot read the credentials file ${path}: ${err.message}`);
    });
    if (text !== undefined) {
      const parsed = parseCredentialsFile(path, text);
      store.check = parsed.check;
      const now = store.now();
      for (const [key, entry] of parsed.entries) if (entry.exp === undefined || entry.exp > now) store.entries.set(key, entry);
    }
    return store;
  }

  override async close(): Promise<void> {
    await super.close();
    await this.#writing;
  }

  /** Writes are serialized; each writes the whole current state, so the last one on disk is the latest. */
  protected override persist(): Promise<void> {
    const written = this.#writing.then(() => this.#write());
    this.#writing = written.catch(() => {}); // the failure reaches the caller of `written`
    return written;
  }

  async #write(): Promise<void> {
    const now = this.now();
    const entries = Object.fromEntries([...this.entries].filter(([, entry]) => entry.exp === undefined || entry.exp > now));
    const body = `${JSON.stringify({ version: 1, check: this.check, entries }, null, 2)}\n`;
    const dir = dirname(this.#path);
    const temp = join(dir, `.${basename(this.#path)}.${randomBytes(6).toString('hex')}.tmp`);
    try {
      await mkdir(dir, { recursive: true, mode: 0o700 });
      const handle = await open(temp, 'wx', 0o600);
      try {
        await handle.writeFile(body, 'utf8');
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(temp, this.#path);
    } catch (err) {
      await rm(temp, { force: true });
      this.logger.error('could not write the credentials file', { path: this.#path, err });
      throw err;
    }
  }
}

function parseCredentialsFile(path: string, text: string): { check: string | undefined; entries: Map<string, Entry> } {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    throw new Error(`the credentials file ${path} is not JSON`);
  }
  const shape = `the credentials file ${path} is not a Switchyard credentials file ({ version: 1, check, entries })`;
  if (!isRecord(data) || data.version !== 1 || !isRecord(data.entries) || !(data.check === undefined || typeof data.check === 'string')) {
    throw new Error(shape);
  }
  const entries = new Map<string, Entry>();
  for (const [key, entry] of Object.entries(data.entries)) {
    const exp = isRecord(entry) ? entry.exp : undefined;
    if (!isRecord(entry) || typeof entry.v !== 'string' || !(exp === undefined || (typeof exp === 'number' && Number.isFinite(exp)))) throw new Error(shape);
    entries.set(key, exp === undefined ? { v: entry.v } : { v: entry.v, exp });
  }
  return { check: data.check, entries };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function positiveMs(name: string, ms: number): number {
  if (!Number.isFinite(ms) || ms <= 0) throw new RangeError(`${name} must be a positive number of milliseconds, got ${ms}`);
  return ms;
}

interface HeldLock {
  timer: NodeJS.Timeout;
  freed: Promise<void>;
  free: () => void;
}

/** In-process locks with the Redis semantics: bounded wait, and a lapse at ttl if the holder never returns. */
class LocalLocks {
  readonly #held = new Map<string, HeldLock>();
  #closed = false;

  async run<T>(key: string, ttlMs: number, fn: () => Promise<T>, waitMs: number): Promise<T> {
    const deadline = Date.now() + waitMs;
    for (let held = this.#held.get(key); held; held = this.#held.get(key)) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`the credential lock on ${key} was still held after ${waitMs} ms`);
      await settleWithin(held.freed, left);
      if (this.#closed) throw new Error('the credential store is closed');
    }
    const lock = this.#take(key, ttlMs);
    try {
      return await fn();
    } finally {
      this.#free(key, lock);
    }
  }

  close(): void {
    this.#closed = true;
    for (const [key, lock] of [...this.#held]) this.#free(key, lock);
  }

  #take(key: string, ttlMs: number): HeldLock {
    let free: () => void = () => {};
    const freed = new Promise<void>((resolve) => (free = resolve));
    const lock: HeldLock = { freed, free, timer: setTimeout(() => this.#free(key, lock), ttlMs) };
    lock.timer.unref();
    this.#held.set(key, lock);
    return lock;
  }

  /** Frees `lock` if it is still the holder (a lapsed holder returning late must not free its successor). */
  #free(key: string, lock: HeldLock): void {
    if (this.#held.get(key) === lock) this.#held.delete(key);
    clearTimeout(lock.timer);
    lock.free();
  }
}

/** Resolves when `promise` settles or after `ms`, whichever is first; never leaves a timer behind. */
async function settleWithin(promise: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([promise, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/** In-process publish/subscribe; a throwing listener is logged and does not stop the others. */
class LocalChannels {
  readonly #listeners = new Map<string, Set<(message: string) => void>>();

  constructor(private readonly logger: Logger) {}

  publish(channel: string, message: string): void {
    for (const listener of [...(this.#listeners.get(channel) ?? [])]) {
      try {
        listener(message);
      } catch (err) {
        this.logger.error('a credential event listener threw', { err });
      }
    }
  }

  subscribe(channel: string, listener: (message: string) => void): () => void {
    let listeners = this.#listeners.get(channel);
    if (!listeners) this.#listeners.set(channel, (listeners = new Set()));
    listeners.add(listener);
    return () => {
      const current = this.#listeners.get(channel);
      if (current?.delete(listener) && current.size === 0) this.#listeners.delete(channel);
    };
  }

  clear(): void {
    this.#listeners.clear();
  }
}
