// Opens upstream sessions from config and keeps one record per upstream: its config, its health
// (the outcome of its latest handshake or probe, open sessions, restarts), its circuit, the era
// it turned out to speak, the gateway's own credential for it, its shared children and its
// calls in flight. Stops every session it opened on close(). The transport kind is picked in
// transport/connect.ts.
import { isDeepStrictEqual } from 'node:util';
import type { Dispatcher } from 'undici';
import type { UpstreamConfig } from '../config/schema.js';
import { GatewayError } from '../mcp/errors.js';
import { isObject, type JsonObject, type JsonRpcRequest } from '../mcp/jsonrpc.js';
import type { UpstreamSessionState } from '../mcp/upstream-session.js';
import { GATEWAY_VERSION } from '../version.js';
import type { Metrics } from '../metrics/metrics.js';
import { LATEST_VERSION } from '../mcp/versions.js';
import { ClientCredentials } from '../auth/client-credentials.js';
import type { CircuitBreaker, CircuitState } from '../transport/circuit.js';
import { canResume, connectTransport, onlySessions, sharedStateFor, transportKind, type TransportKind } from '../transport/connect.js';
import type { RestartPolicy } from '../transport/reconnecting.js';
import type { GetStreamSupport, UpstreamCredential } from '../transport/streamable-http.js';
import type { Transport } from '../transport/types.js';
import { ConcurrencySlots } from './concurrency.js';
import type { Logger } from '../util/log.js';
import { UpstreamClient } from './client.js';
import { WarmChildren } from './warm.js';
import type { EraChoice, EraFacts } from './stateless-protocol.js';
import { isStatelessVersion } from '../mcp/era.js';

export interface UpstreamPoolDeps {
  dispatcher: Dispatcher;
  logger: Logger;
  /** What a stdio child inherits besides its configured env: PATH and HOME only. */
  baseEnv: Readonly<Record<string, string | undefined>>;
  metrics: Metrics;
  /** Told every upstream token the gateway obtains, so logs can redact it. */
  onSecret?: (secret: string) => void;
}

export type UpstreamState = 'unknown' | 'up' | 'down';

export interface UpstreamHealth {
  state: UpstreamState;
  transport: TransportKind;
  sessions: number;
  /** Requests to it in flight right now, across sessions. */
  pending: number;
  restarts: number;
  since: string;
  circuit?: CircuitState;
  lastError?: string;
}

export interface OpenOptions {
  /** false: never a child spawned ahead. */
  warm?: boolean;
  /** The credential of the session's principal (a `userAuth` upstream) instead of the upstream's own. */
  credential?: UpstreamCredential;
}

/** What changed between two sets of upstream configs. */
export interface UpstreamChanges {
  added: string[];
  removed: string[];
  changed: string[];
}

const PROBE_CLIENT = { name: 'switchyard-probe', version: '1' };
/** What a shared child is told of its client: the gateway itself, with no capabilities. */
const SHARED_CLIENT = { name: 'switchyard', version: GATEWAY_VERSION };

/** Everything the pool keeps of one upstream. */
interface UpstreamRecord {
  readonly config: UpstreamConfig;
  readonly health: UpstreamHealth;
  readonly breaker: CircuitBreaker | undefined;
  /** Whether it serves GET streams, as its sessions learn it (Streamable HTTP). */
  readonly getStream: GetStreamSupport | undefined;
  /** The gateway's own credential for it (client credentials). */
  readonly credentials: ClientCredentials | undefined;
  /** The eras it turned out to speak (`era: auto`), so later sessions skip what is known. */
  era: EraFacts;
  /** The children of a shared upstream (`sharing: shared`). */
  readonly shared: SharedChild[];
  /** Its calls in flight against maxConcurrent. */
  readonly slots: ConcurrencySlots;
  /** Children spawned ahead (`warm`): the next sessions' first (warm.ts). */
  warm: WarmChildren | undefined;
}

interface SharedChild {
  client: UpstreamClient;
  /** Sessions using it. */
  refs: number;
  starting: boolean;
  ready: Promise<void>;
  /** Its upstream was changed or removed: it stops when its last session lets it go. */
  retired?: boolean;
}

/** An upstream at its `maxProcesses`: nothing wrong with the upstream, only no room now. */
export class ProcessLimitError extends GatewayError {
  constructor(name: string, limit: number) {
    super('upstream_unavailable', `Upstream ${name} is at its process limit (maxProcesses ${limit}); try again later`);
  }
}

/** The upstream's `restart` block as the policy its children follow (as transport/connect.ts reads it). */
function restartPolicy(restart: UpstreamConfig['restart']): RestartPolicy {
  return { initialDelayMs: restart.backoff, maxDelayMs: restart.maxBackoff, maxCrashes: restart.maxCrashes, windowMs: restart.window, resetAfterMs: restart.resetAfter };
}

/** The bounded label for why a request was cancelled upstream. */
function causeOf(reason: string): string {
  if (reason === 'timeout') return 'timeout';
  if (reason === 'cancelled by client') return 'client';
  if (reason === 'session ended') return 'session_end';
  return 'gateway';
}

export class UpstreamPool {
  readonly #deps: UpstreamPoolDeps;
  readonly #records = new Map<string, UpstreamRecord>();
  /** Every client not yet fully stopped (of any config), so close() leaves no child process behind. */
  readonly #live = new Set<UpstreamClient>();
  #probeTimer: NodeJS.Timeout | undefined;
  #closed = false;
  /** Keep `warm` children spawned (from start on). */
  #warming = false;

  constructor(upstreams: Readonly<Record<string, UpstreamConfig>>, deps: UpstreamPoolDeps) {
    this.#deps = deps;
    this.update(upstreams);
  }

  /** Upstream names in a stable (sorted) order: the order of merged lists. */
  get names(): string[] {
    return [...this.#records.keys()].sort();
  }

  config(name: string): UpstreamConfig | undefined {
    return this.#records.get(name)?.config;
  }

  /** The upstream's calls in flight against its maxConcurrent. */
  slots(name: string): ConcurrencySlots | undefined {
    return this.#records.get(name)?.slots;
  }

  /** Whether upstreams are probed; without probes only sessions tell their state. */
  get probing(): boolean {
    return this.#probeTimer !== undefined;
  }

  /** True when at least one upstream's latest handshake or probe succeeded. */
  get anyUp(): boolean {
    for (const { health } of this.#records.values()) if (health.state === 'up') return true;
    return false;
  }

  /** Replaces the configs (hot reload) and says what changed. */
  update(upstreams: Readonly<Record<string, UpstreamConfig>>): UpstreamChanges {
    const next = new Map(Object.entries(upstreams));
    const changes: UpstreamChanges = { added: [], removed: [], changed: [] };
    for (const name of this.#records.keys()) if (!next.has(name)) changes.removed.push(name);
    for (const [name, config] of next) {
      const previous = this.#records.get(name)?.config;
      if (!previous) changes.added.push(name);
      else if (!isDeepStrictEqual(previous, config)) changes.changed.push(name);
    }
    const since = new Date().toISOString();
    for (const name of [...changes.removed, ...changes.changed]) this.#retire(this.#records.get(name)!);
    for (const name of changes.removed) this.#records.delete(name);
    for (const name of [...changes.added, ...changes.changed]) {
      // Calls still in flight on the old sessions keep their slots until they end.
      const slots = this.#records.get(name)?.slots ?? new ConcurrencySlots();
      this.#records.set(name, this.#record(name, next.get(name)!, since, slots));
    }
    return changes;
  }

  /** A record replaced or removed: its shared children stop once no session uses them. */
  #retire(record: UpstreamRecord): void {
    void record.warm?.close();
    for (const child of record.shared.splice(0)) {
      child.retired = true;
      if (child.refs === 0) void child.client.close();
    }
  }

  #record(name: string, config: UpstreamConfig, since: string, slots: ConcurrencySlots): UpstreamRecord {
    const health: UpstreamHealth = { state: 'unknown', transport: transportKind(config), sessions: 0, pending: 0, restarts: 0, since };
    const { breaker, getStream } = sharedStateFor(config);
    if (breaker) {
      breaker.onchange = (state) => {
        health.circuit = state;
        this.#deps.logger.warn('circuit changed', { upstream: name, state });
      };
      health.circuit = breaker.state;
    }
    const oauth = config.http?.oauth;
    const { onSecret } = this.#deps;
    const credentials = oauth ? new ClientCredentials({ ...oauth, dispatcher: this.#deps.dispatcher, ...(onSecret ? { onToken: onSecret } : {}) }) : undefined;
    const record: UpstreamRecord = { config, health, breaker, getStream, credentials, era: {}, shared: [], slots, warm: undefined };
    if (config.warm > 0) {
      record.warm = new WarmChildren(config.warm, {
        spawn: () => this.#transport(name, record),
        prime: (transport, params) => {
          const { client, opened } = this.#client(name, record, transport);
          return { client, ready: this.#connect(name, record, client, params).then(opened) };
        },
        room: (ahead) => !this.#closed && this.#warming && this.#records.get(name) === record && this.#running(name) + ahead < (config.maxProcesses ?? Infinity),
        policy: restartPolicy(config.restart),
        // Counted as crashes (warm.ts): a crash loop shows the upstream down with its reason.
        failed: (reason, crashLoop) => {
          if (this.#records.get(name) !== record) return;
          this.#mark(health, 'down', reason);
          if (crashLoop) this.#deps.metrics.upstreamCrashLoops.inc({ upstream: name });
        },
        logger: this.#logger(name),
      });
      if (this.#warming) queueMicrotask(() => record.warm?.fill());
    }
    return record;
  }

  /** From now on, keeps each upstream's `warm` children spawned ahead. */
  startWarming(): void {
    this.#warming = true;
    for (const record of this.#records.values()) record.warm?.fill();
  }

  /**
   * Opens and initializes one upstream session; rejects (and records the upstream down) on
   * failure. `prepare` wires handlers before the handshake, so nothing the upstream sends right
   * after it is lost.
   */
  async open(name: string, initializeParams: JsonObject, prepare?: (client: UpstreamClient) => void, options: OpenOptions = {}): Promise<UpstreamClient> {
    const record = this.#recordOf(name);
    const warm = options.warm === false || options.credential ? undefined : record.warm?.take(initializeParams);
    if (warm && 'client' in warm) {
      // Initialized ahead with exactly these parameters: wired now, and told to ask for the
      // roots again (it asked while nobody could answer).
      prepare?.(warm.client);
      await warm.ready;
      if (isObject(initializeParams.capabilities) && isObject(initializeParams.capabilities.roots)) void warm.client.notify('notifications/roots/list_changed').catch(() => {});
      return warm.client;
    }
    // A child spawned ahead is initialized now, with this session's own capabilities.
    if (!warm) this.#checkProcessLimit(name, record.config);
    const { client, opened } = this.#client(name, record, warm?.transport ?? this.#transport(name, record, undefined, options.credential));
    prepare?.(client);
    try {
      await this.#connect(name, record, client, initializeParams);
    } catch (err) {
      this.#mark(record.health, 'down', err instanceof Error ? err.message : String(err));
      throw err;
    }
    opened();
    return client;
  }

  /**
   * Continues an upstream session another replica opened (a resumed client session): an HTTP
   * upstream's session is taken over without a handshake; anything else is opened afresh.
   */
  async resume(name: string, state: UpstreamSessionState | undefined, initializeParams: JsonObject, prepare?: (client: UpstreamClient) => void, options: OpenOptions = {}): Promise<UpstreamClient> {
    const record = this.#recordOf(name);
    if (!state?.session || !canResume(record.config)) return this.open(name, initializeParams, prepare, options);
    const initialize = { jsonrpc: '2.0' as const, id: 0, method: 'initialize', params: initializeParams };
    const transport = this.#transport(name, record, { sessionId: state.session, initialize }, options.credential);
    const { client, opened } = this.#client(name, record, transport);
    prepare?.(client);
    await client.resume({ protocolVersion: state.protocolVersion, capabilities: state.capabilities, serverInfo: {} });
    opened();
    return client;
  }

  /** Whether `name` runs one child (or a few) for all sessions (`sharing: shared`). */
  isShared(name: string): boolean {
    return this.#records.get(name)?.config.sharing === 'shared';
  }

  /**
   * A lease on a shared upstream's child: the least used of its `poolSize` children, started
   * (and initialized with no client capabilities) on first use; release() when done.
   */
  async lease(name: string): Promise<{ client: UpstreamClient; release: () => void }> {
    const record = this.#recordOf(name);
    const { config, shared: children } = record;
    const size = Math.max(1, Math.min(config.poolSize, config.maxProcesses ?? config.poolSize));
    let child = children.filter((c) => !c.client.closed || c.starting).sort((a, b) => a.refs - b.refs)[0];
    if (!child || (child.refs > 0 && children.length < size)) {
      for (const dead of children.filter((c) => c.client.closed && !c.starting)) children.splice(children.indexOf(dead), 1);
      const { client, opened } = this.#client(name, record, this.#transport(name, record));
      const entry: SharedChild = { client, refs: 0, starting: true, ready: Promise.resolve() };
      entry.ready = this.#connect(name, record, client, { protocolVersion: LATEST_VERSION, capabilities: {}, clientInfo: SHARED_CLIENT })
        .then(
          async () => {
            opened();
            if (config.logLevel && client.capabilities.logging) await client.request('logging/setLevel', { level: config.logLevel }).catch(() => {});
          },
          (err: unknown) => {
            this.#mark(record.health, 'down', err instanceof Error ? err.message : String(err));
            throw err;
          },
        )
        .finally(() => {
          entry.starting = false;
        });
      children.push(entry);
      child = entry;
    }
    const chosen = child;
    chosen.refs++;
    try {
      await chosen.ready;
    } catch (err) {
      chosen.refs--;
      throw err;
    }
    let released = false;
    return {
      client: chosen.client,
      release: () => {
        if (!released) chosen.refs--;
        released = true;
        if (chosen.retired && chosen.refs === 0) void chosen.client.close();
      },
    };
  }

  /** Probes every upstream now and then every `intervalMs`; 0 turns probing off. Called again (a reload), it starts over at the new interval. */
  startProbing(intervalMs: number): void {
    clearInterval(this.#probeTimer);
    this.#probeTimer = undefined;
    if (intervalMs <= 0 || this.#closed) return;
    void this.probeAll();
    this.#probeTimer = setInterval(() => void this.probeAll(), intervalMs);
    this.#probeTimer.unref();
  }

  /** Opens and closes a session on every upstream, recording each one up or down. */
  async probeAll(): Promise<void> {
    await Promise.allSettled(
      // An upstream each user signs in to, or reaches by token exchange, cannot be probed without a user.
      this.names.filter((name) => !this.#records.get(name)?.config.http?.userAuth && !this.#records.get(name)?.config.http?.tokenExchange).map(async (name) => {
        if (this.#closed) return;
        const client = await this.open(name, { protocolVersion: LATEST_VERSION, capabilities: {}, clientInfo: PROBE_CLIENT });
        await client.close();
      }),
    );
  }

  /**
   * Stops every upstream session still open or stopping. `keepSessions`: their upstream sessions
   * are left alive (a replica of a fleet stopping: another replica may carry any of them on).
   */
  async close(options: { keepSessions?: boolean } = {}): Promise<void> {
    this.#closed = true;
    clearInterval(this.#probeTimer);
    const warm = [...this.#records.values()].flatMap((record) => record.warm?.close() ?? []);
    if (options.keepSessions) for (const client of this.#live) client.keepSession();
    await Promise.allSettled([...[...this.#live].map((client) => client.close()), ...warm]);
  }

  health(): Record<string, UpstreamHealth> {
    const pending = new Map<string, number>();
    for (const client of this.#live) pending.set(client.name, (pending.get(client.name) ?? 0) + client.pendingCount);
    return Object.fromEntries(
      [...this.#records].sort(([a], [b]) => a.localeCompare(b)).map(([name, { health }]) => [name, { ...health, pending: pending.get(name) ?? 0 }]),
    );
  }

  #recordOf(name: string): UpstreamRecord {
    const record = this.#records.get(name);
    if (!record) throw new Error(`unknown upstream ${name}`);
    return record;
  }

  #logger(name: string): Logger {
    return this.#deps.logger.child({ upstream: name });
  }

  /** maxProcesses: children of one stdio upstream at once on this replica. */
  #checkProcessLimit(name: string, config: UpstreamConfig): void {
    if (transportKind(config) !== 'stdio' || config.maxProcesses === undefined) return;
    const warm = this.#records.get(name)?.warm?.unprimed ?? 0;
    if (this.#running(name) + warm >= config.maxProcesses) throw new ProcessLimitError(name, config.maxProcesses);
  }

  /** The upstream's children (or sessions) open now. */
  #running(name: string): number {
    let running = 0;
    for (const client of this.#live) if (client.name === name && !client.closed) running++;
    return running;
  }

  /**
   * How a connection of a client of `protocolVersion` picks its era: what the config says or the
   * upstream's first connections found, and where to remember what this one finds.
   */
  #eraChoice(record: UpstreamRecord, protocolVersion: unknown): EraChoice {
    const { config } = record;
    const prefer = isStatelessVersion(protocolVersion) ? 'stateless' : 'sessions';
    if (config.era === 'sessions' || onlySessions(config)) return { prefer, known: { stateless: false, sessions: true } };
    if (config.era === 'stateless') return { prefer, known: { sessions: false } };
    return {
      prefer,
      known: { ...record.era },
      learn: (facts) => {
        record.era = { ...record.era, ...facts };
      },
    };
  }

  /** Connects a new client, holding a stateless-only upstream to its word. */
  async #connect(name: string, record: UpstreamRecord, client: UpstreamClient, params: JsonObject): Promise<void> {
    const { config } = record;
    await client.connect(params, config.initTimeoutMs, this.#eraChoice(record, params.protocolVersion)).catch((err: unknown) => {
      // The server may have been replaced by one of the other era: the next connection probes.
      record.era = {};
      throw err;
    });
    if (config.era === 'stateless' && client.era !== 'stateless') {
      void client.close();
      throw new GatewayError('upstream_protocol', `upstream ${name} is configured as stateless (2026-07-28) but answered server/discover as a sessions-era server`);
    }
  }

  /** A client with health, metrics and lifetime accounting; `opened` counts it as a session. */
  #client(name: string, record: UpstreamRecord, transport: Transport): { client: UpstreamClient; opened: () => void } {
    const logger = this.#logger(name);
    const { config, health } = record;
    const { metrics } = this.#deps;
    let open = false;
    const client: UpstreamClient = new UpstreamClient(name, transport, {
      timeoutMs: config.timeoutMs,
      maxTotalTimeoutMs: config.maxTotalTimeoutMs,
      logger,
      onEnd: (reason) => {
        if (open) health.sessions--;
        open = false;
        if (reason) this.#mark(health, 'down', reason.message);
        if (reason?.message.startsWith('crash loop')) metrics.upstreamCrashLoops.inc({ upstream: name });
        // close() is idempotent; this waits for the transport to be fully stopped.
        void client.close().finally(() => this.#live.delete(client));
      },
      onRestart: () => {
        health.restarts++;
        metrics.upstreamRestarts.inc({ upstream: name });
        this.#mark(health, 'up');
      },
      onCancel: (reason) => metrics.cancellations.inc({ upstream: name, cause: causeOf(reason) }),
      onUnknownResponse: () => metrics.unknownResponses.inc({ upstream: name }),
    });
    this.#live.add(client);
    return {
      client,
      opened: () => {
        this.#mark(health, 'up');
        // A session started: warm children back off afresh (and come back after a crash loop).
        record.warm?.started();
        open = true;
        health.sessions++;
      },
    };
  }

  #mark(health: UpstreamHealth, state: UpstreamState, error?: string): void {
    if (health.state !== state) health.since = new Date().toISOString();
    health.state = state;
    if (error !== undefined) health.lastError = error;
  }

  #transport(name: string, record: UpstreamRecord, resume?: { sessionId: string; initialize: JsonRpcRequest }, credential?: UpstreamCredential): Transport {
    const { dispatcher, baseEnv } = this.#deps;
    const credentials = credential ?? record.credentials;
    const shared = { ...(record.breaker ? { breaker: record.breaker } : {}), ...(record.getStream ? { getStream: record.getStream } : {}), ...(credentials ? { credentials } : {}) };
    return connectTransport(record.config, shared, { dispatcher, baseEnv, logger: this.#logger(name), ...(resume ? { resume } : {}) });
  }
}
