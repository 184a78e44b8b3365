// Builds a whole gateway from a config: every part is made here and passed down, so each test
// gets a fresh gateway and close() leaves nothing running (no singletons). Also the lifecycle:
// readiness, graceful drain, and hot reload of a new config.
import type { IncomingMessage } from 'node:http';
import { isDeepStrictEqual } from 'node:util';
import type { Hono } from 'hono';
import { Agent } from 'undici';
import type { Config } from './config/schema.js';
import { keepParts } from './config/load.js';
import { createApp, type AppEnv, type Readiness } from './http/app.js';
import { startListener, type Listener } from './http/listener.js';
import { metricsHostsOf } from './http/guards.js';
import { createMetricsApp } from './http/metrics.js';
import { KeepAlives } from './http/keep-alives.js';
import { ListenStreams } from './http/stateless/sessions.js';
import { queueBounds } from './http/responder.js';
import { Authenticator } from './auth/authenticator.js';
import { secretsOf } from './config/secrets.js';
import { Metrics } from './metrics/metrics.js';
import type { Redactor } from './util/redact.js';
import { GatewayError } from './mcp/errors.js';
import { isStatelessVersion } from './mcp/era.js';
import { asksInput } from './mcp/methods.js';
import { Policy } from './policy/policy.js';
import { RateLimiter } from './ratelimit/limiter.js';
import { MemoryBucketStore, type BucketStore } from './ratelimit/memory-store.js';
import { RedisBucketStore } from './ratelimit/redis-store.js';
import { Catalog } from './names/lists.js';
import { ToolFacts } from './router/tool-facts.js';
import { NamespaceCodec } from './names/namespace.js';
import { Router } from './router/router.js';
import { SessionStore } from './session/store.js';
import type { UpstreamClient } from './upstream/client.js';
import { ReplayBudget } from './session/streams.js';
import { SessionTokens } from './session/token.js';
import { fleetOf } from './session/fleet.js';
import { UpstreamPool } from './upstream/pool.js';
import { createUserAuth } from './credentials/setup.js';
import { createTokenExchange } from './credentials/token-exchange-setup.js';
import { PersonalUpstreams } from './links/personal.js';
import { Links } from './links/links.js';
import { createTasks } from './tasks/setup.js';
import { credentialStoreOpener } from './credentials/opener.js';
import { createFrontDoor } from './frontdoor/setup.js';
import { createPinning, pinningOn, policyOf } from './pinning/setup.js';
import { auditToLog } from './pinning/audit.js';
import { createObservability } from './audit/setup.js';
import type { SecurityEvents } from './audit/events.js';
import type { WritableLike } from './audit/audit.js';
import { announcePinChange } from './links/pin-changes.js';
import { resolve as resolvePath } from 'node:path';
import type { Logger } from './util/log.js';

export interface GatewayOptions {
  logger: Logger;
  /** The gateway's environment; stdio children receive only its PATH and HOME. */
  baseEnv: Readonly<Record<string, string | undefined>>;
  /** The logger's redactor, told about the config's secrets (and new ones on reload). */
  redactor?: Redactor;
  /** The config file's directory: relative paths in it (credentials.store.file.path) start there. */
  configDir?: string;
  /** Extra CA certificates (PEM) the front door trusts when fetching client metadata documents (tests; else NODE_EXTRA_CA_CERTS). */
  frontDoorCa?: string;
  /** The standard OTEL_* variables (OTEL_EXPORTER_OTLP_ENDPOINT …) tracing and the audit OTLP sink read. */
  otelEnv?: Readonly<Record<string, string | undefined>>;
  /** Where the audit stdout sink writes (main.ts: process.stdout). */
  stdout?: WritableLike;
  /** Audit records a sink holds at most before dropping (tests; default 10,000). */
  auditQueueLimit?: number;
}

export type { Readiness } from './http/app.js';

export interface Gateway {
  readonly app: Hono<AppEnv>;
  readonly metrics: Metrics;
  /** Security events (sign-ins, tokens, pin approvals, refusals) to audit and trace. */
  readonly events: SecurityEvents;
  /** Listens on the configured host and port (`port` overrides it; 0 picks a free one). */
  start(port?: number): Promise<URL>;
  /** Where /metrics is served on its own admin port, when configured. */
  metricsUrl(): URL | undefined;
  readiness(): Readiness;
  /**
   * Graceful shutdown: readiness turns false at once, and every new request but the probes'
   * is answered 503 before anything reads it (a load balancer may send it to another replica);
   * requests in flight get up to shutdown.gracePeriod to finish; then open streams get a retry
   * hint and close, and everything stops.
   */
  drain(): Promise<void>;
  /** Applies a new config; returns the top-level keys that need a restart to change. */
  reload(next: Config): string[];
  /** Counts a reload that was refused (an invalid config). */
  reloadRejected(): void;
  close(): Promise<void>;
}

/** A listener that could not start (a port taken, an address not here), naming the address it was given. */
export class ListenError extends Error {
  override readonly name = 'ListenError';
  constructor(host: string, port: number, cause: unknown) {
    super(`cannot listen on ${host.includes(':') ? `[${host}]` : host}:${port}: ${(cause as Error).message}`, { cause });
  }
}

const DRAIN_POLL_MS = 50;
/** Config sections built into the running gateway: a reload leaves them as they are (needs a restart). */
const RESTART_ONLY = ['listen', 'sessions', 'logging', 'auth', 'metrics', 'tracing', 'audit', 'credentials'] as const;
/** Keys of sections a reload applies that are built in as well: they too wait for a restart. */
const RESTART_ONLY_KEYS = [
  ['rateLimits', 'store'],
  ['rateLimits', 'maxPrincipals'],
] as const;
/** How long an idle connection to an HTTP upstream that gives no Keep-Alive hint is kept. */
const UPSTREAM_IDLE_MS = 4_000;

function codecFor(config: Config): NamespaceCodec {
  return new NamespaceCodec(
    config.namespacing,
    Object.entries(config.upstreams).map(([upstream, entry]) => ({ upstream, prefix: entry.prefix ?? upstream })),
  );
}

function policyFor(config: Config): Policy {
  const prefixes = new Map(Object.entries(config.upstreams).map(([name, entry]) => [name, entry.prefix ?? name]));
  return new Policy(config.teams, { separator: config.namespacing.separator, prefixes }, config.endpoints);
}

function storeFor(config: Config, logger: Logger): BucketStore {
  const limits = config.rateLimits;
  if (limits && typeof limits.store === 'object') {
    return new RedisBucketStore({ url: limits.store.redis.url, prefix: limits.store.redis.prefix, maxBuckets: limits.maxPrincipals, logger });
  }
  return new MemoryBucketStore(limits?.maxPrincipals ?? 100_000);
}

export function createGateway(initial: Config, options: GatewayOptions): Gateway {
  const { logger } = options;
  let config = initial;
  options.redactor?.update(secretsOf(config));
  const metrics = new Metrics(Object.keys(config.upstreams), { serve: config.metrics.enabled, mainEndpoint: config.listen.path });
  // An idle upstream connection is closed before the upstream closes it: as long as its
  // Keep-Alive hint says less 2 s, else 4 s (below the 5 s of servers that give no hint), so no
  // request is written on a connection the upstream is closing (a POST could not be sent again).
  const dispatcher = new Agent({ keepAliveTimeout: UPSTREAM_IDLE_MS, keepAliveTimeoutThreshold: 2_000, headersTimeout: 0, bodyTimeout: 0 });
  const pool = new UpstreamPool(config.upstreams, {
    dispatcher,
    logger,
    baseEnv: options.baseEnv,
    metrics,
    ...(options.redactor ? { onSecret: (secret: string) => options.redactor!.add(secret) } : {}),
  });
  // Traces and audit records (tracing, audit): built once, closed with the gateway.
  const observability = createObservability(config, {
    metrics,
    env: options.otelEnv ?? {},
    stdout: options.stdout,
    upstream: (name) => pool.config(name),
    resolvePath: (path) => resolvePath(options.configDir ?? '.', path),
    redact: options.redactor?.asFunction(),
    onerror: (err) => logger.warn('audit sink failed', { err }),
    ontracingerror: (err) => logger.warn('tracing shutdown failed', { err }),
    auditQueueLimit: options.auditQueueLimit,
  });
  const { events } = observability;
  // One credential store for all it keeps (per-user credentials, pins): a file is one process's.
  const credentialStore = credentialStoreOpener(config, logger, (path) => resolvePath(options.configDir ?? '.', path));
  const pinning = createPinning(() => config, {
    logger,
    audit: (entry) => {
      auditToLog(logger)(entry);
      if (entry.action === 'pin.approved') events.pinApproved({ principal: entry.by, upstream: entry.upstream, name: entry.name, outcome: 'ok', detail: { kind: entry.kind, ...(entry.digest ? { digest: entry.digest } : {}) } });
    },
    ...(credentialStore ? { open: credentialStore.open } : {}),
    ondrift: (report) => metrics.toolDrift.inc({ upstream: metrics.upstream(report.upstream), kind: report.drift }),
    onchange: (upstream) => announcePinChange(sessions.all(), upstream),
  });
  metrics.observePins(() => pinning.gate.pendingCounts());
  const catalog = new Catalog(codecFor(config), logger, {
    toolLimit: (upstream) => {
      const entry = pool.config(upstream);
      return entry && { count: entry.maxTools, bytes: entry.maxToolBytes };
    },
    ontruncate: (upstream) => metrics.catalogTruncated.inc({ upstream: metrics.upstream(upstream) }),
    screen: (kind, upstream, items, last) => pinning.screen(kind, upstream, items, last),
  });
  const sessions = new SessionStore<UpstreamClient>({
    idleTimeoutMs: config.sessions.idleTimeout,
    maxAgeMs: config.sessions.maxAge,
    replay: { events: config.sessions.replayEvents, bytes: config.sessions.replayBytes, budget: new ReplayBudget(config.sessions.replayTotalBytes) },
    logger,
    fleet: fleetOf(config, logger),
  });
  // Per-user upstream credentials (userAuth): connect URLs under publicUrl's origin, else the listener's.
  const userAuth = createUserAuth(config, {
    logger,
    base: () => (config.listen.publicUrl ? new URL(config.listen.publicUrl).origin : (main?.url.origin ?? `http://${config.listen.host}:${config.listen.port}`)),
    resolvePath: (path) => resolvePath(options.configDir ?? '.', path),
    ...(options.redactor ? { onSecret: (secret: string) => options.redactor!.add(secret) } : {}),
    onSignIn: (upstream, outcome) => {
      metrics.userSignIns.inc({ upstream: metrics.upstream(upstream), outcome });
      events.signIn({ upstream, outcome, ...(outcome === 'ok' ? {} : { reason: outcome }) });
    },
    onRefresh: (upstream, outcome) => metrics.userRefreshes.inc({ upstream: metrics.upstream(upstream), outcome }),
    ...(credentialStore ? { open: credentialStore.open } : {}),
  });
  // The front door (auth.oauth.frontDoor): Switchyard as the authorization server hosts see.
  const frontDoor = credentialStore && createFrontDoor(config, { logger, metrics, events, open: credentialStore.open, ...(options.frontDoorCa ? { ca: options.frontDoorCa } : {}) });
  // Token exchange (upstreams.<name>.http.tokenExchange): each user's IdP token, exchanged per upstream.
  const exchange = createTokenExchange(() => config, {
    logger,
    ...(credentialStore ? { open: credentialStore.open } : {}),
    ...(options.redactor ? { onSecret: (secret: string) => options.redactor!.add(secret) } : {}),
    onExchange: ({ principal, upstream, outcome, variant, error }) => events.tokenExchange({ principal, upstream, outcome, detail: { variant }, ...(error ? { reason: error } : {}) }),
    // A front-door user's subject: the IdP session the front door keeps with their grant.
    ...(frontDoor ? { frontDoor: frontDoor.idpSessions } : {}),
  });
  const personal = userAuth && new PersonalUpstreams({ credentials: userAuth.credentials, flows: userAuth.flows, pool, logger, connectTtlMs: userAuth.connectTtlMs });
  let policy = policyFor(config);
  const store = storeFor(config, logger);
  let limiter = new RateLimiter(config.rateLimits, store, config.sessions.keys);
  const facts = new ToolFacts(logger, () => metrics.schemasCompiled.inc());
  const links = new Links({
    pool,
    sessions,
    catalog,
    logger,
    metrics,
    policy: () => policy,
    factOf: (item) => facts.fact(item),
    ...(config.sessions.keys ? { tokens: new SessionTokens(config.sessions.keys) } : {}),
    ...(personal ? { personal } : {}),
    ...(exchange ? { exchange: exchange.exchanger } : {}),
    pins: { mode: (upstream) => policyOf(config, upstream).mode, quarantined: (upstream) => pinning.gate.isQuarantined(upstream) },
  });
  const tasks = createTasks(config, { catalog, policy: () => policy, current: () => config, metrics, logger, events });
  const router = new Router({
    taskHandles: tasks.handles,
    taskAudit: tasks.audit,
    pool,
    links,
    catalog,
    logger,
    metrics,
    logArguments: () => config.logging.arguments,
    facts,
    limiter: () => limiter,
    withheld: (upstream, name) => pinning.refusal(upstream, name),
    ...(observability.tracing || observability.audit ? { observers: { tracing: observability.tracing, audit: observability.audit, mainEndpoint: config.listen.path } } : {}),
  });
  metrics.observe({
    sessions: () => sessions.size,
    streams: () => sessions.openStreams(),
    upstreams: () => pool.health(),
  });
  let main: Listener | undefined;
  let admin: Listener | undefined;
  let draining = false;

  /** A probe's answer to a client without a certificate (mutual TLS): the status, no detail. */
  const probeAnswer = (path: string): { status: number; body: object } | undefined => {
    if (path === '/healthz') return { status: 200, body: { status: 'ok' } };
    if (path !== '/readyz') return undefined;
    const { ready } = readiness();
    return { status: ready ? 200 : 503, body: { ready } };
  };

  const readiness = (): Readiness => {
    const listening = main !== undefined;
    const upstreamUp = pool.anyUp;
    // Without probes, nothing tells an idle gateway's upstreams apart: readiness then rests on
    // listening and not draining alone (documented with health.probeInterval).
    return { ready: listening && !draining && (upstreamUp || !pool.probing), listening, draining, upstreamUp };
  };

  /** The endpoints' paths as served from the start (createApp routes them once). */
  const servedEndpoints = config.endpoints.map((e) => e.path);
  const { app, direct, operational } = createApp({
    config,
    events,
    ...(observability.tracing ? { tracing: observability.tracing } : {}),
    tasks,
    router,
    links,
    pins: pinning.operations,
    sessions,
    logger,
    metrics,
    health: () => pool.health(),
    rateLimitStore: () => (store instanceof RedisBucketStore ? store.health : { store: 'memory' }),
    limiter: () => limiter,
    policy: () => policy,
    readiness,
    streams: {
      keepAliveMs: config.sessions.keepAlive,
      keepAlives: new KeepAlives(config.sessions.keepAlive),
      retryMs: config.sessions.retry,
      bounds: queueBounds(
        {
          bytes: config.sessions.streamQueueBytes,
          messages: config.sessions.streamQueueMessages,
          ondrop: (method) => metrics.streamDropped.inc({ method: metrics.notification(method) }),
        },
        (kind) => metrics.streamOverflows.inc({ kind }),
      ),
    },
    ...(config.auth ? { authenticator: new Authenticator(config.auth, config.listen, servedEndpoints, frontDoor?.ownIssuer(), exchange && ((principal, token) => exchange.subjects.remember(principal.id, token, typeof principal.claims.exp === 'number' ? principal.claims.exp : undefined))) } : {}),
    ...(frontDoor ? { frontDoor } : {}),
    ...(config.metrics.enabled && config.metrics.port === undefined ? { metricsRegistry: metrics.registry } : {}),
    ...(userAuth
      ? {
          connect: {
            flows: userAuth.flows,
            upstreams: () => Object.keys(config.upstreams).filter((name) => config.upstreams[name]!.http?.userAuth),
            base: () => (config.listen.publicUrl ? new URL(config.listen.publicUrl).origin : (main?.url.origin ?? '')),
            signedIn: () => userAuth.counts(),
          },
        }
      : {}),
  });

  /** The MCP endpoints' paths, as served from the start. */
  const mcpPaths = new Set([config.listen.path, ...servedEndpoints]);
  /**
   * While draining: the probes, and the requests of a session with a request in flight here,
   * for what concerns its calls (a cancellation, an answer to the server's question: only this
   * replica can take them; the endpoint answers a new request of it 503, mcp-endpoint.ts). The
   * drain waits for both; once nothing is in flight, nothing more is served. A 2026-07-28 POST
   * of a method that may take input may be the retry of a call parked here (its requestState,
   * in the body, names it): the endpoint reads it, resumes that call, and answers any other
   * request 503 unrun.
   */
  function servedWhileDraining(path: string, incoming: IncomingMessage): boolean {
    if (operational.has(path)) return true;
    const { 'mcp-session-id': id, 'mcp-protocol-version': version, 'mcp-method': method } = incoming.headers;
    if (id !== undefined) return typeof id === 'string' && (sessions.get(id)?.inflight ?? 0) > 0;
    return incoming.method === 'POST' && mcpPaths.has(path) && isStatelessVersion(version) && typeof method === 'string' && asksInput(method);
  }

  /**
   * A 2026-07-28 subscriptions/listen: a long-lived subscription stream (as a sessions-era GET
   * stream is), which the drain ends itself rather than waits for (listener.ts).
   */
  function opensSubscription(incoming: IncomingMessage): boolean {
    const { 'mcp-method': method, 'mcp-protocol-version': version } = incoming.headers;
    return method === 'subscriptions/listen' && isStatelessVersion(version);
  }

  /**
   * Client requests in flight, which the drain waits for: the sessions', less the
   * subscriptions/listen streams among them (each holds a request of its session, ListenStreams).
   */
  function inflight(): number {
    let total = 0;
    for (const session of sessions.all()) total += session.inflight - (session.delivery instanceof ListenStreams ? session.delivery.inflight : 0);
    return total;
  }

  /**
   * Ends every subscriptions/listen stream with its final result (protocol.md: so its client
   * reconnects to another replica), and one acknowledged later at once; returns how many ended.
   */
  function endListens(): number {
    let ended = 0;
    for (const session of [...sessions.all()]) if (session.delivery instanceof ListenStreams) ended += session.delivery.end();
    return ended;
  }

  async function close(): Promise<void> {
    const listeners = [main, admin];
    main = undefined;
    admin = undefined;
    links.stopSweeping();
    // Tasks running here end failed (and say so) before their calls are cancelled with the sessions.
    await tasks.close();
    await sessions.closeAll();
    await sessions.sharedLog?.close();
    // A replica of a fleet stopping ends no upstream session: a session still being taken over
    // here when its sessions were let go holds one that the fleet's ids carry.
    await pool.close({ keepSessions: config.sessions.keys !== undefined });
    await Promise.all(listeners.map((listener) => listener?.close()));
    await store.close();
    await userAuth?.close();
    await pinning.close();
    await frontDoor?.close();
    await credentialStore?.close();
    await dispatcher.destroy();
    await observability.close();
  }

  return {
    app,
    metrics,
    events,
    readiness,
    metricsUrl: () => admin?.url,
    async start(port = config.listen.port) {
      // A credentials.key that opens nothing stored fails the start (one line, CredentialKeyError).
      await userAuth?.ready();
      if (frontDoor) await credentialStore!.open();
      const { host, path, tls, maxHeaderBytes, keepAliveTimeout: keepAliveTimeoutMs } = config.listen;
      main = await startListener({ fetch: app.fetch, direct, host, port, path, maxHeaderBytes, keepAliveTimeoutMs, logger, servedWhileDraining, subscription: opensSubscription, withoutCertificate: probeAnswer, ...(tls ? { tls } : {}) }).catch((err: unknown) => {
        throw new ListenError(host, port, err);
      });
      if (config.metrics.enabled && config.metrics.port !== undefined) {
        const { host: adminHost, port: adminPort, path: metricsPath } = config.metrics;
        admin = await startListener({ fetch: createMetricsApp(metricsPath, metrics.registry, metricsHostsOf(config.listen, adminHost)).fetch, host: adminHost, port: adminPort, path: metricsPath, logger }).catch((err: unknown) => {
          throw new ListenError(adminHost, adminPort, err);
        });
      }
      sessions.startSweeper();
      links.startSweeping();
      pool.startProbing(config.health.probeInterval);
      pool.startWarming();
      if (pinningOn(config)) pinning.gate.start();
      return main.url;
    },
    async drain() {
      draining = true;
      // From here no request starts: each new one is answered 503 unread (a balancer may send it
      // to another replica), so nothing reaches a session or an upstream client this drain closes.
      main?.drain();
      // Listen streams are subscriptions, not requests: they end now, not after what is in flight.
      const listens = endListens();
      const grace = config.shutdown.gracePeriod;
      const deadline = Date.now() + grace;
      logger.info('draining', { inflight: inflight(), listens, gracePeriodMs: grace });
      while ((inflight() > 0 || (main?.unanswered ?? 0) > 0) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, DRAIN_POLL_MS));
      const abandoned = inflight();
      if (abandoned > 0) {
        logger.warn('grace period over; cancelling requests still in flight', { inflight: abandoned });
        const reason = new GatewayError('upstream_unavailable', 'The gateway is shutting down');
        for (const session of sessions.all()) session.abandon(reason);
        // Let the error answers reach their streams before the streams close.
        const flushBy = Date.now() + 1_000;
        while (inflight() > 0 && Date.now() < flushBy) await new Promise((resolve) => setTimeout(resolve, DRAIN_POLL_MS));
      }
      // A listen opened meanwhile in a session opened meanwhile ends here (else with its session).
      endListens();
      for (const session of sessions.all()) session.hangUp(config.sessions.retry);
      await close();
    },
    reload(next) {
      const needRestart: string[] = RESTART_ONLY.filter((key) => !isDeepStrictEqual(config[key], next[key]));
      for (const [section, key] of RESTART_ONLY_KEYS) {
        if (!isDeepStrictEqual(config[section]?.[key], next[section]?.[key])) needRestart.push(`${section}.${key}`);
      }
      // Endpoints are served where they were at the start (their paths need a restart, and every
      // reload until then says so); their rules follow the policy.
      if (!isDeepStrictEqual(servedEndpoints, next.endpoints.map((e) => e.path))) needRestart.push('endpoints');
      const policyChanged = !isDeepStrictEqual(config.teams, next.teams) || !isDeepStrictEqual(config.endpoints, next.endpoints);
      const namingChanged =
        !isDeepStrictEqual(config.namespacing, next.namespacing) ||
        !isDeepStrictEqual(
          Object.entries(config.upstreams).map(([name, u]) => [name, u.prefix]),
          Object.entries(next.upstreams).map(([name, u]) => [name, u.prefix]),
        );
      // Synchronous from here to the end: every request sees the old config or the new one.
      const changes = pool.update(next.upstreams);
      if (namingChanged) catalog.setCodec(codecFor(next));
      if (policyChanged || namingChanged) policy = policyFor(next);
      const limitsChanged = !isDeepStrictEqual(config.rateLimits, next.rateLimits);
      // What needs a restart stays as it runs until then: parts read the live config (the call
      // log's arguments, the SSE retry, session keys, publicUrl), and the next reload compares with it.
      const probeInterval = config.health.probeInterval;
      config = keepParts(config, next, [...RESTART_ONLY.map((key) => [key] as const), ...RESTART_ONLY_KEYS]);
      if (main && next.health.probeInterval !== probeInterval) pool.startProbing(next.health.probeInterval);
      if (limitsChanged) limiter = new RateLimiter(config.rateLimits, store, config.sessions.keys);
      metrics.setUpstreams(Object.keys(next.upstreams));
      metrics.configReloads.inc({ outcome: 'applied' });
      options.redactor?.update(secretsOf(config));
      logger.info('config reloaded', { ...changes, namingChanged, policyChanged, needRestart });
      events.configReload({ outcome: 'applied', detail: { added: changes.added, changed: changes.changed, removed: changes.removed, needRestart } });
      void links.reconfigure(changes, namingChanged, policyChanged);
      if (pinningOn(next)) pinning.gate.start();
      if (changes.added.length + changes.changed.length > 0) void pool.probeAll();
      return needRestart;
    },
    reloadRejected() {
      metrics.configReloads.inc({ outcome: 'rejected' });
      events.configReload({ outcome: 'rejected' });
    },
    close,
  };
}
