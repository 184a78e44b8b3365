// Giving upstream sessions back when they idle (upstreams.<name>.idleTimeout): a client
// session's own upstream session with no request in flight, no subscription, no task and no
// server-initiated request waiting for the client, seen so by consecutive sweeps for its
// upstream's idleTimeout, is closed; the session lists from the catalog again, and its next
// request that needs the upstream opens a new one (open.ts, logged at info). Only upstreams the
// config says may lose their state are swept (`idleTimeout`, `stateful: false`). Nothing is read on a call's path:
// a sweep compares the upstream client's request count with the one it saw before. Catalog
// sessions no list used for as long are closed too.
import type { UpstreamConfig } from '../config/schema.js';
import type { UpstreamPool } from '../upstream/pool.js';
import type { Logger } from '../util/log.js';
import type { UpstreamCatalogs } from './catalog-sessions.js';
import type { DownstreamSession, SessionStore } from './session.js';

/** A stdio upstream's sessions said to be stateless (and its catalog sessions) are closed after this long idle unless configured otherwise. */
const STDIO_IDLE_MS = 5 * 60_000;
/** The sweep runs at a quarter of the shortest idleTimeout, within these bounds. */
const SWEEP_MIN_MS = 25;
const SWEEP_MAX_MS = 15_000;

/**
 * How long a session's own upstream session may idle before it is closed (undefined: never).
 * Only what the config says may go: an `idleTimeout`, or `stateful: false`; a server may keep
 * what the session did in memory, and a fresh child would run the next call against a blank state.
 */
export function idleTimeoutOf(config: UpstreamConfig | undefined): number | undefined {
  if (!config || config.stateful === true || config.sharing === 'shared') return undefined;
  // A principal's own link (userAuth, tokenExchange) is never given back: opened again on use it
  // would list from the shared catalog, which holds no user's credential.
  if (config.http?.userAuth || config.http?.tokenExchange) return undefined;
  const idle = config.idleTimeout ?? (config.stateful === false && config.stdio ? STDIO_IDLE_MS : 0);
  return idle > 0 ? idle : undefined;
}

/** How long a catalog session (lists only, no client's state) may go unused before it is closed. */
export function catalogIdleTimeoutOf(config: UpstreamConfig | undefined): number | undefined {
  if (!config || config.stateful === true || config.sharing === 'shared') return undefined;
  const idle = config.idleTimeout ?? (config.stdio ? STDIO_IDLE_MS : 0);
  return idle > 0 ? idle : undefined;
}

export interface IdleSweepDeps {
  pool: UpstreamPool;
  sessions: SessionStore;
  catalogs: UpstreamCatalogs;
  logger: Logger;
}

/** Starts sweeping now and then; clearInterval the timer to stop. */
export function startIdleSweep(deps: IdleSweepDeps): NodeJS.Timeout {
  const { pool } = deps;
  const idles = pool.names.map((name) => idleTimeoutOf(pool.config(name))).filter((ms): ms is number => ms !== undefined);
  const every = Math.max(SWEEP_MIN_MS, Math.min(SWEEP_MAX_MS, Math.min(STDIO_IDLE_MS, ...idles) / 4));
  const timer = setInterval(() => sweepIdle(deps), every);
  timer.unref();
  return timer;
}

/** One sweep over every session's own upstream sessions, then the catalogs. */
export function sweepIdle(deps: IdleSweepDeps, now = Date.now()): void {
  const { pool, sessions, logger } = deps;
  for (const session of sessions.all()) {
    for (const [name, record] of session.links.entries()) {
      const { state } = record;
      if (state.kind !== 'own' || record.opening) continue;
      const { client } = state;
      const idle = idleTimeoutOf(pool.config(name));
      // An HTTP upstream session of a portable session may be carried in its id and used by
      // other replicas: closing it here would end it there too (the session's own idle
      // timeout lets the session go from this replica without ending it).
      const carried = session.portable && client.upstreamSessionId !== undefined;
      if (idle === undefined || carried || record.keptForTask || record.subscriptions.size > 0 || client.pendingCount > 0 || asksClient(session, name)) {
        record.busy();
        continue;
      }
      const idleMs = record.idleFor(now, client.requests);
      if (idleMs === 0 || idleMs < idle) continue;
      void session.links.release(name);
      logger.info('idle upstream session closed', { upstream: name, session: session.id.slice(0, 8), idleMs });
    }
  }
  deps.catalogs.sweep((upstream) => catalogIdleTimeoutOf(pool.config(upstream)));
}

/**
 * Logs a session's own upstream session opened on use; one that replaces a session closed for
 * idleness at info (what the closed one held of the session is gone: said where an operator looks).
 */
export function logOpened(logger: Logger, sessionId: string, upstream: string, record: { reapedAt: number | undefined }): void {
  const session = sessionId.slice(0, 8);
  if (record.reapedAt === undefined) return logger.debug('upstream session opened on first use', { upstream, session });
  logger.info('idle upstream session replaced', { upstream, session, closedForMs: Date.now() - record.reapedAt });
  record.reapedAt = undefined;
}

/** Whether a server-initiated request of `upstream` waits for the client of this session. */
function asksClient(session: DownstreamSession, upstream: string): boolean {
  for (const [, request] of session.clientRequests.values()) if (request.upstream === upstream || request.holds === upstream) return true;
  return false;
}
