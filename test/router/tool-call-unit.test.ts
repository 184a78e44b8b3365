// The steps of one tools/call (src/router/tool-call.ts), each on its own, with fake timers and
// the real pieces the router hands it: a Catalog over the real namespace codec, ToolFacts, a
// RateLimiter over the memory bucket store, the Policy and UpstreamPool built from a config the
// real schema parsed, Metrics, a DownstreamSession, and UpstreamClients over in-memory
// transports to scripted servers. Nothing is mocked but the client's channel (an array).
import type { Dispatcher } from 'undici';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Principal } from '../../src/auth/principal.js';
import { configSchema } from '../../src/config/schema.js';
import { GatewayError, RpcError, toJsonRpcError } from '../../src/mcp/errors.js';
import type { JsonObject, JsonRpcMessage, JsonRpcRequest } from '../../src/mcp/jsonrpc.js';
import { Metrics } from '../../src/metrics/metrics.js';
import { Policy } from '../../src/policy/policy.js';
import { RateLimiter } from '../../src/ratelimit/limiter.js';
import { MemoryBucketStore } from '../../src/ratelimit/memory-store.js';
import type { Call } from '../../src/router/call.js';
import { Catalog } from '../../src/names/lists.js';
import { NamespaceCodec } from '../../src/names/namespace.js';
import { callTool, RETRY_AFTER_META, type ToolCallDeps } from '../../src/router/tool-call.js';
import { ToolFacts } from '../../src/router/tool-facts.js';
import { ownerOfBareName } from '../../src/links/existence.js';
import type { SessionLinks } from '../../src/links/links.js';
import { sessionContext } from '../../src/session/context.js';
import type { DownstreamSession } from '../../src/links/session.js';
import { DownstreamSession as Session } from '../../src/session/session.js';
import type { UpstreamClient } from '../../src/upstream/client.js';
import { UpstreamPool } from '../../src/upstream/pool.js';
import { Cancellation } from '../../src/util/cancel.js';
import { silentLogger } from '../../src/util/log.js';
import { connectedClient, flush, type ConnectedClient, type HeldRequest } from '../helpers/memory-transport.js';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

const SEARCH = { name: 'search', inputSchema: { type: 'object', properties: { query: { type: 'string' }, org: { type: 'string' } }, required: ['query'] } };
const DROP = { name: 'drop_table', inputSchema: { type: 'object' }, annotations: { destructiveHint: true } };
const TOOLS = [SEARCH, DROP];

interface Setup {
  teams?: unknown[];
  rateLimits?: unknown;
  /** Upstream config entries besides the transport (validateArguments, maxConcurrent...). */
  upstreams?: Record<string, JsonObject>;
  clientCapabilities?: JsonObject;
  principal?: Principal;
}

interface Harness {
  deps: ToolCallDeps;
  session: DownstreamSession;
  metrics: Metrics;
  up: Record<string, ConnectedClient>;
  tasks: [string, string][];
}

/** The router's tools/call dependencies, built as src/gateway.ts and src/router/router.ts build them. */
async function harness(setup: Setup = {}): Promise<Harness> {
  const upstreams = setup.upstreams ?? { gh: {}, jira: {} };
  const config = configSchema.parse({
    upstreams: Object.fromEntries(Object.entries(upstreams).map(([name, extra]) => [name, { stdio: { command: 'server' }, ...extra }])),
    ...(setup.teams ? { teams: setup.teams } : {}),
    ...(setup.rateLimits ? { rateLimits: setup.rateLimits } : {}),
  });
  const prefixes = new Map(Object.entries(config.upstreams).map(([name, entry]) => [name, entry.prefix ?? name]));
  const codec = new NamespaceCodec(config.namespacing, [...prefixes].map(([upstream, prefix]) => ({ upstream, prefix })));
  const policy = new Policy(config.teams, { separator: config.namespacing.separator, prefixes });
  const metrics = new Metrics(prefixes.keys(), { serve: false });
  // The pool is asked for upstream configs only; its dispatcher (HTTP upstreams) is never used.
  const pool = new UpstreamPool(config.upstreams, { dispatcher: {} as Dispatcher, logger: silentLogger, baseEnv: {}, metrics });
  const facts = new ToolFacts(silentLogger);
  const limiter = new RateLimiter(config.rateLimits, new MemoryBucketStore(1_000));
  const tasks: [string, string][] = [];
  const catalog = new Catalog(codec, silentLogger);
  const notHere = (): never => {
    throw new Error('not reached by tools/call');
  };
  // The links of sessions whose upstreams are all open already: nothing to open, lists read from the session's own upstream sessions.
  const links: SessionLinks = {
    personal: undefined,
    ownTask: (_session, upstream, taskId) => void tasks.push([upstream, taskId]),
    ensure: () => undefined,
    listingOf: (_session, client) => client,
    bareToolOwner: (session, name) => ownerOfBareName(session, name, session.upstreams, catalog),
    bareResourceOwner: notHere,
    sources: (session) => session.upstreams,
    retryLeftOut: async () => {},
    hubOf: () => undefined,
    consent: async () => undefined,
    initialize: notHere,
    open: notHere,
    resume: notHere,
    takingOver: notHere,
    reconfigure: notHere,
    renewPrincipal: notHere,
    startSweeping: notHere,
    stopSweeping: notHere,
  };
  const deps: ToolCallDeps = { catalog, facts, limiter: () => limiter, pool, metrics, links };
  const session: DownstreamSession = new Session<UpstreamClient>(
    'session-1',
    { protocolVersion: '2025-11-25', clientCapabilities: setup.clientCapabilities ?? {}, clientInfo: { name: 'unit', version: '1' } },
    Date.now(),
    { events: 100, bytes: 1024 * 1024 },
  );
  session.access = policy.access(setup.principal);
  const up: Record<string, ConnectedClient> = {};
  for (const name of Object.keys(upstreams)) {
    up[name] = await connectedClient(name);
    up[name].server.handle('tools/list', () => ({ tools: TOOLS }));
    session.links.attach(name, up[name].client);
  }
  return { deps, session, metrics, up, tasks };
}

interface Running {
  readonly outcome: JsonObject | Error | undefined;
  /** What went to the client on the call's own channel (progress, elicitation). */
  channel: JsonRpcMessage[];
  call: Call;
  signal: Cancellation;
}

function run(h: Harness, params: JsonObject, principal?: Principal): Running {
  const channel: JsonRpcMessage[] = [];
  const signal = new Cancellation();
  const caller = { requestId: 'req-1', ...(principal ? { principal } : {}) };
  const call: Call = { session: h.session, context: sessionContext(caller, h.session, { send: (m) => channel.push(m) }), signal, record: { started: 0 } };
  const state: { outcome: JsonObject | Error | undefined } = { outcome: undefined };
  callTool(call, params, h.deps, (outcome) => {
    if (state.outcome !== undefined) throw new Error('answered twice');
    state.outcome = outcome;
  });
  return {
    get outcome() {
      return state.outcome;
    },
    channel,
    call,
    signal,
  };
}

/** Runs a call to its end: a tools/call it makes reach an upstream is answered "ran <name>" (calls held before stay held). */
async function settled(h: Harness, params: JsonObject, principal?: Principal): Promise<JsonObject | Error> {
  const before = new Set(Object.values(h.up).flatMap(({ server }) => server.held('tools/call')));
  const running = run(h, params, principal);
  await flush();
  for (const { server } of Object.values(h.up)) {
    for (const held of server.held('tools/call')) if (!before.has(held)) held.respond({ content: [{ type: 'text', text: `ran ${String(held.request.params?.name)}` }] });
  }
  await flush();
  if (running.outcome === undefined) throw new Error('the call did not end');
  return running.outcome;
}

const textOf = (outcome: unknown): string => ((outcome as { content: { text: string }[] }).content[0]!.text);
const toolCalls = (h: Harness, upstream: string): JsonRpcRequest[] => h.up[upstream]!.server.requests('tools/call');
const token = (groups: string[], sub = 'alice'): Principal => ({ id: `https://idp.example|${sub}`, kind: 'oauth', scopes: [], claims: { sub, groups } });

async function rateLimitedCount(metrics: Metrics, kind: string): Promise<number> {
  const { values } = await metrics.rateLimited.get();
  return values.find((v) => v.labels.kind === kind)?.value ?? 0;
}

describe('names: unknown and hidden tools get one answer', () => {
  it('answers a tool its upstream does not list as Unknown tool, after reading the list, and never calls it', async () => {
    const h = await harness();
    const outcome = await settled(h, { name: 'gh__nope', arguments: {} });
    expect(outcome).toBeInstanceOf(GatewayError);
    expect(outcome).toMatchObject({ code: 'unknown_name', message: 'Unknown tool: gh__nope' });
    expect(h.up.gh!.server.requests('tools/list')).toHaveLength(1);
    expect(toolCalls(h, 'gh')).toEqual([]);
  });

  it('answers a tool the policy hides exactly as an unknown one, without a word to its upstream', async () => {
    const h = await harness({ teams: [{ name: 't', default: true, deny: ['gh__search'] }] });
    const hidden = await settled(h, { name: 'gh__search', arguments: { query: 'x' } });
    const unknown = await settled(h, { name: 'gh__nope', arguments: {} });
    expect(toJsonRpcError(hidden)).toEqual({ code: -32602, message: 'Unknown tool: gh__search' });
    expect(toJsonRpcError(unknown)).toEqual({ code: -32602, message: 'Unknown tool: gh__nope' });
    // The policy decided first: for the hidden tool no list was read (the one read is the unknown one's).
    expect(h.up.gh!.server.requests('tools/list')).toHaveLength(1);
    expect(toolCalls(h, 'gh')).toEqual([]);
  });

  it('answers a tool of an upstream the team cannot see (at once), and a name no upstream owns, as unknown', async () => {
    const h = await harness({ teams: [{ name: 't', default: true, deny: ['upstream:jira'] }] });
    const running = run(h, { name: 'jira__search', arguments: { query: 'x' } });
    // Found before any upstream was asked: answered before callTool returned.
    expect(running.outcome).toMatchObject({ code: 'unknown_name', message: 'Unknown tool: jira__search' });
    // A name no prefix claims is looked for as an upstream's own: only among the visible upstreams.
    expect(await settled(h, { name: 'nobody__search', arguments: { query: 'x' } })).toMatchObject({ code: 'unknown_name', message: 'Unknown tool: nobody__search' });
    expect(h.up.jira!.server.requests().map((r) => r.method)).toEqual(['initialize']);
  });

  it("calls a bare name (an upstream's own, as an MCP Apps View sends it) on the one visible upstream that lists it", async () => {
    const h = await harness({ teams: [{ name: 't', default: true, deny: ['upstream:jira'] }] });
    const outcome = await settled(h, { name: 'search', arguments: { query: 'x' } });
    expect(textOf(outcome)).toBe('ran search');
    expect(toolCalls(h, 'gh').map((r) => r.params?.name)).toEqual(['search']);
    expect(h.up.jira!.server.requests().map((r) => r.method)).toEqual(['initialize']);
  });

  it('answers a bare name that several upstreams list, or none, as unknown, and calls nothing', async () => {
    const h = await harness();
    expect(toJsonRpcError(await settled(h, { name: 'search', arguments: { query: 'x' } }))).toEqual({ code: -32602, message: 'Unknown tool: search' });
    expect(toJsonRpcError(await settled(h, { name: 'nope', arguments: {} }))).toEqual({ code: -32602, message: 'Unknown tool: nope' });
    expect([...toolCalls(h, 'gh'), ...toolCalls(h, 'jira')]).toEqual([]);
  });

  it('refuses a name that is not a string with invalid_params', async () => {
    const h = await harness();
    expect(run(h, { name: 42 }).outcome).toMatchObject({ code: 'invalid_params', message: 'name must be a string' });
  });

  it('reads the list once: a second call of a listed tool goes straight to the upstream', async () => {
    const h = await harness();
    await settled(h, { name: 'gh__search', arguments: { query: 'a' } });
    await settled(h, { name: 'gh__search', arguments: { query: 'b' } });
    expect(h.up.gh!.server.requests('tools/list')).toHaveLength(1);
    expect(toolCalls(h, 'gh')).toHaveLength(2);
  });
});

describe('arguments against the inputSchema', () => {
  it('answers a missing required field with an isError result naming it, and does not call the tool', async () => {
    const h = await harness();
    const outcome = await settled(h, { name: 'gh__search', arguments: { org: 'acme' } });
    expect(outcome).toEqual({ content: [{ type: 'text', text: 'Invalid arguments for tool gh__search: /query is required' }], isError: true });
    expect(toolCalls(h, 'gh')).toEqual([]);
  });

  it('answers a field of the wrong type likewise, and treats absent arguments as {}', async () => {
    const h = await harness();
    expect(textOf(await settled(h, { name: 'gh__search', arguments: { query: 7 } }))).toBe('Invalid arguments for tool gh__search: /query must be string');
    expect(textOf(await settled(h, { name: 'gh__search' }))).toBe('Invalid arguments for tool gh__search: /query is required');
    expect(toolCalls(h, 'gh')).toEqual([]);
  });

  it('forwards unchecked arguments to an upstream with validateArguments: false', async () => {
    const h = await harness({ upstreams: { gh: { validateArguments: false } } });
    const outcome = await settled(h, { name: 'gh__search', arguments: { query: 7 } });
    expect(textOf(outcome)).toBe('ran search');
    expect(toolCalls(h, 'gh').map((r) => r.params?.arguments)).toEqual([{ query: 7 }]);
  });
});

describe('forwarding', () => {
  it('sends the call to the upstream that owns the name, under its original name, with the arguments and the answer as they are', async () => {
    const h = await harness();
    const running = run(h, { name: 'jira__search', arguments: { query: 'bug', org: 'acme' } });
    await flush();
    expect(toolCalls(h, 'gh')).toEqual([]);
    const held = h.up.jira!.server.take('tools/call');
    expect(held.request.params).toEqual({ name: 'search', arguments: { query: 'bug', org: 'acme' } });
    held.respond({ content: [{ type: 'text', text: 'found 3' }], structuredContent: { n: 3 } });
    await flush();
    expect(running.outcome).toEqual({ content: [{ type: 'text', text: 'found 3' }], structuredContent: { n: 3 } });
    expect(running.call.record).toMatchObject({ upstream: 'jira', tool: 'search' });
  });

  it("passes the upstream's error answer on as the call's error", async () => {
    const h = await harness();
    const running = run(h, { name: 'gh__search', arguments: { query: 'x' } });
    await flush();
    h.up.gh!.server.take('tools/call').fail({ code: -32603, message: 'boom' });
    await flush();
    expect(running.outcome).toBeInstanceOf(RpcError);
    expect((running.outcome as RpcError).error).toEqual({ code: -32603, message: 'boom' });
  });

  it('relays the upstream\'s progress on the call\'s channel under the client\'s own token', async () => {
    const h = await harness();
    const running = run(h, { name: 'gh__search', arguments: { query: 'x' }, _meta: { progressToken: 'client-1' } });
    await flush();
    const held = h.up.gh!.server.take('tools/call');
    held.progress(1, 2);
    await flush();
    expect(running.channel).toEqual([{ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'client-1', progress: 1, total: 2 } }]);
  });

  it("cancels the upstream request when the client's request is cancelled", async () => {
    const h = await harness();
    const running = run(h, { name: 'gh__search', arguments: { query: 'x' } });
    await flush();
    const held = h.up.gh!.server.take('tools/call');
    running.signal.abort('cancelled by client');
    await flush();
    expect(running.outcome).toMatchObject({ code: 'cancelled' });
    expect(h.up.gh!.server.notifications('notifications/cancelled').map((n) => n.params)).toEqual([{ requestId: held.id, reason: 'cancelled by client' }]);
  });

  it('calls a view by its name, under the original name, with pinned arguments winning over the client\'s; the old name is unknown', async () => {
    const h = await harness({ teams: [{ name: 't', default: true, views: { gh__search: { name: 'find', pin: { org: 'acme' } } } }] });
    expect(textOf(await settled(h, { name: 'find', arguments: { query: 'x', org: 'evil' } }))).toBe('ran search');
    expect(toolCalls(h, 'gh').map((r) => r.params)).toEqual([{ name: 'search', arguments: { query: 'x', org: 'acme' } }]);
    expect(await settled(h, { name: 'gh__search', arguments: { query: 'x' } })).toMatchObject({ code: 'unknown_name', message: 'Unknown tool: gh__search' });
  });

  it("records a created task as the session's and shows the client its gateway-wide id", async () => {
    const h = await harness();
    const running = run(h, { name: 'gh__search', arguments: { query: 'x' }, task: { ttl: 60_000 } });
    await flush();
    h.up.gh!.server.take('tools/call').respond({ task: { taskId: 't-9', status: 'working', createdAt: '2025-01-01T00:00:00Z', lastUpdatedAt: '2025-01-01T00:00:00Z', ttl: 60_000 } });
    await flush();
    expect(h.tasks).toEqual([['gh', 't-9']]);
    expect((running.outcome as { task: { taskId: string } }).task.taskId).toBe(h.deps.catalog.codec.exposeTaskId('gh', 't-9'));
  });
});

describe('rate limits', () => {
  const perTool = { perTool: { 'gh__*': { rate: 1, per: '1m' } } };

  it("refuses a call past the tool's bucket with an isError result and a retry hint, and calls nothing", async () => {
    const h = await harness({ rateLimits: perTool });
    expect(textOf(await settled(h, { name: 'gh__search', arguments: { query: 'a' } }))).toBe('ran search');
    const refused = (await settled(h, { name: 'gh__search', arguments: { query: 'b' } })) as JsonObject;
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toBe('Rate limit for gh__search reached (1 per 1m); retry in 60 s.');
    expect((refused._meta as JsonObject)[RETRY_AFTER_META]).toBeGreaterThan(59_000);
    expect(toolCalls(h, 'gh')).toHaveLength(1);
    expect(await rateLimitedCount(h.metrics, 'tool')).toBe(1);
    // Another upstream's tools match no perTool entry.
    expect(textOf(await settled(h, { name: 'jira__search', arguments: { query: 'c' } }))).toBe('ran search');
  });

  it('lets the call through again once the bucket refilled', async () => {
    const h = await harness({ rateLimits: perTool });
    await settled(h, { name: 'gh__search', arguments: { query: 'a' } });
    await vi.advanceTimersByTimeAsync(59_000);
    expect((await settled(h, { name: 'gh__search', arguments: { query: 'b' } }) as JsonObject).isError).toBe(true);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(textOf(await settled(h, { name: 'gh__search', arguments: { query: 'c' } }))).toBe('ran search');
  });

  it('keeps one bucket per principal', async () => {
    const h = await harness({ rateLimits: perTool });
    const alice = token([], 'alice');
    const bob = token([], 'bob');
    await settled(h, { name: 'gh__search', arguments: { query: 'a' } }, alice);
    expect((await settled(h, { name: 'gh__search', arguments: { query: 'a' } }, alice) as JsonObject).isError).toBe(true);
    expect(textOf(await settled(h, { name: 'gh__search', arguments: { query: 'a' } }, bob))).toBe('ran search');
  });

  it('spends no token on a call whose arguments are invalid', async () => {
    const h = await harness({ rateLimits: perTool });
    expect(textOf(await settled(h, { name: 'gh__search', arguments: {} }))).toMatch(/^Invalid arguments/);
    expect(textOf(await settled(h, { name: 'gh__search', arguments: { query: 'fixed' } }))).toBe('ran search');
  });
});

describe("an upstream's maxConcurrent", () => {
  it('refuses a call while the slots are taken, and frees the slot when the call ends, whatever its outcome', async () => {
    const h = await harness({ upstreams: { gh: { maxConcurrent: 1 }, jira: {} } });
    const first = run(h, { name: 'gh__search', arguments: { query: 'a' } });
    await flush();
    const held: HeldRequest = h.up.gh!.server.take('tools/call');
    const refused = (await settled(h, { name: 'gh__search', arguments: { query: 'b' } })) as JsonObject;
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toBe('1 call in flight for gh__search; retry in 1 s.');
    expect((refused._meta as JsonObject)[RETRY_AFTER_META]).toBe(1_000);
    expect(await rateLimitedCount(h.metrics, 'concurrency')).toBe(1);
    expect(toolCalls(h, 'gh')).toHaveLength(1);
    // The other upstream has no limit.
    expect(textOf(await settled(h, { name: 'jira__search', arguments: { query: 'c' } }))).toBe('ran search');

    held.fail({ code: -32603, message: 'failed' });
    await flush();
    expect(first.outcome).toBeInstanceOf(RpcError);
    expect(textOf(await settled(h, { name: 'gh__search', arguments: { query: 'd' } }))).toBe('ran search');
  });

  it('spends no rate-limit token on a call refused for concurrency', async () => {
    const h = await harness({ upstreams: { gh: { maxConcurrent: 1 }, jira: {} }, rateLimits: { perTool: { 'gh__*': { rate: 2, per: '1m' } } } });
    run(h, { name: 'gh__search', arguments: { query: 'a' } }); // token 1
    await flush();
    const held = h.up.gh!.server.take('tools/call');
    expect(textOf(await settled(h, { name: 'gh__search', arguments: { query: 'b' } }))).toMatch(/in flight/);
    held.respond({ content: [] });
    await flush();
    expect(textOf(await settled(h, { name: 'gh__search', arguments: { query: 'c' } }))).toBe('ran search'); // token 2
    expect(textOf(await settled(h, { name: 'gh__search', arguments: { query: 'd' } }))).toMatch(/^Rate limit for gh__search reached/);
  });
});

describe('destructive tools under a team with confirm: true', () => {
  const confirming = [{ name: 't', default: true, confirm: true }];

  it('refuses to run one for a client that cannot ask its user, and never calls it', async () => {
    const h = await harness({ teams: confirming });
    const outcome = await settled(h, { name: 'gh__drop_table', arguments: {} });
    expect(outcome).toEqual({
      content: [{ type: 'text', text: "gh__drop_table is destructive and needs the user's confirmation, but this client cannot ask the user (no elicitation support). It was not run." }],
      isError: true,
    });
    expect(toolCalls(h, 'gh')).toEqual([]);
  });

  it('asks the user on the call\'s own channel and runs the tool once they accept', async () => {
    const h = await harness({ teams: confirming, clientCapabilities: { elicitation: {} } });
    const running = run(h, { name: 'gh__drop_table', arguments: {} });
    await flush();
    expect(toolCalls(h, 'gh')).toEqual([]);
    const [ask] = running.channel as JsonRpcRequest[];
    expect(ask).toMatchObject({ method: 'elicitation/create', params: { message: 'gh__drop_table is marked destructive. Run it?' } });
    h.session.clientRequests.settle(ask!.id, { action: 'accept', content: { confirm: true } });
    await flush();
    expect(toolCalls(h, 'gh').map((r) => r.params?.name)).toEqual(['drop_table']);
  });

  it('does not run it when the user declines, or does not answer within ten minutes', async () => {
    const h = await harness({ teams: confirming, clientCapabilities: { elicitation: {} } });
    const declined = run(h, { name: 'gh__drop_table', arguments: {} });
    await flush();
    h.session.clientRequests.settle((declined.channel[0] as JsonRpcRequest).id, { action: 'decline' });
    await flush();
    expect(textOf(declined.outcome)).toBe('The user declined to run gh__drop_table. It was not run.');

    const silent = run(h, { name: 'gh__drop_table', arguments: {} });
    await flush();
    expect(silent.channel).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(10 * 60_000 - 1);
    expect(silent.outcome).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(textOf(silent.outcome)).toBe('The user did not confirm gh__drop_table in time. It was not run.');
    expect(toolCalls(h, 'gh')).toEqual([]);
  });

  it('asks nothing before a tool that is not destructive, nor for a team without confirm', async () => {
    const confirm = await harness({ teams: confirming, clientCapabilities: { elicitation: {} } });
    const plain = run(confirm, { name: 'gh__search', arguments: { query: 'x' } });
    await flush();
    expect(plain.channel).toEqual([]);
    expect(toolCalls(confirm, 'gh')).toHaveLength(1);

    const relaxed = await harness({ teams: [{ name: 't', default: true }], clientCapabilities: { elicitation: {} } });
    const drop = run(relaxed, { name: 'gh__drop_table', arguments: {} });
    await flush();
    expect(drop.channel).toEqual([]);
    expect(toolCalls(relaxed, 'gh').map((r) => r.params?.name)).toEqual(['drop_table']);
  });
});
