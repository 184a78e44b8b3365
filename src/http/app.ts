// The Hono app: edge checks (Origin, Host, CORS for allowed origins), authentication, the MCP
// endpoint at the configured path, protected resource metadata, health and metrics.
import { randomUUID } from 'node:crypto';
import { Hono, type Context } from 'hono';
import type { Registry } from 'prom-client';
import type { Authenticator } from '../auth/authenticator.js';
import { AuthError, type Principal } from '../auth/principal.js';
import type { Config } from '../config/schema.js';
import { ErrorCode } from '../mcp/errors.js';
import type { Metrics } from '../metrics/metrics.js';
import type { RateLimiter } from '../ratelimit/limiter.js';
import type { RequestContext, Router } from '../router/router.js';
import type { SessionStore } from '../session/store.js';
import type { UpstreamHealth } from '../upstream/pool.js';
import type { Logger } from '../util/log.js';
import { parseTraceparent } from '../util/trace.js';
import { allowedHostsOf, checkHost, checkOrigin, corsHeaders, rpcErrorResponse } from './guards.js';
import { createMcpEndpoint } from './mcp-endpoint.js';
import { metricsHandler } from './metrics.js';
import type { StreamSettings } from './responder.js';

export interface Readiness {
  ready: boolean;
  listening: boolean;
  draining: boolean;
  upstreamUp: boolean;
}

export interface AppDeps {
  config: Config;
  router: Router;
  sessions: SessionStore;
  logger: Logger;
  metrics: Metrics;
  health: () => Record<string, UpstreamHealth>;
  /** The rate-limit store's state (Redis or local fallback). */
  rateLimitStore: () => { store: string; state?: string; since?: string };
  limiter: () => RateLimiter;
  readiness: () => Readiness;
  streams: StreamSettings;
  /** Absent: no authentication (only allowed on loopback unless configured otherwise). */
  authenticator?: Authenticator;
  /** Serve /metrics on this listener. */
  metricsRegistry?: Registry;
}

/** Per-request state the middleware sets for the handlers. */
export interface AppVariables {
  requestId: string;
  principal: Principal | undefined;
}

type AppContext = Context<{ Variables: AppVariables }>;

/** A caller-chosen request id is kept when it is short and plain; otherwise the gateway makes one. */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,64}$/;

function contextOf(c: AppContext): RequestContext {
  const context: RequestContext = { requestId: c.get('requestId') };
  const principal = c.get('principal');
  if (principal) context.principal = principal;
  const traceparent = parseTraceparent(c.req.header('traceparent'));
  if (traceparent !== undefined) {
    context.traceparent = traceparent;
    const tracestate = c.req.header('tracestate');
    if (tracestate !== undefined && tracestate.length <= 512) context.tracestate = tracestate;
  }
  return context;
}

export function createApp(deps: AppDeps): Hono<{ Variables: AppVariables }> {
  const { config, authenticator, metrics } = deps;
  const { listen } = config;
  const app = new Hono<{ Variables: AppVariables }>();
  const endpoint = createMcpEndpoint({
    router: deps.router,
    sessions: deps.sessions,
    logger: deps.logger,
    maxBodyBytes: listen.maxBodyBytes,
    maxJsonDepth: listen.maxJsonDepth,
    maxSessions: config.sessions.max,
    maxSessionsPerPrincipal: config.sessions.maxPerPrincipal,
    streams: deps.streams,
    draining: () => deps.readiness().draining,
    limiter: deps.limiter,
    metrics,
  });
  const allowedOrigins = new Set(listen.allowedOrigins);
  const allowedHosts = allowedHostsOf(listen);
  const path = listen.path;
  // Probes and scrapers reach these by pod address; they serve no MCP and no data.
  const operational = new Set(['/healthz', '/readyz', ...(deps.metricsRegistry ? [config.metrics.path] : [])]);

  // Origin first, before anything else happens (DNS rebinding; transports.mdx "Security Warning").
  app.use(async function originCheck(c, next) {
    const refused = checkOrigin(c.req.raw, allowedOrigins);
    if (refused) return refused;
    const origin = c.req.header('origin');
    if (origin !== undefined && c.req.method === 'OPTIONS') return new Response(null, { status: 204, headers: corsHeaders(origin, true) });
    await next();
    if (origin !== undefined) for (const [name, value] of Object.entries(corsHeaders(origin, false))) c.res.headers.set(name, value);
  });

  app.use(async function hostCheck(c, next) {
    if (!operational.has(c.req.path)) {
      const refused = checkHost(c.req.raw, allowedHosts);
      if (refused) return refused;
    }
    await next();
  });

  app.use(async function requestId(c, next) {
    const given = c.req.header('x-request-id');
    const id = given !== undefined && REQUEST_ID.test(given) ? given : randomUUID();
    c.set('requestId', id);
    await next();
    c.res.headers.set('x-request-id', id);
  });

  app.get('/healthz', (c) => c.json({ status: 'ok', sessions: deps.sessions.size, rateLimits: deps.rateLimitStore(), upstreams: deps.health() }));
  app.get('/readyz', (c) => {
    const readiness = deps.readiness();
    return c.json({ ...readiness, sessions: deps.sessions.size, upstreams: deps.health() }, readiness.ready ? 200 : 503);
  });
  if (deps.metricsRegistry) app.get(config.metrics.path, metricsHandler(deps.metricsRegistry));
  if (authenticator?.metadata) {
    // RFC 9728 §3: at the root and suffixed with the resource's path.
    for (const wellKnown of authenticator.metadataPaths) app.get(wellKnown, (c) => c.json(authenticator.metadata!));
  }

  // Every request to the endpoint carries a credential; a session id is never one.
  app.use(path, async function authenticate(c, next) {
    if (!authenticator) {
      c.set('principal', undefined);
      return next();
    }
    try {
      c.set(
        'principal',
        await authenticator.authenticate({ authorization: c.req.header('authorization'), apiKey: c.req.header('x-api-key'), url: new URL(c.req.url) }),
      );
    } catch (err) {
      if (!(err instanceof AuthError)) throw err;
      metrics.authFailures.inc({ reason: err.reason });
      deps.logger.debug('request refused', { reason: err.reason, requestId: c.get('requestId') });
      const refusal = authenticator.refusal(err);
      return rpcErrorResponse(refusal.status, ErrorCode.InvalidRequest, refusal.message, null, refusal.headers);
    }
    await next();
  });

  const methodNotAllowed = (): Response => rpcErrorResponse(405, ErrorCode.InvalidRequest, 'Method Not Allowed', null, { allow: 'GET, POST, DELETE' });
  app.post(path, (c) => endpoint.post(c.req.raw, contextOf(c)));
  // Hono serves HEAD through GET handlers and drops the body, which would leave a GET stream
  // attached to the session forever; HEAD is not part of the transport.
  app.get(path, (c) => (c.req.raw.method === 'HEAD' ? methodNotAllowed() : endpoint.get(c.req.raw, contextOf(c))));
  app.delete(path, (c) => endpoint.delete(c.req.raw, contextOf(c)));
  app.all(path, methodNotAllowed);

  app.onError((err, c) => {
    deps.logger.error('unhandled error in HTTP handler', { err, path: c.req.path });
    return rpcErrorResponse(500, ErrorCode.InternalError, 'Internal error');
  });
  return app;
}
