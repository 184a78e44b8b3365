// The MCP endpoint (spec: basic/transports.mdx "Streamable HTTP"): POST carries client
// messages, GET opens the session's stream for server-initiated messages, DELETE ends the
// session. Status codes follow the spec: 400 missing session or bad version, 404 unknown
// session, 405 other methods, 406/415 wrong headers, 409 a second GET stream, 413 too large.
import { ErrorCode, toJsonRpcError } from '../mcp/errors.js';
import {
  answerableId,
  failure,
  idProblem,
  isRequest,
  isResponse,
  metaOf,
  parseMessage,
  success,
  type JsonObject,
  type JsonRpcId,
  type JsonRpcMessage,
  type JsonRpcRequest,
  type JsonRpcResponse,
} from '../mcp/jsonrpc.js';
import { isRateFree } from '../mcp/methods.js';
import { allowsBatches } from '../mcp/versions.js';
import { withinDepth } from '../util/json-depth.js';
import { parseTraceparent } from '../util/trace.js';
import type { Metrics } from '../metrics/metrics.js';
import type { SecurityEvents } from '../audit/events.js';
import type { Tracing } from '../telemetry/tracing.js';
import { endInitialize, traceInitialize } from '../router/call-observer.js';
import { describeLimit, rateLimitHeaders, type LimitOutcome, type RateLimiter } from '../ratelimit/limiter.js';
import { sessionContext, type Caller, type RequestChannel } from '../session/context.js';
import type { Router } from '../router/router.js';
import type { SessionLinks } from '../links/links.js';
import type { GatewayTasks } from '../tasks/gateway-tasks.js';
import type { DownstreamSession } from '../links/session.js';
import type { SessionStore } from '../links/session.js';
import type { Logger } from '../util/log.js';
import { checkGetHeaders, checkPostHeaders, checkProtocolVersion, PostAccepts } from './guards.js';
import { refuse, refusals, type DetailedRefusal } from './refusals.js';
import type { HttpInput } from './input.js';
import { parseEventId } from '../session/streams.js';
import { connect, respond, type Answers, type StreamSettings } from './responder.js';
import type { SseConnection } from './sse-connection.js';
import { resumeFromSharedLog } from './shared-resume.js';
import { isStatelessRequest, serveStateless, validateStateless } from './stateless/endpoint.js';
import { EdgeCall, type EdgeAccounting } from './stateless/accounting.js';
import { StatelessSessions, TooManyListens } from './stateless/sessions.js';
import { isWebResponse, JsonReply, ReplySink, type Reply } from './reply.js';
import { after, guarded } from '../util/callbacks.js';

export interface McpEndpointDeps {
  router: Router;
  links: SessionLinks;
  sessions: SessionStore;
  logger: Logger;
  maxBodyBytes: number;
  maxJsonDepth: number;
  /** Sessions open at once: in all (503 beyond) and per principal (429 beyond). */
  maxSessions: number;
  maxSessionsPerPrincipal: number;
  /** How long a 2026-07-28 request answered input_required waits for the client's retry. */
  inputTimeoutMs: number;
  streams: StreamSettings;
  /** While draining, new sessions are refused (503) and existing ones finish their work. */
  draining: () => boolean;
  limiter: () => RateLimiter;
  metrics: Metrics;
  /** Tasks the gateway makes of 2026-07-28 clients' long calls (src/tasks/). */
  tasks?: GatewayTasks;
  /** Requests refused before they reach a session (a principal's rate limit, the session and listen caps), audited and traced. */
  events?: SecurityEvents;
  /** Spans of initialize and of the 2026-07-28 requests answered without the router (every other request's are the router's), when tracing is on. */
  tracing?: Tracing;
  /** The main endpoint's path (listen.path): the endpoint of refusals there. */
  mainEndpoint?: string;
  /** The teams of a caller's principal (switchyard_team_requests_total of requests answered without the router). */
  teams?: (caller: Caller) => readonly string[];
}

const SESSION_HEADER = 'mcp-session-id';
/** A notification or response taken (202, no body). */
const ACCEPTED = JsonReply.empty(202);
/**
 * One subscriptions/listen too many for its principal: refused as one session too many is
 * (429, -32600, Retry-After), since a listen is this era's standalone stream.
 */
const listensPerPrincipal: DetailedRefusal<number> = {
  status: 429,
  code: ErrorCode.InvalidRequest,
  message: (max) => `Too Many Requests: at most ${max} subscriptions/listen streams open per principal; close one first`,
  headers: { 'retry-after': '30' },
};

export function createMcpEndpoint(deps: McpEndpointDeps) {
  const { router, links, sessions, logger } = deps;
  // A principal's listens are bounded as its standalone streams of the sessions era are: one per session.
  const stateless = new StatelessSessions({ router, links, sessions, logger, inputTimeoutMs: deps.inputTimeoutMs, maxListensPerPrincipal: deps.maxSessionsPerPrincipal });
  // What the router would account of a request it does not see (stateless/accounting.ts).
  const accounting: EdgeAccounting = { metrics: deps.metrics, logger, tracing: deps.tracing, teams: deps.teams };

  /** What each POST's Accept header came to, remembered for this endpoint. */
  const postAccepts = new PostAccepts();
  const missingSession = (): Response => refuse(refusals.sessionRequired);
  const unknownSession = (): Response => refuse(refusals.sessionNotFound);

  /**
   * The session named by the header, or the refusal to send back. A session id is never a
   * credential: presented by anyone but the principal that opened it, it is unknown.
   */
  function lookup(request: HttpInput, context: Caller): DownstreamSession | Response | Promise<DownstreamSession | Response> {
    const id = request.header(SESSION_HEADER);
    if (id === undefined) return missingSession();
    const local = sessions.get(id);
    // A session another replica opened is taken over from its self-describing id (one found
    // here while that is under way is answered once its upstreams are attached).
    if (!local) return takeOver(id, context);
    const takeover = links.takingOver(id);
    return takeover ? takeover.then(() => admit(local, context)) : admit(local, context);
  }

  /** A session opened on another replica, taken over here within this replica's caps, as initialize is. */
  function takeOver(id: string, context: Caller): Response | Promise<DownstreamSession | Response> {
    return overCaps(context) ?? links.resume(id, context).then((resumed) => admit(resumed, context));
  }

  /** The refusal of one more session here: past sessions.max (503) or the principal's cap (429). */
  function overCaps(context: Caller, id?: JsonRpcId): Response | undefined {
    const options = id === undefined ? {} : { id };
    if (sessions.size >= deps.maxSessions) return refused(context, 'sessions', refuse(refusals.tooManySessions, options));
    if (sessions.countFor(context.principal?.id) >= deps.maxSessionsPerPrincipal) return refused(context, 'sessions', refuse(refusals.sessionsPerPrincipal, deps.maxSessionsPerPrincipal, options));
    return undefined;
  }

  /**
   * A request refused before it reached a session: its `request.refused` record and span
   * (audit.md), in the trace the request carried (its `_meta`'s, else the HTTP header's).
   */
  function refused<T>(context: Caller, reason: 'rate_limit' | 'sessions' | 'listens', answer: T, meta?: JsonObject): T {
    const own = parseTraceparent(meta?.traceparent);
    const trace = own !== undefined ? { traceparent: own, tracestate: typeof meta?.tracestate === 'string' ? meta.tracestate : undefined } : { traceparent: context.traceparent, tracestate: context.tracestate };
    deps.events?.requestRefused({ requestId: context.requestId, principal: context.principal?.id, endpoint: context.endpoint ?? deps.mainEndpoint, reason, outcome: 'refused', ...trace });
    return answer;
  }

  function admit(session: DownstreamSession | undefined, context: Caller): DownstreamSession | Response | Promise<DownstreamSession> {
    // Nor is it known on another endpoint than the one it was opened on.
    if (!session || session.closed || !session.delivery.addressable || session.info.principal !== context.principal?.id || session.info.endpoint !== context.endpoint) return unknownSession();
    session.touch(sessions.now());
    // The same principal with a renewed token: what its claims say now decides (its teams may have changed).
    const renewed = context.principal === session.principal ? undefined : links.renewPrincipal(session, context.principal);
    return renewed ? renewed.then(() => session) : session;
  }

  /**
   * A POST: the answer goes to `sink` (the form every call takes on the direct path), or
   * without one comes as a promise. From the body's last byte to the answer, nothing waits that
   * has not something to wait for.
   */
  function post(request: HttpInput, context: Caller): Promise<Reply>;
  function post(request: HttpInput, context: Caller, sink: ReplySink): void;
  function post(request: HttpInput, context: Caller, sink?: ReplySink): Promise<Reply> | void {
    if (!sink) return new Promise((resolve, reject) => post(request, context, new ReplySink(resolve, reject)));
    const refused = checkPostHeaders(request, postAccepts);
    if (refused) return sink.reply(refused);
    request.readBody(deps.maxBodyBytes, (text) => guarded(sink.fail, () => received(request, text, context, sink)), sink.fail);
  }

  function received(request: HttpInput, text: string | undefined, context: Caller, sink: ReplySink): void {
    const { reply, fail } = sink;
    if (text === undefined) return reply(refuse(refusals.payloadTooLarge, deps.maxBodyBytes));
    if (!withinDepth(text, deps.maxJsonDepth)) {
      return reply(refuse(refusals.nestedTooDeep, deps.maxJsonDepth));
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return reply(refuse(refusals.parseError));
    }
    if (isStatelessRequest(request, Array.isArray(body) ? body[0] : body, request.header(SESSION_HEADER) !== undefined)) {
      return void postStateless(request, body, context).then(reply, fail);
    }
    if (Array.isArray(body)) return void postBatch(request, body, context).then(reply, fail);

    const message = parseMessage(body);
    if (!message) return reply(refuse(refusals.invalidMessage, idProblem(body), { id: answerableId(body) }));
    if (isRequest(message) && message.method === 'initialize') return void initialize(request, message, context).then(reply, fail);

    if (request.header(SESSION_HEADER) === undefined && isRequest(message) && message.method === 'ping') {
      // The lifecycle allows pings before initialization; there is nothing to route.
      return reply(JsonReply.json(success(message.id, {})));
    }
    // Draining, a session busy here is let through (gateway.ts) only for what concerns its calls
    // in flight: a cancellation, an answer to the server's request. A new request starts nothing
    // and gets the drain's 503, so the client may send it to another replica.
    if (isRequest(message) && deps.draining()) return reply(refuse(refusals.shuttingDown, { id: message.id }));
    // From here on nothing waits that is already known (every call's path).
    const session = lookup(request, context);
    if (session instanceof Promise) return after(session, (found) => admitted(request, message, found, context, sink), fail);
    admitted(request, message, session, context, sink);
  }

  function admitted(
    request: HttpInput,
    message: JsonRpcMessage,
    session: DownstreamSession | Response,
    context: Caller,
    sink: ReplySink,
  ): void {
    const { reply, fail } = sink;
    if (isWebResponse(session)) return reply(session);
    const badVersion = checkProtocolVersion(request);
    if (badVersion) return reply(badVersion);
    if (!isRequest(message)) {
      accept(session, message);
      return reply(ACCEPTED);
    }
    const run = (channel: RequestChannel, done: (answers: Answers) => void): void => router.answer(session, message, sessionContext(context, session, channel), done);
    const limiting = limit(context, isRateFree(message.method) ? 0 : 1, message.id);
    if (limiting) return after(limiting, (limited) => (limited ? reply(limited) : respond(session, run, deps.streams, reply, [message.id])), fail);
    respond(session, run, deps.streams, reply, [message.id]);
  }

  /**
   * A 2026-07-28 request (stateless/endpoint.ts): no session of the client's, the era's own
   * validation. Every refusal made here is in that revision's codes (`stateless`): none of the
   * legacy range -32000..-32019, so the principal's rate limit is -32603 with data.reason.
   */
  async function postStateless(request: HttpInput, body: unknown, context: Caller): Promise<Response> {
    if (Array.isArray(body)) return refuse(refusals.statelessBatch, { stateless: true });
    const message = parseMessage(body);
    if (!message) return refuse(refusals.invalidMessage, idProblem(body), { stateless: true });
    // No client notification is defined over HTTP in this era (cancelling is closing the stream).
    if ('method' in message && !isRequest(message)) return new Response(null, { status: 202 });
    const validated = validateStateless(request, message);
    if (!isRequest(message)) return isWebResponse(validated) ? validated : refuse(refusals.notARequest, { stateless: true });
    // What the edge answers of a request, its refusals first, is accounted as the router accounts the rest.
    const edge = new EdgeCall(accounting, message, context, request.header('mcp-protocol-version'));
    if (isWebResponse(validated)) return edge.refused(validated);
    const meta = metaOf(validated.params);
    const own = { id: validated.id, stateless: true };
    const limited = await limit(context, isRateFree(validated.method) ? 0 : 1, validated.id, { meta });
    if (limited) return edge.refused(limited);
    // From here to the session's creation nothing waits, so concurrent requests cannot all pass
    // the caps before any of them has counted, and none starts once the drain has begun.
    // Draining, only the retry of a call parked here is let through (gateway.ts): only this
    // replica can take it. Any other request starts nothing, whether or not its principal's
    // session is open here, and gets the drain's 503 (another replica may serve it).
    if (deps.draining() && !stateless.resumes(validated)) return edge.refused(refuse(refusals.shuttingDown, own));
    if (!stateless.has(validated, context)) {
      if (sessions.size >= deps.maxSessions) return edge.refused(refused(context, 'sessions', refuse(refusals.tooManySessions, own), meta));
      if (sessions.countFor(context.principal?.id) >= deps.maxSessionsPerPrincipal) {
        return edge.refused(refused(context, 'sessions', refuse(refusals.statelessSessionsPerPrincipal, deps.maxSessionsPerPrincipal, own), meta));
      }
    }
    const endpoint = { stateless, keepAlive: deps.streams.keepAlives ?? deps.streams.keepAliveMs, bounds: (kind: 'request' | 'standalone') => deps.streams.bounds?.[kind], ...(deps.tasks ? { tasks: deps.tasks } : {}) };
    return serveStateless(endpoint, request, validated, context, edge).catch((err: unknown) => {
      if (err instanceof TooManyListens) return edge.refused(refused(context, 'listens', refuse(listensPerPrincipal, err.max, own), meta));
      // A listen that failed opening (its span begun) ends with the error; the route answers 500.
      edge.failed(err);
      throw err;
    });
  }

  async function postBatch(request: HttpInput, items: unknown[], context: Caller): Promise<Reply> {
    if (items.length === 0) return refuse(refusals.emptyBatch);
    // Draining, as for one message (received): a batch with a request in it is refused whole, unrun.
    const carriesRequest = (item: unknown): boolean => {
      const message = parseMessage(item);
      return message !== undefined && isRequest(message);
    };
    if (deps.draining() && items.some(carriesRequest)) return refuse(refusals.shuttingDown);
    const session = await lookup(request, context);
    if (isWebResponse(session)) return session;
    const badVersion = checkProtocolVersion(request);
    if (badVersion) return badVersion;
    if (!allowsBatches(session.info.protocolVersion)) {
      return refuse(refusals.batchesUnsupported, session.info.protocolVersion);
    }
    const invalid: JsonRpcResponse[] = [];
    const requests: JsonRpcRequest[] = [];
    for (const item of items) {
      const message = parseMessage(item);
      if (!message) {
        const problem = idProblem(item);
        invalid.push(failure(null, { code: ErrorCode.InvalidRequest, message: problem ? `Invalid Request: ${problem}` : 'Invalid Request' }));
      } else if (isRequest(message) && message.method === 'initialize') {
        invalid.push(failure(message.id, { code: ErrorCode.InvalidRequest, message: 'initialize must not be part of a batch' }));
      } else if (isRequest(message)) requests.push(message);
      else accept(session, message);
    }
    if (requests.length === 0 && invalid.length === 0) return ACCEPTED;
    const limited = await limit(context, requests.filter((r) => !isRateFree(r.method)).length, null);
    if (limited) return limited;
    // router.answer never rejects; were it to, each request still gets an answer.
    const run = (channel: RequestChannel, done: (answers: Answers) => void): void =>
      void Promise.all(requests.map((r) => router.answer(session, r, sessionContext(context, session, channel)))).then(
        (answers) => done([...invalid, ...answers]),
        (err: unknown) => done([...invalid, ...requests.map((r) => failure(r.id, toJsonRpcError(err)))]),
      );
    return new Promise((resolve) => respond(session, run, deps.streams, resolve, requests.map((r) => r.id)));
  }

  /**
   * The principal's token bucket, taken before anything reaches an upstream: a 429 with
   * Retry-After, RateLimit and RateLimit-Policy headers and the request's id when it is empty.
   * A 2026-07-28 request's (`stateless`, with its `_meta` for the refusal's trace) is refused in
   * that revision's codes.
   */
  function limit(context: Caller, cost: number, id: JsonRpcId | null, stateless?: { meta: JsonObject | undefined }): Promise<Response | undefined> | undefined {
    if (cost === 0) return undefined;
    return deps.limiter().client(context.principal?.id ?? 'anonymous', cost)?.then((outcome) => {
      const answer = refusal(outcome, cost, { id, stateless: stateless !== undefined });
      return answer && refused(context, 'rate_limit', answer, stateless?.meta);
    });
  }

  /** The refusal of a request the bucket did not allow; every one is made with `options` (the id, the era). */
  function refusal(outcome: LimitOutcome, cost: number, options: { id: JsonRpcId | null; stateless: boolean }): Response | undefined {
    if (outcome.decision.allowed) return undefined;
    if (cost > outcome.limit.burst) {
      // No wait makes room for it: say so rather than promise a retry.
      return refuse(refusals.batchOverBurst, { cost, burst: outcome.limit.burst }, options);
    }
    deps.metrics.rateLimited.inc({ kind: 'client' });
    const headers = rateLimitHeaders(outcome);
    // No room to keep the principal's bucket: not its own limit, so not described as one.
    if (outcome.decision.tableFull) return refuse(refusals.rateLimitTableFull, headers['retry-after'], { ...options, headers });
    return refuse(refusals.rateLimited, { burst: outcome.limit.burst, refill: describeLimit(outcome.limit), retryAfter: headers['retry-after'] }, { ...options, headers });
  }

  function accept(session: DownstreamSession, message: JsonRpcMessage): void {
    if (isResponse(message)) router.handleResponse(session, message);
    else router.handleNotification(session, message);
  }

  async function initialize(request: HttpInput, message: JsonRpcRequest, context: Caller): Promise<Reply> {
    if (deps.draining()) {
      return refuse(refusals.shuttingDown, { id: message.id });
    }
    if (request.header(SESSION_HEADER) !== undefined) {
      const session = await lookup(request, context);
      if (isWebResponse(session)) return session;
      return refuse(refusals.alreadyInitialized, { id: message.id });
    }
    const over = overCaps(context, message.id);
    if (over) return over;
    const trace = deps.tracing && traceInitialize(deps.tracing, message, context);
    try {
      const { session, response } = await links.initialize(message, context);
      logger.info('session started', { session: session.id.slice(0, 8), protocolVersion: session.info.protocolVersion, upstreams: [...session.upstreams.keys()] });
      endInitialize(trace, response, session.id);
      return JsonReply.json(response, { 'mcp-session-id': session.id });
    } catch (err) {
      const response = failure(message.id, toJsonRpcError(err));
      endInitialize(trace, response);
      return JsonReply.json(response);
    }
  }

  /**
   * GET opens the standalone stream (one connection at a time; undelivered messages come
   * first), or with Last-Event-ID resumes the stream that event belongs to, replaying what
   * followed it. An id that is malformed, of another session or too old to replay gets 400.
   * The stream comes as its connection, which the route writes to the client (streamReply).
   */
  async function get(request: HttpInput, context: Caller): Promise<Response | SseConnection> {
    const refused = checkGetHeaders(request);
    if (refused) return refused;
    const session = await lookup(request, context);
    if (isWebResponse(session)) return session;
    const badVersion = checkProtocolVersion(request);
    if (badVersion) return badVersion;
    const lastEventId = request.header('last-event-id');
    if (lastEventId !== undefined) {
      const event = parseEventId(lastEventId);
      const stream = event && session.stream(event.key);
      if (!event || !stream) {
        // A stream another replica wrote is resumed from the shared log (sessions.store: redis).
        const shared = event && sessions.sharedLog ? await resumeFromSharedLog(session, sessions.sharedLog, event, deps.streams) : undefined;
        return shared ?? refuse(refusals.unknownLastEventId);
      }
      // A stream that ended with nothing left to replay (a cancelled request's, which carries
      // no response) is over: 204 is how SSE tells a client to stop reconnecting (WHATWG HTML
      // "Server-sent events"). An empty 200 would read as a dropped connection, and the SDK
      // client would then retry with a plain GET, which meets 409 while the GET stream is open.
      if (stream.exhaustedAfter(event.seq)) return new Response(null, { status: 204 });
      const connection = connect(session, stream, deps.streams, event.seq);
      return connection ?? refuse(refusals.lastEventIdTooOld);
    }
    if (session.standalone.attached) {
      return refuse(refusals.streamConflict);
    }
    return connect(session, session.standalone, deps.streams)!;
  }

  async function remove(request: HttpInput, context: Caller): Promise<Response> {
    const session = await lookup(request, context);
    if (isWebResponse(session)) return session;
    const badVersion = checkProtocolVersion(request);
    if (badVersion) return badVersion;
    await sessions.endByClient(session.id);
    logger.info('session ended by client', { session: session.id.slice(0, 8) });
    return new Response(null, { status: 200 });
  }

  return { post, get, delete: remove };
}

