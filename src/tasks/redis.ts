// Tasks in Redis (sessions.store: redis), shared by every replica. A task is a hash (its state
// as JSON and its owner's lease, on the Redis clock) kept `ttlMs` after its last write; what
// other replicas ask of it waits in a list beside it; each principal's unexpired tasks are a
// sorted set by expiry (each write and renewal of a task moves its score with its TTL), so the
// bound per principal holds across replicas for as long as a task is kept. A task that ended
// stays as it ended. Every step that reads before it writes is one Lua script.
import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import type { JsonObject } from '../mcp/jsonrpc.js';
import { isObject } from '../mcp/jsonrpc.js';
import type { StoredTask, TaskRequests, TaskStore } from './store.js';

const NOW = `local t = redis.call('TIME') local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

/** Whether a stored task's JSON is terminal (completed, failed and cancelled are final). */
const ENDED = `local function ended(json)
  local status = cjson.decode(json).status
  return status == 'completed' or status == 'failed' or status == 'cancelled'
end`;

const CREATE = `${NOW}
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[4]) then return 0 end
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]), ARGV[5])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
redis.call('HSET', KEYS[1], 'task', ARGV[1], 'lease', now + tonumber(ARGV[2]))
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1`;

// The principal's set gets the task back if it was pruned while the task lived on.
const PUT = `${NOW} ${ENDED}
local stored = redis.call('HGET', KEYS[1], 'task')
if stored and ended(stored) then return 0 end
redis.call('HSET', KEYS[1], 'task', ARGV[1], 'lease', now + tonumber(ARGV[2]))
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]), ARGV[4])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return 1`;

const GET = `${NOW}
local v = redis.call('HMGET', KEYS[1], 'task', 'lease')
if not v[1] then return nil end
return {v[1], v[2], tostring(now)}`;

const FAIL = `${NOW} ${ENDED}
local v = redis.call('HMGET', KEYS[1], 'task', 'lease')
if not v[1] then return 0 end
if ended(v[1]) then return 0 end
if tonumber(v[2]) >= now then return 0 end
redis.call('HSET', KEYS[1], 'task', ARGV[1])
return 1`;

// KEYS: each task's hash then its principal's set; ARGV: lease, TTL, then the task ids.
const RENEW = `${NOW}
for i = 1, #KEYS, 2 do
  if redis.call('EXISTS', KEYS[i]) == 1 then
    redis.call('HSET', KEYS[i], 'lease', now + tonumber(ARGV[1]))
    redis.call('PEXPIRE', KEYS[i], ARGV[2])
    redis.call('ZADD', KEYS[i + 1], now + tonumber(ARGV[2]), ARGV[2 + (i + 1) / 2])
    redis.call('PEXPIRE', KEYS[i + 1], ARGV[2])
  end
end
return 1`;

type Scripted = Redis & {
  taskCreate(task: string, principal: string, json: string, leaseMs: string, ttlMs: string, max: string, id: string): Promise<number>;
  taskPut(task: string, principal: string, json: string, leaseMs: string, ttlMs: string, id: string): Promise<number>;
  taskGet(task: string): Promise<[string, string, string] | null>;
  taskFail(task: string, json: string): Promise<number>;
  taskRenew(...args: string[]): Promise<number>;
};

export class RedisTaskStore implements TaskStore {
  readonly #redis: Scripted;
  readonly #prefix: string;

  constructor(options: { url: string; prefix: string }) {
    this.#prefix = options.prefix;
    this.#redis = new Redis(options.url, { maxRetriesPerRequest: 1, commandTimeout: 2_000, connectTimeout: 2_000, retryStrategy: (attempt) => Math.min(attempt * 200, 2_000) }) as Scripted;
    this.#redis.on('error', () => {}); // a failed command fails the task step that made it
    this.#redis.defineCommand('taskCreate', { numberOfKeys: 2, lua: CREATE });
    this.#redis.defineCommand('taskPut', { numberOfKeys: 2, lua: PUT });
    this.#redis.defineCommand('taskGet', { numberOfKeys: 1, lua: GET });
    this.#redis.defineCommand('taskFail', { numberOfKeys: 1, lua: FAIL });
    this.#redis.defineCommand('taskRenew', { lua: RENEW });
  }

  #key(id: string): string {
    return `${this.#prefix}task:${id}`;
  }

  #inbox(id: string): string {
    return `${this.#prefix}task:${id}:in`;
  }

  #principal(principal: string): string {
    return `${this.#prefix}tasks:${createHash('sha256').update(principal).digest('base64url')}`;
  }

  async create(task: StoredTask, leaseMs: number, max: number): Promise<boolean> {
    return (await this.#redis.taskCreate(this.#key(task.id), this.#principal(task.principal), JSON.stringify(task), String(leaseMs), String(task.ttlMs), String(max), task.id)) === 1;
  }

  async get(id: string): Promise<{ task: StoredTask; leaseExpired: boolean } | undefined> {
    const found = await this.#redis.taskGet(this.#key(id));
    if (!found) return undefined;
    const [json, lease, now] = found;
    const task: unknown = JSON.parse(json);
    if (!isObject(task) || task.id !== id) return undefined;
    return { task: task as unknown as StoredTask, leaseExpired: Number(lease) < Number(now) };
  }

  async put(task: StoredTask, leaseMs: number): Promise<boolean> {
    return (await this.#redis.taskPut(this.#key(task.id), this.#principal(task.principal), JSON.stringify(task), String(leaseMs), String(task.ttlMs), task.id)) === 1;
  }

  async failIfAbandoned(task: StoredTask): Promise<boolean> {
    return (await this.#redis.taskFail(this.#key(task.id), JSON.stringify(task))) === 1;
  }

  async request(id: string, ask: { cancel: true } | { update: JsonObject }): Promise<void> {
    const inbox = this.#inbox(id);
    await this.#redis.multi().rpush(inbox, JSON.stringify(ask)).pexpire(inbox, 60 * 60_000).exec();
  }

  async take(ids: readonly string[]): Promise<Map<string, TaskRequests>> {
    const out = new Map<string, TaskRequests>();
    if (ids.length === 0) return out;
    const batch = this.#redis.multi();
    for (const id of ids) batch.lrange(this.#inbox(id), 0, -1).del(this.#inbox(id));
    const replies = (await batch.exec()) ?? [];
    ids.forEach((id, i) => {
      const [err, items] = replies[i * 2] ?? [];
      if (err || !Array.isArray(items) || items.length === 0) return;
      const requests: TaskRequests = { cancel: false, updates: [] };
      for (const item of items) {
        const ask: unknown = JSON.parse(String(item));
        if (isObject(ask) && ask.cancel === true) requests.cancel = true;
        else if (isObject(ask) && isObject(ask.update)) requests.updates.push(ask.update);
      }
      out.set(id, requests);
    });
    return out;
  }

  async renew(ids: readonly string[], leaseMs: number, ttlMs: number): Promise<void> {
    if (ids.length === 0) return;
    // A principal's set is named by a hash of the principal, which only the task itself holds.
    const read = this.#redis.pipeline();
    for (const id of ids) read.hget(this.#key(id), 'task');
    const replies = (await read.exec()) ?? [];
    const keys: string[] = [];
    const live: string[] = [];
    ids.forEach((id, i) => {
      const [err, json] = replies[i] ?? [];
      if (err) throw err;
      if (typeof json !== 'string') return; // expired: nothing to renew
      const task: unknown = JSON.parse(json);
      if (!isObject(task) || typeof task.principal !== 'string') return;
      keys.push(this.#key(id), this.#principal(task.principal));
      live.push(id);
    });
    if (live.length === 0) return;
    await this.#redis.taskRenew(String(keys.length), ...keys, String(leaseMs), String(ttlMs), ...live);
  }

  async close(): Promise<void> {
    this.#redis.disconnect();
  }
}
