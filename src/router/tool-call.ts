// tools/call, step by step: the name the team knows (a view may rename it), the one policy
// decision, the tool existing at all (an unknown tool and a hidden one get the same answer),
// pinned arguments, the per-tool rate limit, the inputSchema check, the user's confirmation
// for destructive tools, the upstream's concurrency limit, and finally the upstream.
import { clientSupports } from '../mcp/capabilities.js';
import { GatewayError } from '../mcp/errors.js';
import { isObject, type JsonObject } from '../mcp/jsonrpc.js';
import { createdTaskId, withCreatedTaskId } from '../mcp/tasks.js';
import type { Metrics } from '../metrics/metrics.js';
import { describeLimit, type RateLimiter } from '../ratelimit/limiter.js';
import type { UpstreamPool } from '../upstream/pool.js';
import { forward, requireString, toolError, type Call } from './call.js';
import type { Catalog, ListedPage } from './catalog.js';
import { listed } from './existence.js';
import type { DownstreamSession } from '../session/session.js';
import type { ToolFacts } from './tool-facts.js';

export interface ToolCallDeps {
  catalog: Catalog;
  facts: ToolFacts;
  /** Read at each call: a config reload may replace it. */
  limiter: () => RateLimiter;
  pool: UpstreamPool;
  metrics: Metrics;
  /** Learns a page of tools (names for metrics, schemas, destructiveness). */
  learn: (page: ListedPage) => void;
  /** Records a created task as this session's (a shared child serves many). */
  ownTask: (session: DownstreamSession, upstream: string, taskId: string) => void;
  /** Opens the owning upstream if it was left out of the session (or says why it cannot); undefined when nothing is to do. */
  ensure: (session: DownstreamSession, upstream: string) => Promise<void> | undefined;
}

/** _meta key carrying the retry delay of a limit's isError result. */
export const RETRY_AFTER_META = 'switchyard/retryAfterMs';
const CONFIRM_TIMEOUT_MS = 10 * 60_000;

export function principalKey(call: Call): string {
  return call.context.principal?.id ?? 'anonymous';
}

export async function callTool(call: Call, params: JsonObject, deps: ToolCallDeps): Promise<JsonObject> {
  const { session } = call;
  const { access } = session;
  const requested = requireString(params, 'name');
  const unknown = (): GatewayError => new GatewayError('unknown_name', `Unknown tool: ${requested}`);
  // A view name stands for its tool; a tool renamed by a view is known only by the new name.
  const exposed = access.toolOfView(requested) ?? requested;
  if (exposed === requested && access.view(requested)?.name !== undefined) throw unknown();
  // The decision comes first: of an upstream the team cannot see, not even its state shows.
  const owner = deps.catalog.codec.splitName(exposed)?.upstream;
  if (owner === undefined || !access.canSee('tool', exposed, owner)) throw unknown();
  // Each step below waits only when it has something to wait for: this is every call's path.
  const ensuring = deps.ensure(session, owner);
  if (ensuring) await ensuring;
  let target = deps.catalog.resolveName('tools', exposed, session.upstreams);
  if (target instanceof Promise) target = await target;
  if (!target) throw unknown();
  const upstream = target.client.name;
  call.record.tool = target.name;
  let isListed = listed(session, 'tools', target.client, target.name, deps.catalog, deps.learn);
  if (isListed instanceof Promise) isListed = await isListed;
  if (!isListed) throw unknown();

  // Pinned arguments win over the model's; without any, the client's object goes as it came.
  const pin = access.view(exposed)?.pin;
  const given = isObject(params.arguments) ? params.arguments : {};
  const args: JsonObject = pin ? { ...given, ...pin } : given;

  // Arguments first: a model correcting its call spends no quota.
  if (deps.pool.config(upstream)?.validateArguments !== false) {
    const invalid = deps.facts.check(upstream, target.name, requested, args);
    if (invalid) return toolError(invalid);
  }

  // A look at the upstream's capacity before the tool's token is spent on a call that cannot run.
  const maxConcurrent = deps.pool.config(upstream)?.maxConcurrent;
  const limiter = deps.limiter();
  const busy = limiter.busy(upstream, maxConcurrent);
  if (busy) return concurrencyRefusal(deps, requested, busy);

  const limiting = limiter.tool(principalKey(call), exposed);
  const limited = limiting && (await limiting);
  if (limited && !limited.decision.allowed) {
    deps.metrics.rateLimited.inc({ kind: 'tool' });
    const seconds = Math.max(1, Math.ceil(limited.decision.retryAfterMs / 1_000));
    return toolError(`Rate limit for ${requested} reached (${describeLimit(limited.limit)}); retry in ${seconds} s.`, { [RETRY_AFTER_META]: limited.decision.retryAfterMs });
  }

  if (access.confirmsDestructive && deps.facts.destructive(upstream, target.name)) {
    const refusal = await confirm(call, requested);
    if (refusal) return toolError(refusal);
  }

  const slot = limiter.acquire(upstream, maxConcurrent);
  if ('retryAfterMs' in slot) return concurrencyRefusal(deps, requested, slot);
  let result: JsonObject;
  try {
    result = await forward(call, target.client, 'tools/call', { ...params, name: target.name, arguments: args });
  } finally {
    slot.release();
  }
  // A task-augmented call answers with the task; the client sees its gateway-wide id.
  const taskId = isObject(params.task) ? createdTaskId(result) : undefined;
  if (taskId === undefined) return result;
  deps.ownTask(session, upstream, taskId);
  return withCreatedTaskId(result, deps.catalog.codec.exposeTaskId(upstream, taskId));
}

/**
 * Asks the user (elicitation/create, on the call's own stream) before a destructive tool runs.
 * Undefined when they agreed, else the message the model gets.
 */
async function confirm(call: Call, tool: string): Promise<string | undefined> {
  const { session, channel } = call;
  if (!clientSupports(session.info.clientCapabilities, 'elicitation/create')) {
    return `${tool} is destructive and needs the user's confirmation, but this client cannot ask the user (no elicitation support). It was not run.`;
  }
  const params = {
    message: `${tool} is marked destructive. Run it?`,
    requestedSchema: { type: 'object', properties: { confirm: { type: 'boolean', title: `Run ${tool}`, default: false } }, required: ['confirm'] },
  };
  const { id, result } = session.sendRequestToClient(
    { upstream: '', upstreamId: '', method: 'elicitation/create', progressToken: undefined, relatedTask: undefined },
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

function concurrencyRefusal(deps: ToolCallDeps, tool: string, busy: { retryAfterMs: number; inFlight: number }): JsonObject {
  deps.metrics.rateLimited.inc({ kind: 'concurrency' });
  const seconds = Math.ceil(busy.retryAfterMs / 1_000);
  return toolError(`${busy.inFlight} ${busy.inFlight === 1 ? 'call' : 'calls'} in flight for ${tool}; retry in ${seconds} s.`, { [RETRY_AFTER_META]: busy.retryAfterMs });
}
