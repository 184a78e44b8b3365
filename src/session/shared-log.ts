// The replay log every replica can read (sessions.store: redis): each SSE event of a session
// whose id is self-describing is also written here, so a client that comes back with
// Last-Event-ID on another replica (its own died, drained or the load balancer chose another)
// is replayed what it missed instead of refused. The replica's own log (streams.ts) stays the
// one it replays from itself; this one is written beside it, never waited for.
import { createHash } from 'node:crypto';
import type { JsonRpcId } from '../mcp/jsonrpc.js';

/** A session id as shared state names it (never the id itself, which only its client holds). */
export function fingerprint(id: string): string {
  return createHash('sha256').update(id).digest('base64url').slice(0, 22);
}

/** A session's GET stream (standalone), or the stream of one POST's answer. */
export type StreamKind = 'request' | 'standalone';

export interface SharedEvent {
  seq: number;
  data: string;
}

/** What another replica wrote of one stream. */
export interface SharedStream {
  kind: StreamKind;
  /** A request stream whose answer was sent (or a stream its session ended). */
  done: boolean;
  /** The requests a request stream answers (their answers are due if its replica is gone). */
  requests: JsonRpcId[];
  /** Whether the replica that writes the stream is still running. */
  writerAlive: boolean;
  /**
   * Some of its events after the sequence number asked for were dropped (the session's bounds,
   * as a replica's own log keeps them): a resumption from there is refused, as streams.ts's is.
   */
  dropped: boolean;
  /** Its events after the sequence number asked for that are still kept, oldest first. */
  events: SharedEvent[];
}

export interface SharedStreamLog {
  /** A stream of `session` begins: its kind and, for a request stream, the requests it answers. */
  begin(session: string, stream: string, kind: StreamKind, requests: readonly JsonRpcId[]): void;
  append(session: string, stream: string, seq: number, data: string): void;
  /** The stream is over: its answer was written (or the session ended). */
  end(session: string, stream: string): void;
  /**
   * A client's connection holds the stream here (or no longer does): while one does, the stream
   * is kept from expiring however long it stays quiet.
   */
  hold(session: string, stream: string, held: boolean): void;
  /** The stream as written so far; undefined when no replica wrote it (or it expired). */
  read(session: string, stream: string, after: number): Promise<SharedStream | undefined>;
  /**
   * Its client ended the session (DELETE): no replica opens its id again, and those holding it
   * let it go. Remembered `forMs`: until the id is sessions.maxAge old and opens nowhere anyway.
   */
  endSession(session: string, forMs: number): void;
  /** Whether the session's client ended it on some replica. */
  sessionEnded(session: string): Promise<boolean>;
  /** Hears of sessions ended on other replicas, by fingerprint. */
  onSessionEnded?: (fingerprint: string) => void;
  close(): Promise<void>;
}

/** What a session stream writes its events through: the shared log, bound to its session. */
export interface StreamMirror {
  begin(stream: string, kind: StreamKind, requests: readonly JsonRpcId[]): void;
  append(stream: string, seq: number, data: string): void;
  end(stream: string): void;
  hold(stream: string, held: boolean): void;
}
