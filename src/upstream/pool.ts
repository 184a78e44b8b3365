// Opens upstream sessions from config (the only place that picks a transport kind) and keeps
// each upstream's health: the outcome of its latest handshake or probe, open sessions,
// restarts, and the state of its circuit. Stops every session it opened on close().
import { isDeepStrictEqual } from 'node:util';
import type { Dispatcher } from 'undici';
import type { UpstreamConfig } from '../config/schema.js';
import { GatewayError } from '../mcp/errors.js';
import type { JsonObject, JsonRpcRequest } from '../mcp/jsonrpc.js';
import type { UpstreamState as SessionUpstreamState } from '../session/token.js';
import { GATEWAY_VERSION } from '../version.js';
import type { Metrics } from '../metrics/metrics.js';
import { LATEST_VERSION } from '../mcp/versions.js';
import { ClientCredentials } from '../auth/client-credentials.js';
import { CircuitBreaker, type CircuitState } from '../transport/circuit.js';
import { LegacySseTransport } from '../transport/legacy-sse.js';
import { ReconnectingTransport } from '../transport/reconnecting.js';
import { StdioTransport } from '../transport/stdio.js';
import { GetStreamSupport, StreamableHttpTransport } from '../transport/streamable-http.js';
import type { Transport } from '../transport/types.js';
import type { Logger } from '../util/log.js';
import { UpstreamClient } from './client.js';
import type { UpstreamEra } from './modern.js';

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
  transport: 'stdio' | 'streamable-http' | 'sse';
  sessions: number;
  /** Requests to it in flight right now, across sessions. */
  pending: number;
  restarts: number;
  since: string;
  circuit?: CircuitState;
  lastError?: string;
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

interface SharedChild {
  client: UpstreamClient;
  /** Sessions using it. */
  refs: number;
  starting: boolean;
  ready: Promise<void>;
}

/** The bounded label for why a request was cancelled upstream. */
function causeOf(reason: string): string {
  if (reason === 'timeout') return 'timeout';
  if (reason === 'cancelled by client') return 'client';
  if (reason === 'session ended') return 'session_end';
  return 'gateway';
}

export class UpstreamPool {
  #configs: Map<string, UpstreamConfig>;
  readonly #deps: UpstreamPoolDeps;
  readonly #health = new Map<string, UpstreamHealth>();
  readonly #breakers = new Map<string, CircuitBreaker>();
  /** The protocol era each upstream turned out to speak (`era: auto`), so later sessions skip the probe. */
  readonly #eras = new Map<string, UpstreamEra>();
  /** Per Streamable HTTP upstream: whether it serves GET streams, as its sessions learn it. */
  readonly #getStreams = new Map<string, GetStreamSupport>();
  readonly #credentials = new Map<string, ClientCredentials>();
  /** Every client not yet fully stopped, so close() leaves no child process behind. */
  readonly #live = new Set<UpstreamClient>();
  /** The children of shared upstreams (`sharing: shared`). */
  readonly #shared = new Map<string, SharedChild[]>();
  #probeTimer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(upstreams: Readonly<Record<string, UpstreamConfig>>, deps: UpstreamPoolDeps) {
    this.#deps = deps;
    this.#configs = new Map();
    this.update(upstreams);
  }

  /** Upstream names in a stable (sorted) order: the order of merged lists. */
  get names(): string[] {
    return [...this.#configs.keys()].sort();
  }

  config(name: string): UpstreamConfig | undefined {
    return this.#configs.get(name);
  }

  /** Whether upstreams are probed; without probes only sessions tell their state. */
  get probing(): boolean {
    return this.#probeTimer !== undefined;
  }

  /** True when at least one upstream's latest handshake or probe succeeded. */
  get anyUp(): boolean {
    for (const health of this.#health.values()) if (health.state === 'up') return true;
    return false;
  }

  /** Replaces the configs (hot reload) and says what changed. */
  update(upstreams: Readonly<Record<string, UpstreamConfig>>): UpstreamChanges {
    const next = new Map(Object.entries(upstreams));
    const changes: UpstreamChanges = { added: [], removed: [], changed: [] };
    for (const name of this.#configs.keys()) if (!next.has(name)) changes.removed.push(name);
    for (const [name, config] of next) {
      const previous = this.#configs.get(name);
      if (!previous) changes.added.push(name);
      else if (!isDeepStrictEqual(previous, config)) changes.changed.push(name);
    }
    const since = new Date().toISOString();
    for (const name of [...changes.removed, ...changes.changed]) {
      this.#health.delete(name);
      this.#breakers.delete(name);
      this.#getStreams.delete(name);
      this.#eras.delete(name);
      this.#credentials.delete(name);
    }
    for (const name of [...changes.added, ...changes.changed]) {
      const config = next.get(name)!;
      const transport = config.stdio ? 'stdio' : config.http!.transport;
      const health: UpstreamHealth = { state: 'unknown', transport, sessions: 0, pending: 0, restarts: 0, since };
      if (config.http?.transport === 'streamable-http') {
        const breaker = new CircuitBreaker({ failures: config.circuit.failures, openMs: config.circuit.openFor });
        breaker.onchange = (state) => {
          health.circuit = state;
          this.#deps.logger.warn('circuit changed', { upstream: name, state });
        };
        health.circuit = breaker.state;
        this.#breakers.set(name, breaker);
        this.#getStreams.set(name, new GetStreamSupport());
      }
      const oauth = config.http?.oauth;
      if (oauth) {
        const { onSecret } = this.#deps;
        this.#credentials.set(name, new ClientCredentials({ ...oauth, dispatcher: this.#deps.dispatcher, ...(onSecret ? { onToken: onSecret } : {}) }));
      }
      this.#health.set(name, health);
    }
    this.#configs = next;
    return changes;
  }

  /**
   * Opens and initializes one upstream session; rejects (and records the upstream down) on
   * failure. `prepare` wires handlers before the handshake, so nothing the upstream sends right
   * after it is lost.
   */
  async open(name: string, initializeParams: JsonObject, prepare?: (client: UpstreamClient) => void): Promise<UpstreamClient> {
    const config = this.#config(name);
    this.#checkProcessLimit(name, config);
    const { client, opened } = this.#client(name, config, this.#transport(name, config, this.#logger(name)));
    prepare?.(client);
    const health = this.#health.get(name)!;
    try {
      await this.#connect(name, config, client, initializeParams);
    } catch (err) {
      this.#record(health, 'down', err instanceof Error ? err.message : String(err));
      throw err;
    }
    opened();
    return client;
  }

  /**
   * Continues an upstream session another replica opened (a resumed client session): an HTTP
   * upstream's session is taken over without a handshake; anything else is opened afresh.
   */
  async resume(name: string, state: SessionUpstreamState | undefined, initializeParams: JsonObject, prepare?: (client: UpstreamClient) => void): Promise<UpstreamClient> {
    const config = this.#config(name);
    if (!state?.session || config.http?.transport !== 'streamable-http') return this.open(name, initializeParams, prepare);
    const initialize = { jsonrpc: '2.0' as const, id: 0, method: 'initialize', params: initializeParams };
    const transport = this.#transport(name, config, this.#logger(name), { sessionId: state.session, initialize });
    const { client, opened } = this.#client(name, config, transport);
    prepare?.(client);
    await client.resume({ protocolVersion: state.protocolVersion, capabilities: state.capabilities, serverInfo: {} });
    opened();
    return client;
  }

  /** Whether `name` runs one child (or a few) for all sessions (`sharing: shared`). */
  isShared(name: string): boolean {
    return this.#configs.get(name)?.sharing === 'shared';
  }

  /**
   * A lease on a shared upstream's child: the least used of its `poolSize` children, started
   * (and initialized with no client capabilities) on first use; release() when done.
   */
  async lease(name: string): Promise<{ client: UpstreamClient; release: () => void }> {
    const config = this.#config(name);
    let children = this.#shared.get(name);
    if (!children) this.#shared.set(name, (children = []));
    const size = Math.max(1, Math.min(config.poolSize, config.maxProcesses ?? config.poolSize));
    let child = children.filter((c) => !c.client.closed || c.starting).sort((a, b) => a.refs - b.refs)[0];
    if (!child || (child.refs > 0 && children.length < size)) {
      for (const dead of children.filter((c) => c.client.closed && !c.starting)) children.splice(children.indexOf(dead), 1);
      const { client, opened } = this.#client(name, config, this.#transport(name, config, this.#logger(name)));
      const entry: SharedChild = { client, refs: 0, starting: true, ready: Promise.resolve() };
      entry.ready = this.#connect(name, config, client, { protocolVersion: LATEST_VERSION, capabilities: {}, clientInfo: SHARED_CLIENT })
        .then(
          async () => {
            opened();
            if (config.logLevel && client.capabilities.logging) await client.request('logging/setLevel', { level: config.logLevel }).catch(() => {});
          },
          (err: unknown) => {
            this.#record(this.#health.get(name)!, 'down', err instanceof Error ? err.message : String(err));
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
      },
    };
  }

  /** Probes every upstream now and then every `intervalMs`; 0 turns probing off. */
  startProbing(intervalMs: number): void {
    if (intervalMs <= 0) return;
    void this.probeAll();
    if (!this.#probeTimer) {
      this.#probeTimer = setInterval(() => void this.probeAll(), intervalMs);
      this.#probeTimer.unref();
    }
  }

  /** Opens and closes a session on every upstream, recording each one up or down. */
  async probeAll(): Promise<void> {
    await Promise.allSettled(
      this.names.map(async (name) => {
        if (this.#closed) return;
        const client = await this.open(name, { protocolVersion: LATEST_VERSION, capabilities: {}, clientInfo: PROBE_CLIENT });
        await client.close();
      }),
    );
  }

  /** Stops every upstream session still open or stopping. */
  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#probeTimer);
    await Promise.allSettled([...this.#live].map((client) => client.close()));
  }

  health(): Record<string, UpstreamHealth> {
    const pending = new Map<string, number>();
    for (const client of this.#live) pending.set(client.name, (pending.get(client.name) ?? 0) + client.pendingCount);
    return Object.fromEntries(
      [...this.#health].sort(([a], [b]) => a.localeCompare(b)).map(([name, h]) => [name, { ...h, pending: pending.get(name) ?? 0 }]),
    );
  }

  #config(name: string): UpstreamConfig {
    const config = this.#configs.get(name);
    if (!config) throw new Error(`unknown upstream ${name}`);
    return config;
  }

  #logger(name: string): Logger {
    return this.#deps.logger.child({ upstream: name });
  }

  /** maxProcesses: children of one stdio upstream at once on this replica. */
  #checkProcessLimit(name: string, config: UpstreamConfig): void {
    if (!config.stdio || config.maxProcesses === undefined) return;
    let running = 0;
    for (const client of this.#live) if (client.name === name && !client.closed) running++;
    if (running >= config.maxProcesses) {
      throw new GatewayError('upstream_unavailable', `Upstream ${name} is at its process limit (maxProcesses ${config.maxProcesses}); try again later`);
    }
  }

  /** What is known of the upstream's era, and where to remember what its first session finds. */
  #eraChoice(name: string, config: UpstreamConfig): { known?: UpstreamEra; learn?: (era: UpstreamEra) => void } {
    if (config.era === 'sessions' || config.http?.transport === 'sse') return { known: 'legacy' };
    const known = this.#eras.get(name);
    return { ...(known ? { known } : {}), learn: (era) => this.#eras.set(name, era) };
  }

  /** Connects a new client, holding a stateless-only upstream to its word. */
  async #connect(name: string, config: UpstreamConfig, client: UpstreamClient, params: JsonObject): Promise<void> {
    await client.connect(params, config.initTimeoutMs, this.#eraChoice(name, config)).catch((err: unknown) => {
      // The server may have been replaced by one of the other era: the next connection probes.
      this.#eras.delete(name);
      throw err;
    });
    if (config.era === 'stateless' && client.era !== 'modern') {
      void client.close();
      throw new GatewayError('upstream_protocol', `upstream ${name} is configured as stateless (2026-07-28) but answered server/discover as a sessions-era server`);
    }
  }

  /** A client with health, metrics and lifetime accounting; `opened` counts it as a session. */
  #client(name: string, config: UpstreamConfig, transport: Transport): { client: UpstreamClient; opened: () => void } {
    const logger = this.#logger(name);
    const health = this.#health.get(name)!;
    const { metrics } = this.#deps;
    let open = false;
    const client: UpstreamClient = new UpstreamClient(name, transport, {
      timeoutMs: config.timeoutMs,
      maxTotalTimeoutMs: config.maxTotalTimeoutMs,
      logger,
      onEnd: (reason) => {
        if (open) health.sessions--;
        open = false;
        if (reason) this.#record(health, 'down', reason.message);
        if (reason?.message.startsWith('crash loop')) metrics.upstreamCrashLoops.inc({ upstream: name });
        // close() is idempotent; this waits for the transport to be fully stopped.
        void client.close().finally(() => this.#live.delete(client));
      },
      onRestart: () => {
        health.restarts++;
        metrics.upstreamRestarts.inc({ upstream: name });
        this.#record(health, 'up');
      },
      onCancel: (reason) => metrics.cancellations.inc({ upstream: name, cause: causeOf(reason) }),
      onUnknownResponse: () => metrics.unknownResponses.inc({ upstream: name }),
    });
    this.#live.add(client);
    return {
      client,
      opened: () => {
        this.#record(health, 'up');
        open = true;
        health.sessions++;
      },
    };
  }

  #record(health: UpstreamHealth, state: UpstreamState, error?: string): void {
    if (health.state !== state) health.since = new Date().toISOString();
    health.state = state;
    if (error !== undefined) health.lastError = error;
  }

  #transport(name: string, config: UpstreamConfig, logger: Logger, resume?: { sessionId: string; initialize: JsonRpcRequest }): Transport {
    const { restart } = config;
    const policy = {
      initialDelayMs: restart.backoff,
      maxDelayMs: restart.maxBackoff,
      maxCrashes: restart.maxCrashes,
      windowMs: restart.window,
      resetAfterMs: restart.resetAfter,
    };
    if (config.stdio) {
      const { PATH, HOME } = this.#deps.baseEnv;
      const env: Record<string, string> = {};
      if (PATH !== undefined) env.PATH = PATH;
      if (HOME !== undefined) env.HOME = HOME;
      Object.assign(env, config.stdio.env);
      const stdio = config.stdio;
      const make = (): Transport =>
        new StdioTransport({
          command: stdio.command,
          args: stdio.args,
          env,
          cwd: stdio.cwd ?? '.',
          logger,
          maxMessageBytes: config.maxMessageBytes,
          maxQueuedBytes: config.maxQueuedBytes,
          maxQueuedMessages: config.maxQueuedMessages,
        });
      return new ReconnectingTransport(make, { policy, logger, restartOnCrash: true });
    }
    const http = config.http!;
    const options = { url: http.url, headers: http.headers, dispatcher: this.#deps.dispatcher, logger, maxMessageBytes: config.maxMessageBytes };
    if (http.transport === 'sse') return new ReconnectingTransport(() => new LegacySseTransport(options), { policy, logger, restartOnCrash: true });
    const breaker = this.#breakers.get(name);
    const getStream = this.#getStreams.get(name);
    const credentials = this.#credentials.get(name);
    // Only the first connection continues a resumed session; a renewal starts a new one.
    let resumeWith = resume ? { sessionId: resume.sessionId } : undefined;
    const make = (): Transport => {
      const transport = new StreamableHttpTransport({ ...options, ...(breaker ? { breaker } : {}), ...(getStream ? { getStream } : {}), ...(credentials ? { credentials } : {}), ...(resumeWith ? { resume: resumeWith } : {}) });
      resumeWith = undefined;
      return transport;
    };
    return new ReconnectingTransport(make, { policy, logger, restartOnCrash: false, ...(resume ? { initialize: resume.initialize } : {}) });
  }
}
