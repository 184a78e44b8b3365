// Opens upstream sessions from config (the only place that picks a transport kind) and keeps
// each upstream's health: the outcome of its latest handshake and how many sessions are open.
import type { Dispatcher } from 'undici';
import type { UpstreamConfig } from '../config/schema.js';
import type { JsonObject } from '../mcp/jsonrpc.js';
import { LegacySseTransport } from '../transport/legacy-sse.js';
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
}

export type UpstreamState = 'unknown' | 'up' | 'down';

export interface UpstreamHealth {
  state: UpstreamState;
  transport: 'stdio' | 'streamable-http' | 'sse';
  sessions: number;
  since: string;
  lastError?: string;
}

export class UpstreamPool {
  readonly #configs: ReadonlyMap<string, UpstreamConfig>;
  readonly #deps: UpstreamPoolDeps;
  readonly #health = new Map<string, UpstreamHealth>();
  /** Every client not yet fully stopped, so close() leaves no child process behind. */
  readonly #live = new Set<UpstreamClient>();

  constructor(upstreams: Readonly<Record<string, UpstreamConfig>>, deps: UpstreamPoolDeps) {
    this.#configs = new Map(Object.entries(upstreams));
    this.#deps = deps;
    const since = new Date().toISOString();
    for (const [name, config] of this.#configs) {
      const transport = config.stdio ? 'stdio' : config.http!.transport;
      this.#health.set(name, { state: 'unknown', transport, sessions: 0, since });
    }
  }

  /** Upstream names in a stable (sorted) order: the order of merged lists. */
  get names(): string[] {
    return [...this.#configs.keys()].sort();
  }

  config(name: string): UpstreamConfig | undefined {
    return this.#configs.get(name);
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
    let open = false;
    const client = new UpstreamClient(name, this.#transport(config, logger), {
      timeoutMs: config.timeoutMs,
      maxTotalTimeoutMs: config.maxTotalTimeoutMs,
      logger,
      onEnd: (reason) => {
        if (open) health.sessions--;
        open = false;
        if (reason) this.#record(name, 'down', reason.message);
        // close() is idempotent; this waits for the transport to be fully stopped.
        void client.close().finally(() => this.#live.delete(client));
      },
    });
    this.#live.add(client);
    prepare?.(client);
    try {
      await client.connect(initializeParams, config.initTimeoutMs);
    } catch (err) {
      this.#record(name, 'down', err instanceof Error ? err.message : String(err));
      throw err;
    }
    this.#record(name, 'up');
    open = true;
    health.sessions++;
    return client;
  }

  /** Stops every upstream session still open or stopping. */
  async close(): Promise<void> {
    await Promise.allSettled([...this.#live].map((client) => client.close()));
  }

  health(): Record<string, UpstreamHealth> {
    return Object.fromEntries([...this.#health].sort(([a], [b]) => a.localeCompare(b)).map(([name, h]) => [name, { ...h }]));
  }

  #record(name: string, state: UpstreamState, error?: string): void {
    const health = this.#health.get(name)!;
    if (health.state !== state) health.since = new Date().toISOString();
    health.state = state;
    if (error !== undefined) health.lastError = error;
  }

  #transport(config: UpstreamConfig, logger: Logger): Transport {
    if (config.stdio) {
      const { PATH, HOME } = this.#deps.baseEnv;
      const env: Record<string, string> = {};
      if (PATH !== undefined) env.PATH = PATH;
      if (HOME !== undefined) env.HOME = HOME;
      Object.assign(env, config.stdio.env);
      return new StdioTransport({ command: config.stdio.command, args: config.stdio.args, env, cwd: config.stdio.cwd ?? '.', logger });
    }
    const http = config.http!;
    const options = { url: http.url, headers: http.headers, dispatcher: this.#deps.dispatcher, logger };
    return http.transport === 'sse' ? new LegacySseTransport(options) : new StreamableHttpTransport(options);
  }
}
