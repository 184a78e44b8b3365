// The gateway.yaml schema. Keys of DESIGN.md §8 are a public contract: extend, never rename.
// Every object is strict, so a misspelt key is an error at load, not a silently ignored setting.
import { z } from 'zod';
import { parseDuration } from '../util/duration.js';
import { LOG_LEVELS } from '../util/log.js';

export const UPSTREAM_NAME = /^[a-z0-9][a-z0-9-]{0,31}$/;

const duration = z.union([z.number(), z.string()]).transform((value, ctx) => {
  const ms = parseDuration(value);
  if (ms === undefined) {
    ctx.addIssue({ code: 'custom', message: `expected a duration such as 500ms, 30s, 5m or 1h, got ${JSON.stringify(value)}` });
    return z.NEVER;
  }
  return ms;
});

const stringMap = z.record(z.string(), z.string());

const stdio = z.strictObject({
  command: z.string().min(1),
  args: z.array(z.string()).default([]),
  /** The child's whole environment besides PATH and HOME: nothing of the gateway's leaks in. */
  env: stringMap.default({}),
  /** Relative to the config file's directory; defaults to it. */
  cwd: z.string().min(1).optional(),
});

const clientCredentials = z.strictObject({
  /** The upstream's authorization server token endpoint. */
  tokenUrl: z.url({ protocol: /^https?$/ }),
  clientId: z.string().min(1),
  clientSecret: z.string().min(1),
  scope: z.string().min(1).optional(),
  /** RFC 8707 resource indicator for the upstream, when its server wants one. */
  resource: z.string().min(1).optional(),
  audience: z.string().min(1).optional(),
});

const http = z.strictObject({
  url: z.url({ protocol: /^https?$/ }),
  headers: stringMap.default({}),
  /** The gateway's own credential for this upstream (OAuth client-credentials grant). */
  oauth: clientCredentials.optional(),
  /** `sse` is the deprecated HTTP+SSE transport of 2024-11-05. */
  transport: z.enum(['streamable-http', 'sse']).default('streamable-http'),
});

const restart = z.strictObject({
  /** First delay before restarting a crashed child; doubles per failure, with jitter. */
  backoff: duration.default(500),
  maxBackoff: duration.default(30_000),
  /** This many crashes within `window` is a crash loop: the upstream is marked down. */
  maxCrashes: z.number().int().min(1).default(5),
  window: duration.default(60_000),
  /** A child that stayed up this long starts its backoff afresh. */
  resetAfter: duration.default(60_000),
});

const circuit = z.strictObject({
  /** Consecutive 5xx answers or connection failures that open the circuit. */
  failures: z.number().int().min(1).default(5),
  /** How long an open circuit fails fast before one probe request goes through. */
  openFor: duration.default(10_000),
});

const upstream = z
  .strictObject({
    stdio: stdio.optional(),
    http: http.optional(),
    /** Name prefix; defaults to the upstream's name. "" exposes names unchanged. */
    prefix: z.union([z.literal(''), z.string().regex(UPSTREAM_NAME, 'must match [a-z0-9][a-z0-9-]{0,31}')]).optional(),
    /** Per-request timeout towards this upstream; progress from the upstream restarts it. */
    timeoutMs: z.number().int().positive().default(60_000),
    /** The most any one request may take, however much progress arrives. */
    maxTotalTimeoutMs: z.number().int().positive().default(600_000),
    /** How long a session's initialize waits for this upstream before leaving it out. */
    initTimeoutMs: z.number().int().positive().default(10_000),
    /**
     * per-session: one upstream session (one child, for stdio) per client session. shared: one
     * child (or `poolSize`) for every session of this replica, for stateless stdio servers.
     */
    sharing: z.enum(['per-session', 'shared']).default('per-session'),
    /** Children of a shared upstream (sessions spread over them). */
    poolSize: z.number().int().min(1).max(64).default(1),
    /** Children of this stdio upstream at once on this replica; more get a clear error. */
    maxProcesses: z.number().int().positive().optional(),
    /** The log level set on a shared child (its log messages reach every session using it). */
    logLevel: z.enum(['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency']).optional(),
    /** A message from the upstream larger than this is treated like a crash. */
    maxMessageBytes: z.number().int().min(1_024).default(16 * 1024 * 1024),
    /**
     * What may wait to be written to a stdio child that stops reading its stdin, in bytes and
     * messages: past either a request fails at once (-32002) and the child stays up.
     */
    maxQueuedBytes: z.number().int().min(1_024).default(16 * 1024 * 1024),
    maxQueuedMessages: z.number().int().min(1).default(10_000),
    /** Restarting crashed stdio children (and reconnecting legacy SSE streams). */
    restart: restart.prefault({}),
    /** Failing fast on an HTTP upstream that keeps failing. */
    circuit: circuit.prefault({}),
    /** Check tools/call arguments against the tool's inputSchema before forwarding. */
    validateArguments: z.boolean().default(true),
    /** tools/call requests to this upstream in flight at once, across sessions (this replica). */
    maxConcurrent: z.number().int().positive().optional(),
    /**
     * Server-initiated requests (sampling, elicitation, roots) from one upstream session waiting
     * for the client at once; more are refused to the upstream, so an upstream cannot make a
     * client that never answers cost the gateway unbounded memory.
     */
    maxClientRequests: z.number().int().positive().default(64),
    /**
     * The most tools listed from this upstream, and the most bytes of their definitions: past
     * either the rest of its list is left out (logged once, counted in
     * switchyard_catalog_truncated_total), so a hostile or runaway catalog cannot stall the gateway.
     */
    maxTools: z.number().int().min(1).default(10_000),
    maxToolBytes: z.number().int().min(1_024).default(32 * 1024 * 1024),
    /**
     * The protocol era the server speaks. auto: probe with server/discover and fall back to
     * initialize (the answer is remembered for the upstream); sessions: initialize only (no
     * probe); stateless: 2026-07-28 only (a server that is not is a connection error).
     */
    era: z.enum(['auto', 'sessions', 'stateless']).default('auto'),
  })
  .superRefine((value, ctx) => {
    if ((value.stdio === undefined) === (value.http === undefined)) {
      ctx.addIssue({ code: 'custom', message: 'needs exactly one of `stdio` or `http`' });
    }
    if (value.http?.transport === 'sse' && value.era === 'stateless') {
      ctx.addIssue({ code: 'custom', path: ['era'], message: 'the legacy SSE transport is sessions-era only' });
    }
    if (value.sharing === 'shared' && !value.stdio) {
      ctx.addIssue({ code: 'custom', path: ['sharing'], message: '`shared` is for stdio upstreams; an HTTP upstream already serves many sessions' });
    }
  });

/** Asymmetric JWS algorithms only: a shared-secret (HS*) or unsigned token is never accepted. */
const JWS_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'] as const;

const tls = z.strictObject({
  /** PEM files; a renewed certificate is picked up without a restart. */
  cert: z.string().min(1),
  key: z.string().min(1),
  /** PEM CA bundle: when set, clients must present a certificate it signed (mutual TLS). */
  ca: z.string().min(1).optional(),
});

const listen = z.strictObject({
  host: z.string().min(1).default('127.0.0.1'),
  port: z.number().int().min(0).max(65_535).default(8080),
  path: z.string().regex(/^\/[^\s?#]*$/, 'must be an absolute path such as /mcp').default('/mcp'),
  /** The URL clients use (behind a proxy or ingress). */
  publicUrl: z.url().optional(),
  /** Origins allowed to call the endpoint from a browser; any other Origin gets 403. */
  allowedOrigins: z.array(z.string()).default([]),
  /** Largest accepted request body; larger ones get 413. */
  maxBodyBytes: z.number().int().positive().default(4 * 1024 * 1024),
  /** Deepest JSON nesting accepted in a request body; deeper gets 400. */
  maxJsonDepth: z.number().int().min(4).max(10_000).default(64),
  /** Largest request head (all headers); larger gets 431. */
  maxHeaderBytes: z.number().int().min(1_024).max(1_048_576).default(16 * 1024),
  /**
   * How long an idle client connection stays open for its next request. Longer than the 60 s
   * idle timeout common to load balancers (which must not reuse a connection the gateway is
   * closing) and than a model's pause between calls (Node's own default is 5 s).
   */
  keepAliveTimeout: duration.default(65_000),
  /** Host header values accepted besides loopback names, publicUrl's host and a concrete listen.host. */
  allowedHosts: z.array(z.string().min(1)).default([]),
  /** Serve HTTPS. */
  tls: tls.optional(),
  /** Listening on a non-loopback address without auth is refused unless this is true. */
  allowUnauthenticated: z.boolean().default(false),
});

const oauth = z.strictObject({
  /** The authorization server's issuer identifier (the token's iss). */
  issuer: z.string().min(1),
  jwksUri: z.url(),
  /** This MCP endpoint's canonical URL (RFC 8707 resource); defaults to listen.publicUrl. */
  resource: z.url().optional(),
  /** Accepted token audiences; defaults to the resource. */
  audience: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]).optional(),
  /** Advertised in the protected resource metadata; defaults to [issuer]. */
  authorizationServers: z.array(z.string().min(1)).min(1).optional(),
  /** Scopes every request's token must carry. */
  scopes: z.array(z.string().min(1)).default([]),
  algorithms: z.array(z.enum(JWS_ALGORITHMS)).min(1).default(['RS256', 'ES256']),
  clockTolerance: duration.default(30_000),
  /** Require this JWT typ header, e.g. "at+jwt" (RFC 9068). */
  typ: z.string().min(1).optional(),
  /** The claim that names the principal within the issuer. */
  principalClaim: z.string().min(1).default('sub'),
  /** An unknown kid refetches the JWKS at most once per this long. */
  jwksCooldown: duration.default(30_000),
  /** Fetched keys are trusted this long; then the JWKS is read again (a removed key stops working). */
  jwksMaxAge: duration.default(10 * 60_000),
});

const apiKey = z.strictObject({
  id: z.string().regex(/^[A-Za-z0-9._-]{1,64}$/),
  /** "sha256:<hex>" of the key (see README: making an API key). */
  hash: z.string().regex(/^sha256:[0-9a-f]{64}$/, 'must be "sha256:" and 64 lowercase hex digits'),
  team: z.string().min(1).optional(),
  scopes: z.array(z.string().min(1)).default([]),
});

const auth = z
  .strictObject({
    oauth: oauth.optional(),
    apiKeys: z.array(apiKey).default([]),
  })
  .superRefine((value, ctx) => {
    if (!value.oauth && value.apiKeys.length === 0) ctx.addIssue({ code: 'custom', message: 'needs `oauth`, `apiKeys`, or both' });
  });

const teamMatch = z.union([
  /** A JWT claim (dotted path for nested claims) equal to, or an array containing, the value. */
  z.strictObject({ claim: z.string().min(1), value: z.union([z.string(), z.number(), z.boolean()]) }),
  /** One principal by id (`<issuer>|<sub>` or `apikey:<id>`). */
  z.strictObject({ principal: z.string().min(1) }),
]);

const toolView = z.strictObject({
  /** The name this team sees the tool under (it shadows any other tool of that name). */
  name: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'must match ^[A-Za-z0-9_-]{1,64}$').optional(),
  title: z.string().optional(),
  description: z.string().optional(),
  /** Arguments fixed for this team: clients cannot override them and do not see them. */
  pin: z.record(z.string(), z.unknown()).default({}),
});

const team = z.strictObject({
  name: z.string().regex(/^[A-Za-z0-9._-]{1,64}$/),
  /** Principals in the team: any of these. API keys name their team themselves. */
  match: z.union([teamMatch, z.array(teamMatch)]).optional(),
  /** The team of principals that match no team. */
  default: z.boolean().default(false),
  /** Globs over namespaced tool and prompt names and resource URIs, or `upstream:<name>`. */
  allow: z.array(z.string().min(1)).default(['*']),
  deny: z.array(z.string().min(1)).default([]),
  /** Per-tool renames, descriptions and pinned arguments, by namespaced tool name. */
  views: z.record(z.string(), toolView).default({}),
  /** Ask the user (elicitation) before a destructive tool runs; refuse when they cannot be asked. */
  confirm: z.boolean().default(false),
});

const limit = z.strictObject({
  rate: z.number().positive(),
  per: duration,
  /** Bucket size: the burst allowed after a quiet spell. Defaults to `rate`. */
  burst: z.number().int().positive().optional(),
});

const rateLimits = z.strictObject({
  /** Requests per principal (initialize, notifications, ping and the GET stream are free). */
  perClient: limit.optional(),
  /** Calls per (principal, tool), by namespaced tool name or glob. */
  perTool: z.record(z.string().min(1), limit).default({}),
  store: z
    .union([
      z.literal('memory'),
      z.strictObject({ redis: z.strictObject({ url: z.string().regex(/^rediss?:\/\//, 'must be a redis:// or rediss:// URL'), prefix: z.string().default('switchyard:') }) }),
    ])
    .default('memory'),
  /** Buckets kept in memory; while all hold recent activity, new principals wait (never a fresh burst). */
  maxPrincipals: z.number().int().min(100).default(100_000),
});

const namespacing = z.strictObject({
  separator: z.string().regex(/^[A-Za-z0-9_.-]{1,4}$/, 'must be 1-4 characters from [A-Za-z0-9_.-]').default('__'),
  maxNameLength: z.number().int().min(16).max(256).default(64),
});

const sessions = z.strictObject({
  /**
   * Keys for self-describing session ids that any replica can resume (first encrypts, all
   * decrypt). Each at least 32 characters of secret; omitted: random ids, this replica only.
   */
  keys: z.array(z.string().min(32, 'a session key needs at least 32 characters')).min(1).optional(),
  /** A session with no request in flight and no open stream is closed after this. */
  idleTimeout: duration.default(30 * 60_000),
  /**
   * A 2026-07-28 client's request that was answered input_required waits this long for the
   * client's retry (with its requestState) before it is cancelled upstream.
   */
  inputTimeout: duration.default(5 * 60_000),
  /** Sessions open at once, in all (503 beyond) and per principal (429 beyond). */
  max: z.number().int().min(1).default(10_000),
  maxPerPrincipal: z.number().int().min(1).default(100),
  /** Per session: how many SSE events are kept for Last-Event-ID resumption... */
  replayEvents: z.number().int().min(1).max(100_000).default(1_000),
  /** ...and how many bytes of them; the oldest go first when either is exceeded. */
  replayBytes: z.number().int().min(1_024).default(4 * 1024 * 1024),
  /**
   * ...and what every session's replay buffer may hold together on this replica: past it, the
   * buffers holding more than their fair share give back their oldest events first.
   */
  replayTotalBytes: z.number().int().min(1_024).default(256 * 1024 * 1024),
  /**
   * What may wait for one SSE connection whose client does not read, in bytes and messages: past
   * either, the oldest progress and log notifications are dropped, then the connection is closed
   * (its stream stays resumable with Last-Event-ID from the replay buffer).
   */
  streamQueueBytes: z.number().int().min(1_024).default(1024 * 1024),
  streamQueueMessages: z.number().int().min(1).default(1_000),
  /** Interval of keep-alive comments on open SSE streams. */
  keepAlive: duration.default(15_000),
  /** The reconnect delay suggested to clients in the SSE retry field. */
  retry: duration.default(1_000),
});

const logging = z.strictObject({
  level: z.enum(LOG_LEVELS).default('info'),
  /** Tool arguments in call logs: their shape (keys and types) only, or the values too. */
  arguments: z.enum(['shape', 'values']).default('shape'),
});

const metrics = z.strictObject({
  /** Serve Prometheus metrics. */
  enabled: z.boolean().default(false),
  /** A separate admin port for /metrics (0 picks one); omitted: on the main listener. */
  port: z.number().int().min(0).max(65_535).optional(),
  /** The admin listener's address (only with `port`). */
  host: z.string().min(1).default('127.0.0.1'),
  path: z.string().regex(/^\/[^\s?#]*$/).default('/metrics'),
});

const shutdown = z.strictObject({
  /** On SIGTERM: how long requests in flight may take to finish before sessions are closed. */
  gracePeriod: duration.default(25_000),
});

const health = z.strictObject({
  /**
   * How often each upstream is probed (initialize, then closed) for /readyz. 0 turns probing
   * off, and readiness then no longer waits for an upstream to be up.
   */
  probeInterval: duration.default(30_000),
});

export const configSchema = z
  .strictObject({
    listen: listen.prefault({}),
    auth: auth.optional(),
    teams: z.array(team).optional(),
    rateLimits: rateLimits.optional(),
    upstreams: z.record(z.string().regex(UPSTREAM_NAME, 'upstream names must match [a-z0-9][a-z0-9-]{0,31}'), upstream),
    namespacing: namespacing.prefault({}),
    sessions: sessions.prefault({}),
    logging: logging.prefault({}),
    shutdown: shutdown.prefault({}),
    health: health.prefault({}),
    metrics: metrics.prefault({}),
  })
  .superRefine((config, ctx) => {
    if (config.auth?.oauth && !config.auth.oauth.resource && !config.listen.publicUrl) {
      ctx.addIssue({ code: 'custom', path: ['auth', 'oauth', 'resource'], message: 'set auth.oauth.resource or listen.publicUrl: tokens must be issued for this exact URL' });
    }
    if (!config.auth && !config.listen.allowUnauthenticated && !isLoopback(config.listen.host)) {
      ctx.addIssue({
        code: 'custom',
        path: ['listen', 'host'],
        message: `${config.listen.host} is not a loopback address and no auth is configured; configure auth or set listen.allowUnauthenticated: true`,
      });
    }
    if (config.teams) {
      const names = new Set<string>();
      config.teams.forEach((t, i) => {
        if (names.has(t.name)) ctx.addIssue({ code: 'custom', path: ['teams', i, 'name'], message: `team "${t.name}" is defined twice` });
        names.add(t.name);
      });
      const defaults = config.teams.filter((t) => t.default);
      if (defaults.length > 1) ctx.addIssue({ code: 'custom', path: ['teams'], message: `only one team may be the default (${defaults.map((t) => t.name).join(', ')})` });
      config.auth?.apiKeys.forEach((key, i) => {
        if (key.team !== undefined && !names.has(key.team)) ctx.addIssue({ code: 'custom', path: ['auth', 'apiKeys', i, 'team'], message: `no team is named "${key.team}"` });
      });
    }
    const { separator, maxNameLength } = config.namespacing;
    const seen = new Map<string, string>();
    let unprefixed: string | undefined;
    for (const [name, entry] of Object.entries(config.upstreams)) {
      const path = ['upstreams', name, 'prefix'];
      const prefix = entry.prefix ?? name;
      // An unprefixed upstream falls back to its own name for names that cannot go bare.
      const routing = prefix === '' ? name : prefix;
      if (prefix === '') {
        if (unprefixed !== undefined) {
          ctx.addIssue({ code: 'custom', path, message: `only one upstream may be unprefixed ("${unprefixed}" already is)` });
        }
        unprefixed = name;
      }
      const owner = seen.get(routing);
      if (owner !== undefined) {
        ctx.addIssue({ code: 'custom', path, message: `names would collide with upstream "${owner}" (both use "${routing}")` });
      }
      seen.set(routing, name);
      // The first separator in an exposed name must be the one after the prefix, or names
      // would split at the wrong place ("gh-x" + "-x-" reads as "gh" + "-x-" + "x-...").
      if ((routing + separator).indexOf(separator) !== routing.length) {
        ctx.addIssue({ code: 'custom', path, message: `"${routing}" contains or runs into the separator "${separator}"` });
      }
      // Room for the prefix, the separator and a shortened name with its hash suffix.
      if (routing.length + separator.length + 12 > maxNameLength) {
        ctx.addIssue({ code: 'custom', path: ['namespacing', 'maxNameLength'], message: `${maxNameLength} leaves no room for names under "${routing}"` });
      }
    }
  });

/** Loopback host names and addresses: the only places an unauthenticated gateway may listen. */
export function isLoopback(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  return bare === 'localhost' || bare === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(bare);
}

export type Config = z.output<typeof configSchema>;
export type AuthConfig = NonNullable<Config['auth']>;
export type TeamConfig = NonNullable<Config['teams']>[number];
export type RateLimitsConfig = NonNullable<Config['rateLimits']>;
export type LimitConfig = RateLimitsConfig['perTool'][string];
export type UpstreamConfig = Config['upstreams'][string];
export type ListenConfig = Config['listen'];
export type NamespacingConfig = Config['namespacing'];
