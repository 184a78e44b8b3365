// tools/call, step by step: the name the team knows (a view may rename it), the one policy
// decision, the tool existing at all (an unknown tool and a hidden one get the same answer),
// pinned arguments, the inputSchema check, the upstream's concurrency slot, the per-tool rate
// limit, the user's confirmation for destructive tools, and finally the upstream. The slot is
// taken before the token (a call refused for concurrency spends none, even among calls started
// in one tick), and kept past a cancel or timeout while the upstream may still be at work
// (upstream/lingering.ts).
import { clientSupports } from '../mcp/capabilities.js';
import { GatewayError } from '../mcp/errors.js';
import { isObject, metaOf, notification, type JsonObject } from '../mcp/jsonrpc.js';
import type { RequestContext } from '../session/context.js';
import { createdTaskId, withBoundedTimings, withCreatedTaskId } from '../mcp/tasks.js';
import type { Metrics } from '../metrics/metrics.js';
import { describeLimit, TABLE_FULL_REASON, type RateLimiter, type ToolOutcome } from '../ratelimit/limiter.js';
import type { Busy, ConcurrencySlots, Slot } from '../upstream/concurrency.js';
import type { UpstreamPool } from '../upstream/pool.js';
import { forward, openFor, requireString, toolError, type Call } from './call.js';
import { refuse, type Refusal } from './call-observer.js';
import type { Catalog, ListedPage, Target } from '../names/lists.js';
import type { Settled } from '../mcp/pending.js';
import { asError, surface } from '../util/callbacks.js';
import { factOfTool, listed } from '../links/existence.js';
import { checkParamHeaders, paramHeaderValues } from '../mcp/param-headers.js';
import { exposeToolResult } from '../names/content.js';
import type { ToolFacts } from './tool-facts.js';
import type { SessionLinks } from '../links/links.js';
import type { TaskAudit } from '../tasks/audit.js';
import type { TaskHandles } from '../tasks/handles.js';
import type { RawTasks } from './raw-tasks.js';
import { isTaskResult } from '../tasks/wire.js';
import { outgoingCall, taskOutcome, type TaskCall } from '../tasks/call-tasks.js';
import { extensionToLegacy } from '../tasks/forms.js';
import { quote } from '../util/cut.js';

export interface ToolCallDeps {
  catalog: Catalog;
  facts: ToolFacts;
  /** Read at each call: a config reload may replace it. */
  limiter: () => RateLimiter;
  pool: UpstreamPool;
  metrics: Metrics;
  /** The session's links to its upstreams: the owner opened on use, where its list is read, its tasks, a personal upstream's consent. */
  links: SessionLinks;
  /** Pinning: why a call of a tool is withheld (its definition waits for approval), or undefined. */
  withheld?: (upstream: string, name: string) => Error | undefined;
  /** Seals an upstream's tasks (the Tasks extension) as handles any replica opens. */
  taskHandles?: TaskHandles;
  /** Audit records of the tasks upstreams make (src/tasks/audit.ts). */
  taskAudit?: TaskAudit;
  /** Follows an upstream's task from its own status notifications (task-follow.ts). */
  followTask?: (session: Call['session'], handle: string, context: RequestContext, onTask: (task: JsonObject) => void) => Promise<unknown>;
  /** The tasks each session may name by their raw `<prefix>:<id>` form, and the tool that made each (raw-tasks.ts). */
  rawTasks?: RawTasks;
}

/** The slot of a call whose upstream keeps no count: nothing to give back. */
const NO_SLOT: Slot = { release: () => {} };

/** _meta key carrying the retry delay of a limit's isError result. */
export const RETRY_AFTER_META = 'switchyard/retryAfterMs';
const CONFIRM_TIMEOUT_MS = 10 * 60_000;
/** Upstreams' tasks one session follows at once for its GET stream. */
const MAX_FOLLOWED = 100;

export function principalKey(call: Call): string {
  return call.context.principal?.id ?? 'anonymous';
}

/**
 * Runs one tools/call; `done` hears the result (a refusal the model can act on is a result) or
 * the error, once: before this returns when the refusal is found at once, else when the upstream
 * answers (or a step that waited goes on).
 */
export function callTool(call: Call, params: JsonObject, deps: ToolCallDeps, done: Settled): void {
  new ToolCall(call, params, deps, done).start();
}

/**
 * A tools/call's steps, in order. Each step goes on to the next at once, and waits (a promise
 * turn) only when it has something to wait for: this is every call's path, and a promise per
 * step is what it used to cost. A step that throws ends the call with what it threw.
 */
class ToolCall {
  readonly #call: Call;
  readonly #params: JsonObject;
  readonly #deps: ToolCallDeps;
  readonly #done: Settled;
  #finished = false;
  /** The name the client used, and the catalog's name it stands for (a view may rename it). */
  #requested = '';
  #exposed = '';
  #target: Target | undefined;
  #args: JsonObject = {};
  /** The upstream's slots and concurrency cap; the call's slot, held from before its token is taken until the upstream is done with it. */
  #slots: ConcurrencySlots | undefined;
  #maxConcurrent: number | undefined;
  #slot: Slot | undefined;
  /** Which round of its call this is, under a perTool limit (ratelimit/limiter.ts); undefined without one. */
  #round: number | undefined;

  constructor(call: Call, params: JsonObject, deps: ToolCallDeps, done: Settled) {
    this.#call = call;
    this.#params = params;
    this.#deps = deps;
    this.#done = done;
  }

  start(): void {
    this.#step(this.#named, undefined);
  }

  /** Unknown to the client; `refusal`: because the gateway refused it (traced and audited as such). */
  #unknown(refusal?: Refusal): GatewayError {
    if (refusal) refuse(this.#call, refusal);
    return new GatewayError('unknown_name', `Unknown tool: ${quote(this.#requested)}`);
  }

  /** The name and the view; then its owner (#owned). */
  #named(): void {
    const { session } = this.#call;
    const { access } = session;
    const requested = requireString(this.#params, 'name');
    this.#requested = requested;
    // A view name stands for its tool; a tool renamed by a view is known only by the new name.
    const exposed = access.toolOfView(requested) ?? requested;
    this.#exposed = exposed;
    if (exposed === requested && access.view(requested)?.name !== undefined) throw this.#unknown();
    const { codec } = this.#deps.catalog;
    const split = codec.splitName(exposed);
    // A name no prefix claims may be an upstream's own (an MCP Apps View calls its server's
    // tools so): it goes to the one upstream that lists it, as that upstream's namespaced name.
    if (split === undefined && exposed === requested) {
      return this.#then(this.#deps.links.bareToolOwner(session, requested), (owner) => {
        if (owner === undefined) throw this.#unknown();
        this.#exposed = codec.exposeName(owner, requested);
        // A tool a view renamed is known by its new name only, however its old one is spelled.
        if (access.view(this.#exposed)?.name !== undefined) throw this.#unknown();
        this.#owned(owner, requested);
      });
    }
    this.#owned(split?.upstream, split?.local);
  }

  /** The one policy decision on the owner, then the owning upstream opened if it was left out. */
  #owned(owner: string | undefined, local: string | undefined): void {
    const { session } = this.#call;
    const { access } = session;
    const exposed = this.#exposed;
    // The decision comes first: of an upstream the team cannot see, not even its state shows.
    // Rules over annotations are decided again once the tool's facts are known (#listed).
    if (owner !== undefined) this.#call.record.owner = owner;
    if (owner === undefined || !access.mayCall(exposed, owner)) throw this.#unknown(owner === undefined ? undefined : 'policy');
    const own = this.#deps.links.personal?.intercept(session, owner, local!);
    if (own) return this.#then(own, this.#finish);
    this.#then(openFor(this.#deps.links, this.#call, owner), this.#opened);
  }

  #opened(): void {
    this.#then(this.#deps.catalog.resolveName('tools', this.#exposed, this.#call.session.upstreams), this.#resolved);
  }

  /** The tool exists (an unknown tool and a hidden one get the same answer) and its upstream lists it. */
  #resolved(target: Target | undefined): void {
    if (!target) throw this.#unknown();
    this.#target = target;
    this.#call.record.tool = target.name;
    const { session } = this.#call;
    const deps = this.#deps;
    const learn = (page: ListedPage): void => deps.metrics.learnTools(page.upstream, page.originals);
    this.#then(listed(session, 'tools', target.client, target.name, deps.catalog, learn, (item) => deps.facts.fact(item), () => deps.links.listingOf(session, target.client)), this.#listed);
  }

  /** Pinned arguments, the arguments' check, the upstream's slot; then the tool's rate limit. */
  #listed(isListed: boolean): void {
    const withheld = this.#deps.withheld?.(this.#target!.client.name, this.#target!.name);
    if (withheld) {
      refuse(this.#call, 'pinning');
      throw withheld;
    }
    if (!isListed) throw this.#unknown();
    const { client, name } = this.#target!;
    const deps = this.#deps;
    const { access } = this.#call.session;
    if (access.readsHints && !access.canSee('tool', this.#exposed, client.name, factOfTool(this.#call.session, client.name, name)?.hints)) throw this.#unknown('policy');
    // Pinned arguments win over the model's; without any, the client's object goes as it came.
    const pin = access.view(this.#exposed)?.pin;
    const given = isObject(this.#params.arguments) ? this.#params.arguments : {};
    this.#args = pin ? { ...given, ...pin } : given;
    // A 2026-07-28 client mirrored the parameters of the schema it was shown (pinned ones are not in it).
    const sent = this.#call.context.paramHeaders;
    if (sent !== undefined) {
      const params = deps.facts.paramHeaders(factOfTool(this.#call.session, client.name, name));
      const shown = typeof params === 'string' || !pin ? params : params.filter((p) => !(p.path[0]! in pin));
      const mismatch = typeof shown === 'string' ? undefined : checkParamHeaders(shown, given, sent);
      if (mismatch) throw new GatewayError('header_mismatch', `Header mismatch: ${mismatch}`);
    }
    // Arguments first: a model correcting its call spends no quota.
    const config = deps.pool.config(client.name);
    if (config?.validateArguments !== false) {
      const invalid = deps.facts.check(factOfTool(this.#call.session, client.name, name), this.#requested, this.#args);
      if (invalid) return this.#finish(toolError(invalid));
    }
    // The upstream's slot before the tool's token, taken at once: no token is spent on a call
    // that cannot run, not even by calls that start in the same tick (a batch).
    this.#slots = deps.pool.slots(client.name);
    this.#maxConcurrent = config?.maxConcurrent;
    if (!this.#takeSlot()) return;
    // A retry carrying the mark of its call's previous round is that call, charged already.
    this.#then(deps.limiter().tool(principalKey(this.#call), this.#exposed, { requestState: this.#params.requestState, arguments: this.#params.arguments }), this.#limited);
  }

  /** Takes the upstream's slot for the call, or finishes it with the concurrency refusal; whether it got one. */
  #takeSlot(): boolean {
    const slot = this.#slots?.acquire(this.#maxConcurrent) ?? NO_SLOT;
    if ('retryAfterMs' in slot) {
      refuse(this.#call, 'concurrency');
      this.#finish(concurrencyRefusal(this.#deps, this.#requested, slot));
      return false;
    }
    this.#slot = slot;
    return true;
  }

  /** The slot handed to the upstream client when the call is given up on: released once the upstream is done with it (lingering.ts). */
  #giveUpSlot(): (() => void) | undefined {
    const slot = this.#slot;
    this.#slot = undefined;
    return slot && (() => slot.release());
  }

  /** Gives the slot back; `ran`: the call reached the upstream (its time counts towards the retry hint). */
  #releaseSlot(ran = false): void {
    this.#slot?.release(ran);
    this.#slot = undefined;
  }

  /** The tool's rate limit; then the user's confirmation of a destructive tool. */
  #limited(limited: ToolOutcome | undefined): void {
    this.#round = limited?.round;
    // Refused, the call gives its slot back as it finishes.
    if (limited && !limited.decision.allowed) {
      this.#deps.metrics.rateLimited.inc({ kind: 'tool' });
      refuse(this.#call, 'rate_limit', { 'switchyard.retry_after_ms': limited.decision.retryAfterMs });
      const seconds = Math.max(1, Math.ceil(limited.decision.retryAfterMs / 1_000));
      const text = limited.decision.tableFull
        ? `Call to ${this.#requested} refused: ${TABLE_FULL_REASON}; retry in ${seconds} s.`
        : `Rate limit for ${this.#requested} reached (${describeLimit(limited.limit)}); retry in ${seconds} s.`;
      return this.#finish(toolError(text, { [RETRY_AFTER_META]: limited.decision.retryAfterMs }));
    }
    const { client, name } = this.#target!;
    if (this.#call.session.access.confirmsDestructive && factOfTool(this.#call.session, client.name, name)?.destructive === true) {
      // No slot while the user decides (up to ten minutes): it is taken again once they agree.
      this.#releaseSlot();
      return this.#then(confirm(this.#call, this.#requested, client.name), this.#confirmed);
    }
    this.#confirmed(undefined);
  }

  /** The call goes to its upstream, in its slot (taken again after a confirmation). */
  #confirmed(refusal: string | undefined): void {
    if (refusal) {
      // Not run: the gateway refused it (traced and audited so), not a tool that failed; unless
      // the call was cancelled while the user was asked, which it then is.
      if (!this.#call.signal.aborted) refuse(this.#call, 'confirmation');
      return this.#finish(toolError(refusal));
    }
    if (!this.#slot && !this.#takeSlot()) return;
    const { client, name } = this.#target!;
    const params = { ...this.#params, name, arguments: this.#args };
    const sent = this.#deps.taskHandles && isObject(this.#params.task) ? outgoingCall(this.#taskCall(), params) : params;
    // Given up on (cancelled, timed out), a call under a cap keeps its slot while the upstream may still work on it.
    const more = this.#maxConcurrent === undefined ? { headers: this.#mirrored() } : { headers: this.#mirrored(), onGiveUp: () => this.#giveUpSlot() };
    forward(this.#call, client, 'tools/call', sent, (outcome) => this.#step(this.#answered, outcome), more);
  }

  /** The Mcp-Param-* headers of the call as it goes to a 2026-07-28 upstream: its own schema, the arguments sent (pins included). */
  #mirrored(): Record<string, string> | undefined {
    const { client, name } = this.#target!;
    if (client.era !== 'stateless') return undefined;
    const params = this.#deps.facts.paramHeaders(factOfTool(this.#call.session, client.name, name));
    return typeof params === 'string' || params.length === 0 ? undefined : paramHeaderValues(params, this.#args);
  }

  #answered(outcome: JsonObject | Error): void {
    this.#releaseSlot(true);
    // Under a perTool limit, the next round's retry carries the mark that it is this call (ratelimit/continuation.ts).
    if (this.#round !== undefined && !(outcome instanceof Error) && outcome.resultType === 'input_required') outcome = this.#marked(outcome);
    // A task-augmented call answers with the task; the client sees its gateway-wide id.
    const taskId = outcome instanceof Error || !isObject(this.#params.task) ? undefined : createdTaskId(outcome);
    const upstream = this.#target!.client.name;
    const personal = this.#deps.links.personal;
    // A credential found unusable on the way: the answer is the sign-in.
    if (outcome instanceof Error && personal?.isPersonal(upstream)) return this.#then(personal.consent(this.#call.session, upstream, 'tools/call'), (consent) => this.#finish(consent ?? outcome));
    // Tasks (tasks/call-tasks.ts): an upstream's task under a sealed handle, in the client's form; a tool that runs only as a task made one.
    const tasked = this.#deps.taskHandles && (outcome instanceof Error || outcome.isError === true || isTaskResult(outcome)) ? taskOutcome(this.#taskCall(), outcome, { ...this.#params, name: this.#target!.name, arguments: this.#args }) : undefined;
    if (tasked) return this.#then(tasked, (result) => this.#finish(exposeToolResult(result, this.#deps.catalog.codec, upstream)));
    if (taskId === undefined) return this.#finish(outcome instanceof Error ? outcome : exposeToolResult(outcome, this.#deps.catalog.codec, upstream));
    this.#deps.links.ownTask(this.#call.session, upstream, taskId);
    this.#deps.rawTasks?.handed(this.#call.session, upstream, taskId, this.#exposed);
    const exposedId = this.#deps.catalog.codec.exposeTaskId(upstream, taskId);
    this.#deps.taskAudit?.created({ handle: exposedId, upstream, tool: this.#exposed, caller: this.#call.context });
    // Its timings bounded as every task's the gateway relays (a poll interval of 0 would have the client poll through the gateway without pause).
    this.#finish(withBoundedTimings(withCreatedTaskId(outcome as JsonObject, exposedId)));
  }

  /** The call as tasks see it (tasks/call-tasks.ts). */
  #taskCall(): TaskCall {
    const { client } = this.#target!;
    const call = this.#call;
    const { context } = call;
    const token = metaOf(this.#params)?.progressToken;
    return {
      handles: this.#deps.taskHandles!,
      ...(this.#deps.taskAudit ? { audit: this.#deps.taskAudit } : {}),
      caller: context,
      upstream: client.name,
      shared: this.#deps.links.hubOf(call.session, client.name) !== undefined,
      era: client.era,
      capabilities: client.capabilities,
      tool: this.#exposed,
      principal: context.principal?.id ?? '',
      protocolVersion: context.protocolVersion,
      clientCapabilities: context.clientCapabilities,
      sessionCapabilities: call.session.info.clientCapabilities,
      params: this.#params,
      send: (method, params) => forward(call, client, method, params),
      sendDetached: (method, params) => client.request(method, params),
      progress: (progress, message) => {
        if (typeof token === 'string' || typeof token === 'number') context.channel.send(notification('notifications/progress', { progressToken: token, progress, ...(message ? { message } : {}) }));
      },
      signal: call.signal,
      maxTotalMs: this.#deps.pool.config(client.name)?.maxTotalTimeoutMs ?? 600_000,
      off: this.#deps.pool.config(client.name)?.tasks === 'off',
      own: (taskId) => this.#deps.links.ownTask(call.session, client.name, taskId),
      // A 2025-11-25 client hears a 2026-07-28 upstream's task change as notifications/tasks/status
      // on its GET stream (tasks.mdx "Task Notifications"), from the upstream's own notifications.
      follow: (handle) => {
        const { session } = call;
        if (!this.#deps.followTask || session.taskFollowers.size >= MAX_FOLLOWED) return;
        void this.#deps.followTask(session, handle, context, (task) => session.deliver(notification('notifications/tasks/status', extensionToLegacy(task)))).catch(() => {});
      },
    };
  }

  /** Goes on to `next` with `value` at once, or when its promise settles. */
  #then<T>(value: T | Promise<T>, next: (value: T) => void): void {
    if (value instanceof Promise) value.then((settled: T) => this.#step(next, settled), (err: unknown) => this.#step(this.#failed, err));
    else next.call(this, value);
  }

  /** Runs a step where nothing else catches what it throws (the first, and each after a wait). */
  #step<T>(step: (value: T) => void, value: T): void {
    try {
      step.call(this, value);
    } catch (err) {
      // Thrown past the answer (by whoever `done` called): nothing here can answer it again.
      if (this.#finished) return surface(err);
      this.#finish(asError(err));
    }
  }

  /** An input_required result with the upstream's requestState marked for the next round. */
  #marked(result: JsonObject): JsonObject {
    const state = result.requestState;
    if (state !== undefined && typeof state !== 'string') return result;
    return { ...result, requestState: this.#deps.limiter().mark(principalKey(this.#call), this.#exposed, this.#params.arguments, state, this.#round! + 1) };
  }

  #failed(err: unknown): void {
    this.#finish(asError(err));
  }

  #finish(outcome: JsonObject | Error): void {
    if (this.#finished) return;
    this.#finished = true;
    // Whatever ended the call (a step that threw or failed), its slot goes with it.
    this.#releaseSlot();
    this.#done(outcome);
  }
}

/**
 * Asks the user (elicitation/create, on the call's own stream) before a destructive tool of
 * upstream `owner` runs; the session's own upstream session stays open while they decide.
 * Undefined when they agreed, else the message the model gets.
 */
async function confirm(call: Call, tool: string, owner: string): Promise<string | undefined> {
  const { session, context: { channel } } = call;
  if (!clientSupports(session.info.clientCapabilities, 'elicitation/create')) {
    return `${tool} is destructive and needs the user's confirmation, but this client cannot ask the user (no elicitation support). It was not run.`;
  }
  const params = {
    message: `${tool} is marked destructive. Run it?`,
    requestedSchema: { type: 'object', properties: { confirm: { type: 'boolean', title: `Run ${tool}`, default: false } }, required: ['confirm'] },
  };
  const { id, result } = session.sendRequestToClient(
    { upstream: '', holds: owner, upstreamId: '', method: 'elicitation/create', progressToken: undefined, relatedTask: undefined },
    { timeoutMs: CONFIRM_TIMEOUT_MS, maxTotalMs: CONFIRM_TIMEOUT_MS, onTimeout: () => session.clientRequests.settle(id, new Error('no answer')) },
  );
  channel.send({ jsonrpc: '2.0', id, method: 'elicitation/create', params });
  try {
    const answer = await result;
    const content = isObject(answer.content) ? answer.content : {};
    if (answer.action === 'accept' && content.confirm !== false) return undefined;
    return `The user declined to run ${tool}. It was not run.`;
  } catch {
    return `The user did not confirm ${tool} in time. It was not run.`;
  }
}

function concurrencyRefusal(deps: ToolCallDeps, tool: string, busy: Busy): JsonObject {
  deps.metrics.rateLimited.inc({ kind: 'concurrency' });
  const seconds = Math.ceil(busy.retryAfterMs / 1_000);
  return toolError(`${busy.inFlight} ${busy.inFlight === 1 ? 'call' : 'calls'} in flight for ${tool}; retry in ${seconds} s.`, { [RETRY_AFTER_META]: busy.retryAfterMs });
}
