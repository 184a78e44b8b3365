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
import { negotiateVersion } from '../mcp/versions.js';
import type { DownstreamSession } from '../session/session.js';
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
import { shapeItem } from './shape.js';
import { callTool } from './tool-call.js';
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
}

const LIST_METHODS: Record<string, ListKind> = {
  'tools/list': 'tools',
  'prompts/list': 'prompts',
  'resources/list': 'resources',
  'resources/templates/list': 'resourceTemplates',
  'tasks/list': 'tasks',
};

const LIST_CHANGED_BY_CAPABILITY = [
  ['tools', 'notifications/tools/list_changed'],
  ['prompts', 'notifications/prompts/list_changed'],
  ['resources', 'notifications/resources/list_changed'],
] as const;

export class Router {
  readonly #deps: RouterDeps;

  constructor(deps: RouterDeps) {
    this.#deps = deps;
  }

  /**
   * Handles initialize: negotiates the version, creates the session and opens every upstream in
   * parallel with the client's own capabilities and info. An upstream that fails is left out.
   */
  async initialize(request: JsonRpcRequest, context: RequestContext): Promise<{ session: DownstreamSession; response: JsonRpcResponse }> {
    const params = request.params ?? {};
    if (typeof params.protocolVersion !== 'string' || !isObject(params.capabilities) || !isObject(params.clientInfo)) {
      this.#deps.metrics.requests.inc({ method: 'initialize', upstream: 'none', outcome: 'error' });
      throw new GatewayError('invalid_params', 'initialize needs protocolVersion, capabilities and clientInfo');
    }
    const protocolVersion = negotiateVersion(params.protocolVersion);
    const { pool, sessions, logger } = this.#deps;
    const session = sessions.create({
      protocolVersion,
      clientCapabilities: params.capabilities,
      clientInfo: params.clientInfo,
      ...(context.principal ? { principal: context.principal.id } : {}),
    });
    session.principal = context.principal;
    session.access = this.#deps.policy().access(context.principal);
    // Upstreams the session's teams cannot see are never opened: nothing of theirs, not even a
    // notification or a capability, can reach this client.
    const names = pool.names.filter((name) => session.access.canSeeUpstream(name));
    const upstreamParams = { protocolVersion, capabilities: params.capabilities, clientInfo: params.clientInfo };
    const opened = await Promise.allSettled(names.map((name) => pool.open(name, upstreamParams, (client) => this.#wire(session, client))));
    const instructions: string[] = [];
    opened.forEach((outcome, i) => {
      const name = names[i]!;
      if (outcome.status === 'rejected') {
        logger.warn('upstream left out of session', { upstream: name, session: session.id.slice(0, 8), err: outcome.reason });
        return;
      }
      session.upstreams.set(name, outcome.value);
      const text = outcome.value.initialized?.instructions;
      if (text) instructions.push(`## ${name}\n${text}`);
    });
    if (session.closed) await Promise.allSettled([...session.upstreams.values()].map((c) => c.close()));
    session.capabilities = mergeCapabilities([...session.upstreams.values()].map((c) => c.capabilities));
    const result: JsonObject = {
      protocolVersion,
      capabilities: session.capabilities,
      serverInfo: { name: GATEWAY_NAME, version: GATEWAY_VERSION },
    };
    if (instructions.length > 0) result.instructions = instructions.join('\n\n');
    this.#deps.metrics.requests.inc({ method: 'initialize', upstream: 'none', outcome: 'ok' });
    return { session, response: success(request.id, result) };
  }

  /**
   * Applies a config reload to the open sessions: upstream sessions of removed or changed
   * upstreams, or of upstreams the session's teams may no longer see, are closed; added or
   * changed ones it may see are opened with the session's own client capabilities; and every
   * session that changed (all, when naming or policy changed) hears list_changed. Sessions the
   * reload does not touch keep running as they were.
   */
  async reconfigure(changes: UpstreamChanges, namingChanged: boolean, policyChanged: boolean): Promise<void> {
    const { sessions, pool, logger } = this.#deps;
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
          touched = true;
          void client.close();
        }
        const opening = pool.names.filter((name) => !session.upstreams.has(name) && session.access.canSeeUpstream(name) && (changes.added.includes(name) || changes.changed.includes(name) || policyChanged));
        const params = { protocolVersion: session.info.protocolVersion, capabilities: session.info.clientCapabilities, clientInfo: session.info.clientInfo };
        const opened = await Promise.allSettled(opening.map((name) => pool.open(name, params, (client) => this.#wire(session, client))));
        opened.forEach((outcome, i) => {
          if (outcome.status === 'rejected') {
            logger.warn('upstream left out of session after reload', { upstream: opening[i], session: session.id.slice(0, 8), err: outcome.reason });
          } else if (session.closed) {
            void outcome.value.close();
          } else {
            session.upstreams.set(opening[i]!, outcome.value);
            touched = true;
          }
        });
        if (!touched || session.closed) return;
        for (const [capability, method] of LIST_CHANGED_BY_CAPABILITY) {
          if (isObject(session.capabilities[capability])) session.deliver(notification(method));
        }
      }),
    );
  }

  /** Answers one client request; undefined when it was cancelled (no response is due). */
  async handleRequest(session: DownstreamSession, request: JsonRpcRequest, channel: RequestChannel, context: RequestContext): Promise<JsonRpcResponse | undefined> {
    const signal = session.begin(request.id);
    const call: Call = { session, channel, signal, context, record: { started: performance.now() } };
    let response: JsonRpcResponse | undefined;
    try {
      const result = await this.#dispatch(call, request);
      call.record.toolError = request.method === 'tools/call' && result.isError === true;
      response = success(request.id, result);
    } catch (err) {
      call.record.error = err;
      // A client's cancellation gets no response (cancellation.mdx); one the gateway decided
      // (shutting down) does.
      if (signal.aborted) response = signal.reason instanceof GatewayError ? failure(request.id, toJsonRpcError(signal.reason)) : undefined;
      else {
        if (isInternal(err)) this.#deps.logger.error('request failed', { method: request.method, err });
        response = failure(request.id, toJsonRpcError(err));
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
    metrics.requests.inc({ method: metrics.method(request.method), upstream, outcome });
    if (request.method === 'tools/call' && record.upstream !== undefined) {
      metrics.toolCallDuration.observe({ upstream, tool: metrics.tool(record.upstream, record.tool) }, seconds);
    }
    logger.info('call', describeCall(request, call.session, call.context, record, outcome, seconds, this.#deps.logArguments()));
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
        for (const client of session.upstreams.values()) client.notify(message.method, message.params).catch(() => {});
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
      const observe = listObserver(session, kind);
      return catalog.list(kind, session.upstreams, params.cursor, {
        signal,
        observe: (page) => {
          observe(page);
          if (kind === 'tools') {
            this.#learnTools(page);
            rememberTools(session, page);
          }
        },
        shape: (upstream, item) => shapeItem(session.access, kind, upstream, item),
      });
    }
    switch (method) {
      case 'ping':
        return {};
      case 'initialize':
        throw new RpcError({ code: ErrorCode.InvalidRequest, message: 'Session already initialized' });
      case 'tools/call':
        return callTool(call, params, { ...this.#deps, limiter: this.#deps.limiter(), learn: (page) => this.#learnTools(page) });
      case 'prompts/get': {
        const name = requireString(params, 'name');
        const target = await catalog.resolveName('prompts', name, session.upstreams);
        if (!target || !session.access.canSee('prompt', name, target.client.name)) throw new GatewayError('unknown_name', `Unknown prompt: ${name}`);
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
        const target = catalog.resolveUri(uri, session.upstreams);
        if (!target || !session.access.canSee('resource', uri, target.client.name)) throw new GatewayError('unknown_name', `Unknown resource: ${uri}`);
        const result = await forward(call, target.client, method, { ...params, uri: target.uri });
        if (method !== 'resources/read') recordSubscription(session, target.client.name, target.uri, method === 'resources/subscribe');
        return result;
      }
      case 'completion/complete':
        return this.#complete(call, params);
      case 'logging/setLevel': {
        if (typeof params.level === 'string') session.logLevel = params.level;
        const targets = [...session.upstreams.values()].filter((c) => !c.closed && supportsMethod(c.capabilities, method));
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
      const target = await catalog.resolveName('prompts', name, session.upstreams);
      if (!target || !session.access.canSee('prompt', name, target.client.name)) throw new GatewayError('unknown_name', `Unknown prompt: ${name}`);
      return forward(call, target.client, 'completion/complete', { ...params, ref: { ...ref, name: target.name } });
    }
    if (ref.type === 'ref/resource') {
      const uri = requireString(ref, 'uri');
      const target = catalog.resolveUri(uri, session.upstreams);
      if (!target || !session.access.canSee('resource', uri, target.client.name)) throw new GatewayError('unknown_name', `Unknown resource: ${uri}`);
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
    if (!split || !client) throw new GatewayError('invalid_params', `Failed to retrieve task: Task not found`);
    const result = await forward(call, client, method, { ...params, taskId: split.taskId });
    if (method === 'tasks/result') return mapRelatedTask(result, (id) => codec.exposeTaskId(client.name, id));
    return typeof result.taskId === 'string' ? { ...result, taskId: codec.exposeTaskId(client.name, result.taskId) } : result;
  }

  #learnTools(page: ListedPage): void {
    this.#deps.metrics.learnTools(page.upstream, page.originals);
    this.#deps.facts.learn(page.upstream, page.items, page.originals);
  }

  /** Wires a new upstream session to the client session that owns it. */
  #wire(session: DownstreamSession, client: UpstreamClient): void {
    const { catalog, logger, pool } = this.#deps;
    wireUpstream(session, client, {
      naming: catalog,
      logger,
      clientRequestTimeoutMs: (upstream) => pool.config(upstream)?.maxTotalTimeoutMs ?? 600_000,
      metrics: this.#deps.metrics,
      // The next unknown name reads the new list at once.
      onToolsChanged: (upstream) => session.knownTools.delete(upstream),
    });
    client.onreconnect = () => void afterRestart(session, client, catalog, logger);
  }


}

/** Adds a tools/list page to what the session knows its upstream session lists. */
function rememberTools(session: DownstreamSession, page: ListedPage): void {
  let names = session.knownTools.get(page.upstream)?.names;
  if (!names || page.first) {
    names = new Set();
    session.knownTools.set(page.upstream, { names, readAt: Date.now() });
  }
  for (const name of page.originals) names.add(name);
}
