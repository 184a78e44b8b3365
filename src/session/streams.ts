// Logical SSE streams of a client session, and the bounded log that makes them resumable
// (spec: basic/transports.mdx "Resumability and Redelivery", "Multiple Connections").
// A stream outlives its HTTP connections: every message gets an event id `<stream key>.<seq>`
// and a place in the session's log, is written to the stream's connection if one is attached,
// and is replayed when the client comes back with Last-Event-ID, never on another stream.
import { randomBytes } from 'node:crypto';
import type { JsonRpcMessage } from '../mcp/jsonrpc.js';
import { encodeSseEvent } from '../util/sse.js';

/** One HTTP response carrying SSE (implemented by the HTTP layer). */
export interface StreamConnection {
  write(chunk: string): void;
  close(): void;
}

export interface LogLimits {
  events: number;
  bytes: number;
}

interface LoggedEvent {
  key: string;
  seq: number;
  data: string;
  bytes: number;
}

/**
 * The session's replay buffer: the newest events of all its streams, bounded by count and
 * bytes. Remembers, per stream, the newest sequence number it had to drop, so a resumption
 * that would skip dropped events is refused rather than silently incomplete.
 */
export class EventLog {
  readonly #limits: LogLimits;
  #events: LoggedEvent[] = [];
  #head = 0;
  #bytes = 0;
  readonly #droppedUpTo = new Map<string, number>();

  constructor(limits: LogLimits) {
    this.#limits = limits;
  }

  append(key: string, seq: number, data: string): void {
    const bytes = Buffer.byteLength(data);
    this.#events.push({ key, seq, data, bytes });
    this.#bytes += bytes;
    while (this.#events.length - this.#head > this.#limits.events || (this.#bytes > this.#limits.bytes && this.#events.length - this.#head > 1)) {
      const dropped = this.#events[this.#head++]!;
      this.#bytes -= dropped.bytes;
      this.#droppedUpTo.set(dropped.key, dropped.seq);
    }
    if (this.#head > 1_024 && this.#head * 2 > this.#events.length) {
      this.#events = this.#events.slice(this.#head);
      this.#head = 0;
    }
  }

  /**
   * The stream's events after `seq`; undefined when some of them were dropped, unless
   * `partial` accepts what is left.
   */
  after(key: string, seq: number, partial = false): LoggedEvent[] | undefined {
    if (!partial && (this.#droppedUpTo.get(key) ?? 0) > seq) return undefined;
    const out: LoggedEvent[] = [];
    for (let i = this.#head; i < this.#events.length; i++) {
      const event = this.#events[i]!;
      if (event.key === key && event.seq > seq) out.push(event);
    }
    return out;
  }

  forget(key: string): void {
    this.#droppedUpTo.delete(key);
  }
}

export type StreamKind = 'request' | 'standalone';

export interface AttachOptions {
  /**
   * Replay events after this sequence number (a resumption: refused when some were dropped).
   * By default, the events never written to a connection that the log still holds.
   */
  after?: number;
  /** Write the priming event (an id and empty data) and the retry hint first (2025-11-25). */
  primeRetryMs?: number;
}

export class SessionStream {
  readonly key = randomBytes(6).toString('hex');
  readonly kind: StreamKind;
  readonly #log: EventLog;
  #nextSeq = 1;
  /** The highest sequence number written to a connection. */
  #written = 0;
  #connection: StreamConnection | undefined;
  #done = false;
  #primed = false;

  constructor(kind: StreamKind, log: EventLog) {
    this.kind = kind;
    this.#log = log;
  }

  get attached(): boolean {
    return this.#connection !== undefined;
  }

  /** A request stream is done once its response was sent; it then only serves replays. */
  get done(): boolean {
    return this.#done;
  }

  send(message: JsonRpcMessage): void {
    const seq = this.#nextSeq++;
    const data = JSON.stringify(message);
    this.#log.append(this.key, seq, data);
    if (this.#connection) {
      this.#connection.write(encodeSseEvent(data, `${this.key}.${seq}`));
      this.#written = seq;
    }
  }

  /**
   * Attaches a connection (replacing any other: the client knows its old one is gone) and
   * replays what it missed. False when some of those events were dropped from the log.
   */
  attach(connection: StreamConnection, options: AttachOptions = {}): boolean {
    const resuming = options.after !== undefined;
    const events = this.#log.after(this.key, options.after ?? this.#written, !resuming);
    if (!events) return false;
    if (this.#connection && this.#connection !== connection) this.#connection.close();
    this.#connection = connection;
    // Priming (2025-11-25): an event id with empty data, so the client can resume from the very
    // start. A stream never written to primes first with `<key>.0`; later connections prime
    // after the replay with a sequence number of their own, as event ids must be unique.
    const prime = (seq: number): void => connection.write(`id: ${this.key}.${seq}\nretry: ${options.primeRetryMs}\ndata: \n\n`);
    const primeFirst = options.primeRetryMs !== undefined && this.#written === 0 && !this.#primed;
    if (primeFirst) {
      this.#primed = true;
      prime(0);
    }
    for (const event of events) connection.write(encodeSseEvent(event.data, `${event.key}.${event.seq}`));
    if (events.length > 0) this.#written = Math.max(this.#written, events[events.length - 1]!.seq);
    if (options.primeRetryMs !== undefined && !primeFirst) {
      this.#written = this.#nextSeq++;
      prime(this.#written);
    }
    if (this.#done) this.#closeConnection();
    return true;
  }

  detach(connection: StreamConnection): void {
    if (this.#connection === connection) this.#connection = undefined;
  }

  /** Ends the stream (its response was sent, or the session ended). */
  finish(): void {
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
  }
}

/** Parses a Last-Event-ID of the form this module issues. */
export function parseEventId(value: string): { key: string; seq: number } | undefined {
  const match = /^([0-9a-f]{12})\.(0|[1-9]\d{0,14})$/.exec(value);
  return match ? { key: match[1]!, seq: Number(match[2]) } : undefined;
}
