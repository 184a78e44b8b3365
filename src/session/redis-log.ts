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
// While Redis fails (refuses, or hangs: nothing answers and the connection stays open) nothing is
// sent but the heartbeat, which finds its return; events are then dropped (at most
// IN_FLIGHT_BYTES wait unanswered before that), and a stream that lost some is marked once Redis
// is back, so no replica replays it across them. A client's DELETE is kept until it is written,
// and a replica that (re)subscribes to ended sessions reads the ends it may have missed.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import type { JsonRpcId } from '../mcp/jsonrpc.js';
import type { Logger } from '../util/log.js';
import { fingerprint, type SharedEvent, type SharedStream, type SharedStreamLog, type StreamKind } from './shared-log.js';

/** A replica's liveness key lives this long; refreshed three times as often. */
const ALIVE_MS = 3_000;
/** Event data sent and not yet answered past which events are dropped (a hung Redis holds them all). */
const IN_FLIGHT_BYTES = 8 * 1024 * 1024;
/** Ends not yet written, and streams that lost events, kept for Redis's return: at most this many each. */
const MAX_PENDING = 100_000;

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

/**
 * A stream lost events (never written): the newest is recorded as dropped, as the bounds record
 * theirs, so a resumption from before it is refused; a lost end is written. Only a stream Redis
 * knows (one whose beginning was lost is unknown to every replica anyway).
 * KEYS: the stream's hash. ARGV: the newest lost event's seq (0: none), '1' if its end was lost.
 */
const LOST = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if tonumber(ARGV[1]) > (tonumber(redis.call('HGET', KEYS[1], 'x')) or 0) then redis.call('HSET', KEYS[1], 'x', ARGV[1]) end
if ARGV[2] == '1' then redis.call('HSET', KEYS[1], 'd', '1') end
return 1
`;

type ScriptedRedis = Redis & {
  streamLogAppend(list: string, meta: string, order: string, total: string, stream: string, seq: string, data: string, events: string, bytes: string, ttlMs: string, base: string): Promise<unknown>;
  streamLogLost(meta: string, seq: string, done: string): Promise<unknown>;
};

/** What becomes of one write: its event data's size, and what follows its outcome. */
interface WriteOptions {
  bytes?: number;
  /** The heartbeat: sent while Redis fails, to find its return. */
  probe?: boolean;
  written?: () => void;
  /** Not sent, or failed. */
  lost?: () => void;
}

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
  /** Event data sent and not yet answered past which events are dropped; IN_FLIGHT_BYTES unless given. */
  maxInFlightBytes?: number;
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
  /** Ends (by fingerprint) not yet written, with when each may be forgotten: written once Redis answers. */
  readonly #unwritten = new Map<string, number>();
  /** Streams (by their hash's key) that lost events or their end while Redis failed: marked once it answers. */
  readonly #lost = new Map<string, { seq: number; done: boolean }>();
  #failing = false;
  /** Whether the connection was ever ready (before, a write not sent is nothing to report). */
  #wasReady = false;
  /** Event data sent and not yet answered (or timed out), and how much of it may be. */
  #inFlight = 0;
  readonly #maxInFlight: number;
  /** Events not written since Redis last came back. */
  #eventsLost = 0;
  /** Writes of ends under way (ends not yet written are sent again only once none is). */
  #endsInFlight = 0;
  /** Subscriptions made to ended sessions; ends written while none was active may have been missed. */
  #subscriptions = 0;
  #behind = false;
  #catchingUp = false;
  #closed = false;

  constructor(options: RedisStreamLogOptions) {
    // Redis takes whole milliseconds only (a key written with another would never expire).
    this.#options = { ...options, ttlMs: Math.max(1, Math.ceil(options.ttlMs)) };
    this.#maxInFlight = options.maxInFlightBytes ?? IN_FLIGHT_BYTES;
    this.#redis = new Redis(options.url, {
      enableAutoPipelining: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: 1_000,
      connectTimeout: 2_000,
      retryStrategy: (attempt) => Math.min(attempt * 200, 2_000),
    }) as ScriptedRedis;
    this.#redis.defineCommand('streamLogAppend', { numberOfKeys: 4, lua: APPEND });
    this.#redis.defineCommand('streamLogLost', { numberOfKeys: 1, lua: LOST });
    this.#redis.on('error', () => {}); // reported through #failed, once per outage
    this.#redis.on('ready', () => {
      this.#wasReady = true;
      this.#heartbeat();
    });
    this.#alive = setInterval(() => this.#heartbeat(), ALIVE_MS / 3);
    this.#alive.unref();
    // Subscribed on every connection (not resubscribed by ioredis), so the ends missed meanwhile are read after.
    this.#ends = this.#redis.duplicate({ enableOfflineQueue: true, autoResubscribe: false });
    this.#ends.on('error', () => {});
    this.#ends.on('message', (_channel: string, ended: string) => this.onSessionEnded?.(ended));
    this.#ends.on('ready', () => void this.#subscribe());
  }

  endSession(session: string, forMs: number): void {
    const ended = fingerprint(session);
    this.#unwritten.delete(ended);
    this.#unwritten.set(ended, Date.now() + forMs);
    if (this.#unwritten.size > MAX_PENDING) this.#unwritten.delete(this.#unwritten.keys().next().value!);
    this.#writeEnd(ended);
  }

  async sessionEnded(session: string): Promise<boolean> {
    // Without Redis a takeover goes on (the replica's own memory of ended ids still holds), and
    // the session is let go once Redis is back with an end written meanwhile (#writeEnd, #catchUp).
    return (await this.#redis.exists(this.#endedKey(fingerprint(session))).catch(() => 0)) === 1;
  }

  begin(session: string, stream: string, kind: StreamKind, requests: readonly JsonRpcId[]): void {
    const meta = this.#key(session, stream, 'm');
    this.#write(this.#redis.multi().hset(meta, 'k', kind, 'r', JSON.stringify(requests), 'o', this.#replica).pexpire(meta, this.#options.ttlMs));
  }

  append(session: string, stream: string, seq: number, data: string): void {
    const base = this.#sessionKey(session);
    const meta = `${base}${stream}:m`;
    const { events, bytes, ttlMs } = this.#options;
    const batch = { exec: () => this.#redis.streamLogAppend(`${base}${stream}:e`, meta, `${base}order`, `${base}bytes`, stream, String(seq), data, String(events), String(bytes), String(ttlMs), base) };
    this.#write(batch, { bytes: data.length, lost: () => this.#lose(meta, seq, false) });
  }

  end(session: string, stream: string): void {
    const meta = this.#key(session, stream, 'm');
    this.#write(this.#redis.multi().hset(meta, 'd', '1').pexpire(meta, this.#options.ttlMs), { lost: () => this.#lose(meta, 0, true) });
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
    this.#closed = true;
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
    void this.#catchUp();
    if (this.#redis.status !== 'ready') return;
    const batch = this.#redis.multi().set(this.#aliveKey(this.#replica), '1', 'PX', ALIVE_MS);
    const { ttlMs } = this.#options;
    const now = Date.now();
    // While Redis fails it is only a probe: the streams held are renewed once it answers.
    for (const [meta, held] of this.#failing ? [] : this.#held) {
      // Renewed a heartbeat before half its TTL has gone (one heartbeat may come late).
      if (now - held.renewedAt < ttlMs / 2 - ALIVE_MS / 3) continue;
      held.renewedAt = now;
      batch.pexpire(meta, ttlMs);
      for (const key of held.keys) batch.pexpire(key, ttlMs);
    }
    this.#write(batch, { probe: true, written: () => this.#flush() });
  }

  /**
   * Sends a write, unless Redis fails (refused, or not answering: only the heartbeat's probe goes
   * then) or has not answered IN_FLIGHT_BYTES of event data already (hung, or far behind).
   */
  #write(batch: { exec(): Promise<unknown> }, options: WriteOptions = {}): void {
    const bytes = options.bytes ?? 0;
    const { status } = this.#redis;
    let refused: Error | undefined;
    if (status !== 'ready') refused = new Error(`Redis ${status}`);
    else if (this.#failing && !options.probe) refused = new Error('Redis failing');
    else if (this.#inFlight > 0 && this.#inFlight + bytes > this.#maxInFlight) refused = new Error(`Redis has not answered ${this.#inFlight} bytes of events`);
    if (refused) {
      options.lost?.();
      // Before the connection was ever ready, there is nothing to report yet.
      if (this.#wasReady || status === 'ready') this.#failed(refused);
      return;
    }
    this.#inFlight += bytes;
    batch.exec().then(
      () => {
        this.#inFlight -= bytes;
        if (this.#failing) this.#recovered();
        options.written?.();
      },
      (err: unknown) => {
        this.#inFlight -= bytes;
        options.lost?.();
        this.#failed(err);
      },
    );
  }

  #failed(err: unknown): void {
    if (this.#failing) return;
    this.#failing = true;
    this.#options.logger.error('Redis unreachable or not answering; SSE events are replayed only by the replica that sent them, and client DELETEs reach the other replicas, once it is back', { err });
  }

  #recovered(): void {
    this.#failing = false;
    this.#options.logger.warn('Redis reachable again; the replay log is shared again', { eventsLost: this.#eventsLost, endsToWrite: this.#unwritten.size, streamsToMark: this.#lost.size });
    this.#eventsLost = 0;
    this.#flush();
  }

  /** A stream's event (or its end) was not written: marked as lost once Redis answers. */
  #lose(meta: string, seq: number, done: boolean): void {
    if (seq > 0) this.#eventsLost++;
    const known = this.#lost.get(meta);
    this.#lost.delete(meta);
    this.#lost.set(meta, { seq: Math.max(seq, known?.seq ?? 0), done: done || known?.done === true });
    if (this.#lost.size > MAX_PENDING) this.#lost.delete(this.#lost.keys().next().value!);
  }

  /** Writes what waited for Redis: the streams' losses first (before any later event of theirs), then the ends. */
  #flush(): void {
    if (this.#failing || this.#redis.status !== 'ready') return;
    const lost = [...this.#lost];
    this.#lost.clear();
    for (const [meta, { seq, done }] of lost) {
      this.#write({ exec: () => this.#redis.streamLogLost(meta, String(seq), done ? '1' : '0') }, { lost: () => this.#lose(meta, seq, done) });
    }
    if (this.#endsInFlight > 0) return;
    for (const ended of [...this.#unwritten.keys()]) this.#writeEnd(ended);
  }

  /** Writes an end (and tells the replicas subscribed): kept until written, or until no replica would open the id anyway. */
  #writeEnd(ended: string): void {
    const until = this.#unwritten.get(ended);
    if (until === undefined) return;
    const left = Math.ceil(until - Date.now());
    if (left <= 0) return void this.#unwritten.delete(ended);
    const settled = (): void => void this.#endsInFlight--;
    this.#endsInFlight++;
    this.#write(this.#redis.multi().set(this.#endedKey(ended), '1', 'PX', left).publish(this.#endsChannel(), ended), {
      written: () => {
        settled();
        if (this.#unwritten.get(ended) === until) this.#unwritten.delete(ended);
      },
      lost: settled,
    });
  }

  async #subscribe(): Promise<void> {
    try {
      await this.#ends.subscribe(this.#endsChannel());
    } catch {
      // Not answered in time: tried again while the connection lasts (a new one subscribes anew).
      if (!this.#closed && this.#ends.status === 'ready') setTimeout(() => void this.#subscribe(), ALIVE_MS / 3).unref();
      return;
    }
    this.#subscriptions++;
    this.#behind = true;
    await this.#catchUp();
  }

  /**
   * Ends written while this replica was not subscribed (its connection or Redis was down, or it
   * was not running) are read from their keys, now that it is: it then misses none.
   */
  async #catchUp(): Promise<void> {
    if (!this.#behind || this.#catchingUp || this.#redis.status !== 'ready') return;
    this.#catchingUp = true;
    const subscription = this.#subscriptions;
    const head = this.#endedKey('');
    try {
      let cursor = '0';
      do {
        const [next, keys] = await this.#redis.scan(cursor, 'MATCH', `${head.replace(/[*?[\]\\]/g, '\\$&')}*`, 'COUNT', 1000);
        for (const key of keys) this.onSessionEnded?.(key.slice(head.length));
        cursor = next;
      } while (cursor !== '0');
      if (subscription === this.#subscriptions) this.#behind = false;
    } catch {
      // Read again at the next heartbeat.
    } finally {
      this.#catchingUp = false;
    }
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
