// Buckets in Redis, shared by every replica: one atomic Lua script per bucket update, on the
// Redis clock. A key expires when its bucket would be full again given what it holds, renewed by
// every take (on the same clock, so with no margin); a bucket left full is deleted, the same as
// none. When Redis cannot be reached the store falls back to local buckets (logged once,
// visible on /healthz) and returns to Redis when it is back.
import { Redis } from 'ioredis';
import type { Logger } from '../util/log.js';
import { refillPerMs, type BucketLimit, type Decision } from './bucket.js';
import { MemoryBucketStore, type BucketStore } from './memory-store.js';

const TAKE = `
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local perMs = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = burst
if state[1] then
  tokens = math.min(burst, tonumber(state[1]) + math.max(0, now - tonumber(state[2])) * perMs)
end
local allowed = 0
if tokens + 1e-9 >= cost then
  tokens = math.max(0, tokens - cost)
  allowed = 1
end
local reset = math.ceil((burst - tokens) / perMs)
if reset > 0 then
  redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
  redis.call('PEXPIRE', KEYS[1], reset)
else
  redis.call('DEL', KEYS[1])
end
local retry = 0
if allowed == 0 then retry = math.ceil((cost - tokens) / perMs) end
return {allowed, math.floor(tokens), retry, reset}
`;

export interface RedisStoreState {
  store: 'redis';
  /**
   * connected: buckets live in Redis; fallback: local buckets while Redis is unreachable;
   * connecting: not answered yet (local buckets meanwhile).
   */
  state: 'connecting' | 'connected' | 'fallback';
  since: string;
}

/** While falling back, Redis is tried again at most this often (a failed command, not a lost connection). */
const RETRY_REDIS_MS = 1_000;

type RedisWithTake = Redis & { switchyardTake(key: string, perMs: string, burst: string, cost: string): Promise<[number, number, number, number]> };

export class RedisBucketStore implements BucketStore {
  readonly #redis: RedisWithTake;
  readonly #prefix: string;
  readonly #fallback: MemoryBucketStore;
  readonly #logger: Logger;
  #state: RedisStoreState = { store: 'redis', state: 'connecting', since: new Date().toISOString() };
  #lastTry = 0;

  constructor(options: { url: string; prefix: string; maxBuckets: number; logger: Logger }) {
    this.#prefix = options.prefix;
    this.#logger = options.logger;
    this.#fallback = new MemoryBucketStore(options.maxBuckets);
    this.#redis = new Redis(options.url, {
      lazyConnect: false,
      enableOfflineQueue: false, // fail at once while disconnected: that is when we fall back
      maxRetriesPerRequest: 0,
      commandTimeout: 500,
      connectTimeout: 2_000,
      retryStrategy: (attempt) => Math.min(attempt * 200, 2_000),
    }) as RedisWithTake;
    this.#redis.defineCommand('switchyardTake', { numberOfKeys: 1, lua: TAKE });
    this.#redis.on('error', () => {}); // reported through #degrade, once
    this.#redis.on('ready', () => this.#set('connected'));
    this.#redis.on('close', () => this.#set('fallback'));
  }

  get health(): RedisStoreState {
    return { ...this.#state };
  }

  async take(key: string, limit: BucketLimit, cost = 1): Promise<Decision> {
    const now = Date.now();
    const retry = this.#state.state !== 'connected' && now - this.#lastTry >= RETRY_REDIS_MS;
    if (this.#redis.status === 'ready' && (this.#state.state === 'connected' || retry)) {
      this.#lastTry = now;
      try {
        const [allowed, remaining, retryAfterMs, resetMs] = await this.#redis.switchyardTake(
          this.#prefix + key,
          String(refillPerMs(limit)),
          String(limit.burst),
          String(cost),
        );
        this.#set('connected');
        return { allowed: allowed === 1, remaining, retryAfterMs, resetMs };
      } catch (err) {
        this.#set('fallback', err);
      }
    }
    return this.#fallback.takeNow(key, limit, cost);
  }

  async close(): Promise<void> {
    this.#redis.disconnect();
    await this.#fallback.close();
  }

  #set(state: RedisStoreState['state'], err?: unknown): void {
    const previous = this.#state.state;
    if (previous === state) return;
    this.#state = { store: 'redis', state, since: new Date().toISOString() };
    if (state === 'fallback') this.#logger.error('Redis unreachable; rate limits use local buckets until it is back', { err });
    else if (previous === 'fallback') this.#logger.warn('Redis reachable again; rate limits are shared again');
  }
}
