// Opens upstream sessions from config (the only place that picks a transport kind) and keeps
// each upstream's health: the outcome of its latest handshake or probe, open sessions,
// restarts, and the state of its circuit. Stops every session it opened on close().
import { isDeepStrictEqual } from 'node:util';
import type { Dispatcher } from 'undici';
import type { UpstreamConfig } from '../config/schema.js';
import type { JsonObject } from '../mcp/jsonrpc.js';
import type { Metrics } from '../metrics/metrics.js';
import { LATEST_VERSION } from '../mcp/versions.js';
import { ClientCredentials } from '../auth/client-credentials.js';
import { CircuitBreaker, type CircuitState } from '../transport/circuit.js';
import { LegacySseTransport } from '../transport/legacy-sse.js';
import { ReconnectingTransport } from '../transport/reconnecting.js';
import { StdioTransport } from '../transport/stdio.js';
import { StreamableHttpTransport } from '../transport/streamable-http.js';
import type { Transport } from '../transport/types.js';
import type { Logger } from '../util/log.js';
import { UpstreamClient } from './client.js';

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
  readonly #credentials = new Map<string, ClientCredentials>();
  /** Every client not yet fully stopped, so close() leaves no child process behind. */
  readonly #live = new Set<UpstreamClient>();
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
    const config = this.#configs.get(name);
    if (!config) throw new Error(`unknown upstream ${name}`);
    const logger = this.#deps.logger.child({ upstream: name });
    const health = this.#health.get(name)!;
    const { metrics } = this.#deps;
    let open = false;
    const client = new UpstreamClient(name, this.#transport(name, config, logger), {
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
    prepare?.(client);
    try {
      await client.connect(initializeParams, config.initTimeoutMs);
    } catch (err) {
      this.#record(health, 'down', err instanceof Error ? err.message : String(err));
      throw err;
    }
    this.#record(health, 'up');
    open = true;
    health.sessions++;
    return client;
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

  #record(health: UpstreamHealth, state: UpstreamState, error?: string): void {
    if (health.state !== state) health.since = new Date().toISOString();
    health.state = state;
    if (error !== undefined) health.lastError = error;
  }

  #transport(name: string, config: UpstreamConfig, logger: Logger): Transport {
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
        new StdioTransport({ command: stdio.command, args: stdio.args, env, cwd: stdio.cwd ?? '.', logger, maxMessageBytes: config.maxMessageBytes });
      return new ReconnectingTransport(make, { policy, logger, restartOnCrash: true });
    }
    const http = config.http!;
    const options = { url: http.url, headers: http.headers, dispatcher: this.#deps.dispatcher, logger, maxMessageBytes: config.maxMessageBytes };
    if (http.transport === 'sse') return new ReconnectingTransport(() => new LegacySseTransport(options), { policy, logger, restartOnCrash: true });
    const breaker = this.#breakers.get(name);
    const credentials = this.#credentials.get(name);
    const make = (): Transport => new StreamableHttpTransport({ ...options, ...(breaker ? { breaker } : {}), ...(credentials ? { credentials } : {}) });
    return new ReconnectingTransport(make, { policy, logger, restartOnCrash: false });
  }
}
