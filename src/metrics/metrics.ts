// Every metric the gateway exports, defined once, on a registry of its own (no global state).
// Label values are bounded: methods and notification kinds come from the table of MCP methods
// (mcp/methods.ts: what clients send, what upstreams send that is relayed), upstream
// names from config, tool names only from what upstreams listed (and none longer than the spec's
// 128 characters); anything else is "other". A client can never grow the series count, whatever
// names or ids it sends.
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import { isClientRequest, isRelayedNotification, isRelayedRequest } from '../mcp/methods.js';
import { FastHistogram } from './histogram.js';

/** Tool names remembered per upstream as label values; more than this and the rest are "other". */
const MAX_TOOLS_PER_UPSTREAM = 500;

/**
 * The longest tool name that becomes a label value: the MCP spec's bound (server/tools, "Tool
 * Names": between 1 and 128 characters). Every call adds a histogram's ~18 lines carrying the
 * name, so one upstream's longer names would make each scrape megabytes; they count as "other".
 */
export const MAX_TOOL_LABEL_LENGTH = 128;

/** Counts by three labels, kept as nested maps (three lookups and an addition per count). */
type Tally = Map<string, Map<string, Map<string, { n: number }>>>;

function tally(root: Tally, a: string, b: string, c: string): void {
  let second = root.get(a);
  if (!second) root.set(a, (second = new Map()));
  let third = second.get(b);
  if (!third) second.set(b, (third = new Map()));
  const count = third.get(c);
  if (count) count.n++;
  else third.set(c, { n: 1 });
}

function* entriesOf(root: Tally): Generator<[string, string, string, number]> {
  for (const [a, second] of root) for (const [b, third] of second) for (const [c, { n }] of third) yield [a, b, c, n];
}

export type Outcome = 'ok' | 'error' | 'cancelled' | 'timeout' | 'unavailable' | 'rejected';

export class Metrics {
  readonly registry = new Registry();
  #upstreams: ReadonlySet<string>;
  readonly #tools = new Map<string, Set<string>>();

  /**
   * Client requests counted here, by method, upstream and outcome (three map lookups and an
   * addition per call), and handed to the counter when it is scraped.
   */
  readonly #requestCounts: Tally = new Map();
  readonly requests = new Counter({
    name: 'switchyard_requests_total',
    help: 'Client requests by MCP method, upstream and outcome',
    labelNames: ['method', 'upstream', 'outcome'] as const,
    registers: [this.registry],
    collect: () => {
      this.requests.reset();
      for (const [method, upstream, outcome, n] of entriesOf(this.#requestCounts)) this.requests.inc({ method, upstream, outcome }, n);
    },
  });
  /** The same requests by endpoint (the main one and each of `endpoints[]`), method and outcome. */
  readonly #endpointCounts: Tally = new Map();
  readonly endpointRequests = new Counter({
    name: 'switchyard_endpoint_requests_total',
    help: 'Client requests by endpoint (its path), MCP method and outcome',
    labelNames: ['endpoint', 'method', 'outcome'] as const,
    registers: [this.registry],
    collect: () => {
      this.endpointRequests.reset();
      for (const [endpoint, method, outcome, n] of entriesOf(this.#endpointCounts)) this.endpointRequests.inc({ endpoint, method, outcome }, n);
    },
  });
  readonly toolCallDuration = new FastHistogram({
    name: 'switchyard_tool_call_duration_seconds',
    help: 'Latency of tools/call through the gateway, by upstream and tool',
    labelNames: ['upstream', 'tool'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [this.registry],
  });
  readonly upstreamRestarts = new Counter({
    name: 'switchyard_upstream_restarts_total',
    help: 'Upstream children restarted (or HTTP sessions renewed) after a crash',
    labelNames: ['upstream'] as const,
    registers: [this.registry],
  });
  readonly upstreamCrashLoops = new Counter({
    name: 'switchyard_upstream_crash_loops_total',
    help: 'Upstream sessions given up after a crash loop',
    labelNames: ['upstream'] as const,
    registers: [this.registry],
  });
  readonly unknownResponses = new Counter({
    name: 'switchyard_upstream_unknown_responses_total',
    help: 'Responses from upstreams whose id matched no request in flight (dropped)',
    labelNames: ['upstream'] as const,
    registers: [this.registry],
  });
  readonly notifications = new Counter({
    name: 'switchyard_notifications_total',
    help: 'Notifications from upstreams, forwarded to a client or dropped, by kind',
    labelNames: ['method', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly cancellations = new Counter({
    name: 'switchyard_cancellations_total',
    help: 'Requests cancelled upstream, by upstream and cause (client, timeout, session end)',
    labelNames: ['upstream', 'cause'] as const,
    registers: [this.registry],
  });
  readonly serverRequests = new Counter({
    name: 'switchyard_server_requests_total',
    help: 'Server-initiated requests relayed to clients, by method and outcome',
    labelNames: ['method', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly authFailures = new Counter({
    name: 'switchyard_auth_failures_total',
    help: 'Requests refused by authentication or authorization, by reason',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  readonly rateLimited = new Counter({
    name: 'switchyard_rate_limited_total',
    help: 'Requests refused by a rate or concurrency limit, by kind',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });
  readonly catalogTruncated = new Counter({
    name: 'switchyard_catalog_truncated_total',
    help: 'Tool lists cut short because an upstream listed more than upstreams.<name>.maxTools (or maxToolBytes)',
    labelNames: ['upstream'] as const,
    registers: [this.registry],
  });
  readonly schemasCompiled = new Counter({
    name: 'switchyard_tool_schemas_compiled_total',
    help: "Tool inputSchemas compiled for argument checks (lazily, on a tool's first call; cached by content)",
    registers: [this.registry],
  });
  readonly streamDropped = new Counter({
    name: 'switchyard_stream_dropped_total',
    help: 'Progress and log notifications dropped from a client SSE stream that was not read (oldest first), by method',
    labelNames: ['method'] as const,
    registers: [this.registry],
  });
  readonly streamOverflows = new Counter({
    name: 'switchyard_stream_overflows_total',
    help: 'Client SSE connections closed because the client did not read what was queued for it, by stream kind',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });
  /** Tasks the gateway made on this replica: working and input_required now; the ends since start. */
  readonly tasks = new Gauge({
    name: 'switchyard_tasks',
    help: 'Tasks the gateway made on this replica, by state: working and input_required now; completed, failed and cancelled since start',
    labelNames: ['state'] as const,
    registers: [this.registry],
  });
  readonly taskDuration = new FastHistogram({
    name: 'switchyard_task_duration_seconds',
    help: 'From a task the gateway made being created to its end, by final state',
    labelNames: ['state'] as const,
    buckets: [1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600],
    registers: [this.registry],
  });
  readonly userSignIns = new Counter({
    name: 'switchyard_user_sign_ins_total',
    help: 'Sign-ins of principals to userAuth upstreams on the connect page, by upstream and outcome (ok, wrong_user, login_failed, failed, discovery_failed)',
    labelNames: ['upstream', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly userRefreshes = new Counter({
    name: 'switchyard_user_token_refreshes_total',
    help: "Refreshes of principals' access tokens at userAuth upstreams, by upstream and outcome (ok, rejected: a new sign-in is needed, error)",
    labelNames: ['upstream', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly configReloads = new Counter({
    name: 'switchyard_config_reloads_total',
    help: 'Config reloads, applied or rejected',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  readonly toolDrift = new Counter({
    name: 'switchyard_tool_drift_total',
    help: 'Tool and prompt definitions that differ from their pins, by upstream and kind (changed, new, hidden_text)',
    labelNames: ['upstream', 'kind'] as const,
    registers: [this.registry],
  });

  /** Definitions waiting for an operator's approval, per upstream, read at scrape time. */
  observePins(read: () => Record<string, number>): void {
    new Gauge({
      name: 'switchyard_pins_pending',
      help: "Tool and prompt definitions waiting for an operator's approval, by upstream",
      labelNames: ['upstream'] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [upstream, count] of Object.entries(read())) this.set({ upstream }, count);
      },
    });
  }
  /** Client requests of principals with a team, by team (names from the config), method and outcome. */
  readonly teamRequests = new Counter({
    name: 'switchyard_team_requests_total',
    help: 'Client requests of principals in a team, by team, MCP method and outcome',
    labelNames: ['team', 'method', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly auditRecords = new Counter({
    name: 'switchyard_audit_records_total',
    help: 'Audit records handed to the sink, by event',
    labelNames: ['event'] as const,
    registers: [this.registry],
  });
  readonly auditDropped = new Counter({
    name: 'switchyard_audit_dropped_total',
    help: 'Audit records dropped because the sink was full or failed, by sink (stdout, file, otlp)',
    labelNames: ['sink'] as const,
    registers: [this.registry],
  });
  readonly oauthAuthorizations = new Counter({
    name: 'switchyard_oauth_authorizations_total',
    help: 'Authorization requests at the front door, by outcome (approved, denied, bad_client, bad_redirect, invalid_request, login_failed, limited)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  readonly oauthTokens = new Counter({
    name: 'switchyard_oauth_tokens_total',
    help: 'Token requests at the front door, by grant type (authorization_code, refresh_token, other) and outcome (issued, invalid_grant, reused, invalid_request, ...)',
    labelNames: ['grant_type', 'outcome'] as const,
    registers: [this.registry],
  });

  /** The front door's clients, read at scrape time: metadata documents held, clients registered (DCR). */
  observeOauthClients(read: () => Promise<{ cimd: number; dcr: number }>): void {
    new Gauge({
      name: 'switchyard_oauth_clients',
      help: 'Front door clients by kind: cimd (metadata documents cached on this replica), dcr (registered, in the credential store)',
      labelNames: ['kind'] as const,
      registers: [this.registry],
      async collect() {
        const counts = await read().catch(() => undefined);
        if (!counts) return;
        this.set({ kind: 'cimd' }, counts.cimd);
        this.set({ kind: 'dcr' }, counts.dcr);
      },
    });
  }

  /** False when metrics are not served: the per-call figures are then not kept at all. */
  readonly #perCall: boolean;
  /** The main endpoint's label (listen.path). */
  readonly #mainEndpoint: string;

  /**
   * `serve: false` (metrics.enabled off) skips what nobody can scrape: the per-call counter and
   * histogram updates and Node's default metrics (GC observer, event-loop monitor). Changing
   * metrics.enabled needs a restart, so this never changes under a running gateway.
   */
  constructor(upstreams: Iterable<string>, options: { serve?: boolean; mainEndpoint?: string } = {}) {
    this.#upstreams = new Set(upstreams);
    this.#perCall = options.serve ?? true;
    this.#mainEndpoint = options.mainEndpoint ?? '/mcp';
    // The event-loop delay is sampled every 100 ms, not prom-client's 10: ten samples a second
    // give the lag percentiles of any scrape interval, at a tenth of the wake-ups (bench/README.md).
    if (this.#perCall) collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: 100 });
    this.configReloads.inc({ outcome: 'applied' }, 0);
    this.configReloads.inc({ outcome: 'rejected' }, 0);
  }

  /** Gauges read at scrape time from the live state. */
  observe(sources: {
    sessions: () => number;
    streams: () => { request: number; standalone: number };
    upstreams: () => Record<string, { state: string; sessions: number; pending: number; circuit?: string }>;
  }): void {
    new Gauge({
      name: 'switchyard_sessions',
      help: 'Client sessions open',
      registers: [this.registry],
      collect() {
        this.set(sources.sessions());
      },
    });
    new Gauge({
      name: 'switchyard_open_streams',
      help: 'SSE connections open to clients, by kind (request or standalone)',
      labelNames: ['kind'] as const,
      registers: [this.registry],
      collect() {
        const open = sources.streams();
        this.set({ kind: 'request' }, open.request);
        this.set({ kind: 'standalone' }, open.standalone);
      },
    });
    const upstreamGauge = (name: string, help: string, read: (h: { sessions: number; pending: number }) => number): void => {
      new Gauge({
        name,
        help,
        labelNames: ['upstream'] as const,
        registers: [this.registry],
        collect() {
          this.reset();
          for (const [upstream, health] of Object.entries(sources.upstreams())) this.set({ upstream }, read(health));
        },
      });
    };
    upstreamGauge('switchyard_upstream_sessions', 'Upstream sessions open, by upstream', (h) => h.sessions);
    upstreamGauge('switchyard_upstream_pending_requests', 'Requests to each upstream in flight', (h) => h.pending);
    new Gauge({
      name: 'switchyard_upstream_state',
      help: 'Upstream state (1 for the current one of up, down, unknown)',
      labelNames: ['upstream', 'state'] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [upstream, health] of Object.entries(sources.upstreams())) {
          for (const state of ['up', 'down', 'unknown']) this.set({ upstream, state }, health.state === state ? 1 : 0);
        }
      },
    });
    new Gauge({
      name: 'switchyard_upstream_circuit_open',
      help: 'Whether an HTTP upstream\'s circuit is open (1) or half-open (0.5)',
      labelNames: ['upstream'] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [upstream, health] of Object.entries(sources.upstreams())) {
          if (health.circuit !== undefined) this.set({ upstream }, health.circuit === 'open' ? 1 : health.circuit === 'half-open' ? 0.5 : 0);
        }
      },
    });
  }

  /** One client request done (labels already bounded by method(), upstream(), tool()). */
  countRequest(method: string, upstream: string, outcome: Outcome, endpoint?: string): void {
    if (!this.#perCall) return;
    tally(this.#requestCounts, method, upstream, outcome);
    // endpoint: a path of the config (bounded); undefined is the main endpoint.
    tally(this.#endpointCounts, endpoint ?? this.#mainEndpoint, method, outcome);
  }

  /** One request of a principal in a team (team names come from the config: bounded). */
  countTeam(team: string, method: string, outcome: Outcome): void {
    if (this.#perCall) this.teamRequests.inc({ team, method, outcome });
  }

  observeToolCall(upstream: string, tool: string, seconds: number): void {
    if (!this.#perCall) return;
    this.toolCallDuration.child(upstream, tool).observe(seconds);
  }

  /** Configured upstream names change on reload. */
  setUpstreams(upstreams: Iterable<string>): void {
    this.#upstreams = new Set(upstreams);
  }

  method(method: string): string {
    return isClientRequest(method) ? method : 'other';
  }

  upstream(name: string | undefined): string {
    return name !== undefined && this.#upstreams.has(name) ? name : 'none';
  }

  notification(method: string): string {
    return isRelayedNotification(method) ? method : 'other';
  }

  serverRequest(method: string): string {
    return isRelayedRequest(method) ? method : 'other';
  }

  /** Remembers tool names an upstream listed; only those (of up to 128 characters) become label values. */
  learnTools(upstream: string, names: Iterable<string>): void {
    if (!this.#upstreams.has(upstream)) return;
    let known = this.#tools.get(upstream);
    if (!known) this.#tools.set(upstream, (known = new Set()));
    for (const name of names) {
      if (known.size >= MAX_TOOLS_PER_UPSTREAM) return;
      if (name.length <= MAX_TOOL_LABEL_LENGTH) known.add(name);
    }
  }

  tool(upstream: string | undefined, name: string | undefined): string {
    return upstream !== undefined && name !== undefined && this.#tools.get(upstream)?.has(name) ? name : 'other';
  }
}
