// Downstream sessions by id. Ids are 192 random bits in base64url: visible ASCII, unguessable
// (spec: basic/transports.mdx "Session Management"). A sweeper closes idle sessions, and ends a
// session whose client holds its id once it is sessions.maxAge old, wherever it was taken over.
import { randomBytes } from 'node:crypto';
import type { Logger } from '../util/log.js';
import { GatewayError } from '../mcp/errors.js';
import { DownstreamSession, type Delivery, type FleetOptions, type SessionInfo, type UpstreamLink } from './session.js';
import type { LogLimits } from './streams.js';
import { fingerprint, type SharedStreamLog } from './shared-log.js';

const MAX_ENDED = 100_000;

export interface SessionStoreOptions {
  idleTimeoutMs: number;
  /** A session's whole life, from its start (its id's `iat`): sessions.maxAge. */
  maxAgeMs: number;
  /** Each session's replay buffer. */
  replay: LogLimits;
  logger: Logger;
  now?: () => number;
  /** Set when session ids are self-describing (sessions.keys): every replica carries the sessions on. */
  fleet?: FleetOptions;
}

/** A session held here, and when it began (on whichever replica opened it). */
interface Held<C extends UpstreamLink> {
  session: DownstreamSession<C>;
  startedAt: number;
}

export class SessionStore<C extends UpstreamLink = UpstreamLink> {
  readonly #sessions = new Map<string, Held<C>>();
  readonly #perPrincipal = new Map<string, number>();
  /**
   * Self-describing ids of sessions that ended here (by hash), until each is sessions.maxAge old
   * and no replica opens it anyway: such an id must not bring its session back.
   */
  readonly #ended = new Map<string, number>();
  /** The ids of the sessions held here by hash (with `fleet`): how another replica's end names them. */
  readonly #byFingerprint = new Map<string, string>();
  readonly #options: SessionStoreOptions;
  readonly #now: () => number;
  #sweeper: NodeJS.Timeout | undefined;

  constructor(options: SessionStoreOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    const log = options.fleet?.log;
    if (log) log.onSessionEnded = (ended) => void this.#endedElsewhere(ended);
  }

  /** The client's DELETE: the session ends here, and (sessions.store: redis) on every replica. */
  async endByClient(id: string): Promise<void> {
    const held = this.#sessions.get(id);
    if (held?.session.portable) this.sharedLog?.endSession(id, this.#endsAt(held) - this.#now());
    await this.delete(id, 'session ended by client');
  }

  /**
   * Another replica's client DELETE: the session goes here too (its upstream sessions were ended
   * there), and held here or not, its id is remembered as ended: no takeover here opens it again,
   * not while Redis is unreachable nor after it restarted without it. Remembered sessions.maxAge
   * from now: no less than the id has left (its hash does not say when the session began).
   */
  async #endedElsewhere(ended: string): Promise<void> {
    const id = this.#byFingerprint.get(ended);
    if (id !== undefined && this.#sessions.has(id)) return this.delete(id, 'session ended by client', { keepUpstreams: true });
    this.#remember(ended, this.#now() + this.#options.maxAgeMs);
  }

  /** Whether a session that began at `startedAt` (its id's `iat`) has lived sessions.maxAge: no replica opens it. */
  outlived(startedAt: number): boolean {
    return startedAt + this.#options.maxAgeMs <= this.#now();
  }

  /** When the session by this id began (what its self-describing id says, `iat`). */
  startedAt(id: string): number | undefined {
    return this.#sessions.get(id)?.startedAt;
  }

  #endsAt(held: Held<C>): number {
    return held.startedAt + this.#options.maxAgeMs;
  }

  /** The replay log every replica reads, when sessions.store is shared. */
  get sharedLog(): SharedStreamLog | undefined {
    return this.#options.fleet?.log;
  }

  get size(): number {
    return this.#sessions.size;
  }

  now(): number {
    return this.#now();
  }

  /**
   * A new session, under `id` (a resumed one, begun at `startedAt` on the replica that opened
   * it) or a fresh random id. It counts against the caps from this moment.
   */
  create(info: SessionInfo, id = randomBytes(24).toString('base64url'), delivery?: Delivery, startedAt = this.#now()): DownstreamSession<C> {
    const session = new DownstreamSession<C>(id, info, this.#now(), this.#options.replay, delivery, this.#options.fleet);
    this.#sessions.set(session.id, { session, startedAt });
    if (this.#options.fleet) this.#byFingerprint.set(fingerprint(session.id), session.id);
    const key = info.principal ?? '';
    this.#perPrincipal.set(key, (this.#perPrincipal.get(key) ?? 0) + 1);
    return session;
  }

  *all(): IterableIterator<DownstreamSession<C>> {
    for (const { session } of this.#sessions.values()) yield session;
  }

  /** SSE connections open to clients, by kind. */
  openStreams(): { request: number; standalone: number } {
    const open = { request: 0, standalone: 0 };
    for (const session of this.all()) {
      const counts = session.openStreams();
      open.request += counts.request;
      open.standalone += counts.standalone;
    }
    return open;
  }

  /** Client requests being processed, across sessions. */
  inflight(): number {
    let total = 0;
    for (const session of this.all()) total += session.inflight;
    return total;
  }

  /** Whether a session by this id ended here and is not yet sessions.maxAge old (so must not be taken over). */
  ended(id: string): boolean {
    const until = this.#ended.get(fingerprint(id));
    return until !== undefined && until > this.#now();
  }

  /** Remembers a self-describing id (by hash) as ended until `until` (random ids are never opened again anyway). */
  #remember(ended: string, until: number): void {
    if (!this.#options.fleet || until <= this.#now()) return;
    if (this.#ended.size >= MAX_ENDED) {
      for (const [key, expires] of this.#ended) {
        if (expires <= this.#now() || this.#ended.size >= MAX_ENDED) this.#ended.delete(key);
        if (this.#ended.size < MAX_ENDED * 0.9) break;
      }
    }
    this.#ended.set(ended, until);
  }

  /** Gives a session its final id (the sealed token, known once its upstreams are open). */
  assignId(session: DownstreamSession<C>, id: string): void {
    const held = this.#sessions.get(session.id);
    if (held?.session !== session) return;
    this.#sessions.delete(session.id);
    this.#forget(session.id);
    session.id = id;
    this.#sessions.set(id, held);
    if (this.#options.fleet) this.#byFingerprint.set(fingerprint(id), id);
  }

  /** The session by this id is no longer held here: another replica's end of it has nothing to find. */
  #forget(id: string): void {
    if (!this.#options.fleet) return;
    const ended = fingerprint(id);
    if (this.#byFingerprint.get(ended) === id) this.#byFingerprint.delete(ended);
  }

  /** Sessions open for `principal`. */
  countFor(principal: string | undefined): number {
    return this.#perPrincipal.get(principal ?? '') ?? 0;
  }

  get(id: string): DownstreamSession<C> | undefined {
    return this.#sessions.get(id)?.session;
  }

  /**
   * Ends a session; its id is remembered as ended (not to be resumed) unless `remember` is false
   * (an id never given out, or a session other replicas carry on). `keepUpstreams` leaves its
   * upstreams' own sessions alive.
   */
  async delete(id: string, reason = 'session ended', options: { remember?: boolean; keepUpstreams?: boolean } = {}): Promise<void> {
    const held = this.#sessions.get(id);
    if (!held) return;
    const { session } = held;
    this.#sessions.delete(id);
    this.#forget(id);
    if (options.remember !== false && this.#options.fleet) this.#remember(fingerprint(id), this.#endsAt(held));
    const key = session.info.principal ?? '';
    const left = (this.#perPrincipal.get(key) ?? 1) - 1;
    if (left > 0) this.#perPrincipal.set(key, left);
    else this.#perPrincipal.delete(key);
    await session.close(new GatewayError('upstream_closed', reason), { keepUpstreams: options.keepUpstreams === true });
  }

  /**
   * Lets a session go from this replica alone (idle here, or this replica stopping): a portable
   * session is only forgotten, its id still opens it anywhere (here too) and its upstream
   * sessions stay alive for the replicas that carry it on; any other session ends.
   */
  #letGo(session: DownstreamSession<C>, reason: string): Promise<void> {
    return session.portable ? this.delete(session.id, reason, { remember: false, keepUpstreams: true }) : this.delete(session.id, reason);
  }

  /**
   * Ends sessions that lived sessions.maxAge (busy or not: everywhere, for no replica opens them
   * again) and lets go of those idle for longer than the timeout. A session the gateway keeps
   * for a client that holds no id of it has no age limit.
   */
  async sweep(): Promise<number> {
    const now = this.#now();
    const cutoff = now - this.#options.idleTimeoutMs;
    const outlived: DownstreamSession<C>[] = [];
    const idle: DownstreamSession<C>[] = [];
    for (const held of this.#sessions.values()) {
      const { session } = held;
      const since = session.idleSince();
      if (session.delivery.addressable && this.#endsAt(held) <= now) outlived.push(session);
      else if (since !== undefined && since <= cutoff) idle.push(session);
    }
    const { logger } = this.#options;
    for (const session of outlived) logger.info('ending session at sessions.maxAge', { session: session.id.slice(0, 8) });
    for (const session of idle) logger.info('closing idle session', { session: session.id.slice(0, 8) });
    await Promise.allSettled([...outlived.map((s) => this.delete(s.id, 'session reached its maximum age')), ...idle.map((s) => this.#letGo(s, 'session idle timeout'))]);
    return outlived.length + idle.length;
  }

  startSweeper(): void {
    if (this.#sweeper) return;
    const { idleTimeoutMs, maxAgeMs } = this.#options;
    const every = Math.max(1_000, Math.min(idleTimeoutMs / 2, maxAgeMs / 2, 60_000));
    this.#sweeper = setInterval(() => void this.sweep(), every);
    this.#sweeper.unref();
  }

  async closeAll(): Promise<void> {
    clearInterval(this.#sweeper);
    this.#sweeper = undefined;
    const all = [...this.all()];
    await Promise.allSettled(all.map((session) => this.#letGo(session, 'gateway shutting down')));
  }
}
