// Credentials in Redis, shared by every replica: sealed values under <prefix><key> with PX expiry,
// locks by SET NX PX released by compare-and-delete, change events over a second (SUBSCRIBE) connection.
// Every command is answered within COMMAND_TIMEOUT_MS or fails (at once while disconnected): a
// Redis that stalls or is gone costs a caller that long, and the caller decides without it.
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import type { Logger } from '../util/log.js';
import type { Sealer } from './sealed.js';

/** Deletes the lock only while it still holds our token: an expired lock taken by another is left alone. */
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;

/** Names beside the values under the same prefix; callers' keys may not take them. */
const CHECK_KEY = 'check';
const LOCK_PREFIX = 'lock:';
const EVENTS_PREFIX = 'events:';

const DEFAULT_CONNECT_TIMEOUT_MS = 5_000;
/** A command not answered within this long fails (a stalled Redis holds no request longer). */
const COMMAND_TIMEOUT_MS = 2_000;
const DEFAULT_LOCK_WAIT_MS = 10_000;
const LOCK_POLL_FIRST_MS = 50;
const LOCK_POLL_MAX_MS = 500;
const QUIT_TIMEOUT_MS = 1_000;
const SCAN_BATCH = 500;

export interface RedisCredentialStoreOptions {
  url: string;
  prefix: string;
  sealer: Sealer;
  logger: Logger;
  /** How long connect() waits for both connections (default 5 s). */
  connectTimeoutMs?: number;
  /** How long a command waits for its answer before it fails (default 2 s). */
  commandTimeoutMs?: number;
}

type Listener = (message: string) => void;

export class RedisCredentialStore {
  /** Where the credentials live, for messages: host and prefix, never the URL's password. */
  readonly location: string;
  readonly #redis: Redis;
  readonly #events: Redis;
  readonly #prefix: string;
  readonly #sealer: Sealer;
  readonly #logger: Logger;
  readonly #connectTimeoutMs: number;
  readonly #listeners = new Map<string, Set<Listener>>();
  readonly #reconnected = new Set<() => void>();
  #connected = false;
  #subscribing: Promise<unknown> = Promise.resolve();
  #lastError: unknown;
  #closed = false;

  constructor(options: RedisCredentialStoreOptions) {
    this.#prefix = options.prefix;
    this.#sealer = options.sealer;
    this.#logger = options.logger;
    this.#connectTimeoutMs = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
    this.location = `Redis ${describeRedisUrl(options.url)} (prefix "${options.prefix}")`;
    this.#redis = new Redis(options.url, {
      lazyConnect: true,
      maxRetriesPerRequest: 2,
      connectTimeout: this.#connectTimeoutMs,
      commandTimeout: options.commandTimeoutMs ?? COMMAND_TIMEOUT_MS,
      enableOfflineQueue: false, // fail at once while disconnected: the caller decides without the store
    });
    // SUBSCRIBE waits for a reconnection (ioredis subscribes again on each one), however long.
    this.#events = this.#redis.duplicate({ enableOfflineQueue: true, commandTimeout: undefined });
    for (const connection of [this.#redis, this.#events]) {
      connection.on('error', (err: unknown) => {
        if (!this.#closed && connection.status === 'ready') this.#logger.warn('Redis error on the credential store', { err });
        this.#lastError = err;
      });
    }
    this.#events.on('message', (channel: string, message: string) => this.#deliver(channel, message));
    this.#redis.on('ready', () => {
      if (!this.#connected || this.#closed) return;
      for (const listener of [...this.#reconnected]) listener();
    });
  }

  /** Calls `listener` each time the connection is ready again after a loss (Redis restarted, perhaps empty). */
  onReconnect(listener: () => void): void {
    this.#reconnected.add(listener);
  }

  /** Connects both connections, or throws one line after the connect timeout (ioredis keeps retrying until then). */
  async connect(): Promise<void> {
    const ready = Promise.all([readyOf(this.#redis), readyOf(this.#events)]);
    const controller = new AbortController();
    const timeout = sleep(this.#connectTimeoutMs, 'timeout' as const, { signal: controller.signal }).catch(() => 'aborted' as const);
    try {
      const outcome = await Promise.race([ready.then(() => 'ready' as const), timeout]);
      if (outcome === 'ready') {
        this.#connected = true;
        return;
      }
    } finally {
      controller.abort();
    }
    this.#redis.disconnect();
    this.#events.disconnect();
    const seconds = Math.round(this.#connectTimeoutMs / 100) / 10;
    throw new Error(`cannot reach ${this.location} for credentials within ${seconds} s (${reasonOf(this.#lastError)})`);
  }

  async get(key: string): Promise<unknown | undefined> {
    this.#assertOpen();
    const sealed = await this.#redis.get(this.#valueKey(key));
    if (sealed === null) return undefined;
    const value = this.#sealer.openJson(sealed, key);
    if (value === undefined) this.#logger.warn('a stored credential does not open with any credentials.key; treated as absent');
    return value;
  }

  async set(key: string, value: unknown, ttlMs?: number): Promise<void> {
    this.#assertOpen();
    const sealed = this.#sealer.sealJson(value, key);
    if (ttlMs === undefined) await this.#redis.set(this.#valueKey(key), sealed);
    else await this.#redis.set(this.#valueKey(key), sealed, 'PX', wholeMs('ttlMs', ttlMs));
  }

  async delete(key: string): Promise<boolean> {
    this.#assertOpen();
    return (await this.#redis.del(this.#valueKey(key))) > 0;
  }

  async setIfAbsent(key: string, value: unknown, ttlMs: number): Promise<boolean> {
    this.#assertOpen();
    const sealed = this.#sealer.sealJson(value, key);
    return (await this.#redis.set(this.#valueKey(key), sealed, 'PX', wholeMs('ttlMs', ttlMs), 'NX')) === 'OK';
  }

  async count(prefix: string): Promise<number> {
    this.#assertOpen();
    const pattern = `${escapeGlob(this.#prefix + prefix)}*`;
    const seen = new Set<string>(); // SCAN may return a key more than once
    let cursor = '0';
    do {
      const [next, keys] = await this.#redis.scan(cursor, 'MATCH', pattern, 'COUNT', SCAN_BATCH);
      for (const key of keys) if (!isReserved(key.slice(this.#prefix.length))) seen.add(key);
      cursor = next;
    } while (cursor !== '0');
    return seen.size;
  }

  /** Holds `lock:<key>` in Redis. If fn outlives ttlMs the lock lapses and another replica may enter. */
  async withLock<T>(key: string, ttlMs: number, fn: () => Promise<T>, waitMs = DEFAULT_LOCK_WAIT_MS): Promise<T> {
    this.#assertOpen();
    const lockKey = this.#prefix + LOCK_PREFIX + key;
    const token = randomBytes(16).toString('base64url');
    const ttl = wholeMs('ttlMs', ttlMs);
    const deadline = Date.now() + wholeMs('waitMs', waitMs);
    for (let pause = LOCK_POLL_FIRST_MS; ; pause = Math.min(pause * 2, LOCK_POLL_MAX_MS)) {
      let taken: string | null;
      try {
        taken = await this.#redis.set(lockKey, token, 'PX', ttl, 'NX');
      } catch (err) {
        // Unanswered, the SET may still run when Redis resumes: the release sent after it on the
        // same connection runs right after it then, so a stall does not leave the lock held for its ttl.
        this.#redis.eval(RELEASE, 1, lockKey, token).catch(() => {});
        throw err;
      }
      if (taken === 'OK') break;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`the credential lock on ${key} was still held after ${waitMs} ms`);
      await sleep(Math.min(pause, left));
      this.#assertOpen();
    }
    try {
      return await fn();
    } finally {
      try {
        await this.#redis.eval(RELEASE, 1, lockKey, token);
      } catch (err) {
        this.#logger.warn('could not release a credential lock; it lapses at its ttl', { err });
      }
    }
  }

  async publish(channel: string, message: string): Promise<void> {
    this.#assertOpen();
    await this.#redis.publish(this.#prefix + EVENTS_PREFIX + channel, message);
  }

  subscribe(channel: string, listener: Listener): () => void {
    this.#assertOpen();
    const redisChannel = this.#prefix + EVENTS_PREFIX + channel;
    let listeners = this.#listeners.get(redisChannel);
    if (!listeners) {
      listeners = new Set();
      this.#listeners.set(redisChannel, listeners);
      this.#track(this.#events.subscribe(redisChannel));
    }
    listeners.add(listener);
    return () => {
      const current = this.#listeners.get(redisChannel);
      if (!current?.delete(listener) || current.size > 0) return;
      this.#listeners.delete(redisChannel);
      if (!this.#closed) this.#track(this.#events.unsubscribe(redisChannel));
    };
  }

  /** Resolves once every SUBSCRIBE/UNSUBSCRIBE issued so far has been answered (messages published after it arrive). */
  async subscriptionsSettled(): Promise<void> {
    await this.#subscribing;
  }

  async readKeyCheck(): Promise<string | undefined> {
    return (await this.#redis.get(this.#prefix + CHECK_KEY)) ?? undefined;
  }

  /** Writes the key check; with onlyIfAbsent, false when another replica wrote one first. */
  async writeKeyCheck(sealed: string, onlyIfAbsent: boolean): Promise<boolean> {
    const key = this.#prefix + CHECK_KEY;
    return (onlyIfAbsent ? await this.#redis.set(key, sealed, 'NX') : await this.#redis.set(key, sealed)) === 'OK';
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#listeners.clear();
    this.#reconnected.clear();
    await Promise.all([quit(this.#redis), quit(this.#events)]);
  }

  #valueKey(key: string): string {
    if (isReserved(key)) throw new Error(`credential key "${key}" is reserved (the Redis store keeps its key check and locks beside the values)`);
    return this.#prefix + key;
  }

  #track(command: Promise<unknown>): void {
    const settled = command.catch((err: unknown) => {
      if (!this.#closed) this.#logger.error('Redis SUBSCRIBE/UNSUBSCRIBE for credential events failed', { err });
    });
    this.#subscribing = Promise.all([this.#subscribing, settled]);
  }

  #deliver(redisChannel: string, message: string): void {
    if (this.#closed) return;
    for (const listener of [...(this.#listeners.get(redisChannel) ?? [])]) {
      try {
        listener(message);
      } catch (err) {
        this.#logger.error('a credential event listener threw', { err });
      }
    }
  }

  #assertOpen(): void {
    if (this.#closed) throw new Error('the credential store is closed');
  }
}

function isReserved(key: string): boolean {
  return key === CHECK_KEY || key.startsWith(LOCK_PREFIX);
}

/** Redis glob specials, escaped so a prefix matches only itself. */
function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, (char) => `\\${char}`);
}

function wholeMs(name: string, ms: number): number {
  if (!Number.isFinite(ms) || ms <= 0) throw new RangeError(`${name} must be a positive number of milliseconds, got ${ms}`);
  return Math.ceil(ms);
}

/** Resolves at 'ready'. ioredis rejects connect() at the first refused attempt but goes on retrying, so wait for the event. */
function readyOf(connection: Redis): Promise<void> {
  if (connection.status === 'ready') return Promise.resolve();
  const ready = new Promise<void>((resolve) => connection.once('ready', () => resolve()));
  connection.connect().catch(() => {}); // the reason arrives as an 'error' event
  return ready;
}

async function quit(connection: Redis): Promise<void> {
  if (connection.status !== 'ready') {
    connection.disconnect();
    return;
  }
  const controller = new AbortController();
  try {
    await Promise.race([connection.quit(), sleep(QUIT_TIMEOUT_MS, undefined, { signal: controller.signal })]);
  } catch {
    // Closing anyway.
  } finally {
    controller.abort();
    connection.disconnect();
  }
}

function describeRedisUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}`;
  } catch {
    return '(unparseable URL)';
  }
}

function reasonOf(err: unknown): string {
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    const text = err.message || (typeof code === 'string' ? code : err.name);
    return text.replace(/\s+/g, ' ').trim();
  }
  return err === undefined ? 'no answer' : String(err).replace(/\s+/g, ' ');
}
