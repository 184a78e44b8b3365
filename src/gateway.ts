// Builds a whole gateway from a config: every part is made here and passed down, so each test
// gets a fresh gateway and close() leaves nothing running (no singletons).
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import type { Hono } from 'hono';
import { Agent } from 'undici';
import type { Config } from './config/schema.js';
import { createApp } from './http/app.js';
import { Catalog } from './router/catalog.js';
import { NamespaceCodec } from './router/namespace.js';
import { Router } from './router/router.js';
import { SessionStore } from './session/store.js';
import { UpstreamPool } from './upstream/pool.js';
import type { Logger } from './util/log.js';

export interface GatewayOptions {
  logger: Logger;
  /** The gateway's environment; stdio children receive only its PATH and HOME. */
  baseEnv: Readonly<Record<string, string | undefined>>;
}

export interface Gateway {
  readonly app: Hono;
  /** Listens on the configured host and port (`port` overrides it; 0 picks a free one). */
  start(port?: number): Promise<URL>;
  close(): Promise<void>;
}

export function createGateway(config: Config, options: GatewayOptions): Gateway {
  const { logger } = options;
  const dispatcher = new Agent({ keepAliveTimeout: 30_000, headersTimeout: 0, bodyTimeout: 0 });
  const pool = new UpstreamPool(config.upstreams, { dispatcher, logger, baseEnv: options.baseEnv });
  const codec = new NamespaceCodec(
    config.namespacing,
    Object.entries(config.upstreams).map(([upstream, entry]) => ({ upstream, prefix: entry.prefix ?? upstream })),
  );
  const sessions = new SessionStore({
    idleTimeoutMs: config.sessions.idleTimeout,
    replay: { events: config.sessions.replayEvents, bytes: config.sessions.replayBytes },
    logger,
  });
  const router = new Router({ pool, sessions, catalog: new Catalog(codec, logger), logger });
  const app = createApp({
    listen: config.listen,
    router,
    sessions,
    logger,
    health: () => pool.health(),
    streams: { keepAliveMs: config.sessions.keepAlive, retryMs: config.sessions.retry },
  });
  let server: ServerType | undefined;

  return {
    app,
    async start(port = config.listen.port) {
      const { host, path } = config.listen;
      const address = await new Promise<AddressInfo>((resolve, reject) => {
        server = serve({ fetch: app.fetch, hostname: host, port }, resolve);
        server.once('error', reject);
      });
      sessions.startSweeper();
      const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
      return new URL(`http://${shownHost}:${address.port}${path}`);
    },
    async close() {
      const listening = server;
      server = undefined;
      const stopped = listening ? new Promise<void>((resolve) => listening.close(() => resolve())) : Promise.resolve();
      await sessions.closeAll();
      await pool.close();
      if (listening && 'closeAllConnections' in listening) listening.closeAllConnections();
      await stopped;
      await dispatcher.destroy();
    },
  };
}
