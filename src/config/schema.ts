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

const http = z.strictObject({
  url: z.url({ protocol: /^https?$/ }),
  headers: stringMap.default({}),
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
    /** One upstream session per client session. (`shared` arrives with the scale work.) */
    sharing: z.literal('per-session').default('per-session'),
    /** A message from the upstream larger than this is treated like a crash. */
    maxMessageBytes: z.number().int().min(1_024).default(16 * 1024 * 1024),
    /** Restarting crashed stdio children (and reconnecting legacy SSE streams). */
    restart: restart.prefault({}),
    /** Failing fast on an HTTP upstream that keeps failing. */
    circuit: circuit.prefault({}),
  })
  .superRefine((value, ctx) => {
    if ((value.stdio === undefined) === (value.http === undefined)) {
      ctx.addIssue({ code: 'custom', message: 'needs exactly one of `stdio` or `http`' });
    }
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
});

const namespacing = z.strictObject({
  separator: z.string().regex(/^[A-Za-z0-9_.-]{1,4}$/, 'must be 1-4 characters from [A-Za-z0-9_.-]').default('__'),
  maxNameLength: z.number().int().min(16).max(256).default(64),
});

const sessions = z.strictObject({
  /** A session with no request in flight and no open stream is closed after this. */
  idleTimeout: duration.default(30 * 60_000),
  /** Per session: how many SSE events are kept for Last-Event-ID resumption... */
  replayEvents: z.number().int().min(1).max(100_000).default(1_000),
  /** ...and how many bytes of them; the oldest go first when either is exceeded. */
  replayBytes: z.number().int().min(1_024).default(4 * 1024 * 1024),
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
    upstreams: z.record(z.string().regex(UPSTREAM_NAME, 'upstream names must match [a-z0-9][a-z0-9-]{0,31}'), upstream),
    namespacing: namespacing.prefault({}),
    sessions: sessions.prefault({}),
    logging: logging.prefault({}),
    shutdown: shutdown.prefault({}),
    health: health.prefault({}),
    metrics: metrics.prefault({}),
  })
  .superRefine((config, ctx) => {
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

export type Config = z.output<typeof configSchema>;
export type UpstreamConfig = Config['upstreams'][string];
export type ListenConfig = Config['listen'];
export type NamespacingConfig = Config['namespacing'];
