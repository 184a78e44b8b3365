// Prometheus exposition of the gateway's metrics registry, on the main listener or an admin one.
import type { IncomingMessage } from 'node:http';
import { Hono } from 'hono';
import type { Registry } from 'prom-client';
import { checkOperationalHost } from './guards.js';
import { fromIncoming, fromRequest } from './input.js';

/** The handler for GET `path`: the registry in the text exposition format. */
export function metricsHandler(registry: Registry): () => Promise<Response> {
  return async function metrics() {
    return new Response(await registry.metrics(), { headers: { 'content-type': registry.contentType } });
  };
}

/**
 * A separate app serving only the metrics (metrics.port). As on the main listener, a request must
 * name one of `hosts` (metricsHostsOf) or an IP literal as Host (DNS rebinding), else 403.
 */
export function createMetricsApp(path: string, registry: Registry, hosts: ReadonlySet<string>): Hono<{ Bindings: { incoming?: IncomingMessage } }> {
  const app = new Hono<{ Bindings: { incoming?: IncomingMessage } }>();
  app.use(async function host(c, next) {
    const refused = checkOperationalHost(c.env?.incoming ? fromIncoming(c.env.incoming) : fromRequest(c.req.raw), hosts);
    if (refused) return refused;
    await next();
  });
  app.get(path, metricsHandler(registry));
  return app;
}
