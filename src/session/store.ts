// Downstream sessions by id. Ids are 192 random bits in base64url: visible ASCII, unguessable
// (spec: basic/transports.mdx "Session Management"). Idle sessions are closed by a sweeper.
import { randomBytes } from 'node:crypto';
import type { Logger } from '../util/log.js';
import { GatewayError } from '../mcp/errors.js';
import { DownstreamSession, type Delivery, type FleetOptions, type SessionInfo, type UpstreamLink } from './session.js';
import type { LogLimits } from './streams.js';
import { endedForMs, fingerprint, type SharedStreamLog } from './shared-log.js';

const MAX_ENDED = 100_000;

export interface SessionStoreOptions {
  idleTimeoutMs: number;
  /** Each session's replay buffer. */
  replay: LogLimits;
  logger: Logger;
  now?: () => number;
  /** Set when session ids are self-describing (sessions.keys): every replica carries the sessions on. */
  fleet?: FleetOptions;
}

export class SessionStore<C extends UpstreamLink = UpstreamLink> {
  readonly #sessions = new Map<string, DownstreamSession<C>>();
  readonly #perPrincipal = new Map<string, number>();
  /**
   * Ids of sessions that ended here (by hash), kept at least an idle timeout: a self-describing
   * id must not bring a session back on the replica that ended it.
   */
  readonly #ended = new Map<string, number>();
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
    if (this.#sessions.get(id)?.portable) this.sharedLog?.endSession(id);
    await this.delete(id, 'session ended by client');
  }

  /** Whether a session's client ended it on any replica (not to be taken over). */
  async endedInFleet(id: string): Promise<boolean> {
    return this.ended(id) || ((await this.sharedLog?.sessionEnded(id)) ?? false);
  }

  /** Another replica's client DELETE: the session goes here too; its upstream sessions were ended there. */
  async #endedElsewhere(ended: string): Promise<void> {
    for (const session of this.#sessions.values()) {
      if (fingerprint(session.id) === ended) return this.delete(session.id, 'session ended by client', { keepUpstreams: true });
    }
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

  /** A new session, under `id` (a resumed one) or a fresh random id. */
  create(info: SessionInfo, id = randomBytes(24).toString('base64url'), delivery?: Delivery): DownstreamSession<C> {
    const session = new DownstreamSession<C>(id, info, this.#now(), this.#options.replay, delivery, this.#options.fleet);
    this.#sessions.set(session.id, session);
    const key = info.principal ?? '';
    this.#perPrincipal.set(key, (this.#perPrincipal.get(key) ?? 0) + 1);
    return session;
  }

  all(): IterableIterator<DownstreamSession<C>> {
    return this.#sessions.values();
  }

  /** SSE connections open to clients, by kind. */
  openStreams(): { request: number; standalone: number } {
    const open = { request: 0, standalone: 0 };
    for (const session of this.#sessions.values()) {
      const counts = session.openStreams();
      open.request += counts.request;
      open.standalone += counts.standalone;
    }
    return open;
  }

  /** Client requests being processed, across sessions. */
  inflight(): number {
    let total = 0;
    for (const session of this.#sessions.values()) total += session.inflight;
    return total;
  }

  /** Whether a session by this id ended here recently (and so must not be resumed). */
  ended(id: string): boolean {
    const until = this.#ended.get(fingerprint(id));
    return until !== undefined && until > this.#now();
  }

  #remember(id: string): void {
    if (this.#ended.size >= MAX_ENDED) {
      for (const [key, until] of this.#ended) {
        if (until <= this.#now() || this.#ended.size >= MAX_ENDED) this.#ended.delete(key);
        if (this.#ended.size < MAX_ENDED * 0.9) break;
      }
    }
    this.#ended.set(fingerprint(id), this.#now() + endedForMs(this.#options.idleTimeoutMs));
  }

  /** Gives a session its final id (the sealed token, known once its upstreams are open). */
  assignId(session: DownstreamSession<C>, id: string): void {
    if (this.#sessions.get(session.id) !== session) return;
    this.#sessions.delete(session.id);
    session.id = id;
    this.#sessions.set(id, session);
  }

  /** Sessions open for `principal`. */
  countFor(principal: string | undefined): number {
    return this.#perPrincipal.get(principal ?? '') ?? 0;
  }

  get(id: string): DownstreamSession<C> | undefined {
    return this.#sessions.get(id);
  }

  /**
   * Ends a session; its id is remembered as ended (not to be resumed) unless `remember` is false
   * (an id never given out, or a session other replicas carry on). `keepUpstreams` leaves its
   * upstreams' own sessions alive.
   */
  async delete(id: string, reason = 'session ended', options: { remember?: boolean; keepUpstreams?: boolean } = {}): Promise<void> {
    const session = this.#sessions.get(id);
    if (!session) return;
    this.#sessions.delete(id);
    if (options.remember !== false) this.#remember(id);
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

  /** Closes sessions idle for longer than the timeout. */
  async sweep(): Promise<number> {
    const cutoff = this.#now() - this.#options.idleTimeoutMs;
    const idle = [...this.#sessions.values()].filter((s) => {
      const since = s.idleSince();
      return since !== undefined && since <= cutoff;
    });
    for (const session of idle) this.#options.logger.info('closing idle session', { session: session.id.slice(0, 8) });
    await Promise.allSettled(idle.map((s) => this.#letGo(s, 'session idle timeout')));
    return idle.length;
  }

  startSweeper(): void {
    if (this.#sweeper) return;
    const every = Math.max(1_000, Math.min(this.#options.idleTimeoutMs / 2, 60_000));
    this.#sweeper = setInterval(() => void this.sweep(), every);
    this.#sweeper.unref();
  }

  async closeAll(): Promise<void> {
    clearInterval(this.#sweeper);
    this.#sweeper = undefined;
    const all = [...this.#sessions.values()];
    await Promise.allSettled(all.map((session) => this.#letGo(session, 'gateway shutting down')));
  }
}
