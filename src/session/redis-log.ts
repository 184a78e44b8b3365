// The shared replay log in Redis (sessions.store: redis). Per stream, a list of its events
// ("<seq> <data>") and a hash of what it is (kind, the requests it answers, the replica writing
// it, done, the newest of its events dropped). Per session, the order its events came in and
// their bytes: a script appends and drops the oldest past sessions.replayEvents or replayBytes,
// as a replica's own log does (streams.ts), so a resumption is answered alike on any replica.
// Keys name the session by a hash of its id (the id itself is never stored) and expire
// sessions.idleTimeout after their last write, or while a client's connection holds the stream
// on a replica, after it let go.
// Each replica refreshes a short-lived key of its own: a stream whose writer's key is gone will
// not be written to again. Writes are never waited for; a failed one is logged once per outage.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import type { JsonRpcId } from '../mcp/jsonrpc.js';
import type { Logger } from '../util/log.js';
import { fingerprint, type SharedEvent, type SharedStream, type SharedStreamLog, type StreamKind } from './shared-log.js';

/** A replica's liveness key lives this long; refreshed three times as often. */
const ALIVE_MS = 3_000;

/**
 * Appends an event and drops the session's oldest, across its streams, while it holds more than
 * its events or (keeping the newest) its bytes; a stream that lost events is told the newest it
 * lost. One script, so replicas writing one session at once keep it bounded. The streams it drops
 * from are keys of the same session, named here (a single Redis, not a cluster).
 * KEYS: the stream's events, its hash, the session's order ("<stream> <seq> <bytes>"), its bytes.
 * ARGV: stream, seq, data, events, bytes, TTL in ms, the session's key prefix.
 */
const APPEND = `
local list, meta, order, total = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local maxEvents, maxBytes, ttl, base = tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6], ARGV[7]
redis.call('RPUSH', list, ARGV[2] .. ' ' .. ARGV[3])
local count = redis.call('RPUSH', order, ARGV[1] .. ' ' .. ARGV[2] .. ' ' .. #ARGV[3])
local bytes = (tonumber(redis.call('GET', total)) or 0) + #ARGV[3]
while count > maxEvents or (bytes > maxBytes and count > 1) do
  local stream, seq, size = string.match(redis.call('LPOP', order), '^(%S+) (%d+) (%d+)$')
  count = count - 1
  if stream then
    bytes = bytes - tonumber(size)
    local events, dropped = base .. stream .. ':e', tonumber(seq)
    local head = redis.call('LINDEX', events, 0)
    while head and (tonumber(string.match(head, '^%d+')) or 0) <= dropped do
      redis.call('LPOP', events)
      head = redis.call('LINDEX', events, 0)
    end
    if redis.call('EXISTS', base .. stream .. ':m') == 1 then redis.call('HSET', base .. stream .. ':m', 'x', seq) end
  end
end
-- Events the order lost (Redis evicted it) are bounded all the same.
redis.call('LTRIM', list, -maxEvents, -1)
redis.call('PEXPIRE', list, ttl)
redis.call('PEXPIRE', meta, ttl)
redis.call('PEXPIRE', order, ttl)
redis.call('SET', total, bytes, 'PX', ttl)
`;

type ScriptedRedis = Redis & {
  streamLogAppend(list: string, meta: string, order: string, total: string, stream: string, seq: string, data: string, events: string, bytes: string, ttlMs: string, base: string): Promise<unknown>;
};

export interface RedisStreamLogOptions {
  url: string;
  prefix: string;
  /** Events kept per session, across its streams (sessions.replayEvents). */
  events: number;
  /** Bytes of their data kept per session (sessions.replayBytes); the newest event is kept whatever its size. */
  bytes: number;
  /** Keys expire this long after their stream's last write. */
  ttlMs: number;
  logger: Logger;
}

export class RedisStreamLog implements SharedStreamLog {
  readonly #redis: ScriptedRedis;
  /** A connection in subscriber mode: sessions ended on other replicas. */
  readonly #ends: Redis;
  onSessionEnded?: (fingerprint: string) => void;
  readonly #options: RedisStreamLogOptions;
  /** This replica, as streams' writer. */
  readonly #replica = randomBytes(8).toString('hex');
  readonly #alive: NodeJS.Timeout;
  /**
   * Streams a client's connection holds here, by their hash's key (with the keys of its events
   * and its session's): a quiet one is kept from expiring, its keys' TTL renewed every half TTL
   * (at the heartbeat).
   */
  readonly #held = new Map<string, { keys: string[]; renewedAt: number }>();
  #failing = false;

  constructor(options: RedisStreamLogOptions) {
    // Redis takes whole milliseconds only (a key written with another would never expire).
    this.#options = { ...options, ttlMs: Math.max(1, Math.ceil(options.ttlMs)) };
    this.#redis = new Redis(options.url, {
      enableAutoPipelining: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: 1_000,
      connectTimeout: 2_000,
      retryStrategy: (attempt) => Math.min(attempt * 200, 2_000),
    }) as ScriptedRedis;
    this.#redis.defineCommand('streamLogAppend', { numberOfKeys: 4, lua: APPEND });
    this.#redis.on('error', () => {}); // reported through #failed, once per outage
    this.#redis.on('ready', () => this.#heartbeat());
    this.#alive = setInterval(() => this.#heartbeat(), ALIVE_MS / 3);
    this.#alive.unref();
    this.#ends = this.#redis.duplicate({ enableOfflineQueue: true });
    this.#ends.on('error', () => {});
    this.#ends.on('message', (_channel: string, ended: string) => this.onSessionEnded?.(ended));
    this.#ends.subscribe(this.#endsChannel()).catch(() => {}); // retried on reconnect by ioredis
  }

  endSession(session: string, forMs: number): void {
    const ended = fingerprint(session);
    this.#write(this.#redis.multi().set(this.#endedKey(ended), '1', 'PX', Math.max(1, Math.ceil(forMs))).publish(this.#endsChannel(), ended));
  }

  async sessionEnded(session: string): Promise<boolean> {
    // Without Redis a takeover goes on (the replica's own memory of ended ids still holds).
    return (await this.#redis.exists(this.#endedKey(fingerprint(session))).catch(() => 0)) === 1;
  }

  begin(session: string, stream: string, kind: StreamKind, requests: readonly JsonRpcId[]): void {
    const meta = this.#key(session, stream, 'm');
    this.#write(this.#redis.multi().hset(meta, 'k', kind, 'r', JSON.stringify(requests), 'o', this.#replica).pexpire(meta, this.#options.ttlMs));
  }

  append(session: string, stream: string, seq: number, data: string): void {
    const base = this.#sessionKey(session);
    const { events, bytes, ttlMs } = this.#options;
    this.#write({
      exec: () => this.#redis.streamLogAppend(`${base}${stream}:e`, `${base}${stream}:m`, `${base}order`, `${base}bytes`, stream, String(seq), data, String(events), String(bytes), String(ttlMs), base),
    });
  }

  end(session: string, stream: string): void {
    const meta = this.#key(session, stream, 'm');
    this.#write(this.#redis.multi().hset(meta, 'd', '1').pexpire(meta, this.#options.ttlMs));
  }

  hold(session: string, stream: string, held: boolean): void {
    const meta = this.#key(session, stream, 'm');
    if (!held) return void this.#held.delete(meta);
    const base = this.#sessionKey(session);
    this.#held.set(meta, { keys: [`${base}${stream}:e`, `${base}order`, `${base}bytes`], renewedAt: Date.now() });
  }

  async read(session: string, stream: string, after: number): Promise<SharedStream | undefined> {
    const meta = await this.#redis.hgetall(this.#key(session, stream, 'm'));
    const kind = meta.k;
    if (kind !== 'request' && kind !== 'standalone') return undefined;
    const [raw, alive] = await Promise.all([this.#redis.lrange(this.#key(session, stream, 'e'), 0, -1), meta.o ? this.#redis.exists(this.#aliveKey(meta.o)) : Promise.resolve(0)]);
    const events: SharedEvent[] = [];
    for (const entry of raw) {
      const space = entry.indexOf(' ');
      const seq = Number(entry.slice(0, space));
      if (space > 0 && Number.isSafeInteger(seq) && seq > after) events.push({ seq, data: entry.slice(space + 1) });
    }
    return { kind, done: meta.d === '1', requests: parseIds(meta.r), writerAlive: alive === 1, dropped: Number(meta.x ?? 0) > after, events };
  }

  async close(): Promise<void> {
    clearInterval(this.#alive);
    await this.#ends.quit().catch(() => this.#ends.disconnect());
    // Writes already sent are flushed; the replica's liveness key goes with it.
    await this.#redis.del(this.#aliveKey(this.#replica)).catch(() => {});
    await this.#redis.quit().catch(() => this.#redis.disconnect());
  }

  #key(session: string, stream: string, part: 'e' | 'm'): string {
    return `${this.#sessionKey(session)}${stream}:${part}`;
  }

  /** What every key of the session's log begins with. */
  #sessionKey(session: string): string {
    return `${this.#options.prefix}log:${fingerprint(session)}:`;
  }

  #endedKey(ended: string): string {
    return `${this.#options.prefix}ended:${ended}`;
  }

  #endsChannel(): string {
    return `${this.#options.prefix}ended`;
  }

  #aliveKey(replica: string): string {
    return `${this.#options.prefix}replica:${replica}`;
  }

  #heartbeat(): void {
    if (this.#redis.status !== 'ready') return;
    const batch = this.#redis.multi().set(this.#aliveKey(this.#replica), '1', 'PX', ALIVE_MS);
    const { ttlMs } = this.#options;
    const now = Date.now();
    for (const [meta, held] of this.#held) {
      // Renewed a heartbeat before half its TTL has gone (one heartbeat may come late).
      if (now - held.renewedAt < ttlMs / 2 - ALIVE_MS / 3) continue;
      held.renewedAt = now;
      batch.pexpire(meta, ttlMs);
      for (const key of held.keys) batch.pexpire(key, ttlMs);
    }
    this.#write(batch);
  }

  #write(batch: { exec(): Promise<unknown> }): void {
    const { status } = this.#redis;
    if (status === 'connecting' || status === 'connect') return; // not yet: nothing to report
    if (status !== 'ready') return this.#failed(new Error(`Redis ${status}`));
    batch.exec().then(
      () => {
        if (!this.#failing) return;
        this.#failing = false;
        this.#options.logger.warn('Redis reachable again; the replay log is shared again');
      },
      (err: unknown) => this.#failed(err),
    );
  }

  #failed(err: unknown): void {
    if (this.#failing) return;
    this.#failing = true;
    this.#options.logger.error('Redis unreachable; SSE events are replayed only by the replica that sent them until it is back', { err });
  }
}

function parseIds(text: string | undefined): JsonRpcId[] {
  if (text === undefined) return [];
  try {
    const value: unknown = JSON.parse(text);
    return Array.isArray(value) ? value.filter((id): id is JsonRpcId => typeof id === 'string' || typeof id === 'number') : [];
  } catch {
    return [];
  }
}
