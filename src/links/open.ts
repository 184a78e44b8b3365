// Opening client sessions: initialize (or a session the edge keeps for a client that has none),
// a session taken over from another replica, upstreams left out and tried again on use, and a
// config reload applied to the open sessions. A session starts with no upstream session of its
// own: it lists from the gateway's catalog of each upstream (catalogs.ts), and the first request
// that must reach an upstream opens the session's own upstream session there, with the client's
// own capabilities and info, wired to the client session that owns it. Own upstream sessions
// idle for their upstream's idleTimeout are closed again (the sweep below). Shared children are
// leased at once, and so are HTTP upstreams when session ids are self-describing (the id then
// carries their sessions to any replica).
import { mergeCapabilities, supportsMethod } from '../mcp/capabilities.js';
import { GatewayError } from '../mcp/errors.js';
import { isObject, notification, success, type JsonObject, type JsonRpcRequest, type JsonRpcResponse } from '../mcp/jsonrpc.js';
import { negotiateVersion } from '../mcp/versions.js';
import { listChangedOf, listChangeOf, listChanges, listKindOf } from '../mcp/methods.js';
import type { Delivery, SessionInfo } from '../session/session.js';
import { claimsOf, type SessionTokens, type UpstreamState } from '../session/token.js';
import type { UpstreamClient } from '../upstream/client.js';
import { ProcessLimitError, type UpstreamChanges, type UpstreamPool } from '../upstream/pool.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Policy } from '../policy/policy.js';
import type { Logger } from '../util/log.js';
import { GATEWAY_NAME, GATEWAY_VERSION } from '../version.js';
import type { Caller } from '../session/context.js';
import type { Catalog, Listing, ListKind } from '../names/lists.js';
import { afterRestart } from './recovery.js';
import { unavailableReason, UpstreamCatalogs, type CatalogSession } from './catalog-sessions.js';
import { logOpened, startIdleSweep } from './idle.js';
import { instructionsSection, namingNote } from './instructions.js';
import { screenInstructions, type InstructionPins } from './instructions-screen.js';
import { wireUpstream } from './relay.js';
import { forgetNames, forgetOnListChange } from './existence.js';
import { SharedHub } from './shared.js';
import type { DownstreamSession, SessionStore } from './session.js';
import type { PersonalUpstreams } from './personal.js';
import type { TokenExchanger } from '../credentials/token-exchange.js';

export interface OpenerDeps {
  pool: UpstreamPool;
  sessions: SessionStore;
  catalog: Catalog;
  logger: Logger;
  metrics: Metrics;
  /** Read at each use: a config reload may replace it. */
  policy: () => Policy;
  /** Self-describing session ids, when session keys are configured. */
  tokens?: SessionTokens;
  /** Upstreams each principal reaches with their own credential (`userAuth`). */
  personal?: PersonalUpstreams;
  /** Upstreams each principal reaches with a token exchanged for theirs (`tokenExchange`). */
  exchange?: TokenExchanger;
  /** Pinning, which screens the upstreams' instructions (instructions-screen.ts). */
  pins?: InstructionPins;
}

/** A left-out upstream is tried again on use at most this often. */
const LEFT_OUT_RETRY_MS = 2_000;

export class SessionOpener {
  readonly #deps: OpenerDeps;
  /** The hub of each shared upstream child. */
  readonly #hubs = new Map<UpstreamClient, SharedHub>();
  /** Sessions being taken over from another replica, by id (requests that find one wait for it). */
  readonly #takeovers = new Map<string, Promise<DownstreamSession | undefined>>();
  readonly #catalogs: UpstreamCatalogs;
  #sweeper: NodeJS.Timeout | undefined;
  /** Own upstream sessions whose lists may differ from their catalog's (they changed, or restarted). */
  readonly #diverged = new WeakSet<UpstreamClient>();

  constructor(deps: OpenerDeps) {
    this.#deps = deps;
    this.#catalogs = new UpstreamCatalogs({ pool: deps.pool, logger: deps.logger, onListsChanged: (catalog, methods) => this.#catalogChanged(catalog, methods) });
    // A principal's credential appeared or went: their sessions switch, and hear it.
    deps.personal?.onChange((change) => void deps.personal!.switchAll(change, deps.sessions.all(), (session, client) => this.#wire(session, client), announceListChanges));
  }

  /**
   * Handles initialize: negotiates the version, creates the session and opens every upstream in
   * parallel with the client's own capabilities and info. An upstream that fails is left out.
   */
  async initialize(request: JsonRpcRequest, caller: Caller): Promise<{ session: DownstreamSession; response: JsonRpcResponse }> {
    const params = request.params ?? {};
    if (typeof params.protocolVersion !== 'string' || !isObject(params.capabilities) || !isObject(params.clientInfo)) {
      this.#deps.metrics.countRequest('initialize', 'none', 'error', caller.endpoint);
      throw new GatewayError('invalid_params', 'initialize needs protocolVersion, capabilities and clientInfo');
    }
    const protocolVersion = negotiateVersion(params.protocolVersion);
    const { sessions, tokens } = this.#deps;
    const session = await this.open({ protocolVersion, clientCapabilities: params.capabilities, clientInfo: params.clientInfo }, caller);
    if (tokens) sessions.assignId(session, tokens.seal(claimsOf(session.info, protocolVersion, session.upstreams, sessions.startedAt(session.id) ?? sessions.now())));
    const result: JsonObject = {
      protocolVersion,
      capabilities: session.capabilities,
      serverInfo: { name: GATEWAY_NAME, version: GATEWAY_VERSION },
    };
    if (session.instructions !== undefined) result.instructions = session.instructions;
    this.#deps.metrics.countRequest('initialize', 'none', 'ok', caller.endpoint);
    return { session, response: success(request.id, result) };
  }

  /**
   * Creates a session and opens every upstream its teams can see, in parallel. `delivery` is
   * where its messages that belong to no request go (default: its GET stream).
   */
  async open(info: Omit<SessionInfo, 'principal'>, caller: Caller, delivery?: Delivery): Promise<DownstreamSession> {
    const { pool, sessions } = this.#deps;
    const session = sessions.create({ ...info, ...(caller.principal ? { principal: caller.principal.id } : {}), ...(caller.endpoint !== undefined ? { endpoint: caller.endpoint } : {}) }, undefined, delivery);
    session.principal = caller.principal;
    session.access = this.#deps.policy().access(caller.principal, caller.endpoint);
    // Upstreams the session's teams cannot see are never opened: nothing of theirs, not even a
    // notification or a capability, can reach this client.
    const names = pool.names.filter((name) => session.access.canSeeUpstream(name));
    const instructions = await this.#openUpstreams(session, names);
    session.capabilities = this.#capabilitiesOf(session);
    if (instructions.length > 0) instructions.unshift(namingNote(this.#deps.catalog));
    const own = session.access.endpoint?.instructions;
    if (own !== undefined) instructions.unshift(own);
    if (instructions.length > 0) session.instructions = instructions.join('\n\n');
    return session;
  }

  /**
   * Takes over a session another replica opened, from its self-describing id: HTTP upstream
   * sessions continue where they were, stdio upstreams are started for it. Undefined when the
   * id is not a valid token, names another principal, is sessions.maxAge old or ended (an
   * unknown session either way). The session is in the store (counted against the caps, and
   * found by the requests that follow) before this returns: the caller's cap check and the slot
   * it takes are one step, with nothing awaited between them.
   */
  resume(id: string, caller: Caller): Promise<DownstreamSession | undefined> {
    const resumed = this.#resume(id, caller).finally(() => {
      if (this.#takeovers.get(id) === resumed) this.#takeovers.delete(id);
    });
    this.#takeovers.set(id, resumed);
    return resumed;
  }

  /** The takeover of `id` under way here: the session is in the store before its upstreams are attached. */
  takingOver(id: string): Promise<unknown> | undefined {
    return this.#takeovers.get(id);
  }

  async #resume(id: string, caller: Caller): Promise<DownstreamSession | undefined> {
    const { sessions, pool, logger } = this.#deps;
    const claims = this.#deps.tokens?.open(id);
    if (!claims || claims.principal !== caller.principal?.id || claims.endpoint !== caller.endpoint) return undefined;
    // Ended here (its client's DELETE), or too old to be opened anywhere: its id does not bring it back.
    if (sessions.outlived(claims.iat) || sessions.ended(id)) return undefined;
    // It counts against the caps from here: nothing was awaited since the caller checked them.
    const { protocolVersion, clientCapabilities, clientInfo, principal, endpoint } = claims;
    const session = sessions.create({ protocolVersion, clientCapabilities, clientInfo, ...(principal ? { principal } : {}), ...(endpoint !== undefined ? { endpoint } : {}) }, id, undefined, claims.iat);
    try {
      session.principal = caller.principal;
      session.access = this.#deps.policy().access(caller.principal, claims.endpoint);
      // Its client's DELETE on another replica (sessions.store: redis): the slot goes back.
      if (await sessions.sharedLog?.sessionEnded(id)) {
        await sessions.delete(id, 'session ended by client', { keepUpstreams: true });
        return undefined;
      }
      const names = pool.names.filter((name) => session.access.canSeeUpstream(name));
      await this.#openUpstreams(session, names, claims.upstreams);
      session.capabilities = this.#capabilitiesOf(session);
    } catch (err) {
      await sessions.delete(id, 'session could not be taken over', { remember: false, keepUpstreams: true });
      throw err;
    }
    logger.info('session resumed from its id', { session: id.slice(0, 8), upstreams: [...session.upstreams.keys()] });
    return session;
  }

  /**
   * Opens the session's upstream sessions in parallel (continuing `states` of a resumed
   * session); an upstream that fails is left out and logged. Returns their instructions.
   */
  async #openUpstreams(session: DownstreamSession, names: string[], states?: Record<string, UpstreamState>): Promise<string[]> {
    const { pool, logger } = this.#deps;
    const { info } = session;
    const params = { protocolVersion: info.protocolVersion, capabilities: info.clientCapabilities, clientInfo: info.clientInfo };
    const opened = await Promise.allSettled(
      names.map(async (name): Promise<{ client: UpstreamClient; release?: () => void } | { catalog: CatalogSession }> => {
        if (pool.isShared(name)) return this.#joinShared(session, name);
        const wire = (client: UpstreamClient): void => this.#wire(session, client);
        const state = states?.[name];
        const { personal } = this.#deps;
        if (personal?.isPersonal(name)) return { client: await personal.open(session, name, params, wire, state) };
        // The principal's own upstream session, never the catalog's: its lists are theirs alone.
        const { exchange } = this.#deps;
        if (exchange?.has(name)) {
          const credential = exchange.credential(session.principal?.id ?? '', name);
          return { client: await (state?.session !== undefined ? pool.resume(name, state, params, wire, { credential }) : pool.open(name, params, wire, { credential })) };
        }
        if (state?.session !== undefined) return { client: await pool.resume(name, state, params, wire) };
        if (this.#opensAtOnce(session, name)) return { client: await pool.open(name, params, wire) };
        return { catalog: await this.#catalogs.ready(name, info) };
      }),
    );
    const instructions: Promise<string>[] = [];
    opened.forEach((outcome, i) => {
      const name = names[i]!;
      if (outcome.status === 'rejected') {
        logger.warn('upstream left out of session', { upstream: name, session: session.id.slice(0, 8), err: outcome.reason });
        session.links.leaveOut(name, unavailableReason(name, outcome.reason), Date.now());
        return;
      }
      if ('catalog' in outcome.value) {
        if (session.closed) return;
        session.links.defer(name);
        const text = outcome.value.catalog.instructions;
        if (text) instructions.push(this.#instructionsOf(session, name, text, outcome.value.catalog));
        return;
      }
      const { client, release } = outcome.value;
      if (session.closed) {
        if (release) release();
        else if (session.portable) void (client.keepSession(), client.close()); // let go while it opened (a drain): carried on elsewhere
        else void client.close();
        return;
      }
      session.links.attach(name, client, release);
      const text = client.initialized?.instructions;
      if (text) instructions.push(this.#instructionsOf(session, name, text, this.listingOf(session, client)));
    });
    return Promise.all(instructions);
  }

  /** An upstream's instructions section, as pinning lets the client read them. */
  async #instructionsOf(session: DownstreamSession, upstream: string, text: string, listing: Listing): Promise<string> {
    const screened = await screenInstructions(upstream, text, listing, this.#deps);
    return instructionsSection(upstream, screened, listing, this.#deps.catalog, session.access);
  }

  /**
   * An upstream whose session is opened with the client session: an HTTP upstream while session
   * ids are self-describing (so that the id carries its session to another replica). A session
   * the gateway keeps for a 2026-07-28 client has no id a client holds: nothing to carry.
   */
  #opensAtOnce(session: DownstreamSession, name: string): boolean {
    return this.#deps.tokens !== undefined && session.delivery.addressable && this.#deps.pool.config(name)?.http !== undefined;
  }

  /** What the session's upstreams offer, from their own sessions or their catalogs. */
  #capabilitiesOf(session: DownstreamSession): JsonObject {
    const offered: JsonObject[] = [];
    const key = this.#catalogs.keyOf(session.info);
    for (const [name, record] of session.links.entries()) {
      if (record.client) offered.push(record.client.capabilities);
      else if (record.deferred) {
        const catalog = this.#catalogs.peek(name, key);
        if (catalog) offered.push(catalog.capabilities);
      }
    }
    return mergeCapabilities(offered);
  }

  /**
   * What the session's lists of `kind` read from: each upstream's own session, its catalog
   * (opened again if it was closed; an upstream whose catalog cannot be had is left out of
   * this list), or a shared child's cache. Tasks are the session's own: only its own sessions
   * list them.
   */
  sources(session: DownstreamSession, kind: ListKind): ReadonlyMap<string, Listing> | Promise<ReadonlyMap<string, Listing>> {
    if (!session.links.listsElsewhere()) return session.upstreams;
    const sources = new Map<string, Listing>();
    const waits: Promise<void>[] = [];
    for (const [name, record] of session.links.entries()) {
      // A shared child's lists are every session's: read from its hub's cache (tasks are each session's own).
      if (record.client) sources.set(name, record.shared && kind !== 'tasks' ? (this.#hubs.get(record.client)?.listing ?? record.client) : record.client);
      else if (record.deferred && kind !== 'tasks') {
        try {
          const ready = this.#catalogs.ready(name, session.info);
          if (ready instanceof Promise) waits.push(ready.then((catalog) => void sources.set(name, catalog), () => {}));
          else sources.set(name, ready);
        } catch {
          // left out of this list; the catalog is being tried again
        }
      }
    }
    return waits.length === 0 ? sources : Promise.all(waits).then(() => sources);
  }

  /** A catalog's lists changed: the sessions listing from it forget what they knew and hear it. */
  #catalogChanged(catalog: CatalogSession, methods: readonly string[]): void {
    for (const session of this.#deps.sessions.all()) {
      if (session.closed || !session.links.get(catalog.name)?.deferred || this.#catalogs.keyOf(session.info) !== catalog.key) continue;
      const sent = new Set<string>();
      for (const method of methods) {
        const kind = listKindOf(method);
        const change = kind && listChangeOf(listChangedOf(kind) ?? '');
        if (!change || sent.has(change.notification)) continue;
        sent.add(change.notification);
        forgetNames(session, catalog.name, kind);
        if (kind === 'tools') session.toolsChanged();
        if (isObject(session.capabilities[change.capability])) session.deliver(notification(change.notification));
      }
    }
  }

  /**
   * Where a session's check that a name exists reads an upstream's list: the catalog of the
   * session's key (its cached pages: the own session was initialized exactly as it was) until
   * the own session's lists changed or it restarted, then the own session.
   */
  listingOf(session: DownstreamSession, client: UpstreamClient): Listing {
    if (session.links.isShared(client.name)) return this.#hubs.get(client)?.listing ?? client;
    if (this.#diverged.has(client)) return client;
    return this.#catalogs.peek(client.name, this.#catalogs.keyOf(session.info)) ?? client;
  }

  /** Opens the session's own upstream session of a deferred upstream, on the first request that needs it. */
  #openOwn(session: DownstreamSession, name: string): Promise<void> {
    const record = session.links.get(name)!;
    record.opening ??= this.#openDeferred(session, name).finally(() => {
      record.opening = undefined;
    });
    return record.opening;
  }

  async #openDeferred(session: DownstreamSession, name: string): Promise<void> {
    const { pool, logger } = this.#deps;
    const record = session.links.get(name)!;
    const { info } = session;
    let client: UpstreamClient;
    const params = { protocolVersion: info.protocolVersion, capabilities: info.clientCapabilities, clientInfo: info.clientInfo };
    const wire = (c: UpstreamClient): void => this.#wire(session, c);
    try {
      client = await pool.open(name, params, wire).catch((err: unknown) => {
        // At maxProcesses, an idle catalog child of the upstream makes room for a session's own
        // (lists open a catalog again when there is room).
        if (err instanceof ProcessLimitError && this.#catalogs.yieldOne(name)) return pool.open(name, params, wire);
        throw err;
      });
    } catch (err) {
      const reason = unavailableReason(name, err);
      logger.warn('upstream session could not be opened', { upstream: name, session: session.id.slice(0, 8), err });
      if (session.links.get(name) === record) session.links.leaveOut(name, reason, Date.now());
      throw new GatewayError('upstream_unavailable', `Upstream ${name} is unavailable: ${reason}`);
    }
    // Ended, dropped by a reload or opened otherwise meanwhile: this one is nobody's.
    if (session.closed || session.links.get(name) !== record || !record.deferred) {
      void client.close();
      if (session.closed) throw new GatewayError('upstream_closed', 'the client session has ended');
      return;
    }
    session.links.attach(name, client);
    logOpened(logger, session.id, name, record);
    // What the client set before (its log level) reaches the new session before its first request.
    if (session.logLevel !== undefined && supportsMethod(client.capabilities, 'logging/setLevel')) {
      await client.request('logging/setLevel', { level: session.logLevel }).catch(() => {});
    }
  }

  /** Starts closing idle upstream sessions (idle.ts). */
  startSweeping(): void {
    this.stopSweeping();
    const { pool, sessions, logger } = this.#deps;
    this.#sweeper = startIdleSweep({ pool, sessions, logger, catalogs: this.#catalogs });
  }

  stopSweeping(): void {
    clearInterval(this.#sweeper);
    this.#sweeper = undefined;
  }

  /**
   * An upstream left out of the session (it failed, or was at its process limit) is opened on
   * first use once some time has passed; otherwise the call gets the reason it is unavailable.
   */
  ensure(session: DownstreamSession, upstream: string | undefined): Promise<void> | undefined {
    // Nothing to open (the usual case, on every call's path): no promise.
    const record = upstream === undefined ? undefined : session.links.get(upstream);
    if (record === undefined || record.client !== undefined) return undefined;
    if (record.deferred) return this.#openOwn(session, upstream!);
    if (record.leftOut === undefined) return undefined;
    return this.#openLeftOut(session, upstream!);
  }

  async #openLeftOut(session: DownstreamSession, upstream: string): Promise<void> {
    await this.retryLeftOut(session, upstream);
    const left = session.links.get(upstream)?.leftOut;
    if (left) throw new GatewayError('upstream_unavailable', `Upstream ${upstream} is unavailable: ${left.reason}`);
  }

  /** Tries again to open left-out upstreams (all, or `only`) whose last try is old enough. */
  async retryLeftOut(session: DownstreamSession, only?: string): Promise<void> {
    if (!session.links.hasLeftOut()) return;
    const due = [...session.links.leftOut()].filter(([name, left]) => (only === undefined || name === only) && Date.now() - left.at >= LEFT_OUT_RETRY_MS).map(([name]) => name);
    if (due.length === 0) return;
    const before = session.links.reachable();
    await this.#openUpstreams(session, due.filter((name) => this.#deps.pool.config(name) && session.access.canSeeUpstream(name)));
    // The client's lists lacked it: tell it they changed.
    if (session.links.reachable() !== before) announceListChanges(session);
  }

  /** A lease on a shared upstream's child, registered with its hub until the session ends. */
  async #joinShared(session: DownstreamSession, name: string): Promise<{ client: UpstreamClient; release: () => void }> {
    const { client, release } = await this.#deps.pool.lease(name);
    let hub = this.#hubs.get(client);
    if (!hub) {
      hub = new SharedHub(client, { naming: this.#deps.catalog, metrics: this.#deps.metrics, logger: this.#deps.logger });
      this.#hubs.set(client, hub);
      client.onclose = () => this.#hubs.delete(client);
      forgetOnListChange(client, this.#deps.catalog, () => [...this.#deps.sessions.all()].filter((s) => s.upstreams.get(name) === client));
    }
    const joined = hub;
    joined.add(session);
    return {
      client,
      release: () => {
        joined.remove(session);
        release();
      },
    };
  }

  /** The hub of a session's shared upstream, if `upstream` is one. */
  hubOf(session: DownstreamSession, upstream: string): SharedHub | undefined {
    if (!session.links.isShared(upstream)) return undefined;
    const client = session.upstreams.get(upstream);
    return client ? this.#hubs.get(client) : undefined;
  }

  /**
   * Applies a config reload to the open sessions: upstream sessions of removed or changed
   * upstreams, or of upstreams the session's teams may no longer see, are closed; added or
   * changed ones it may see are opened with the session's own client capabilities; and every
   * session that changed (all, when naming or policy changed) hears list_changed. Sessions the
   * reload does not touch keep running as they were.
   */
  async reconfigure(changes: UpstreamChanges, namingChanged: boolean, policyChanged: boolean): Promise<void> {
    const { sessions } = this.#deps;
    const replaced = new Set([...changes.removed, ...changes.changed]);
    this.#catalogs.retire([...replaced]);
    if (changes.added.length + changes.changed.length > 0) this.startSweeping();
    await Promise.allSettled([...sessions.all()].map((session) => this.#reapply(session, replaced, changes, namingChanged, policyChanged)));
  }

  /**
   * A request's principal that is not the one the session holds (its token was renewed, its
   * claims may differ): its teams decide from now on, and if they are not the session's, the
   * session changes as a policy reload changes it (the access is the new one at once).
   */
  renewPrincipal(session: DownstreamSession, principal: Caller['principal']): Promise<void> | undefined {
    session.principal = principal;
    const teams = this.#deps.policy().teamsOf(principal);
    const held = session.access.teams;
    if (teams.length === held.length && teams.every((team) => held.includes(team))) return undefined;
    return this.#reapply(session, new Set(), { added: [], removed: [], changed: [] }, false, true);
  }

  /** A reload (or a new principal) applied to one session; see reconfigure. */
  async #reapply(session: DownstreamSession, replaced: ReadonlySet<string>, changes: UpstreamChanges, namingChanged: boolean, policyChanged: boolean): Promise<void> {
    const { pool } = this.#deps;
    if (policyChanged) session.access = this.#deps.policy().access(session.principal, session.info.endpoint);
    let touched = namingChanged || policyChanged;
    for (const name of [...session.links.names()]) {
      if (!replaced.has(name) && session.access.canSeeUpstream(name)) continue;
      session.links.drop(name);
      touched = true;
    }
    const reachable = (name: string): boolean => session.upstreams.has(name) || session.links.get(name)?.deferred === true;
    const opening = pool.names.filter((name) => !reachable(name) && session.access.canSeeUpstream(name) && (changes.added.includes(name) || changes.changed.includes(name) || policyChanged));
    const before = session.links.reachable();
    await this.#openUpstreams(session, opening);
    if (session.links.reachable() !== before) touched = true;
    if (!touched || session.closed) return;
    announceListChanges(session);
  }

  /** Wires a new upstream session to the client session that owns it. */
  #wire(session: DownstreamSession, client: UpstreamClient): void {
    const { catalog, logger, pool } = this.#deps;
    wireUpstream(session, client, {
      naming: catalog,
      logger,
      clientRequestTimeoutMs: (upstream) => pool.config(upstream)?.maxTotalTimeoutMs ?? 600_000,
      maxClientRequests: (upstream) => pool.config(upstream)?.maxClientRequests ?? 64,
      metrics: this.#deps.metrics,
      onToolsChanged: () => {
        this.#diverged.add(client);
        session.toolsChanged();
      },
    });
    // The next unknown name, or shortened one, or bare URI, reads the changed list at once.
    forgetOnListChange(client, catalog, () => [session]);
    client.onreconnect = () => {
      this.#diverged.add(client);
      void afterRestart(session, client, catalog, logger);
    };
  }
}

/** Tells the client each of its lists changed (for the capabilities it was offered). */
function announceListChanges(session: DownstreamSession): void {
  for (const change of listChanges()) {
    if (isObject(session.capabilities[change.capability])) session.deliver(notification(change.notification));
  }
}
