// The gateway.yaml schema. Its keys are a public contract (docs/configuration.md): extend, never rename.
// Every object is strict, so a misspelt key is an error at load, not a silently ignored setting.
import { z } from 'zod';
import { parseDuration } from '../util/duration.js';
import { LOG_LEVELS } from '../util/log.js';
import { endpoint, team } from './policy-schema.js';
import { credentials, login, userAuth } from './credentials-schema.js';
import { tokenExchange, tokenExchangeNeeds } from './token-exchange-schema.js';
import { admin, pinning, upstreamPinning } from './pinning-schema.js';
import { frontDoor, frontDoorNeeds } from './front-door-schema.js';
import { audit, tracing } from './telemetry-schema.js';
import { servedPathIssues } from './served-paths.js';

export { ANNOTATION_HINTS } from './policy-schema.js';

export const UPSTREAM_NAME = /^[a-z0-9][a-z0-9-]{0,31}$/;

const duration = z.union([z.number(), z.string()]).transform((value, ctx) => {
  const ms = parseDuration(value);
  if (ms === undefined) {
    ctx.addIssue({ code: 'custom', message: `expected a duration such as 500ms, 30s, 5m, 1h or 30d, got ${JSON.stringify(value)}` });
    return z.NEVER;
  }
  return ms;
});

const stringMap = z.record(z.string(), z.string());

const stdio = z.strictObject({
  command: z.string().min(1).describe('The program to run.'),
  args: z.array(z.string()).default([]).describe('Its arguments.'),
  /** The child's whole environment besides PATH and HOME: nothing of the gateway's leaks in. */
  env: stringMap.default({}).describe("The child's whole environment besides PATH and HOME: nothing of the gateway's leaks in."),
  /** Relative to the config file's directory; defaults to it. */
  cwd: z.string().min(1).optional().describe("Its working directory, relative to the config file's directory (the default)."),
});

const clientCredentials = z.strictObject({
  /** The upstream's authorization server token endpoint. */
  tokenUrl: z.url({ protocol: /^https?$/ }).describe("The upstream's authorization server token endpoint."),
  clientId: z.string().min(1).describe("The gateway's client id at that authorization server."),
  clientSecret: z.string().min(1).describe("The gateway's client secret there."),
  scope: z.string().min(1).optional().describe('The scope to ask for.'),
  /** RFC 8707 resource indicator for the upstream, when its server wants one. */
  resource: z.string().min(1).optional().describe('RFC 8707 resource indicator for the upstream, when its server wants one.'),
  audience: z.string().min(1).optional().describe('The audience to ask for, when its server wants one.'),
});

const http = z.strictObject({
  url: z.url({ protocol: /^https?$/ }).describe("The server's MCP endpoint."),
  headers: stringMap.default({}).describe('Static headers sent with every request to it (`${VAR}` for secrets); they never reach the client.'),
  /** The gateway's own credential for this upstream (OAuth client-credentials grant). */
  oauth: clientCredentials.optional().describe("The gateway's own credential for this upstream, by the OAuth client-credentials grant (never the client's token)."),
  /** `sse` is the deprecated HTTP+SSE transport of 2024-11-05. */
  transport: z.enum(['streamable-http', 'sse']).default('streamable-http').describe('`streamable-http`, or `sse`: the deprecated HTTP+SSE transport of 2024-11-05.'),
  /** Each principal reaches the upstream as themselves (needs `credentials`). */
  userAuth: userAuth.optional().describe("Each principal reaches this upstream with their own credential (never the client's token): `{ type: oauth, ... }` signs each user in at the upstream's authorization server, `{ type: secret, header, format }` takes a secret each user pastes once. Until a user has signed in, only `<prefix>__sign_in` is listed. Needs `credentials`."),
  tokenExchange: tokenExchange.optional().describe("Each principal reaches this upstream with a token the company IdP (auth.oauth) issues for it on their behalf, by RFC 8693 token exchange or Entra ID's on-behalf-of flow; never the client's token, never a credential of the gateway's. Per user like `userAuth`: its sessions and lists are each principal's own."),
});

const restart = z.strictObject({
  /** First delay before restarting a crashed child; doubles per failure, with jitter. */
  backoff: duration.default(500).describe('First delay before restarting a crashed child; doubles per failure, with jitter, up to `maxBackoff`.'),
  maxBackoff: duration.default(30_000).describe('The longest delay between restarts.'),
  /** This many crashes within `window` is a crash loop: the upstream is marked down. */
  maxCrashes: z.number().int().min(1).default(5).describe('This many crashes within `window` is a crash loop: the upstream is given up for that session and marked down.'),
  window: duration.default(60_000).describe('The span `maxCrashes` is counted over.'),
  /** A child that stayed up this long starts its backoff afresh. */
  resetAfter: duration.default(60_000).describe('A child that stayed up this long starts its backoff afresh.'),
});

const circuit = z.strictObject({
  /** Consecutive 5xx answers or connection failures that open the circuit. */
  failures: z.number().int().min(1).default(5).describe('Consecutive 5xx answers or connection failures that open the circuit.'),
  /** How long an open circuit fails fast before one probe request goes through. */
  openFor: duration.default(10_000).describe('How long an open circuit fails fast (-32005) before one probe request goes through.'),
});

const upstream = z
  .strictObject({
    stdio: stdio.optional().describe('Spawn the server as a child process over stdio (exactly one of `stdio` or `http`).'),
    http: http.optional().describe('Reach the server over HTTP (exactly one of `stdio` or `http`).'),
    /** Name prefix; defaults to the upstream's name. "" exposes names unchanged. */
    prefix: z.union([z.literal(''), z.string().regex(UPSTREAM_NAME, 'must match [a-z0-9][a-z0-9-]{0,31}')]).optional().describe('Name prefix; defaults to the upstream\'s name. "" exposes names unchanged (at most one upstream may be unprefixed).'),
    /** Per-request timeout towards this upstream; progress from the upstream restarts it. */
    timeoutMs: z.number().int().positive().default(60_000).describe("Per-request timeout towards this upstream, in ms; progress from the upstream restarts it. A call the gateway may make a task of (sessions.taskAfter) is bound by maxTotalTimeoutMs only."),
    /** The most any one request may take, however much progress arrives. */
    maxTotalTimeoutMs: z.number().int().positive().default(600_000).describe('The most any one request may take, in ms, however much progress arrives.'),
    /** How long a session's initialize waits for this upstream before leaving it out. */
    initTimeoutMs: z.number().int().positive().default(10_000).describe("How long a session's initialize waits for this upstream, in ms, before leaving it out."),
    /**
     * per-session: one upstream session (one child, for stdio) per client session. shared: one
     * child (or `poolSize`) for every session of this replica, for stateless stdio servers.
     */
    sharing: z.enum(['per-session', 'shared']).default('per-session').describe('per-session: one upstream session (one child, for stdio) per client session; shared: one child (or `poolSize`) for every session of this replica, for stateless stdio servers.'),
    /** Children of a shared upstream (sessions spread over them). */
    poolSize: z.number().int().min(1).max(64).default(1).describe('Children of a shared upstream (sessions spread over them).'),
    /** Children of this stdio upstream at once on this replica; more get a clear error. */
    maxProcesses: z.number().int().positive().optional().describe('Children of this stdio upstream at once on this replica; more get a clear error.'),
    /** The log level set on a shared child (its log messages reach every session using it). */
    logLevel: z.enum(['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency']).optional().describe('The log level set on a shared child (its log messages reach every session using it).'),
    /** A message from the upstream larger than this is treated like a crash. */
    maxMessageBytes: z.number().int().min(1_024).default(16 * 1024 * 1024).describe('A message from the upstream larger than this is treated like a crash.'),
    /**
     * What may wait to be written to a stdio child that stops reading its stdin, in bytes and
     * messages: past either a request fails at once (-32005) and the child stays up.
     */
    maxQueuedBytes: z.number().int().min(1_024).default(16 * 1024 * 1024).describe('What may wait to be written to a stdio child that stops reading its stdin, in bytes: past it a request fails at once (-32005) and the child stays up.'),
    maxQueuedMessages: z.number().int().min(1).default(10_000).describe('The same bound in messages: past it a request fails at once (-32005) and the child stays up.'),
    /** Restarting crashed stdio children (and reconnecting legacy SSE streams). */
    restart: restart.prefault({}).describe('Restarting crashed stdio children, reconnecting dropped legacy SSE streams, and renewing a Streamable HTTP upstream session found gone: the backoff between attempts and the crash loop that stops them.'),
    /** Failing fast on an HTTP upstream that keeps failing. */
    circuit: circuit.prefault({}).describe('Failing fast on a Streamable HTTP upstream that keeps failing (one circuit shared by all sessions).'),
    /** Check tools/call arguments against the tool's inputSchema before forwarding. */
    validateArguments: z.boolean().default(true).describe("Check tools/call arguments against the tool's inputSchema before forwarding."),
    /** tools/call requests to this upstream in flight at once, across sessions (this replica). */
    maxConcurrent: z.number().int().positive().optional().describe('tools/call requests to this upstream in flight at once, across sessions (per replica); a call cancelled or timed out counts until the upstream answers it, its connection ends, or 5 s pass.'),
    /**
     * Server-initiated requests (sampling, elicitation, roots) from one upstream session waiting
     * for the client at once; more are refused to the upstream, so an upstream cannot make a
     * client that never answers cost the gateway unbounded memory.
     */
    maxClientRequests: z.number().int().positive().default(64).describe('Server-initiated requests (sampling, elicitation, roots) from one upstream session waiting for the client at once; more are refused to the upstream (-32003).'),
    /**
     * The most tools listed from this upstream, and the most bytes of their definitions: past
     * either the rest of its list is left out (logged once, counted in
     * switchyard_catalog_truncated_total), so a hostile or runaway catalog cannot stall the gateway.
     */
    maxTools: z.number().int().min(1).default(10_000).describe('The most tools listed from this upstream: past it the rest of its list is left out (logged once, counted in switchyard_catalog_truncated_total).'),
    maxToolBytes: z.number().int().min(1_024).default(32 * 1024 * 1024).describe('The most bytes of its tool definitions: past it the rest of its list is left out (logged once, counted in switchyard_catalog_truncated_total).'),
    /**
     * The protocol era the server speaks. auto: probe with server/discover and fall back to
     * initialize (the answer is remembered for the upstream); sessions: initialize only (no
     * probe); stateless: 2026-07-28 only (a server that is not is a connection error).
     */
    era: z.enum(['auto', 'sessions', 'stateless']).default('auto').describe('The protocol era the server speaks. auto: each client meets it in the client\'s own era where it speaks it (server/discover answered: 2026-07-28 clients are sent stateless requests; sessions-era clients are initialized, or bridged statelessly if it refuses initialize; not answered: initialize for everyone; what it answers is remembered for the upstream); sessions: initialize only; stateless: 2026-07-28 only, for every client (not with `sse`).'),
    /**
     * A session's own upstream session with nothing in flight (no request, subscription, task or
     * server-initiated request) for this long is closed; the next request opens a new one. Unset,
     * only an upstream configured `stateful: false` is reaped (5m for stdio): a server may keep
     * what a session did in memory, which a fresh child would silently lose.
     */
    idleTimeout: duration
      .optional()
      .describe(
        "A client session's own upstream session (its stdio child, or HTTP session) with no request in flight, no subscription, no task and no open server-initiated request for this long is closed; the next request that needs it opens a new one (logged at info, with the session and upstream). Unset: off (kept for the client session's life), except 5m for a stdio upstream with `stateful: false`; 0 is off. Not for `stateful: true` or `shared` upstreams.",
      ),
    /** Whether the server keeps per-session state in memory; unset, it is assumed to (never reaped without idleTimeout). */
    stateful: z
      .boolean()
      .optional()
      .describe("Whether the server holds what a session did in memory (its session's state would be lost with its child). true: a session's own upstream session is kept for the client session's lifetime, never closed for idleness, even with `idleTimeout`. false: it keeps nothing a fresh child would lack, so an idle one is closed (after `idleTimeout`, 5m for stdio by default). Unset: kept unless `idleTimeout` is set."),
    /** Children spawned ahead, so a session's first call does not wait for a spawn. */
    warm: z
      .number()
      .int()
      .min(0)
      .max(64)
      .default(0)
      .describe("stdio children kept spawned ahead, so a session's first request does not wait for a spawn: initialized ahead with the parameters of the upstream's latest session (a session with other parameters gets one initialized at hand-over with its own), and replaced when handed over. They count against maxProcesses. One that fails to start is a crash under `restart` (backoff; a crash loop stops spawning ahead until a session starts the upstream again)."),
    pinning: upstreamPinning.optional().describe("Pinning of this upstream's tool definitions (`mode`, `newTools`), overriding the global `pinning` block key by key."),
    /** Tasks the gateway makes of this upstream's calls: auto, or off (its own tasks still pass through). */
    tasks: z.enum(['auto', 'off']).default('auto').describe("auto: its calls still running after `sessions.taskAfter` become tasks the gateway makes, and a tool of it that runs only as a task is run as one for clients that know no tasks; off: neither (long calls are answered when they end). Either way the upstream's own tasks reach clients under sealed handles, in the form each speaks."),
  })
  .superRefine((value, ctx) => {
    if ((value.stdio === undefined) === (value.http === undefined)) {
      ctx.addIssue({ code: 'custom', message: 'needs exactly one of `stdio` or `http`' });
    }
    if (value.http?.transport === 'sse' && value.era === 'stateless') {
      ctx.addIssue({ code: 'custom', path: ['era'], message: 'the legacy SSE transport is sessions-era only' });
    }
    if (value.warm > 0 && (!value.stdio || value.sharing === 'shared')) {
      ctx.addIssue({ code: 'custom', path: ['warm'], message: '`warm` is for stdio upstreams with per-session sharing' });
    }
    if (value.warm > 0 && value.maxProcesses !== undefined && value.warm >= value.maxProcesses) {
      ctx.addIssue({ code: 'custom', path: ['warm'], message: `warm (${value.warm}) must leave room under maxProcesses (${value.maxProcesses})` });
    }
    if (value.http?.userAuth && (value.http.oauth || value.http.transport === 'sse')) {
      ctx.addIssue({ code: 'custom', path: ['http', 'userAuth'], message: value.http.oauth ? 'userAuth and oauth (the gateway\'s own credential) exclude each other' : 'userAuth needs the streamable-http transport' });
    }
    if (value.sharing === 'shared' && !value.stdio) {
      ctx.addIssue({ code: 'custom', path: ['sharing'], message: '`shared` is for stdio upstreams; an HTTP upstream already serves many sessions' });
    }
  });

/** Asymmetric JWS algorithms only: a shared-secret (HS*) or unsigned token is never accepted. */
const JWS_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'] as const;

const tls = z.strictObject({
  /** PEM files; a renewed certificate is picked up without a restart. */
  cert: z.string().min(1).describe('PEM certificate file; a renewed certificate is picked up without a restart.'),
  key: z.string().min(1).describe('PEM private key file (renewed with the certificate).'),
  /** PEM CA bundle: when set, clients must present a certificate it signed (mutual TLS). */
  ca: z.string().min(1).optional().describe('PEM CA bundle: when set, clients must present a certificate it signed (mutual TLS); without one, /healthz and /readyz answer their status only (probes) and every other request is refused 403.'),
});

/** A bind address; an IPv6 one may be written as in a URL (`[::1]`), which Node's listen() does not take. */
const bindAddress = z.string().min(1).transform((host) => (/^\[[^\]]*\]$/.test(host) ? host.slice(1, -1) : host));

const listen = z.strictObject({
  host: bindAddress.default('127.0.0.1').describe('Bind address; a non-loopback one needs `auth` or `allowUnauthenticated`. An IPv6 address may be bracketed (`[::1]`).'),
  port: z.number().int().min(0).max(65_535).default(8080).describe('Port; 0 picks a free port; `--port` overrides.'),
  path: z.string().regex(/^\/[^\s?#]*$/, 'must be an absolute path such as /mcp').default('/mcp').describe("The MCP endpoint's path: not /healthz, /readyz or the metrics path, nor under /.well-known, /oauth, /connect or /admin."),
  /** The URL clients use (behind a proxy or ingress). */
  publicUrl: z.url().optional().describe('The URL clients use (behind a proxy or ingress).'),
  /** Origins allowed to call the endpoint from a browser; any other Origin gets 403. */
  allowedOrigins: z.array(z.string()).default([]).describe('Browser Origins allowed to call the endpoint besides its own origin (and loopback origins when it listens on loopback); any other Origin gets 403.'),
  /** Largest accepted request body; larger ones get 413. */
  maxBodyBytes: z.number().int().positive().default(4 * 1024 * 1024).describe('Largest accepted request body; larger ones get 413 (enforced while reading).'),
  /** Deepest JSON nesting accepted in a request body; deeper gets 400. */
  maxJsonDepth: z.number().int().min(4).max(10_000).default(64).describe('Deepest JSON nesting accepted in a request body; deeper gets 400.'),
  /** Largest request head (all headers); larger gets 431. */
  maxHeaderBytes: z.number().int().min(1_024).max(1_048_576).default(16 * 1024).describe('Largest request head (all headers); larger gets 431.'),
  /**
   * How long an idle client connection stays open for its next request. Longer than the 60 s
   * idle timeout common to load balancers (which must not reuse a connection the gateway is
   * closing) and than a model's pause between calls (Node's own default is 5 s).
   */
  keepAliveTimeout: duration.default(65_000).describe("How long an idle client connection stays open for its next request; keep it above your load balancer's idle timeout (often 60 s)."),
  /** Host header values accepted besides loopback names, publicUrl's host and a concrete listen.host (also on metrics.port). */
  allowedHosts: z.array(z.string().min(1)).default([]).describe("Host header values accepted besides loopback names, publicUrl's host and a concrete listen.host; any other Host gets 403, but on /healthz, /readyz and the metrics path (there and on metrics.port) an IP literal (a probe's pod address) is accepted too."),
  /** Serve HTTPS. */
  tls: tls.optional().describe('Serve HTTPS.'),
  /** Listening on a non-loopback address without auth is refused unless this is true. */
  allowUnauthenticated: z.boolean().default(false).describe('Listening on a non-loopback address without auth is refused unless this is true.'),
});

const oauth = z.strictObject({
  /** The authorization server's issuer identifier (the token's iss). */
  issuer: z.string().min(1).describe("The authorization server's issuer identifier (the token's iss)."),
  jwksUri: z.url().describe("Where the issuer's JWKS is read (up to 1 MiB)."),
  /** This MCP endpoint's canonical URL (RFC 8707 resource); defaults to listen.publicUrl. */
  resource: z.url().optional().describe("This MCP endpoint's canonical URL (RFC 8707 resource); tokens must be for it. Defaults to listen.publicUrl; one of the two is required."),
  /** Accepted token audiences; defaults to the resource. */
  audience: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]).optional().describe('Accepted token audiences; defaults to the resource.'),
  /** Advertised in the protected resource metadata; defaults to [issuer]. */
  authorizationServers: z.array(z.string().min(1)).min(1).optional().describe('Advertised in the protected resource metadata; defaults to [issuer].'),
  /** Scopes every request's token must carry. */
  scopes: z.array(z.string().min(1)).default([]).describe("Scopes every request's token must carry."),
  algorithms: z.array(z.enum(JWS_ALGORITHMS)).min(1).default(['RS256', 'ES256']).describe('Accepted JWS algorithms: asymmetric only; HS* and none are never accepted.'),
  clockTolerance: duration.default(30_000).describe("Clock skew tolerated when checking a token's times."),
  /** Require this JWT typ header, e.g. "at+jwt" (RFC 9068). */
  typ: z.string().min(1).optional().describe('Require this JWT typ header, e.g. "at+jwt" (RFC 9068).'),
  /** The claim that names the principal within the issuer. */
  principalClaim: z.string().min(1).default('sub').describe('The claim that names the principal within the issuer.'),
  /** An unknown kid refetches the JWKS at most once per this long. */
  jwksCooldown: duration.default(30_000).describe('An unknown kid refetches the JWKS at most once per this long.'),
  /** Fetched keys are trusted this long; then the JWKS is read again (a removed key stops working). */
  jwksMaxAge: duration.default(10 * 60_000).describe('Fetched keys are trusted this long; then the JWKS is read again (a removed key stops working).'),
  /** The connect page's login at this issuer (per-user upstream credentials). */
  login: login.optional().describe("The connect page's OpenID Connect login at this issuer, proving that whoever opens a connect URL is the principal it was made for (used by `userAuth` upstreams)."),
  frontDoor: frontDoor.optional().describe("Switchyard as the OAuth authorization server hosts see (docs/front-door.md): it signs each user in at this issuer with `login` and issues its own tokens, so hosts need no registration at the company IdP. Needs listen.publicUrl, `credentials` and `login`."),
});

const apiKey = z.strictObject({
  id: z.string().regex(/^[A-Za-z0-9._-]{1,64}$/).describe("The key's id; its principal is `apikey:<id>`."),
  /** "sha256:<hex>" of the key (see README: making an API key). */
  hash: z.string().regex(/^sha256:[0-9a-f]{64}$/, 'must be "sha256:" and 64 lowercase hex digits').describe('"sha256:" and the hex SHA-256 of the key (docs/security.md shows how to make one).'),
  team: z.string().min(1).optional().describe("The team of this key's principal (a name in `teams`)."),
  scopes: z.array(z.string().min(1)).default([]).describe('The scopes the key carries.'),
});

const auth = z
  .strictObject({
    oauth: oauth.optional().describe("OAuth access tokens: JWTs verified against the issuer's JWKS."),
    apiKeys: z.array(apiKey).default([]).describe('API keys for machine clients, sent as `Authorization: Bearer <key>` or `X-API-Key`.'),
    admin: admin.prefault({}).describe("The gateway's admin routes (/admin/pins): who may use them."),
  })
  .superRefine((value, ctx) => {
    if (!value.oauth && value.apiKeys.length === 0) ctx.addIssue({ code: 'custom', message: 'needs `oauth`, `apiKeys`, or both' });
  });

const limit = z.strictObject({
  rate: z.number().positive().describe('Requests allowed per `per`.'),
  per: duration.describe('The span `rate` is counted over.'),
  /** Bucket size: the burst allowed after a quiet spell. Defaults to `rate`. */
  burst: z.number().int().positive().optional().describe('Bucket size: the burst allowed after a quiet spell. Defaults to `rate`.'),
});

/** `memory`, or `{ redis: { url, prefix } }` shared by every replica (rate-limit buckets, session state). */
function memoryOrRedis(what: { prefix: string; prefixIs: string; redisIs: string }) {
  return z
    .union([
      z.literal('memory'),
      z.strictObject({
        redis: z
          .strictObject({
            url: z.string().regex(/^rediss?:\/\//, 'must be a redis:// or rediss:// URL').describe('The Redis server, as a redis:// or rediss:// URL.'),
            prefix: z.string().default(what.prefix).describe(what.prefixIs),
          })
          .describe(what.redisIs),
      }),
    ])
    .default('memory');
}

const rateLimits = z.strictObject({
  /** Requests per principal (initialize, notifications, ping and the GET stream are free). */
  perClient: limit.optional().describe('Requests per principal (initialize, notifications, ping and the GET stream are free).'),
  /** Calls per (principal, tool), by namespaced tool name or glob. */
  perTool: z.record(z.string().min(1), limit).default({}).describe('Calls per (principal, tool), by namespaced tool name or glob.'),
  store: memoryOrRedis({ prefix: 'switchyard:', prefixIs: "Prefix of the gateway's Redis keys.", redisIs: 'Buckets in Redis, shared by every replica; while it is unreachable, local buckets (logged once, shown on /healthz).' }).describe(
    'Where buckets live: `memory` (this replica), or `{ redis: { url, prefix } }`, shared by every replica (a change needs a restart).',
  ),
  /** Buckets kept in memory: each principal's, and each (principal, tool) one under perTool. */
  maxPrincipals: z.number().int().min(100).default(100_000).describe("Buckets kept in memory (the memory store, or while Redis is unreachable): one per principal, and one per (principal, tool) under a `perTool` limit, so a principal may hold several. A bucket is kept until it would be full again given what it holds. While every one is still refilling, a request needing a new bucket is refused (no room, not its own limit) with Retry-After until the soonest is full again; no bucket is ever reset to make room. A change needs a restart."),
});

const namespacing = z.strictObject({
  separator: z.string().regex(/^[A-Za-z0-9_.-]{1,4}$/, 'must be 1-4 characters from [A-Za-z0-9_.-]').default('__').describe("Between an upstream's prefix and a tool or prompt name."),
  maxNameLength: z.number().int().min(16).max(256).default(64).describe('Longer names (and names with characters outside [A-Za-z0-9_-]) are exposed shortened, with a hash suffix.'),
});

const sessions = z.strictObject({
  /**
   * Keys for self-describing session ids that any replica can resume (first encrypts, all
   * decrypt). Each at least 32 characters of secret; omitted: random ids, this replica only.
   */
  keys: z.array(z.string().min(32, 'a session key needs at least 32 characters')).min(1).optional().describe('Keys for self-describing session ids any replica can resume (the first encrypts, all decrypt; at least 32 characters of secret each); omitted: random ids, this replica only.'),
  /** A session with no request in flight and no open stream is closed after this. */
  idleTimeout: duration.default(30 * 60_000).describe('A session with no request in flight and no open stream is closed after this.'),
  /**
   * A session's whole life, from initialize: then it ends wherever it is held, and its id opens
   * on no replica (404). Also how long an ended id is remembered, and how long a retired
   * session key must stay in `keys`.
   */
  maxAge: duration.refine((ms) => ms > 0, 'must be more than 0').default(24 * 3_600_000).describe("A session's whole life, from its initialize: then it ends on the replica holding it (busy or not, within a minute) and its id opens on no replica (404: the client initializes a new session). It bounds how long a session id that leaked stays usable, how long an ended session's id is remembered (here and in `store`), and how long a key taken out of first place in `keys` must stay in the list."),
  /**
   * A 2026-07-28 client's request that was answered input_required waits this long for the
   * client's retry (with its requestState) before it is cancelled upstream.
   */
  inputTimeout: duration.default(5 * 60_000).describe("A 2026-07-28 request answered input_required waits this long for the client's retry (with its requestState) before it is cancelled upstream."),
  /** Sessions open at once, in all (503 beyond) and per principal (429 beyond). */
  max: z.number().int().min(1).default(10_000).describe('Sessions open at once, in all (503 beyond).'),
  maxPerPrincipal: z.number().int().min(1).default(100).describe('Sessions open at once per principal, and subscriptions/listen streams of 2026-07-28 clients (429 beyond).'),
  /** Per session: how many SSE events are kept for Last-Event-ID resumption... */
  replayEvents: z.number().int().min(1).max(100_000).default(1_000).describe('Per session: how many SSE events are kept for Last-Event-ID resumption; the oldest go first.'),
  /** ...and how many bytes of them; the oldest go first when either is exceeded. */
  replayBytes: z.number().int().min(1_024).default(4 * 1024 * 1024).describe('Per session: how many bytes of them are kept; the oldest go first.'),
  /**
   * ...and what every session's replay buffer may hold together on this replica: past it, the
   * buffers holding more than their fair share give back their oldest events first.
   */
  replayTotalBytes: z.number().int().min(1_024).default(256 * 1024 * 1024).describe("What every session's replay buffer may hold together on this replica: past it, the buffers holding more than their fair share give back their oldest events first."),
  /**
   * What may wait for one SSE connection whose client does not read, in bytes and messages: past
   * either, the oldest progress and log notifications are dropped, then the connection is closed
   * (its stream stays resumable with Last-Event-ID from the replay buffer).
   */
  streamQueueBytes: z.number().int().min(1_024).default(1024 * 1024).describe('What may wait for one SSE connection whose client does not read, in bytes: past it the oldest progress and log notifications are dropped, then the connection is closed (its stream stays resumable).'),
  streamQueueMessages: z.number().int().min(1).default(1_000).describe('The same bound in messages.'),
  /** Interval of keep-alive comments on open SSE streams. */
  keepAlive: duration.default(15_000).describe("An open SSE stream silent this long gets a keep-alive comment (one timer serves every stream). Keep it well under your load balancer's or proxy's idle timeout (nginx proxy_read_timeout and cloud load balancers: often 60 s); each idle stream costs one small write per interval."),
  /** The reconnect delay suggested to clients in the SSE retry field. */
  retry: duration.default(1_000).describe('The reconnect delay suggested to clients in the SSE retry field.'),
  /** What every replica must see about a session: task state and results (memory: this replica). */
  store: memoryOrRedis({ prefix: 'switchyard:sess:', prefixIs: "Prefix of the session store's Redis keys.", redisIs: 'Session state in Redis, shared by every replica.' }).describe('What every replica must see about a session (task status and results; with `sessions.keys`, every SSE event too, so a `Last-Event-ID` resumption on another replica is replayed): `memory` (this replica only), or `{ redis: { url, prefix } }`, shared by every replica (a change needs a restart).'),
  /** How long a finished task's result is kept. */
  taskTtl: duration.default(60 * 60_000).describe("How long a task's status and result are kept after its last change (its `ttlMs`)."),
  /** A call of a client that declared the tasks extension still running after this is answered with a task. */
  taskAfter: duration.default(1_000).describe('A tools/call of a 2026-07-28 client that declared the `io.modelcontextprotocol/tasks` extension still running after this long is answered with a task the gateway makes; the call runs on (the old `task` parameter of a 2026-07-28 call is ignored).'),
});

const logging = z.strictObject({
  level: z.enum(LOG_LEVELS).default('info').describe('The lowest level of the JSON log lines written to stderr.'),
  /** Tool arguments in call logs: their shape (keys and types) only, or the values too. */
  arguments: z.enum(['shape', 'values']).default('shape').describe('Tool arguments in call logs: their shape (keys and types) only, or the values too.'),
});

const metrics = z.strictObject({
  enabled: z.boolean().default(false).describe('Serve Prometheus metrics; off, nothing is counted per call.'),
  port: z.number().int().min(0).max(65_535).optional().describe('A separate admin listener for /metrics (0 picks a port); omitted: on the main listener.'),
  host: bindAddress.default('127.0.0.1').describe("The admin listener's address (only with `port`)."),
  path: z.string().regex(/^\/[^\s?#]*$/).default('/metrics').describe('Where the metrics are served; on the main listener, not listen.path, /healthz or /readyz.'),
});

const shutdown = z.strictObject({
  /** On SIGTERM: how long requests in flight may take to finish before sessions are closed. */
  gracePeriod: duration.default(25_000).describe('On SIGTERM, how long requests in flight may take to finish before they are cancelled and sessions closed.'),
});

const health = z.strictObject({
  /**
   * How often each upstream is probed (initialize, then closed) for /readyz. 0 turns probing
   * off, and readiness then no longer waits for an upstream to be up.
   */
  probeInterval: duration.default(30_000).describe('How often each upstream is probed (initialize, then closed) for /readyz; 0 turns probing off, and readiness then no longer waits for an upstream to be up. A reload applies a change at once.'),
});

export const configSchema = z
  .strictObject({
    listen: listen.prefault({}).describe('Where and how the gateway listens (a change needs a restart).'),
    auth: auth.optional().describe('Authentication of clients: `oauth`, `apiKeys`, or both (a change needs a restart). Omitted: no auth, and only loopback addresses unless listen.allowUnauthenticated.'),
    teams: z.array(team).optional().describe('Per-team policy over what each principal sees and calls; omitted: every principal sees everything.'),
    endpoints: z.array(endpoint).default([]).describe('More MCP endpoints beside listen.path, each showing a narrower part of the catalog (optionally to some teams only), by listing or by search.'),
    rateLimits: rateLimits.optional().describe('Token buckets per principal and per tool; omitted: no rate limits.'),
    credentials: credentials.optional().describe('Where per-user upstream credentials (`userAuth`) are stored, sealed with `key` (a change needs a restart).'),
    pinning: pinning.prefault({}).describe("Tool definitions pinned (docs/pinning.md): a digest of each tool's and prompt's definition as its upstream lists it; drift waits for an operator's approval (`switchyard pins`, /admin/pins)."),
    upstreams: z.record(z.string().regex(UPSTREAM_NAME, 'upstream names must match [a-z0-9][a-z0-9-]{0,31}'), upstream).describe('The MCP servers behind the gateway, by name; each needs exactly one of `stdio` or `http`.'),
    namespacing: namespacing.prefault({}).describe('How upstream names become the names clients see.'),
    sessions: sessions.prefault({}).describe('Client sessions, their streams and their replay buffers (a change needs a restart).'),
    logging: logging.prefault({}).describe('JSON log lines on stderr (a change needs a restart).'),
    shutdown: shutdown.prefault({}).describe('The drain on SIGTERM or SIGINT.'),
    health: health.prefault({}).describe('Probing upstreams for /readyz.'),
    metrics: metrics.prefault({}).describe('Prometheus metrics (a change needs a restart).'),
    tracing: tracing.prefault({}).describe('OpenTelemetry traces: a SERVER span per client request, a CLIENT span per upstream request, with the MCP semantic conventions (docs/tracing.md; a change needs a restart).'),
    audit: audit.optional().describe('One versioned JSON record per tool call, prompt get, resource read, sign-in, token issued or refused, refusal, pin approval and config reload (docs/audit.md; a change needs a restart). Omitted: no audit records.'),
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
    for (const issue of servedPathIssues(config)) ctx.addIssue({ code: 'custom', ...issue });
    const teamNames = new Set((config.teams ?? []).map((t) => t.name));
    config.endpoints.forEach((entry, i) => {
      entry.teams?.forEach((name, j) => {
        if (!teamNames.has(name)) ctx.addIssue({ code: 'custom', path: ['endpoints', i, 'teams', j], message: `no team is named "${name}"` });
      });
    });
    for (const message of frontDoorNeeds(config)) ctx.addIssue({ code: 'custom', path: ['auth', 'oauth', 'frontDoor'], message });
    const personal = Object.entries(config.upstreams).filter(([, entry]) => entry.http?.userAuth);
    if (personal.length > 0) {
      const where = ['upstreams', personal[0]![0], 'http', 'userAuth'];
      if (!config.credentials) ctx.addIssue({ code: 'custom', path: where, message: 'userAuth needs a `credentials` block (store and key)' });
      if (config.auth && !config.auth.oauth) ctx.addIssue({ code: 'custom', path: where, message: 'userAuth needs auth.oauth (the connect page signs the user in there to prove who opens it), or no auth on a loopback gateway' });
      if (config.auth && !config.listen.publicUrl) ctx.addIssue({ code: 'custom', path: ['listen', 'publicUrl'], message: 'userAuth with auth needs listen.publicUrl: connect URLs and OAuth redirects are made under it' });
    }
    for (const issue of tokenExchangeNeeds(config)) ctx.addIssue({ code: 'custom', ...issue });
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
export type EndpointConfig = Config['endpoints'][number];
export type RateLimitsConfig = NonNullable<Config['rateLimits']>;
export type LimitConfig = RateLimitsConfig['perTool'][string];
export type UpstreamConfig = Config['upstreams'][string];
export type { CredentialsConfig, LoginConfig, UserAuthConfig } from './credentials-schema.js';
export type { FrontDoorConfig } from './front-door-schema.js';
export type ListenConfig = Config['listen'];
export type NamespacingConfig = Config['namespacing'];
