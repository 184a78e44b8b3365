// The one place that turns an upstream's config into a transport: a stdio child, Streamable
// HTTP or legacy SSE, each inside the restart wrapper. What one upstream's connections share
// (its circuit, what it said about GET streams, the gateway's own credential) is given by the
// caller, which keeps it per upstream.
import type { Dispatcher } from 'undici';
import type { UpstreamConfig } from '../config/schema.js';
import type { JsonRpcRequest } from '../mcp/jsonrpc.js';
import type { Logger } from '../util/log.js';
import { CircuitBreaker } from './circuit.js';
import { LegacySseTransport } from './legacy-sse.js';
import { ReconnectingTransport } from './reconnecting.js';
import { StdioTransport } from './stdio.js';
import { GetStreamSupport, StreamableHttpTransport, type StreamableHttpOptions } from './streamable-http.js';
import type { Transport } from './types.js';

export type TransportKind = 'stdio' | 'streamable-http' | 'sse';

/** What the connections of one upstream share. */
export interface SharedConnectionState {
  breaker?: CircuitBreaker;
  getStream?: GetStreamSupport;
  credentials?: StreamableHttpOptions['credentials'];
}

export interface ConnectOptions {
  dispatcher: Dispatcher;
  logger: Logger;
  /** What a stdio child inherits besides its configured env: PATH and HOME only. */
  baseEnv: Readonly<Record<string, string | undefined>>;
  /** Continues an upstream session another replica opened (Streamable HTTP only). */
  resume?: { sessionId: string; initialize: JsonRpcRequest };
}

export function transportKind(config: UpstreamConfig): TransportKind {
  return config.stdio ? 'stdio' : config.http!.transport;
}

/**
 * What the connections of one upstream will share, made once per upstream config: a circuit
 * and the GET-stream verdict for Streamable HTTP, nothing for the other kinds.
 */
export function sharedStateFor(config: UpstreamConfig): { breaker?: CircuitBreaker; getStream?: GetStreamSupport } {
  if (transportKind(config) !== 'streamable-http') return {};
  return { breaker: new CircuitBreaker({ failures: config.circuit.failures, openMs: config.circuit.openFor }), getStream: new GetStreamSupport() };
}

/** Whether the kind speaks only the sessions era (legacy HTTP+SSE has no server/discover). */
export function onlySessions(config: UpstreamConfig): boolean {
  return transportKind(config) === 'sse';
}

/** Whether a transport of this kind can continue a session another replica opened. */
export function canResume(config: UpstreamConfig): boolean {
  return transportKind(config) === 'streamable-http';
}

export function connectTransport(config: UpstreamConfig, shared: SharedConnectionState, options: ConnectOptions): Transport {
  const { restart } = config;
  const { logger, resume } = options;
  const policy = {
    initialDelayMs: restart.backoff,
    maxDelayMs: restart.maxBackoff,
    maxCrashes: restart.maxCrashes,
    windowMs: restart.window,
    resetAfterMs: restart.resetAfter,
  };
  if (config.stdio) {
    const { PATH, HOME } = options.baseEnv;
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
  const base = { url: http.url, headers: http.headers, dispatcher: options.dispatcher, logger, maxMessageBytes: config.maxMessageBytes };
  if (http.transport === 'sse') return new ReconnectingTransport(() => new LegacySseTransport(base), { policy, logger, restartOnCrash: true });
  const { breaker, getStream, credentials } = shared;
  // Only the first connection continues a resumed session; a renewal starts a new one.
  let resumeWith = resume ? { sessionId: resume.sessionId } : undefined;
  const make = (): Transport => {
    const transport = new StreamableHttpTransport({ ...base, ...(breaker ? { breaker } : {}), ...(getStream ? { getStream } : {}), ...(credentials ? { credentials } : {}), ...(resumeWith ? { resume: resumeWith } : {}) });
    resumeWith = undefined;
    return transport;
  };
  return new ReconnectingTransport(make, { policy, logger, restartOnCrash: false, ...(resume ? { initialize: resume.initialize } : {}) });
}
