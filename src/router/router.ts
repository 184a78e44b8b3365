// The router: opens a client session's upstream sessions on initialize, then answers each
// client message, resolving namespaced names to their upstream and forwarding what the
// upstreams send back. It sees UpstreamClients only, never a transport kind.
import { mergeCapabilities, supportsMethod } from '../mcp/capabilities.js';
import type { Policy } from '../policy/policy.js';
import type { RateLimiter } from '../ratelimit/limiter.js';
import { ErrorCode, GatewayError, RpcError, isInternal, toJsonRpcError } from '../mcp/errors.js';
import {
  failure,
  isFailure,
  isObject,
  notification,
  success,
  type JsonObject,
  type JsonRpcNotification,
  type JsonRpcRequest,
  type JsonRpcResponse,
} from '../mcp/jsonrpc.js';
import { mapRelatedTask } from '../mcp/tasks.js';
import { LATEST_VERSION, negotiateVersion } from '../mcp/versions.js';
import { randomBytes } from 'node:crypto';
import type { DownstreamSession, SessionInfo } from '../session/session.js';
import type { SessionTokens, UpstreamState } from '../session/token.js';
import type { SessionStore } from '../session/store.js';
import type { UpstreamClient } from '../upstream/client.js';
import type { UpstreamChanges, UpstreamPool } from '../upstream/pool.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Logger } from '../util/log.js';
import { GATEWAY_NAME, GATEWAY_VERSION } from '../version.js';
import { forward, requireString, type Call } from './call.js';
import { describeCall, outcomeOf, type RequestContext } from './call-log.js';
import type { Catalog, ListedPage, ListKind } from './catalog.js';
import { afterRestart, listObserver, recordSubscription } from './recovery.js';
import { answerFromClient, routeClientNotification, wireUpstream, type RequestChannel } from './relay.js';
import { forgetNames, listed, rememberNames } from './existence.js';
import { shapeItem } from './shape.js';
import { SharedHub } from './shared.js';
import { callTool, type ToolCallDeps } from './tool-call.js';
import type { Settled } from '../mcp/pending.js';
import { asError, guarded, surface } from '../util/callbacks.js';
import type { ToolFacts } from './tool-facts.js';

export type { RequestChannel } from './relay.js';
export type { RequestContext } from './call-log.js';

export interface RouterDeps {
  pool: UpstreamPool;
  sessions: SessionStore;
  catalog: Catalog;
  logger: Logger;
  metrics: Metrics;
  /** Tool arguments in call logs: shape only, or values. */
  logArguments: () => 'shape' | 'values';
  facts: ToolFacts;
  /** Read at each use: a config reload may replace them. */
  limiter: () => RateLimiter;
  policy: () => Policy;
  /** Self-describing session ids, when session keys are configured. */
  tokens?: SessionTokens;
}

const LIST_METHODS: Record<string, ListKind> = {
  'tools/list': 'tools',
  'prompts/list': 'prompts',
  'resources/list': 'resources',
  'resources/templates/list': 'resourceTemplates',
  'tasks/list': 'tasks',
};

/**
 * An upstream's "no such resource" (resources.mdx: -32002 Resource not found; some servers
 * answer -32602 "... not found"), which the gateway answers as it answers a hidden one.
 */
function resourceNotFound(err: unknown): boolean {
  if (!(err instanceof RpcError)) return false;
  const { code, message } = err.error;
  return code === -32002 || (code === ErrorCode.InvalidParams && /not found/i.test(message));
}

/** A left-out upstream is tried again on use at most this often. */
const LEFT_OUT_RETRY_MS = 2_000;

const LIST_CHANGED_BY_CAPABILITY = [
  ['tools', 'notifications/tools/list_changed'],
  ['prompts', 'notifications/prompts/list_changed'],
  ['resources', 'notifications/resources/list_changed'],
] as const;

export class Router {
  readonly #deps: RouterDeps;
  /** The hub of each shared upstream child. */
  readonly #hubs = new Map<UpstreamClient, SharedHub>();
  /** Sessions being taken over from another replica, so concurrent requests resume once. */
  readonly #resuming = new Map<string, Promise<DownstreamSession | undefined>>();

  /** What tools/call needs, built once (not per call). */
  readonly #toolCall: ToolCallDeps;

  constructor(deps: RouterDeps) {
    this.#deps = deps;
    this.#toolCall = {
      ...deps,
      ensure: (session, upstream) => this.#ensure(session, upstream),
      learn: (page) => this.#learnTools(page),
      factOf: (item) => deps.facts.fact(item),
      ownTask: (session, upstream, taskId) => this.hubOf(session, upstream)?.ownTask(taskId, session),
    };
  }

  /**
   * Handles initialize: negotiates the version, creates the session and opens every upstream in
   * parallel with the client's own capabilities and info. An upstream that fails is left out.
   */
  async initialize(request: JsonRpcRequest, context: RequestContext): Promise<{ session: DownstreamSession; response: JsonRpcResponse }> {
    const params = request.params ?? {};
    if (typeof params.protocolVersion !== 'string' || !isObject(params.capabilities) || !isObject(params.clientInfo)) {
      this.#deps.metrics.countRequest('initialize', 'none', 'error');
      throw new GatewayError('invalid_params', 'initialize needs protocolVersion, capabilities and clientInfo');
    }
    const protocolVersion = negotiateVersion(params.protocolVersion);
    const { sessions } = this.#deps;
    const { session, instructions } = await this.#open({ protocolVersion, clientCapabilities: params.capabilities, clientInfo: params.clientInfo }, context);
    const { tokens } = this.#deps;
    if (tokens) sessions.assignId(session, tokens.seal(this.#claims(session)));
    const result: JsonObject = {
      protocolVersion,
      capabilities: session.capabilities,
      serverInfo: { name: GATEWAY_NAME, version: GATEWAY_VERSION },
    };
    if (instructions !== undefined) result.instructions = instructions;
    this.#deps.metrics.countRequest('initialize', 'none', 'ok');
    return { session, response: success(request.id, result) };
  }

  /**
   * The gateway's session for a 2026-07-28 client (which has none of its own): opened like an
   * initialized one, with the capabilities and info the request's `_meta` carries, and the
   * newest sessions-era version towards upstreams of that era. Its id never reaches a client.
   */
  async openStateless(clientCapabilities: JsonObject, clientInfo: JsonObject, context: RequestContext): Promise<DownstreamSession> {
    const { session } = await this.#open({ protocolVersion: LATEST_VERSION, clientCapabilities, clientInfo }, context, true);
    return session;
  }

  /** Creates a session and opens every upstream its teams can see, in parallel. */
  async #open(info: Omit<SessionInfo, 'principal'>, context: RequestContext, stateless = false): Promise<{ session: DownstreamSession; instructions: string | undefined }> {
    const { pool, sessions } = this.#deps;
    const session = sessions.create({ ...info, ...(context.principal ? { principal: context.principal.id } : {}) });
    session.stateless = stateless;
    session.principal = context.principal;
    session.access = this.#deps.policy().access(context.principal);
    // Upstreams the session's teams cannot see are never opened: nothing of theirs, not even a
    // notification or a capability, can reach this client.
    const names = pool.names.filter((name) => session.access.canSeeUpstream(name));
    const upstreamParams = { protocolVersion: info.protocolVersion, capabilities: info.clientCapabilities, clientInfo: info.clientInfo };
    const instructions = await this.#openUpstreams(session, names, upstreamParams);
    session.capabilities = mergeCapabilities([...session.upstreams.values()].map((c) => c.capabilities));
    if (instructions.length > 0) session.instructions = instructions.join('\n\n');
    return { session, instructions: session.instructions };
  }

  /**
   * Takes over a session another replica opened, from its self-describing id: HTTP upstream
   * sessions continue where they were, stdio upstreams are started for it. Undefined when the
   * id is not a valid token, or names another principal (an unknown session either way).
   */
  resume(id: string, context: RequestContext): Promise<DownstreamSession | undefined> {
    const key = `${id}\0${context.principal?.id ?? ''}`;
    const pending = this.#resuming.get(key);
    if (pending) return pending;
    const resumed = this.#resume(id, context).finally(() => this.#resuming.delete(key));
    this.#resuming.set(key, resumed);
    return resumed;
  }

  async #resume(id: string, context: RequestContext): Promise<DownstreamSession | undefined> {
    // Ended here (DELETE, idle): its id does not bring it back.
    if (this.#deps.sessions.ended(id)) return undefined;
    const claims = this.#deps.tokens?.open(id);
    if (!claims || claims.principal !== context.principal?.id) return undefined;
    const { sessions, pool, logger } = this.#deps;
    const session = sessions.create(
      { protocolVersion: claims.protocolVersion, clientCapabilities: claims.clientCapabilities, clientInfo: claims.clientInfo, ...(claims.principal ? { principal: claims.principal } : {}) },
      id,
    );
    session.principal = context.principal;
    session.access = this.#deps.policy().access(context.principal);
    const names = pool.names.filter((name) => session.access.canSeeUpstream(name));
    const params = { protocolVersion: claims.protocolVersion, capabilities: claims.clientCapabilities, clientInfo: claims.clientInfo };
    await this.#openUpstreams(session, names, params, claims.upstreams);
    session.capabilities = mergeCapabilities([...session.upstreams.values()].map((c) => c.capabilities));
    logger.info('session resumed from its id', { session: id.slice(0, 8), upstreams: [...session.upstreams.keys()] });
    return session;
  }

  /**
   * Opens the session's upstream sessions in parallel (continuing `states` of a resumed
   * session); an upstream that fails is left out and logged. Returns their instructions.
   */
  async #openUpstreams(session: DownstreamSession, names: string[], params: JsonObject, states?: Record<string, UpstreamState>): Promise<string[]> {
    const { pool, logger } = this.#deps;
    const opened = await Promise.allSettled(
      names.map(async (name) => {
        if (pool.isShared(name)) return this.#joinShared(session, name);
        const wire = (client: UpstreamClient): void => this.#wire(session, client);
        return states ? pool.resume(name, states[name], params, wire) : pool.open(name, params, wire);
      }),
    );
    const instructions: string[] = [];
    opened.forEach((outcome, i) => {
      const name = names[i]!;
      if (outcome.status === 'rejected') {
        logger.warn('upstream left out of session', { upstream: name, session: session.id.slice(0, 8), err: outcome.reason });
        const reason = outcome.reason instanceof Error ? outcome.reason.message : String(outcome.reason);
        session.leftOut.set(name, { reason, at: Date.now() });
        return;
      }
      session.leftOut.delete(name);
      if (session.closed) {
        if (!session.shared.has(name)) void outcome.value.close();
        return;
      }
      session.upstreams.set(name, outcome.value);
      const text = outcome.value.initialized?.instructions;
      if (text) instructions.push(`## ${name}\n${text}`);
    });
    return instructions;
  }

  /**
   * The upstream and original name of a prompt the session may see and its upstream lists;
   * anything else is answered as unknown (the decision first, so a hidden upstream shows
   * nothing of its state).
   */
  async #visiblePrompt(session: DownstreamSession, name: string): Promise<{ client: UpstreamClient; name: string }> {
    const unknown = new GatewayError('unknown_name', `Unknown prompt: ${name}`);
    const { catalog } = this.#deps;
    const owner = catalog.codec.splitName(name)?.upstream;
    if (owner === undefined || !session.access.canSee('prompt', name, owner)) throw unknown;
    await this.#ensure(session, owner);
    const target = await catalog.resolveName('prompts', name, session.upstreams);
    if (!target || !(await listed(session, 'prompts', target.client, target.name, catalog))) throw unknown;
    return target;
  }

  /** The upstream and original URI of a resource (or template) the session may see. */
  async #visibleResource(session: DownstreamSession, uri: string): Promise<{ client: UpstreamClient; uri: string }> {
    const unknown = new GatewayError('unknown_name', `Unknown resource: ${uri}`);
    const { catalog } = this.#deps;
    const owner = catalog.codec.splitUri(uri)?.upstream;
    if (owner === undefined || !session.access.canSee('resource', uri, owner)) throw unknown;
    await this.#ensure(session, owner);
    const target = catalog.resolveUri(uri, session.upstreams);
    if (!target) throw unknown;
    return target;
  }

  /**
   * An upstream left out of the session (it failed, or was at its process limit) is opened on
   * first use once some time has passed; otherwise the call gets the reason it is unavailable.
   */
  #ensure(session: DownstreamSession, upstream: string | undefined): Promise<void> | undefined {
    // Nothing to open (the usual case, on every call's path): no promise.
    if (upstream === undefined || session.upstreams.has(upstream) || !session.leftOut.has(upstream)) return undefined;
    return this.#openLeftOut(session, upstream);
  }

  async #openLeftOut(session: DownstreamSession, upstream: string): Promise<void> {
    await this.#retryLeftOut(session, upstream);
    const left = session.leftOut.get(upstream);
    if (left) throw new GatewayError('upstream_unavailable', `Upstream ${upstream} is unavailable: ${left.reason}`);
  }

  /** Tries again to open left-out upstreams (all, or `only`) whose last try is old enough. */
  async #retryLeftOut(session: DownstreamSession, only?: string): Promise<void> {
    const due = [...session.leftOut].filter(([name, left]) => (only === undefined || name === only) && Date.now() - left.at >= LEFT_OUT_RETRY_MS).map(([name]) => name);
    if (due.length === 0) return;
    const before = session.upstreams.size;
    const params = { protocolVersion: session.info.protocolVersion, capabilities: session.info.clientCapabilities, clientInfo: session.info.clientInfo };
    await this.#openUpstreams(session, due.filter((name) => this.#deps.pool.config(name) && session.access.canSeeUpstream(name)), params);
    if (session.upstreams.size === before) return;
    // The client's lists lacked it: tell it they changed.
    for (const [capability, method] of LIST_CHANGED_BY_CAPABILITY) {
      if (isObject(session.capabilities[capability])) session.deliver(notification(method));
    }
  }

  /** A lease on a shared upstream's child, registered with its hub until the session ends. */
  async #joinShared(session: DownstreamSession, name: string): Promise<UpstreamClient> {
    const { client, release } = await this.#deps.pool.lease(name);
    let hub = this.#hubs.get(client);
    if (!hub) {
      hub = new SharedHub(client, { naming: this.#deps.catalog, metrics: this.#deps.metrics, logger: this.#deps.logger });
      this.#hubs.set(client, hub);
      client.onclose = () => this.#hubs.delete(client);
    }
    const joined = hub;
    joined.add(session);
    session.shared.set(name, () => {
      joined.remove(session);
      release();
    });
    return client;
  }

  /** The hub of a session's shared upstream, if `upstream` is one. */
  hubOf(session: DownstreamSession, upstream: string): SharedHub | undefined {
    if (!session.shared.has(upstream)) return undefined;
    const client = session.upstreams.get(upstream);
    return client ? this.#hubs.get(client) : undefined;
  }

  /** What a replica needs to take the session over (sealed into its id). */
  #claims(session: DownstreamSession) {
    const upstreams: Record<string, UpstreamState> = {};
    for (const [name, client] of session.upstreams) {
      const upstreamSession = client.upstreamSessionId;
      const init = client.initialized;
      if (upstreamSession && init) upstreams[name] = { session: upstreamSession, protocolVersion: init.protocolVersion, capabilities: init.capabilities };
    }
    return {
      nonce: randomBytes(8).toString('base64url'),
      ...(session.info.principal !== undefined ? { principal: session.info.principal } : {}),
      protocolVersion: session.info.protocolVersion,
      clientCapabilities: session.info.clientCapabilities,
      clientInfo: session.info.clientInfo,
      upstreams,
      iat: Date.now(),
    };
  }

  /**
   * Applies a config reload to the open sessions: upstream sessions of removed or changed
   * upstreams, or of upstreams the session's teams may no longer see, are closed; added or
   * changed ones it may see are opened with the session's own client capabilities; and every
   * session that changed (all, when naming or policy changed) hears list_changed. Sessions the
   * reload does not touch keep running as they were.
   */
  async reconfigure(changes: UpstreamChanges, namingChanged: boolean, policyChanged: boolean): Promise<void> {
    const { sessions, pool } = this.#deps;
    const replaced = new Set([...changes.removed, ...changes.changed]);
    await Promise.allSettled(
      [...sessions.all()].map(async (session) => {
        if (policyChanged) session.access = this.#deps.policy().access(session.principal);
        let touched = namingChanged || policyChanged;
        for (const [name, client] of [...session.upstreams]) {
          if (!replaced.has(name) && session.access.canSeeUpstream(name)) continue;
          session.upstreams.delete(name);
          session.listViews.delete(name);
          session.subscriptions.delete(name);
          forgetNames(session, name);
          touched = true;
          const release = session.shared.get(name);
          session.shared.delete(name);
          if (release) release();
          else void client.close();
        }
        const opening = pool.names.filter((name) => !session.upstreams.has(name) && session.access.canSeeUpstream(name) && (changes.added.includes(name) || changes.changed.includes(name) || policyChanged));
        const params = { protocolVersion: session.info.protocolVersion, capabilities: session.info.clientCapabilities, clientInfo: session.info.clientInfo };
        const before = session.upstreams.size;
        await this.#openUpstreams(session, opening, params);
        if (session.upstreams.size !== before) touched = true;
        if (!touched || session.closed) return;
        for (const [capability, method] of LIST_CHANGED_BY_CAPABILITY) {
          if (isObject(session.capabilities[capability])) session.deliver(notification(method));
        }
      }),
    );
  }

  /** Answers one client request; undefined when it was cancelled (no response is due). */
  handleRequest(session: DownstreamSession, request: JsonRpcRequest, channel: RequestChannel, context: RequestContext): Promise<JsonRpcResponse | undefined> {
    return new Promise((resolve) => this.answer(session, request, channel, context, resolve));
  }

  /**
   * handleRequest() without a promise, the form the HTTP endpoint uses: `done` gets the
   * response (undefined when the client cancelled the request), once. A refusal found at once
   * (an unknown tool, invalid arguments, a full upstream) is answered before this returns.
   */
  answer(session: DownstreamSession, request: JsonRpcRequest, channel: RequestChannel, context: RequestContext, done: (response: JsonRpcResponse | undefined) => void): void {
    if (session.isInFlight(request.id)) {
      // Request ids MUST NOT be reused within a session (basic/index.mdx): the second one is
      // refused and the first runs on; replacing it would cancel it and end its POST empty.
      const message = `Request id ${JSON.stringify(request.id)} is already in use by a request in flight`;
      return guarded(surface, () => done(failure(request.id, { code: ErrorCode.InvalidRequest, message })));
    }
    const signal = session.begin(request.id);
    const call: Call = { session, channel, signal, context, record: { started: performance.now() } };
    const settled: Settled = (outcome) => {
      let response: JsonRpcResponse | undefined;
      try {
        response = this.#respond(request, call, outcome);
      } catch (err) {
        // What the gateway's own bookkeeping threw (never expected): still an answer.
        this.#deps.logger.error('request failed', { method: request.method, err });
        response = failure(request.id, toJsonRpcError(err));
      }
      // What writing the answer throws has no caller left to hear it.
      guarded(surface, () => done(response));
    };
    // tools/call straight to its handler: no promise on every call's path.
    if (request.method === 'tools/call') callTool(call, request.params ?? {}, this.#toolCall, settled);
    else this.#dispatch(call, request).then(settled, (err: unknown) => settled(asError(err)));
  }

  /** The response to a request that ended with `outcome`, and its accounting. */
  #respond(request: JsonRpcRequest, call: Call, outcome: JsonObject | Error): JsonRpcResponse | undefined {
    const { session, signal } = call;
    let response: JsonRpcResponse | undefined;
    try {
      if (!(outcome instanceof Error)) {
        call.record.toolError = request.method === 'tools/call' && outcome.isError === true;
        response = success(request.id, outcome);
      } else {
        call.record.error = outcome;
        // A client's cancellation gets no response (cancellation.mdx); one the gateway decided
        // (shutting down) does.
        if (signal.aborted) response = signal.reason instanceof GatewayError ? failure(request.id, toJsonRpcError(signal.reason)) : undefined;
        else {
          if (isInternal(outcome)) this.#deps.logger.error('request failed', { method: request.method, err: outcome });
          response = failure(request.id, toJsonRpcError(outcome));
        }
      }
    } finally {
      session.end(request.id, signal);
    }
    this.#account(request, call, response === undefined && signal.aborted);
    return response;
  }

  /** One metric update and one log line per call. */
  #account(request: JsonRpcRequest, call: Call, cancelled: boolean): void {
    const { metrics, logger } = this.#deps;
    const { record } = call;
    const seconds = (performance.now() - record.started) / 1_000;
    const outcome = cancelled ? 'cancelled' : outcomeOf(record);
    const upstream = metrics.upstream(record.upstream);
    metrics.countRequest(metrics.method(request.method), upstream, outcome);
    if (request.method === 'tools/call' && record.upstream !== undefined) {
      metrics.observeToolCall(upstream, metrics.tool(record.upstream, record.tool), seconds);
    }
    if (logger.isEnabled('info')) logger.info('call', describeCall(request, call.session, call.context, record, outcome, seconds, this.#deps.logArguments()));
  }

  handleNotification(session: DownstreamSession, message: JsonRpcNotification): void {
    if (routeClientNotification(session, message)) return;
    switch (message.method) {
      case 'notifications/cancelled': {
        const id = message.params?.requestId;
        if (typeof id === 'string' || typeof id === 'number') session.cancel(id);
        return;
      }
      case 'notifications/roots/list_changed':
        for (const [name, client] of session.upstreams) if (!session.shared.has(name)) client.notify(message.method, message.params).catch(() => {});
        return;
      default:
        return; // notifications/initialized and anything unknown need nothing from the gateway
    }
  }

  /** A client's answer to a server-initiated request; unknown ids are dropped. */
  handleResponse(session: DownstreamSession, response: JsonRpcResponse): void {
    const outcome = isFailure(response) ? new RpcError(response.error) : response.result;
    if (!answerFromClient(session, response.id, outcome)) {
      this.#deps.logger.debug('dropped a client response with an unknown id', { id: response.id });
    }
  }

  async #dispatch(call: Call, request: JsonRpcRequest): Promise<JsonObject> {
    const { method } = request;
    const params = request.params ?? {};
    const { session, signal } = call;
    const { catalog, metrics } = this.#deps;
    const kind = LIST_METHODS[method];
    if (kind) {
      if (params.cursor === undefined) await this.#retryLeftOut(session);
      const observe = listObserver(session, kind);
      return catalog.list(kind, session.upstreams, params.cursor, {
        signal,
        observe: (page) => {
          observe(page);
          if (kind === 'tools') this.#learnTools(page);
          if (kind === 'tools') rememberNames(session, kind, page, this.#toolCall.factOf);
          else if (kind === 'prompts') rememberNames(session, kind, page);
        },
        shape: (upstream, item) => {
          // A shared child lists every session's tasks: each sees only its own.
          if (kind === 'tasks') return this.hubOf(session, upstream)?.owns(String(item.taskId).slice(String(item.taskId).indexOf(':') + 1), session) === false ? undefined : item;
          return shapeItem(session.access, kind, upstream, item);
        },
      });
    }
    switch (method) {
      case 'ping':
        return {};
      case 'initialize':
        throw new RpcError({ code: ErrorCode.InvalidRequest, message: 'Session already initialized' });
      case 'prompts/get': {
        const name = requireString(params, 'name');
        const target = await this.#visiblePrompt(session, name);
        return forward(call, target.client, method, { ...params, name: target.name });
      }
      case 'tasks/get':
      case 'tasks/cancel':
      case 'tasks/result':
        return this.#task(call, method, params);
      case 'resources/read':
      case 'resources/subscribe':
      case 'resources/unsubscribe': {
        const uri = requireString(params, 'uri');
        const target = await this.#visibleResource(session, uri);
        const hub = method === 'resources/read' ? undefined : this.hubOf(session, target.client.name);
        if (hub) {
          // A shared child: subscriptions are counted across the sessions it serves.
          call.record.upstream = target.client.name;
          return method === 'resources/subscribe' ? hub.subscribe(session, target.uri, params) : hub.unsubscribe(session, target.uri, params);
        }
        const result = await forward(call, target.client, method, { ...params, uri: target.uri }).catch((err: unknown) => {
          throw resourceNotFound(err) ? new GatewayError('unknown_name', `Unknown resource: ${uri}`) : err;
        });
        if (method !== 'resources/read') recordSubscription(session, target.client.name, target.uri, method === 'resources/subscribe');
        return result;
      }
      case 'completion/complete':
        return this.#complete(call, params);
      case 'logging/setLevel': {
        if (typeof params.level === 'string') session.logLevel = params.level;
        // A shared child's level is the config's (its messages reach every session it serves).
        const targets = [...session.upstreams].filter(([name, c]) => !session.shared.has(name) && !c.closed && supportsMethod(c.capabilities, method)).map(([, c]) => c);
        await Promise.allSettled(targets.map((c) => c.request(method, params, { signal })));
        return {};
      }
      default:
        throw new GatewayError('method_not_found', `Method not found: ${method}`);
    }
  }

  async #complete(call: Call, params: JsonObject): Promise<JsonObject> {
    const { session } = call;
    const ref = params.ref;
    if (!isObject(ref)) throw new GatewayError('invalid_params', 'completion/complete needs a ref');
    const { catalog } = this.#deps;
    if (ref.type === 'ref/prompt') {
      const name = requireString(ref, 'name');
      const target = await this.#visiblePrompt(session, name);
      return forward(call, target.client, 'completion/complete', { ...params, ref: { ...ref, name: target.name } });
    }
    if (ref.type === 'ref/resource') {
      const uri = requireString(ref, 'uri');
      const target = await this.#visibleResource(session, uri);
      return forward(call, target.client, 'completion/complete', { ...params, ref: { ...ref, uri: target.uri } });
    }
    throw new GatewayError('invalid_params', 'ref.type must be ref/prompt or ref/resource');
  }

  /** tasks/get, tasks/cancel and tasks/result reach the upstream that owns the task. */
  async #task(call: Call, method: string, params: JsonObject): Promise<JsonObject> {
    const { session } = call;
    const exposed = requireString(params, 'taskId');
    const { codec } = this.#deps.catalog;
    const split = codec.splitTaskId(exposed);
    const client = split && session.upstreams.get(split.upstream);
    const hub = split && this.hubOf(session, split.upstream);
    if (!split || !client || (hub && !hub.owns(split.taskId, session))) throw new GatewayError('invalid_params', `Failed to retrieve task: Task not found`);
    const result = await forward(call, client, method, { ...params, taskId: split.taskId });
    if (method === 'tasks/result') return mapRelatedTask(result, (id) => codec.exposeTaskId(client.name, id));
    return typeof result.taskId === 'string' ? { ...result, taskId: codec.exposeTaskId(client.name, result.taskId) } : result;
  }

  #learnTools(page: ListedPage): void {
    this.#deps.metrics.learnTools(page.upstream, page.originals);
  }

  /** Wires a new upstream session to the client session that owns it. */
  #wire(session: DownstreamSession, client: UpstreamClient): void {
    const { catalog, logger, pool } = this.#deps;
    wireUpstream(session, client, {
      naming: catalog,
      logger,
      clientRequestTimeoutMs: (upstream) => pool.config(upstream)?.maxTotalTimeoutMs ?? 600_000,
      maxClientRequests: (upstream) => pool.config(upstream)?.maxClientRequests ?? 64,
      metrics: this.#deps.metrics,
      // The next unknown name reads the new list at once.
      onToolsChanged: (upstream) => forgetNames(session, upstream, 'tools'),
    });
    client.onreconnect = () => void afterRestart(session, client, catalog, logger);
  }


}
