// Builds tracing and the audit log from a config, once per gateway (gateway.ts): what the router
// observes of each call, the security events other parts report, and the one close().
import type { Config, UpstreamConfig } from '../config/schema.js';
import type { Metrics } from '../metrics/metrics.js';
import { Tracing, type UpstreamAddress } from '../telemetry/tracing.js';
import { GATEWAY_VERSION } from '../version.js';
import { AuditLog, type WritableLike } from './audit.js';
import { SecurityEvents } from './events.js';

export interface ObservabilityDeps {
  metrics: Metrics;
  /** The standard OTEL_* variables (main.ts passes the process's). */
  env: Readonly<Record<string, string | undefined>>;
  /** Where the audit stdout sink writes. */
  stdout?: WritableLike | undefined;
  /** The upstream's config, for its CLIENT spans' server.address. */
  upstream: (name: string) => UpstreamConfig | undefined;
  resolvePath: (path: string) => string;
  redact?: ((text: string) => string) | undefined;
  /** Hears an audit sink's failures. */
  onerror: (err: unknown) => void;
  /** Hears why tracing could not shut down cleanly (a collector that never answered); default: onerror. */
  ontracingerror?: ((err: unknown) => void) | undefined;
  /** Records an audit sink holds at most (tests; default AUDIT_QUEUE_LIMIT). */
  auditQueueLimit?: number | undefined;
}

export interface Observability {
  tracing: Tracing | undefined;
  audit: AuditLog | undefined;
  events: SecurityEvents;
  close(): Promise<void>;
}

/** server.address and server.port of an HTTP upstream; a stdio child is on pipes. */
export function addressOf(upstream: UpstreamConfig | undefined): UpstreamAddress | undefined {
  if (upstream?.stdio) return { transport: 'pipe' };
  if (!upstream?.http) return undefined;
  const url = new URL(upstream.http.url);
  const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
  return { transport: 'tcp', address: url.hostname.replace(/^\[|\]$/g, ''), port };
}

export function createObservability(config: Config, deps: ObservabilityDeps): Observability {
  // Each upstream's address parsed once per config entry (a reload makes new entries).
  const addresses = new WeakMap<UpstreamConfig, UpstreamAddress | undefined>();
  const tracing = Tracing.create(config.tracing, {
    env: deps.env,
    serviceVersion: GATEWAY_VERSION,
    addressOf: (name) => {
      const upstream = deps.upstream(name);
      if (upstream === undefined) return undefined;
      if (!addresses.has(upstream)) addresses.set(upstream, addressOf(upstream));
      return addresses.get(upstream);
    },
    ...(deps.redact ? { redact: deps.redact } : {}),
    ...(config.sessions.keys ? { samplingSecret: config.sessions.keys[0]! } : {}),
  });
  const audit =
    config.audit &&
    new AuditLog(config.audit, {
      metrics: deps.metrics,
      ...(deps.stdout ? { stdout: deps.stdout } : {}),
      resolvePath: deps.resolvePath,
      ...(deps.redact ? { redact: deps.redact } : {}),
      otlpEndpoint: config.tracing.otlp.endpoint,
      env: deps.env,
      serviceVersion: GATEWAY_VERSION,
      ...(deps.auditQueueLimit !== undefined ? { limit: deps.auditQueueLimit } : {}),
      onerror: deps.onerror,
    });
  return {
    tracing,
    audit,
    events: new SecurityEvents(audit, tracing),
    // Bounded in time (5 s each, side by side), and never rejects: a collector that is down
    // costs what it held (logged, and counted for audit), not the gateway's clean exit.
    async close() {
      await Promise.all([tracing?.shutdown().catch(deps.ontracingerror ?? deps.onerror), audit?.close().catch(deps.onerror)]);
    },
  };
}
