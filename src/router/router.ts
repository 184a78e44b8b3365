// The router: answers each client message of an open session, resolving namespaced names to
// their upstream and forwarding what the upstreams send back (a session's links to its
// upstreams are the SessionLinks it is given). It sees UpstreamClients only, never a transport
// kind. The edge decided the client's era and gave it a RequestContext; what the router asks of
// eras is one pairing, in call.ts and the task forms: whether an upstream of the 2026-07-28 era
// meets a client of the same era (its input_required and requestState then pass through as
// they came, and a task keeps the form both speak).
import { supportsMethod } from '../mcp/capabilities.js';
import type { RateLimiter } from '../ratelimit/limiter.js';
import { ErrorCode, GatewayError, RpcError, isInternal, toJsonRpcError } from '../mcp/errors.js';
import {
  failure,
  isFailure,
  isObject,
  success,
  type JsonObject,
  type JsonRpcNotification,
  type JsonRpcRequest,
  type JsonRpcResponse,
} from '../mcp/jsonrpc.js';
import { mapRelatedTask, withBoundedTimings } from '../mcp/tasks.js';
import type { UpstreamClient } from '../upstream/client.js';
import type { UpstreamPool } from '../upstream/pool.js';
import { withoutEnvelopeFields } from '../upstream/stateless-protocol.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Logger } from '../util/log.js';
import { forward, openFor, requireString, toolError, type Call } from './call.js';
import { describeCall, outcomeOf } from './call-log.js';
import { observeCall, traceRequest, type CallObservers } from './call-observer.js';
import type { RequestContext } from '../session/context.js';
import type { Catalog, ListedPage, ListKind, Sources } from '../names/lists.js';
import { listKindOf } from '../mcp/methods.js';
import { claimSubscription, listObserver, recordSubscription } from '../links/recovery.js';
import { answerFromClient, routeClientNotification } from '../links/relay.js';
import { listed, rememberNames } from '../links/existence.js';
import type { SessionLinks } from '../links/links.js';
import { UriProvenance } from '../links/provenance.js';
import { shapeItem } from './shape.js';
import { exposePromptResult, exposeReadResult, exposeTaskAnswer, exposeToolResult } from '../names/content.js';
import { callTool, type ToolCallDeps } from './tool-call.js';
import type { Settled } from '../mcp/pending.js';
import { asError, guarded, surface } from '../util/callbacks.js';
import type { ToolFacts } from './tool-facts.js';
import { CALL_TOOL, callArguments, forwardedCall, SEARCH_TOOL, searchArguments, searchModeTools, searchResult, ToolSearch, type ToolIndex } from './search.js';
import type { DownstreamSession } from '../links/session.js';
import { setLogLevel } from '../links/log-lines.js';
import { declaringFor, formsOf, taskRequest } from '../tasks/forms.js';
import { followTask, type TaskFollow } from './task-follow.js';
import { TaskInputs } from './task-input.js';
import { RawTasks } from './raw-tasks.js';
import { quote } from '../util/cut.js';

export type { Caller, RequestChannel, RequestContext } from '../session/context.js';

export interface RouterDeps {
  pool: UpstreamPool;
  /** The sessions' links to their upstreams (opening, lists, shared hubs, consent). */
  links: SessionLinks;
  catalog: Catalog;
  logger: Logger;
  metrics: Metrics;
  /** Tool arguments in call logs: shape only, or values. */
  logArguments: () => 'shape' | 'values';
  facts: ToolFacts;
  /** Read at each use: a config reload may replace them. */
  limiter: () => RateLimiter;
  /** Spans and audit records of each request, when configured. */
  observers?: CallObservers;
  /** Pinning: the refusal of a call of a withheld tool. */
  withheld?: ToolCallDeps['withheld'];
  /** Task handles (src/tasks/): an upstream's tasks as clients see them. */
  taskHandles?: ToolCallDeps['taskHandles'];
  /** Audit records of tasks (src/tasks/audit.ts). */
  taskAudit?: ToolCallDeps['taskAudit'];
}

/** Merged pages a search-mode traversal reads at most (a hostile upstream's cursor loop ends). */
const MAX_SEARCH_PAGES = 1_000;

/** Where a request's answer goes: the response, or undefined when the client cancelled it. */
export type ResponseSink = (response: JsonRpcResponse | undefined) => void;

/**
 * An upstream's "no such resource" (resources.mdx: -32002 Resource not found; some servers
 * answer -32602 "... not found"), which the gateway answers as it answers a hidden one.
 */
function resourceNotFound(err: unknown): boolean {
  if (!(err instanceof RpcError)) return false;
  const { code, message } = err.error;
  return code === -32002 || (code === ErrorCode.InvalidParams && /not found/i.test(message));
}

export class Router {
  readonly #deps: RouterDeps;
  readonly #links: SessionLinks;
  /** What tools/call needs, built once (not per call). */
  readonly #toolCall: ToolCallDeps;
  /** The input 2025-11-25 upstreams' tasks wait for, asked of 2026-07-28 clients. */
  readonly #taskInputs = new TaskInputs();
  /** The tasks each session may name by their raw `<prefix>:<id>` form, and their tools. */
  readonly #rawTasks = new RawTasks();
  /** Search mode's indexes (endpoints[].discovery: search). */
  readonly #search = new ToolSearch();
  /** Which upstream's result carried which bare URI, per session (a bare read goes there). */
  readonly #provenance = new UriProvenance();

  constructor(deps: RouterDeps) {
    this.#deps = deps;
    this.#links = deps.links;
    this.#toolCall = { ...deps, rawTasks: this.#rawTasks, followTask: (session, handle, context, onTask) => this.followTask(session, handle, context, onTask) };
  }

  /**
   * Answers one client request. `done` gets the response (undefined when the client cancelled
   * the request), once; without it, the answer is a promise. A refusal found at once (an
   * unknown tool, invalid arguments, a full upstream) is answered before this returns.
   */
  answer(session: DownstreamSession, request: JsonRpcRequest, context: RequestContext): Promise<JsonRpcResponse | undefined>;
  answer(session: DownstreamSession, request: JsonRpcRequest, context: RequestContext, done: ResponseSink): void;
  answer(session: DownstreamSession, request: JsonRpcRequest, context: RequestContext, done?: ResponseSink): Promise<JsonRpcResponse | undefined> | void {
    if (!done) return new Promise((resolve) => this.answer(session, request, context, resolve));
    // The 2026-07-28 per-request protocol fields a 2026-07-28 upstream gets are the session's
    // (withEnvelope): a client's own in `_meta` go no further, whichever era it speaks.
    const params = withoutEnvelopeFields(request.params);
    if (params !== request.params) request = { ...request, params: params! };
    // In search mode a call_tool is the tools/call it names, traced, logged and audited as that.
    const forwarded = request.method === 'tools/call' ? forwardedCall(request, session.access.endpoint?.discovery) : undefined;
    if (forwarded) request = forwarded;
    if (session.isInFlight(request.id)) {
      // Request ids MUST NOT be reused within a session (basic/index.mdx): the second one is
      // refused and the first runs on; replacing it would cancel it and end its POST empty.
      const message = `Request id ${JSON.stringify(request.id)} is already in use by a request in flight`;
      return guarded(surface, () => done(failure(request.id, { code: ErrorCode.InvalidRequest, message })));
    }
    const signal = session.begin(request.id);
    const tracing = this.#deps.observers?.tracing;
    const call: Call = { session, context, signal, record: { started: performance.now() }, trace: tracing && traceRequest(tracing, session, request, context) };
    const settled: Settled = (outcome) => {
      let response: JsonRpcResponse | undefined;
      try {
        response = this.#respond(request, call, outcome);
      } catch (err) {
        // What the gateway's own bookkeeping threw (never expected): still an answer.
        this.#deps.logger.error('request failed', { method: request.method, requestId: context.requestId, err });
        response = failure(request.id, toJsonRpcError(err));
      }
      // What writing the answer throws has no caller left to hear it.
      guarded(surface, () => done(response));
    };
    // tools/call straight to its handler: no promise on every call's path.
    if (request.method === 'tools/call') this.#callTool(call, request.params ?? {}, settled, forwarded !== undefined);
    else this.#dispatch(call, request).then(settled, (err: unknown) => settled(asError(err)));
  }

  /**
   * tools/call, or in search mode one of its two tools (call_tool runs exactly the tools/call it
   * names); `forwarded`: a call_tool already taken for the call it names (forwardedCall), which
   * runs as a plain tools/call of that name.
   */
  #callTool(call: Call, params: JsonObject, settled: Settled, forwarded: boolean): void {
    if (!forwarded && call.session.access.endpoint?.discovery === 'search') {
      if (params.name === SEARCH_TOOL) return void this.#searchTools(call, params).then(settled, (err: unknown) => settled(asError(err)));
      if (params.name === CALL_TOOL) {
        const named = callArguments(params);
        return typeof named === 'string' ? settled(toolError(named)) : callTool(call, named, this.#toolCall, settled);
      }
    }
    callTool(call, params, this.#toolCall, settled);
  }

  async #searchTools(call: Call, params: JsonObject): Promise<JsonObject> {
    const args = searchArguments(params.arguments);
    if (typeof args === 'string') return toolError(args);
    const { session } = call;
    const epoch = session.toolsEpoch;
    const sources = await this.#links.sources(session, 'tools');
    const index = this.#search.cached(session, epoch, [...sources.values()]) ?? (await this.#visibleTools(call, epoch, sources)).index;
    return searchResult(index.search(args.query, args.limit));
  }

  /** Every tool the session may call, as it is shown them, and their search index (made afresh). */
  async #visibleTools(call: Call, epoch: number, sources: Sources): Promise<{ tools: JsonObject[]; index: ToolIndex }> {
    const { session } = call;
    const tools: JsonObject[] = [];
    let cursor: unknown;
    for (let page = 0; page < MAX_SEARCH_PAGES; page++) {
      const result = await this.#deps.catalog.list('tools', sources, cursor, { signal: call.signal, ...this.#listOptions(session, 'tools') });
      tools.push(...(result.tools as JsonObject[]));
      cursor = result.nextCursor;
      if (cursor === undefined) break;
    }
    return { tools, index: this.#search.remember(session, epoch, [...sources.values()], tools) };
  }

  /** tools/list in search mode: the pinned tools the session may see, and the two search tools. */
  async #searchModeList(call: Call, cursor: unknown): Promise<JsonObject> {
    if (cursor !== undefined) throw new GatewayError('invalid_cursor', 'Invalid cursor');
    const { session } = call;
    await this.#links.retryLeftOut(session);
    const epoch = session.toolsEpoch;
    const sources = await this.#links.sources(session, 'tools');
    const { tools } = await this.#visibleTools(call, epoch, sources);
    const pinned = new Set(session.access.endpoint?.pinned);
    return { tools: [...tools.filter((tool) => pinned.has(tool.name as string)), ...searchModeTools([...sources.keys()], tools.length)] };
  }

  /** What a list traversal of the session tells the session (names, facts, views) and how it shapes each item. */
  #listOptions(session: DownstreamSession, kind: ListKind): { observe: (page: ListedPage) => void; shape: (upstream: string, item: JsonObject) => JsonObject | undefined; extra?: (upstream: string) => readonly JsonObject[] | undefined } {
    const observe = listObserver(session, kind);
    const { catalog } = this.#deps;
    const { personal } = this.#links;
    return {
      ...(personal && kind === 'tools' ? { extra: (upstream: string) => personal.extraTools(session, upstream, (name) => catalog.codec.exposeName(upstream, name)) } : {}),
      observe: (page) => {
        observe(page);
        if (kind === 'tools') this.#learnTools(page);
        if (kind === 'tools') rememberNames(session, kind, page, (item) => this.#deps.facts.fact(item));
        else if (kind === 'prompts') rememberNames(session, kind, page);
      },
      shape: (upstream, item) => {
        // Only the tasks the session reaches by their raw ids (#rawTask): a shared child lists every session's.
        if (kind === 'tasks') return this.#rawTask(session, upstream, String(item.taskId).slice(String(item.taskId).indexOf(':') + 1)) === undefined ? undefined : withBoundedTimings(item);
        return shapeItem(session.access, kind, upstream, item);
      },
    };
  }

  /**
   * The upstream and original name of a prompt the session may see and its upstream lists;
   * anything else is answered as unknown (the decision first, so a hidden upstream shows
   * nothing of its state).
   */
  async #visiblePrompt(call: Call, name: string): Promise<{ client: UpstreamClient; name: string }> {
    const { session } = call;
    const unknown = new GatewayError('unknown_name', `Unknown prompt: ${quote(name)}`);
    const { catalog } = this.#deps;
    const owner = catalog.codec.splitName(name)?.upstream;
    if (owner === undefined || !session.access.canSee('prompt', name, owner)) throw unknown;
    await openFor(this.#links, call, owner);
    const target = await catalog.resolveName('prompts', name, session.upstreams);
    if (!target || !(await listed(session, 'prompts', target.client, target.name, catalog))) throw unknown;
    return target;
  }

  /**
   * The URI a resource the session may see is exposed under (namespaced), however the client
   * named it (bare, as its upstream wrote it, or namespaced); undefined when it is unknown.
   * One spelling per resource: what a subscriptions/listen holds and matches updates by.
   */
  async exposedResourceUri(session: DownstreamSession, uri: string, context: RequestContext): Promise<string | undefined> {
    const call: Call = { session, context, signal: new AbortController().signal, record: { started: performance.now() } };
    const target = await this.#visibleResource(call, uri).catch(() => undefined);
    return target && this.#deps.catalog.codec.exposeUri(target.client.name, target.uri);
  }

  /**
   * The upstream and URI of a resource (or, with `template`, a template) the session may see: the
   * URI in canonical form (names/uri.ts), which the rules decide on besides the spelling sent.
   */
  async #visibleResource(call: Call, uri: string, template = false): Promise<{ client: UpstreamClient; uri: string }> {
    const { session } = call;
    const unknown = new GatewayError('unknown_name', `Unknown resource: ${quote(uri)}`, { data: { uri } });
    const { codec } = this.#deps.catalog;
    const split = codec.splitUri(uri);
    const owner = split?.upstream ?? (await this.#bareOwner(session, uri));
    const canonical = owner === undefined ? undefined : codec.visibleUri(split ? uri : codec.exposeUri(owner, uri), (spelling) => session.access.canSee('resource', spelling, owner), template);
    if (!canonical) throw unknown;
    await openFor(this.#links, call, canonical.upstream);
    const target = this.#deps.catalog.resolveUri(canonical.exposed, session.upstreams);
    if (!target) throw unknown;
    return target;
  }

  /**
   * Who serves a URI no prefix claims, as an upstream wrote it (an MCP Apps View reads its server's
   * resources so; a tool's text names its own): the upstream whose result in this session last
   * carried it, else the one upstream the session may see that lists exactly this URI; answers
   * carry the namespaced form. Else nobody: the resource is unknown.
   */
  #bareOwner(session: DownstreamSession, uri: string): string | undefined | Promise<string | undefined> {
    const { codec } = this.#deps.catalog;
    return this.#provenance.ownerOf(session, uri, (upstream) => session.access.canSee('resource', codec.exposeUri(upstream, uri), upstream)) ?? this.#links.bareResourceOwner(session, uri);
  }

  /** The response to a request that ended with `outcome`, and its accounting. */
  #respond(request: JsonRpcRequest, call: Call, outcome: JsonObject | Error): JsonRpcResponse | undefined {
    const { session, signal } = call;
    let response: JsonRpcResponse | undefined;
    try {
      if (!(outcome instanceof Error)) {
        call.record.toolError = request.method === 'tools/call' && outcome.isError === true;
        if (call.record.upstream !== undefined) this.#provenance.learn(session, call.record.upstream, request.method, outcome);
        response = success(request.id, outcome);
      } else {
        call.record.error = outcome;
        // A client's cancellation gets no response (cancellation.mdx); one the gateway decided
        // (shutting down) does.
        if (signal.aborted) response = signal.reason instanceof GatewayError ? failure(request.id, toJsonRpcError(signal.reason)) : undefined;
        else {
          if (isInternal(outcome)) this.#deps.logger.error('request failed', { method: request.method, requestId: call.context.requestId, err: outcome });
          response = failure(request.id, toJsonRpcError(outcome));
        }
      }
    } finally {
      session.end(request.id, signal);
    }
    this.#account(request, call, response === undefined && signal.aborted, response);
    return response;
  }

  /** One metric update and one log line per call (and its span and audit record, when configured). */
  #account(request: JsonRpcRequest, call: Call, cancelled: boolean, response: JsonRpcResponse | undefined): void {
    const { metrics, logger } = this.#deps;
    const { record } = call;
    const seconds = (performance.now() - record.started) / 1_000;
    const outcome = cancelled ? 'cancelled' : outcomeOf(record);
    const upstream = metrics.upstream(record.upstream);
    metrics.countRequest(metrics.method(request.method), upstream, outcome, call.session.info.endpoint);
    if (request.method === 'tools/call' && record.upstream !== undefined) {
      metrics.observeToolCall(upstream, metrics.tool(record.upstream, record.tool), seconds);
    }
    if (logger.isEnabled('info')) logger.info('call', describeCall(request, call.session, call.context, record, outcome, seconds, this.#deps.logArguments()));
    if (this.#deps.observers || call.session.access.teams.length > 0) observeCall(this.#deps.observers ?? {}, metrics, request, call, response, outcome, seconds);
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
        for (const [name, client] of session.upstreams) if (!session.links.isShared(name)) client.notify(message.method, message.params).catch(() => {});
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
    const { catalog } = this.#deps;
    const kind = listKindOf(method);
    if (kind) {
      if (kind === 'tools' && session.access.endpoint?.discovery === 'search') return this.#searchModeList(call, params.cursor);
      if (params.cursor === undefined) await this.#links.retryLeftOut(session);
      const sources = await this.#links.sources(session, kind);
      for (const source of sources.values()) {
        if (!source.streamsAnswers) continue;
        call.context.channel.stream?.();
        break;
      }
      return catalog.list(kind, sources, params.cursor, { signal, ...this.#listOptions(session, kind) });
    }
    switch (method) {
      case 'ping':
        return {};
      case 'initialize':
        throw new GatewayError('invalid_request', 'Session already initialized');
      case 'prompts/get': {
        const name = requireString(params, 'name');
        const target = await this.#visiblePrompt(call, name);
        const result = await forward(call, target.client, method, { ...params, name: target.name }).catch(async (err: unknown) => {
          throw (await this.#links.consent(session, target.client.name, method)) ?? err;
        });
        return exposePromptResult(result, catalog.codec, target.client.name);
      }
      case 'tasks/get':
      case 'tasks/update':
      case 'tasks/cancel':
      case 'tasks/result':
        return this.#task(call, method, params);
      case 'resources/read':
      case 'resources/subscribe':
      case 'resources/unsubscribe': {
        const uri = requireString(params, 'uri');
        const target = await this.#visibleResource(call, uri);
        const hub = method === 'resources/read' ? undefined : this.#links.hubOf(session, target.client.name);
        // Counted against the session's cap before the upstream is asked, given back if it refuses.
        const giveBack = method === 'resources/subscribe' ? claimSubscription(session, target.client.name, target.uri) : undefined;
        if (hub) {
          // A shared child: subscriptions are counted across the sessions it serves.
          call.record.upstream = target.client.name;
          const answer = await (method === 'resources/subscribe' ? hub.subscribe(session, target.uri, params) : hub.unsubscribe(session, target.uri, params)).catch((err: unknown) => {
            giveBack?.();
            throw err;
          });
          recordSubscription(session, target.client.name, target.uri, method === 'resources/subscribe');
          return answer;
        }
        const result = await forward(call, target.client, method, { ...params, uri: target.uri }).catch(async (err: unknown) => {
          giveBack?.();
          const consent = await this.#links.consent(session, target.client.name, method);
          if (consent) throw consent;
          throw resourceNotFound(err) ? new GatewayError('unknown_name', `Unknown resource: ${quote(uri)}`, { data: { uri } }) : err;
        });
        if (method !== 'resources/read') recordSubscription(session, target.client.name, target.uri, method === 'resources/subscribe');
        return method === 'resources/read' ? exposeReadResult(result, catalog.codec, target.client.name) : result;
      }
      case 'completion/complete':
        return this.#complete(call, params);
      case 'logging/setLevel': {
        // Checked and kept as the session's; its own upstream sessions are told (never a shared child).
        const targets = setLogLevel(session, params);
        await Promise.allSettled(targets.map((c) => c.request(method, params, { signal })));
        return {};
      }
      default:
        throw new GatewayError('method_not_found', `Method not found: ${quote(method)}`);
    }
  }

  async #complete(call: Call, params: JsonObject): Promise<JsonObject> {
    const { session } = call;
    // Not offered (no upstream the session sees declares completions): not a method served here.
    if (!supportsMethod(session.capabilities, 'completion/complete')) throw new GatewayError('method_not_found', 'Method not found: completion/complete');
    const ref = params.ref;
    if (!isObject(ref)) throw new GatewayError('invalid_params', 'completion/complete needs a ref');
    if (ref.type === 'ref/prompt') {
      const name = requireString(ref, 'name');
      const target = await this.#visiblePrompt(call, name);
      return forward(call, target.client, 'completion/complete', { ...params, ref: { ...ref, name: target.name } });
    }
    if (ref.type === 'ref/resource') {
      const uri = requireString(ref, 'uri');
      const target = await this.#visibleResource(call, uri, true);
      return forward(call, target.client, 'completion/complete', { ...params, ref: { ...ref, uri: target.uri } });
    }
    throw new GatewayError('invalid_params', 'ref.type must be ref/prompt or ref/resource');
  }

  /**
   * Follows an upstream's task for a subscriptions/listen that named its handle: `onTask` hears
   * its status notifications under the handle (task-follow.ts). Undefined: not followed.
   */
  followTask(session: DownstreamSession, handle: string, context: RequestContext, onTask: (task: JsonObject) => void): Promise<TaskFollow | undefined> {
    const handles = this.#deps.taskHandles;
    if (!handles) return Promise.resolve(undefined);
    return followTask({ links: this.#links, handles, codec: this.#deps.catalog.codec, inputs: this.#taskInputs }, session, handle, context, (task) => onTask(withBoundedTimings(task)));
  }

  /**
   * tasks/get, tasks/cancel and tasks/result reach the upstream that owns the task: by a sealed
   * handle, or a 2025-11-25 upstream's by `<prefix>:<task id>` (#rawTask).
   */
  async #task(call: Call, method: string, params: JsonObject): Promise<JsonObject> {
    const { session } = call;
    const exposed = requireString(params, 'taskId');
    // A sealed handle of an upstream's task (tasks/handles.ts): only for its principal, and a team that may call its tool.
    const handle = this.#deps.taskHandles?.open(exposed, call.context.principal?.id ?? '');
    if (handle?.kind === 'upstream' && session.access.mayCall(handle.tool, handle.upstream)) {
      await openFor(this.#links, call, handle.upstream);
      const owner = session.upstreams.get(handle.upstream);
      if (owner && method === 'tasks/cancel') this.#deps.taskAudit?.cancelRequested({ handle: exposed, upstream: handle.upstream, tool: handle.tool, caller: call.context });
      // Sent in the upstream's form of tasks, answered in the client's (tasks/forms.ts).
      if (owner) {
        // A 2025-11-25 upstream's task takes input as requests on tasks/result (task-input.ts).
        const input = owner.era === 'stateless' ? undefined : this.#taskInputs.of(session, owner, handle.taskId, call.context);
        const send = (m: string, p: JsonObject): Promise<JsonObject> => forward(call, owner, m, declaringFor(owner.era, p, session.info.clientCapabilities));
        const answer = await taskRequest(method, params, exposed, handle.taskId, formsOf(owner.era, call.context.protocolVersion), send, call.signal, input, this.#deps.pool.config(owner.name)?.maxTotalTimeoutMs ?? 600_000);
        return exposeTaskAnswer(answer, this.#deps.catalog.codec, owner.name);
      }
    }
    const { codec } = this.#deps.catalog;
    const split = handle ? undefined : codec.splitTaskId(exposed);
    const client = split && session.upstreams.get(split.upstream);
    // Never a 2026-07-28 upstream's task (no session per principal there: its tasks reach clients only under sealed handles).
    const tool = client && client.era !== 'stateless' ? this.#rawTask(session, client.name, split.taskId) : undefined;
    if (!split || !client || tool === undefined) throw new GatewayError('invalid_params', `Failed to retrieve task: Task not found`);
    if (method === 'tasks/cancel') this.#deps.taskAudit?.cancelRequested({ handle: exposed, upstream: client.name, tool, caller: call.context });
    const result = await forward(call, client, method, { ...params, taskId: split.taskId });
    if (method === 'tasks/result') return exposeTaskAnswer(mapRelatedTask(result, (id) => codec.exposeTaskId(client.name, id)), codec, client.name);
    const bounded = withBoundedTimings(result);
    return typeof bounded.taskId === 'string' ? { ...bounded, taskId: codec.exposeTaskId(client.name, bounded.taskId) } : bounded;
  }

  /** The tool that made a task the session names by `<prefix>:<task id>`, when that form reaches it (raw-tasks.ts; of a shared child: made for this session). */
  #rawTask(session: DownstreamSession, upstream: string, taskId: string): string | undefined {
    return this.#links.hubOf(session, upstream)?.owns(taskId, session) === false ? undefined : this.#rawTasks.toolOf(session, upstream, taskId);
  }

  #learnTools(page: ListedPage): void {
    this.#deps.metrics.learnTools(page.upstream, page.originals);
  }
}
