// The Hono app: the MCP endpoint at the configured path, health, and nothing else.
import { randomUUID } from 'node:crypto';
import { Hono, type Context } from 'hono';
import type { ListenConfig } from '../config/schema.js';
import type { StreamSettings } from './responder.js';
import { ErrorCode } from '../mcp/errors.js';
import type { RequestContext, Router } from '../router/router.js';
import { parseTraceparent } from '../util/trace.js';
import type { SessionStore } from '../session/store.js';
import type { UpstreamHealth } from '../upstream/pool.js';
import type { Logger } from '../util/log.js';
import type { Registry } from 'prom-client';
import { checkOrigin, rpcErrorResponse } from './guards.js';
import { metricsHandler } from './metrics.js';
import { createMcpEndpoint } from './mcp-endpoint.js';

export interface Readiness {
  ready: boolean;
  listening: boolean;
  draining: boolean;
  upstreamUp: boolean;
}

export interface AppDeps {
  listen: ListenConfig;
  router: Router;
  sessions: SessionStore;
  logger: Logger;
  health: () => Record<string, UpstreamHealth>;
  readiness: () => Readiness;
  streams: StreamSettings;
  /** Serve /metrics on this listener. */
  metrics?: { path: string; registry: Registry };
}

/** Per-request state the middleware sets for the handlers. */
export interface AppVariables {
  requestId: string;
}

type AppContext = Context<{ Variables: AppVariables }>;

/** A caller-chosen request id is kept when it is short and plain; otherwise the gateway makes one. */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,64}$/;

function contextOf(c: AppContext): RequestContext {
  const context: RequestContext = { requestId: c.get('requestId') };
  const traceparent = parseTraceparent(c.req.header('traceparent'));
  if (traceparent !== undefined) {
    context.traceparent = traceparent;
    const tracestate = c.req.header('tracestate');
    if (tracestate !== undefined && tracestate.length <= 512) context.tracestate = tracestate;
  }
  return context;
}

export function createApp(deps: AppDeps): Hono<{ Variables: AppVariables }> {
  const app = new Hono<{ Variables: AppVariables }>();
  const endpoint = createMcpEndpoint({
    router: deps.router,
    sessions: deps.sessions,
    logger: deps.logger,
    maxBodyBytes: deps.listen.maxBodyBytes,
    streams: deps.streams,
    draining: () => deps.readiness().draining,
  });
  const allowedOrigins = new Set(deps.listen.allowedOrigins);
  const path = deps.listen.path;

  app.use(async function originCheck(c, next) {
    const refused = checkOrigin(c.req.raw, allowedOrigins);
    if (refused) return refused;
    await next();
  });

  app.use(async function requestId(c, next) {
    const given = c.req.header('x-request-id');
    const id = given !== undefined && REQUEST_ID.test(given) ? given : randomUUID();
    c.set('requestId', id);
    await next();
    c.res.headers.set('x-request-id', id);
  });

  // Liveness: the process answers. Readiness: config loaded, listening, not draining, and at
  // least one upstream up (by a session's handshake or the periodic probe).
  app.get('/healthz', (c) => c.json({ status: 'ok', sessions: deps.sessions.size, upstreams: deps.health() }));
  app.get('/readyz', (c) => {
    const readiness = deps.readiness();
    return c.json({ ...readiness, sessions: deps.sessions.size, upstreams: deps.health() }, readiness.ready ? 200 : 503);
  });

  const methodNotAllowed = (): Response => rpcErrorResponse(405, ErrorCode.InvalidRequest, 'Method Not Allowed', null, { allow: 'GET, POST, DELETE' });
  if (deps.metrics) app.get(deps.metrics.path, metricsHandler(deps.metrics.registry));
  app.post(path, (c) => endpoint.post(c.req.raw, contextOf(c)));
  // Hono serves HEAD through GET handlers and drops the body, which would leave a GET stream
  // attached to the session forever; HEAD is not part of the transport.
  app.get(path, (c) => (c.req.raw.method === 'HEAD' ? methodNotAllowed() : endpoint.get(c.req.raw)));
  app.delete(path, (c) => endpoint.delete(c.req.raw));
  app.all(path, methodNotAllowed);

  app.onError((err, c) => {
    deps.logger.error('unhandled error in HTTP handler', { err, path: c.req.path });
    return rpcErrorResponse(500, ErrorCode.InternalError, 'Internal error');
  });
  return app;
}
