// The Hono app: edge checks (Origin, Host, CORS for allowed origins), authentication, the MCP
// endpoint at the configured path and each endpoint of `endpoints[]` beside it (its teams only),
// protected resource metadata, health and metrics. Beside it,
// the direct path: POSTs to the endpoint (every call) through the same checks and endpoint
// without Hono's router or Web Request/Response objects (bench/README.md, "Second pass").
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Hono, type Context } from 'hono';
import type { Registry } from 'prom-client';
import { mountConnect, type ConnectDeps } from './connect.js';
import { mountAdminPins } from './admin-pins.js';
import type { PinOperations } from '../pinning/setup.js';
import { mountFrontDoor } from './front-door.js';
import type { FrontDoor } from '../frontdoor/front-door.js';
import type { Authenticator } from '../auth/authenticator.js';
import { AuthError, type Principal } from '../auth/principal.js';
import { isLoopback, type Config } from '../config/schema.js';
import type { Metrics } from '../metrics/metrics.js';
import type { SecurityEvents } from '../audit/events.js';
import type { Tracing } from '../telemetry/tracing.js';
import type { Policy } from '../policy/policy.js';
import type { RateLimiter } from '../ratelimit/limiter.js';
import type { Caller, Router } from '../router/router.js';
import type { SessionLinks } from '../links/links.js';
import type { GatewayTasks } from '../tasks/gateway-tasks.js';
import type { SessionStore } from '../links/session.js';
import type { Logger } from '../util/log.js';
import { RequestIds } from '../util/request-ids.js';
import { parseTraceparent } from '../util/trace.js';
import { allowedHostsOf, checkHost, checkOperationalHost, checkOrigin, corsHeaders } from './guards.js';
import { refuse, refuseAuthentication, refusals } from './refusals.js';
import { createMcpEndpoint } from './mcp-endpoint.js';
import { metricsHandler } from './metrics.js';
import { fromIncoming, fromRequest, type HttpInput } from './input.js';
import { after } from '../util/callbacks.js';
import type { StreamSettings } from './responder.js';
import { isWebResponse, ReplySink, toResponse, writeReply, type Reply } from './reply.js';
import { streamReply } from './sse-connection.js';

export interface Readiness {
  ready: boolean;
  listening: boolean;
  draining: boolean;
  upstreamUp: boolean;
}

export interface AppDeps {
  config: Config;
  /** Requests refused at the edge (authentication, an endpoint's teams, the principal's rate limit, the session and listen caps), audited and traced. */
  events?: SecurityEvents;
  /** Spans of initialize and of the 2026-07-28 requests the edge answers itself, when tracing is on. */
  tracing?: Tracing;
  router: Router;
  /** Opens and resumes sessions (initialize, a session taken over from another replica, one the edge keeps). */
  links: SessionLinks;
  sessions: SessionStore;
  logger: Logger;
  metrics: Metrics;
  /** Each upstream's health, as the pool reports it (shown as it is on /healthz and /readyz). */
  health: () => Record<string, object>;
  /** The rate-limit store's state (Redis or local fallback). */
  rateLimitStore: () => { store: string; state?: string; since?: string };
  limiter: () => RateLimiter;
  /** Read at each request: a config reload may replace it (who may use an endpoint). */
  policy: () => Policy;
  readiness: () => Readiness;
  streams: StreamSettings;
  /** Absent: no authentication (only allowed on loopback unless configured otherwise). */
  authenticator?: Authenticator;
  /** Serve /metrics on this listener. */
  metricsRegistry?: Registry;
  /** Tasks the gateway makes of long calls (src/tasks/). */
  tasks?: GatewayTasks;
  /** The connect pages of `userAuth` upstreams, and how many principals signed in to each. */
  connect?: ConnectDeps & { signedIn: () => Promise<Record<string, number>> };
  /** What operators do with pinned tool definitions, at /admin/pins (served only with auth). */
  pins?: PinOperations;
  /** Switchyard as the authorization server hosts see (auth.oauth.frontDoor). */
  frontDoor?: FrontDoor;
}

/** Per-request state the middleware sets for the handlers. */
export interface AppVariables {
  input: HttpInput;
  requestId: string;
  principal: Principal | undefined;
}

/** Set by @hono/node-server: the Node request and response behind `c.req.raw` and `c.res`. */
interface NodeBindings {
  incoming?: IncomingMessage;
  outgoing?: ServerResponse;
}

export type AppEnv = { Bindings: NodeBindings; Variables: AppVariables };
type AppContext = Context<AppEnv>;

/** The preflight answer of the front door's paths open to any origin. */
const OPEN_PREFLIGHT = { 'access-control-allow-origin': '*', 'access-control-allow-methods': 'GET, POST', 'access-control-allow-headers': 'content-type, authorization', 'access-control-max-age': '600' };

/** A caller-chosen request id is kept when it is short and plain; otherwise the gateway makes one. */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,64}$/;

function contextOf(input: HttpInput, requestId: string, principal: Principal | undefined, endpoint: string | undefined): Caller {
  const context: Caller = { requestId };
  if (principal) context.principal = principal;
  if (endpoint !== undefined) context.endpoint = endpoint;
  const traceparent = parseTraceparent(input.header('traceparent'));
  if (traceparent !== undefined) {
    context.traceparent = traceparent;
    const tracestate = input.header('tracestate');
    if (tracestate !== undefined && tracestate.length <= 512) context.tracestate = tracestate;
  }
  return context;
}

/** A request past the edge checks: its id, and the headers of our own every answer carries. */
interface Admitted {
  requestId: string;
  headers: Record<string, string>;
}

/** The HTTP side of the gateway: the Hono app, and the direct path for POSTs to the endpoint. */
export interface HttpApp {
  app: Hono<AppEnv>;
  /**
   * Serves a POST to the MCP endpoint straight from Node's request and response (no Request,
   * Response or router on the calls' path); returns false for anything else, which is Hono's.
   */
  direct(incoming: IncomingMessage, outgoing: ServerResponse): boolean;
  /** The paths of probes and scrapers (/healthz, /readyz, metrics): still served while draining. */
  operational: ReadonlySet<string>;
}

export function createApp(deps: AppDeps): HttpApp {
  const { config, authenticator, metrics } = deps;
  const { listen } = config;
  const app = new Hono<AppEnv>();
  const endpoint = createMcpEndpoint({
    router: deps.router,
    links: deps.links,
    sessions: deps.sessions,
    logger: deps.logger,
    maxBodyBytes: listen.maxBodyBytes,
    maxJsonDepth: listen.maxJsonDepth,
    maxSessions: config.sessions.max,
    maxSessionsPerPrincipal: config.sessions.maxPerPrincipal,
    inputTimeoutMs: config.sessions.inputTimeout,
    streams: deps.streams,
    draining: () => deps.readiness().draining,
    limiter: deps.limiter,
    metrics,
    ...(deps.tasks ? { tasks: deps.tasks } : {}),
    ...(deps.events ? { events: deps.events } : {}),
    ...(deps.tracing ? { tracing: deps.tracing } : {}),
    mainEndpoint: listen.path,
    teams: (caller) => deps.policy().access(caller.principal, caller.endpoint).teams,
  });
  const allowedHosts = allowedHostsOf(listen);
  const origins = { allowed: new Set(listen.allowedOrigins), hosts: allowedHosts, loopback: isLoopback(listen.host) };
  const path = listen.path;
  // Every MCP endpoint's path → the endpoint it is (undefined: the main one).
  const endpoints = new Map<string, string | undefined>([[path, undefined], ...config.endpoints.map((e) => [e.path, e.path] as const)]);
  const requestIds = new RequestIds();
  // Probes and scrapers reach these by pod address (an IP literal as Host); they serve no MCP.
  const operational = new Set(['/healthz', '/readyz', ...(deps.metricsRegistry ? [config.metrics.path] : [])]);

  // The front door's documents and back channel serve browser-based hosts of any origin: nothing
  // there reads a cookie or acts for the browser (RFC 8414 metadata, JWKS, token, register, revoke).
  const anyOrigin = new Set(deps.frontDoor?.openPaths() ?? []);
  // The edge checks, in this order: Origin first, before anything else happens (DNS rebinding;
  // transports.mdx "Security Warning"), then Host, then the request id.
  function admit(input: HttpInput): Admitted | Response {
    const origin = input.header('origin');
    const open = origin !== undefined && anyOrigin.has(input.path);
    const refusedOrigin = open ? undefined : checkOrigin(input, origins);
    if (refusedOrigin) return refusedOrigin;
    if (origin !== undefined && input.method === 'OPTIONS') return new Response(null, { status: 204, headers: open ? OPEN_PREFLIGHT : corsHeaders(origin, true, input.header('access-control-request-headers')) });
    // Before anything decodes the target (the query's access_token check, Hono's routing).
    if (!input.wellEncoded) return refuse(refusals.malformedTarget);
    // DNS rebinding: a rebinding page's Host is its own DNS name, never an IP literal.
    const refusedHost = operational.has(input.path) ? checkOperationalHost(input, allowedHosts) : checkHost(input, allowedHosts);
    if (refusedHost) return refusedHost;
    const given = input.header('x-request-id');
    const requestId = given !== undefined && REQUEST_ID.test(given) ? given : requestIds.next();
    if (open) return { requestId, headers: { 'access-control-allow-origin': '*', 'x-request-id': requestId } };
    return { requestId, headers: origin === undefined ? { 'x-request-id': requestId } : { ...corsHeaders(origin, false), 'x-request-id': requestId } };
  }

  // Every request to the endpoint carries a credential; a session id is never one. The answer
  // comes without a promise when nothing needs verifying (a token verified before, an API key).
  function authenticate(input: HttpInput, requestId: string, endpoint: string | undefined): Principal | Response | Promise<Principal | Response> {
    const credentials = { authorization: input.header('authorization'), apiKey: input.header('x-api-key'), queryToken: input.hasQueryParam('access_token'), endpoint };
    const refused = (err: unknown): Response => {
      if (!(err instanceof AuthError)) throw err;
      metrics.authFailures.inc({ reason: err.reason });
      deps.logger.debug('request refused', { reason: err.reason, requestId });
      deps.events?.requestRefused({ requestId, endpoint: endpoint ?? listen.path, reason: 'authentication', outcome: 'refused', errorKind: err.reason, traceparent: input.header('traceparent') });
      return refuseAuthentication(authenticator!.refusal(err, endpoint));
    };
    try {
      return authenticator!.authenticateNow(credentials) ?? authenticator!.authenticate(credentials).catch(refused);
    } catch (err) {
      return refused(err);
    }
  }

  /** An endpoint open to some teams only refuses everyone else (the main one is open to all). */
  function admitted(principal: Principal | undefined, endpoint: string | undefined, requestId: string): Principal | undefined | Response {
    if (endpoint === undefined || deps.policy().admits(principal, endpoint)) return principal;
    deps.logger.debug('request refused', { reason: 'endpoint_teams', endpoint, requestId });
    deps.events?.requestRefused({ requestId, principal: principal?.id, endpoint, reason: 'endpoint_teams', outcome: 'refused' });
    return refuse(refusals.endpointForbidden);
  }

  // The request is read through HttpInput: straight from Node's IncomingMessage when served by
  // the listener (no Headers object or web stream), from the Request otherwise. Response
  // headers of our own go on the Node response, where writeHead merges them, so the handler's
  // Response is never rebuilt to add them.
  app.use(async function edge(c, next) {
    const outgoing = c.env?.outgoing;
    const input = c.env?.incoming ? fromIncoming(c.env.incoming, outgoing) : fromRequest(c.req.raw);
    c.set('input', input);
    const admitted = admit(input);
    if (isWebResponse(admitted)) return admitted;
    c.set('requestId', admitted.requestId);
    const { headers } = admitted;
    if (outgoing) for (const name in headers) outgoing.setHeader(name, headers[name]!);
    await next();
    if (!outgoing) for (const name in headers) c.res.headers.set(name, headers[name]!);
  });

  const { connect } = deps;
  app.get('/healthz', async (c) => {
    const health = { status: 'ok', sessions: deps.sessions.size, rateLimits: deps.rateLimitStore(), upstreams: deps.health() };
    if (!connect) return c.json(health);
    // Principals with their own credential, per upstream: counts only, never names.
    const signedIn = await connect.signedIn().catch(() => undefined);
    return c.json({ ...health, ...(signedIn ? { signedIn } : {}) });
  });
  if (connect) mountConnect(app, connect);
  if (authenticator && deps.pins) mountAdminPins(app, { operations: deps.pins, scopes: () => config.auth?.admin.scopes ?? [], authenticate: (c) => authenticate(c.get('input'), c.get('requestId'), undefined) });
  if (deps.frontDoor) mountFrontDoor(app, deps.frontDoor);
  app.get('/readyz', (c) => {
    const readiness = deps.readiness();
    return c.json({ ...readiness, sessions: deps.sessions.size, upstreams: deps.health() }, readiness.ready ? 200 : 503);
  });
  if (deps.metricsRegistry) app.get(config.metrics.path, metricsHandler(deps.metricsRegistry));
  if (authenticator?.metadata) {
    // RFC 9728 §3: at the root and suffixed with the resource's path.
    for (const wellKnown of authenticator.metadataPaths) app.get(wellKnown, (c) => c.json(authenticator.metadata!));
    for (const other of config.endpoints) {
      const metadata = authenticator.metadataOf(other.path);
      if (metadata) app.get(metadata.path, (c) => c.json(metadata.document));
    }
  }

  const methodNotAllowed = (): Response => refuse(refusals.methodNotAllowed);
  for (const [route, scope] of endpoints) {
    app.use(route, async function authenticated(c, next) {
      const principal = authenticator ? await authenticate(c.get('input'), c.get('requestId'), scope) : undefined;
      if (isWebResponse(principal)) return principal;
      const allowed = admitted(principal, scope, c.get('requestId'));
      if (isWebResponse(allowed)) return allowed;
      c.set('principal', allowed);
      await next();
    });
    const contextOfRoute = (c: AppContext): Caller => contextOf(c.get('input'), c.get('requestId'), c.get('principal'), scope);
    app.post(route, async (c) => toResponse(await endpoint.post(c.get('input'), contextOfRoute(c))));
    // Hono serves HEAD through GET handlers and drops the body, which would leave a GET stream
    // attached to the session forever; HEAD is not part of the transport.
    app.get(route, async (c) => (c.get('input').method === 'HEAD' ? methodNotAllowed() : streamReply(await endpoint.get(c.get('input'), contextOfRoute(c)), c.env?.outgoing)));
    app.delete(route, (c) => endpoint.delete(c.get('input'), contextOfRoute(c)));
    app.all(route, methodNotAllowed);
  }

  const internalError = (err: unknown, path: string): Response => {
    deps.logger.error('unhandled error in HTTP handler', { err, path });
    return refuse(refusals.internalError);
  };
  app.onError((err, c) => internalError(err, c.req.path));

  /**
   * The same steps as the middleware and route above, without Hono: credential, endpoint (the
   * edge checks come first, in direct()). No promise of its own: `sink` gets the answer (or
   * the refusal), or what went wrong.
   */
  function post(input: HttpInput, requestId: string, scope: string | undefined, sink: ReplySink): void {
    const authenticated = (principal: Principal | undefined | Response): void => {
      const allowed = isWebResponse(principal) ? principal : admitted(principal, scope, requestId);
      if (isWebResponse(allowed)) sink.reply(allowed);
      else endpoint.post(input, contextOf(input, requestId, allowed, scope), sink);
    };
    if (!authenticator) return authenticated(undefined);
    const outcome = authenticate(input, requestId, scope);
    // Run at once, a throw reaches direct()'s own catch; after the verification, `after` guards it.
    if (outcome instanceof Promise) after(outcome, authenticated, sink.fail);
    else authenticated(outcome);
  }

  const maxBody = listen.maxBodyBytes;
  return {
    app,
    operational,
    direct(incoming, outgoing) {
      // A body that is chunked or declared too large is Hono's: its adapter drains or drops
      // what a 413 leaves unread. A declared, acceptable body is always read to its end.
      if (incoming.method !== 'POST') return false;
      const declared = incoming.headers['content-length'];
      if (declared === undefined || !(Number(declared) <= maxBody)) return false;
      const input = fromIncoming(incoming, outgoing);
      if (!endpoints.has(input.path)) return false;
      const scope = endpoints.get(input.path);
      // The edge's headers go out with the answer (writeReply), not set on the response first.
      let edge: Readonly<Record<string, string>> | undefined;
      const writeFailed = (err: unknown): void => deps.logger.debug('writing a response failed', { err });
      const write = (reply: Reply): void => {
        try {
          writeReply(reply, outgoing, edge)?.catch(writeFailed);
        } catch (err) {
          writeFailed(err);
        }
      };
      const failed = (err: unknown): void => write(internalError(err, input.path));
      try {
        const admitted = admit(input);
        if (isWebResponse(admitted)) {
          write(admitted);
          return true;
        }
        edge = admitted.headers;
        post(input, admitted.requestId, scope, new ReplySink(write, failed));
      } catch (err) {
        failed(err);
      }
      return true;
    },
  };
}
