// Logical SSE streams of a client session, and the bounded log that makes them resumable
// (spec: basic/transports.mdx "Resumability and Redelivery", "Multiple Connections").
// A stream outlives its HTTP connections: every message gets an event id `<stream key>.<seq>`
// and a place in the session's log, is written to the stream's connection if one is attached,
// and is replayed when the client comes back with Last-Event-ID, never on another stream.
import { randomBytes } from 'node:crypto';
import type { JsonRpcId, JsonRpcMessage } from '../mcp/jsonrpc.js';
import { isDroppable } from '../mcp/methods.js';
import { encodeSseEvent } from '../util/sse.js';
import type { StreamKind, StreamMirror } from './shared-log.js';

/** One HTTP response carrying SSE (implemented by the HTTP layer). */
export interface StreamConnection {
  /**
   * `droppable`: the method of a notification the connection may drop for a client that does
   * not read; `bytes`: the chunk's length in UTF-8, when the writer knows it.
   */
  write(chunk: string, droppable?: string, bytes?: number): void;
  close(): void;
}

/** The method of a message that may be dropped for a slow reader, else undefined. */
export function droppableMethod(message: JsonRpcMessage): string | undefined {
  return 'method' in message && !('id' in message) && isDroppable(message.method) ? message.method : undefined;
}

export interface LogLimits {
  events: number;
  bytes: number;
  /** What every session's log may hold together (sessions.replayTotalBytes). */
  budget?: ReplayBudget;
}

/**
 * The bytes all sessions' replay logs hold together, bounded: when an append takes the total
 * over the limit, logs holding more than their fair share (the limit over the logs alive) give
 * back their oldest events, round-robin, until the total fits again. An idle session's stale
 * buffer thus shrinks before an active session loses what it just sent.
 */
export class ReplayBudget {
  readonly limit: number;
  #used = 0;
  readonly #logs: EventLog[] = [];
  #next = 0;

  constructor(limit: number) {
    this.limit = limit;
  }

  get used(): number {
    return this.#used;
  }

  get logs(): number {
    return this.#logs.length;
  }

  /** @internal (EventLog) */
  join(log: EventLog): number {
    this.#logs.push(log);
    return this.#logs.length - 1;
  }

  /** @internal (EventLog): the log at `index` is gone; the last one takes its place. */
  leave(index: number, bytes: number): void {
    this.#used -= bytes;
    const last = this.#logs.pop()!;
    if (index < this.#logs.length) {
      this.#logs[index] = last;
      last.budgetIndex = index;
    }
  }

  /** @internal (EventLog) */
  add(bytes: number): void {
    this.#used += bytes;
  }

  /** Brings the total back under the limit (a log may lose every event it holds: replay is best effort). */
  reclaim(): void {
    const share = this.limit / Math.max(1, this.#logs.length);
    for (let scanned = 0; this.#used > this.limit && scanned < this.#logs.length; scanned++) {
      if (this.#next >= this.#logs.length) this.#next = 0;
      this.#logs[this.#next++]!.trimTo(share);
    }
  }
}

/** A stream as the log knows it: its key, and the newest of its events the log had to drop. */
export interface LoggedStream {
  readonly key: string;
  /** @internal (EventLog) 0 until an event of the stream is dropped. */
  droppedUpTo: number;
}

interface LoggedEvent {
  stream: LoggedStream;
  seq: number;
  data: string;
  bytes: number;
}

/**
 * The session's replay buffer: the newest events of all its streams, bounded by count and
 * bytes. Tells each stream the newest sequence number of its events it had to drop, so a
 * resumption that would skip dropped events is refused rather than silently incomplete. (That
 * is the stream's to hold: kept here by key, it outlived the streams the session forgot.)
 */
export class EventLog {
  readonly #limits: LogLimits;
  /** The events, oldest first from #head; the slots before it were dropped and hold nothing. */
  #events: (LoggedEvent | undefined)[] = [];
  #head = 0;
  #bytes = 0;
  /** @internal (ReplayBudget): this log's place in the budget's list. */
  budgetIndex = -1;
  #released = false;
  /** This log's stream keys: a random first half, and a count from a random start as the second. */
  readonly #keyPrefix: string;
  #keyCount: number;

  constructor(limits: LogLimits) {
    this.#limits = limits;
    if (limits.budget) this.budgetIndex = limits.budget.join(this);
    const random = randomBytes(6);
    this.#keyPrefix = random.toString('hex', 0, 3);
    this.#keyCount = random.readUIntBE(3, 3);
  }

  /**
   * A key for a new stream of the session: 12 hex digits, unique in this log (16 million
   * streams before its count comes round, when the log has long let go of the first), and
   * apart from another replica's log of the same session (another random first half).
   */
  newKey(): string {
    this.#keyCount = (this.#keyCount + 1) & 0xffffff;
    // The count as six hex digits: 0x1000000 + count is seven, the first of them a 1.
    return this.#keyPrefix + (0x1000000 + this.#keyCount).toString(16).slice(1);
  }

  /** Bytes held. */
  get bytes(): number {
    return this.#bytes;
  }

  /** `bytes`: the data's length in UTF-8, when the caller knows it. */
  append(stream: LoggedStream, seq: number, data: string, bytes = Buffer.byteLength(data)): void {
    if (this.#released) return;
    this.#events.push({ stream, seq, data, bytes });
    this.#bytes += bytes;
    const { budget } = this.#limits;
    budget?.add(bytes);
    while (this.#events.length - this.#head > this.#limits.events || (this.#bytes > this.#limits.bytes && this.#events.length - this.#head > 1)) this.#dropOldest();
    if (budget && budget.used > budget.limit) budget.reclaim();
    this.#compact();
  }

  /** Drops the oldest events until this log holds at most `bytes` (the budget's fair share). */
  trimTo(bytes: number): void {
    while (this.#bytes > bytes && this.#events.length - this.#head > 0) this.#dropOldest();
    this.#compact();
  }

  /** The session ended: its bytes go back to the budget. Idempotent. */
  release(): void {
    if (this.#released) return;
    this.#released = true;
    if (this.#limits.budget && this.budgetIndex >= 0) this.#limits.budget.leave(this.budgetIndex, this.#bytes);
    this.budgetIndex = -1;
    this.#events = [];
    this.#head = 0;
    this.#bytes = 0;
  }

  #dropOldest(): void {
    const dropped = this.#events[this.#head]!;
    // Let go of the dropped event now: the array is compacted only now and then.
    this.#events[this.#head++] = undefined;
    this.#bytes -= dropped.bytes;
    this.#limits.budget?.add(-dropped.bytes);
    dropped.stream.droppedUpTo = dropped.seq;
  }

  #compact(): void {
    if (this.#head > 1_024 && this.#head * 2 > this.#events.length) {
      this.#events = this.#events.slice(this.#head);
      this.#head = 0;
    } else if (this.#head === this.#events.length && this.#head > 0) {
      this.#events = [];
      this.#head = 0;
    }
  }

  /**
   * The stream's events after `seq`; undefined when some of them were dropped, unless
   * `partial` accepts what is left.
   */
  after(stream: LoggedStream, seq: number, partial = false): LoggedEvent[] | undefined {
    if (!partial && stream.droppedUpTo > seq) return undefined;
    const out: LoggedEvent[] = [];
    for (let i = this.#head; i < this.#events.length; i++) {
      const event = this.#events[i]!;
      if (event.stream === stream && event.seq > seq) out.push(event);
    }
    return out;
  }
}

export type { StreamKind };

export interface AttachOptions {
  /**
   * Replay events after this sequence number (a resumption: refused when some were dropped).
   * By default, the events never written to a connection that the log still holds.
   */
  after?: number;
  /** Write the priming event (an id and empty data) and the retry hint first (2025-11-25). */
  primeRetryMs?: number;
}

export class SessionStream implements LoggedStream {
  readonly key: string;
  readonly kind: StreamKind;
  /** @internal (EventLog) */
  droppedUpTo = 0;
  readonly #log: EventLog;
  /** Where its events are also written for other replicas (sessions.store: redis). */
  readonly #mirror: StreamMirror | undefined;
  /** Told when a connection attaches to a stream that had none, and when the last one goes. */
  onattached?: (attached: boolean) => void;
  #nextSeq = 1;
  /** The highest sequence number written to a connection. */
  #written = 0;
  #connection: StreamConnection | undefined;
  #done = false;
  #primed = false;

  /** `requests`: what a request stream answers (another replica answers them if this one is gone). */
  constructor(kind: StreamKind, log: EventLog, mirror?: StreamMirror, requests: readonly JsonRpcId[] = []) {
    this.key = log.newKey();
    this.kind = kind;
    this.#log = log;
    this.#mirror = mirror;
    mirror?.begin(this.key, kind, requests);
  }

  get attached(): boolean {
    return this.#connection !== undefined;
  }

  /** A request stream is done once its response was sent; it then only serves replays. */
  get done(): boolean {
    return this.#done;
  }

  /**
   * Whether a resumption after `seq` has nothing left to give: the stream ended and the client
   * saw every event of it (a cancelled request's stream ends with no response at all).
   */
  exhaustedAfter(seq: number): boolean {
    return this.#done && this.#log.after(this, seq)?.length === 0;
  }

  send(message: JsonRpcMessage): void {
    const seq = this.#nextSeq++;
    const data = JSON.stringify(message);
    const bytes = Buffer.byteLength(data);
    this.#log.append(this, seq, data, bytes);
    this.#mirror?.append(this.key, seq, data);
    if (this.#connection) {
      const event = encodeSseEvent(data, `${this.key}.${seq}`);
      // What the event adds to the data is ASCII: its length in UTF-8 is its length.
      this.#connection.write(event, droppableMethod(message), bytes + event.length - data.length);
      this.#written = seq;
    }
  }

  /**
   * Attaches a connection (replacing any other: the client knows its old one is gone) and
   * replays what it missed. False when some of those events were dropped from the log.
   */
  attach(connection: StreamConnection, options: AttachOptions = {}): boolean {
    const resuming = options.after !== undefined;
    // Nothing sent that a connection has not had (a POST's stream as it opens): nothing to read
    // from the log, which holds every stream's events of the session (read only to replay).
    const unsent = resuming || this.#nextSeq - 1 > this.#written;
    const events = unsent ? this.#log.after(this, options.after ?? this.#written, !resuming) : [];
    if (!events) return false;
    const previous = this.#connection;
    if (previous && previous !== connection) previous.close();
    this.#connection = connection;
    if (!previous) this.#attached(true);
    // Priming (2025-11-25): an event id with empty data, so the client can resume from the very
    // start. A stream never written to primes first with `<key>.0`; later connections prime
    // after the replay with a sequence number of their own, as event ids must be unique.
    const prime = (seq: number): void => connection.write(`id: ${this.key}.${seq}\nretry: ${options.primeRetryMs}\ndata: \n\n`);
    const primeFirst = options.primeRetryMs !== undefined && this.#written === 0 && !this.#primed;
    if (primeFirst) {
      this.#primed = true;
      prime(0);
    }
    for (const event of events) connection.write(encodeSseEvent(event.data, `${event.stream.key}.${event.seq}`));
    if (events.length > 0) this.#written = Math.max(this.#written, events[events.length - 1]!.seq);
    if (options.primeRetryMs !== undefined && !primeFirst) {
      this.#written = this.#nextSeq++;
      prime(this.#written);
    }
    if (this.#done) this.#closeConnection();
    return true;
  }

  detach(connection: StreamConnection): void {
    if (this.#connection !== connection) return;
    this.#connection = undefined;
    this.#attached(false);
  }

  /** Ends the stream (its response was sent, or the session ended). */
  finish(): void {
    if (!this.#done && this.kind === 'request') this.#mirror?.end(this.key);
    this.#done = true;
    this.#closeConnection();
  }

  /** Closes the current connection after a retry hint, leaving the stream resumable. */
  hangUp(retryMs: number): void {
    this.#connection?.write(`retry: ${retryMs}\n\n`);
    this.#closeConnection();
  }

  #closeConnection(): void {
    const connection = this.#connection;
    this.#connection = undefined;
    connection?.close();
    if (connection) this.#attached(false);
  }

  /** A connection came or went: the session hears it, and the shared log keeps a held stream. */
  #attached(attached: boolean): void {
    this.#mirror?.hold(this.key, attached);
    this.onattached?.(attached);
  }
}

/** Parses a Last-Event-ID of the form this module issues. */
export function parseEventId(value: string): { key: string; seq: number } | undefined {
  const match = /^([0-9a-f]{12})\.(0|[1-9]\d{0,14})$/.exec(value);
  return match ? { key: match[1]!, seq: Number(match[2]) } : undefined;
}
