// Prometheus exposition of the gateway's metrics registry, on the main listener or an admin one.
import { Hono } from 'hono';
import type { Registry } from 'prom-client';

/** The handler for GET `path`: the registry in the text exposition format. */
export function metricsHandler(registry: Registry): () => Promise<Response> {
  return async function metrics() {
    return new Response(await registry.metrics(), { headers: { 'content-type': registry.contentType } });
  };
}

/** A separate app serving only the metrics (metrics.port). */
export function createMetricsApp(path: string, registry: Registry): Hono {
  const app = new Hono();
  app.get(path, metricsHandler(registry));
  return app;
}
