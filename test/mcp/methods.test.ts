// The rules the table of MCP methods (src/mcp/methods.ts) must obey, each derived from the
// specification (revisions 2025-11-25 and 2026-07-28, and the Tasks extension SEP-2663) or from
// how the gateway uses a fact; every row, present or added later, is held to all of them.
import { describe, expect, it } from 'vitest';
import { clientSupports, supportsMethod } from '../../src/mcp/capabilities.js';
import { isObject, type JsonObject } from '../../src/mcp/jsonrpc.js';
import {
  allMethods,
  asksInput,
  existsIn,
  hasMcpName,
  isCacheable,
  isClientRequest,
  isDroppable,
  isRateFree,
  isRelayedNotification,
  isRelayedRequest,
  isRetrySafe,
  isWork,
  listChangedOf,
  listChangeOf,
  listChanges,
  listKindOf,
  listMethodOf,
  methodFacts,
  methodsWhere,
  mirroredName,
  type Capability,
  type ListKind,
  type MethodFacts,
} from '../../src/mcp/methods.js';
import { Metrics } from '../../src/metrics/metrics.js';

// ---- What the specification says (schema.json unions, and the pages named) ----

/** 2025-11-25 schema.json, ClientRequest and ClientNotification: all a sessions-era client sends. */
const SESSIONS_CLIENT_REQUESTS = [
  'initialize', 'ping', 'resources/list', 'resources/templates/list', 'resources/read', 'resources/subscribe', 'resources/unsubscribe',
  'prompts/list', 'prompts/get', 'tools/list', 'tools/call', 'tasks/get', 'tasks/result', 'tasks/cancel', 'tasks/list', 'logging/setLevel',
  'completion/complete',
];
const SESSIONS_CLIENT_NOTIFICATIONS = ['notifications/cancelled', 'notifications/initialized', 'notifications/progress', 'notifications/tasks/status', 'notifications/roots/list_changed'];
/** 2025-11-25 schema.json, ServerRequest and ServerNotification. */
const SESSIONS_SERVER_REQUESTS = ['ping', 'tasks/get', 'tasks/result', 'tasks/cancel', 'tasks/list', 'sampling/createMessage', 'roots/list', 'elicitation/create'];
const SESSIONS_SERVER_NOTIFICATIONS = [
  'notifications/cancelled', 'notifications/progress', 'notifications/resources/list_changed', 'notifications/resources/updated',
  'notifications/prompts/list_changed', 'notifications/tools/list_changed', 'notifications/tasks/status', 'notifications/message',
  'notifications/elicitation/complete',
];
/** 2026-07-28 schema.json, ClientRequest (its ClientNotification is empty: nothing else a client sends). */
const STATELESS_CLIENT_REQUESTS = [
  'server/discover', 'resources/list', 'resources/templates/list', 'resources/read', 'subscriptions/listen', 'prompts/list', 'prompts/get',
  'tools/list', 'tools/call', 'completion/complete',
];
/** 2026-07-28 schema.json, ServerNotification. */
const STATELESS_SERVER_NOTIFICATIONS = [
  'notifications/cancelled', 'notifications/progress', 'notifications/resources/list_changed', 'notifications/subscriptions/acknowledged',
  'notifications/resources/updated', 'notifications/prompts/list_changed', 'notifications/tools/list_changed', 'notifications/message',
];
/** The Tasks extension (SEP-2663), the 2026-07-28 form of tasks: its identifier and its methods. */
const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
const TASKS_EXTENSION_REQUESTS = ['tasks/get', 'tasks/update', 'tasks/cancel'];
/** The field `Mcp-Name` mirrors: streamable-http.mdx "Standard Request Headers"; SEP-2663 "Routing Headers". */
const MCP_NAME: Record<string, string> = { 'tools/call': 'name', 'prompts/get': 'name', 'resources/read': 'uri', 'tasks/get': 'taskId', 'tasks/update': 'taskId', 'tasks/cancel': 'taskId' };
/** The string params each such request requires (2026-07-28 schema.json; SEP-2663 "Request"). */
const REQUIRED_STRING_PARAMS: Record<string, readonly string[]> = {
  'tools/call': ['name'],
  'prompts/get': ['name'],
  'resources/read': ['uri'],
  'tasks/get': ['taskId'],
  'tasks/update': ['taskId'],
  'tasks/cancel': ['taskId'],
};
/** May answer input_required: mrtr.mdx "Supported Requests" ("MUST NOT ... on any other"). */
const MRTR_REQUESTS = ['tools/call', 'prompts/get', 'resources/read'];
/** Results carry ttlMs and cacheScope: the lists and resources/read (changelog, minor 5), and server/discover (discover.mdx). */
const CACHEABLE_READS = ['resources/read', 'server/discover'];
/** Learning the other side's version and capabilities: initialize (lifecycle.mdx), server/discover (discover.mdx). */
const HANDSHAKE = ['initialize', 'server/discover'];
/** Keeping the line alive: ping (ping.mdx), and subscriptions/listen, the stream that replaced the GET stream (2026-07-28 changelog, 4). */
const LIVENESS = ['ping', 'subscriptions/listen'];
/** Requests whose receiver changes state: a tool may do anything (tools.mdx), the rest set or end something. */
const CHANGES_STATE = ['initialize', 'tools/call', 'resources/subscribe', 'resources/unsubscribe', 'logging/setLevel', 'subscriptions/listen', 'tasks/update', 'tasks/cancel'];
/** Informational, request-scoped notifications (2026-07-28 changelog, 4): a later one says all a lost one said. */
const INFORMATIONAL = ['notifications/progress', 'notifications/message'];
/** The 2026-07-28 subscriptions/listen filter (subscriptions.mdx "Notification Filter"): flag → the notification it asks for. */
const LISTEN_FILTER: Record<string, string> = {
  toolsListChanged: 'notifications/tools/list_changed',
  promptsListChanged: 'notifications/prompts/list_changed',
  resourcesListChanged: 'notifications/resources/list_changed',
};
/** The capability a method's family needs (lifecycle.mdx "Capability Negotiation"): the name before its first '/'. */
const FAMILY_CAPABILITY: Record<string, string> = {
  tools: 'tools', prompts: 'prompts', resources: 'resources', completion: 'completions', logging: 'logging', tasks: 'tasks',
  sampling: 'sampling', elicitation: 'elicitation', roots: 'roots',
};
/** Sub-capabilities the spec names: resources.subscribe (resources.mdx), tasks.list and tasks.cancel (2025-11-25 tasks.mdx). */
const SUB_CAPABILITY: Record<string, Partial<Capability>> = {
  'resources/subscribe': { flag: 'subscribe' },
  'resources/unsubscribe': { flag: 'subscribe' },
  'tasks/list': { entry: 'list' },
  'tasks/cancel': { entry: 'cancel' },
};
/** Every list kind, checked by the compiler to be all of them. */
const LIST_KINDS: Record<ListKind, true> = { tools: true, prompts: true, resources: true, resourceTemplates: true, tasks: true };

// ---- Inputs ----

const table = [...allMethods()];
const union = (...sets: readonly (readonly string[])[]): Set<string> => new Set(sets.flat());
const CLIENT_MESSAGES = union(SESSIONS_CLIENT_REQUESTS, SESSIONS_CLIENT_NOTIFICATIONS, STATELESS_CLIENT_REQUESTS, TASKS_EXTENSION_REQUESTS);
/** Every method the table lists, every method the specification names above, and some no one knows. */
const METHODS = [
  ...union(
    table.map(([method]) => method),
    [...CLIENT_MESSAGES],
    SESSIONS_SERVER_REQUESTS,
    SESSIONS_SERVER_NOTIFICATIONS,
    STATELESS_SERVER_NOTIFICATIONS,
    ['tasks/unknown', 'tasks/', 'notifications/tasks', 'other/method', '', '__proto__', 'constructor', 'toString'],
  ),
];

/** Capability objects with each feature absent, malformed, present, and with its sub-entries in each form. */
function capabilityVariants(): JsonObject[] {
  const features = ['tools', 'prompts', 'resources', 'completions', 'logging', 'tasks', 'sampling', 'elicitation', 'roots'];
  const forms: unknown[] = [undefined, true, [], {}, { subscribe: true }, { subscribe: {} }, { subscribe: false }, { list: {} }, { cancel: {} }, { list: true, cancel: true }, { list: {}, cancel: {} }];
  const out: JsonObject[] = [{}];
  for (const feature of features) for (const form of forms) out.push(form === undefined ? {} : ({ [feature]: form } as JsonObject));
  for (const extension of [{}, true, []]) out.push({ extensions: { [TASKS_EXTENSION]: extension } } as JsonObject);
  out.push({ extensions: {} }, { extensions: { 'io.example/other': {} } }, { extensions: [] }, { tasks: {}, extensions: { [TASKS_EXTENSION]: {} } });
  // Everything at once, in the fullest form.
  out.push({ ...Object.fromEntries(features.map((f) => [f, { subscribe: true, list: {}, cancel: {} }])), extensions: { [TASKS_EXTENSION]: {} } });
  return out;
}

/** What declaring a capability means (lifecycle.mdx): the feature an object, its flag true, its entry an object. */
function declared(capabilities: JsonObject, need: Capability): boolean {
  const feature = capabilities[need.feature];
  if (!isObject(feature)) return false;
  return (need.flag === undefined || feature[need.flag] === true) && (need.entry === undefined || isObject(feature[need.entry]));
}

const sorted = (values: Iterable<string>): string[] => [...values].sort();
const where = (test: (method: string) => boolean): string[] => sorted(METHODS.filter(test));
const rows = (test: (facts: MethodFacts, method: string) => boolean): string[] => sorted(table.filter(([method, facts]) => test(facts, method)).map(([method]) => method));
const family = (method: string): string => method.split('/')[0]!;
const clientRequest = (facts: MethodFacts): boolean => facts.kind === 'request' && facts.from !== 'upstream';

describe('the table of MCP methods', () => {
  it('is read-only, and knows nothing it does not list', () => {
    for (const [method, facts] of table) {
      expect(Object.isFrozen(facts)).toBe(true);
      expect(methodFacts(method)).toBe(facts);
    }
    for (const method of ['no/such/method', '', '__proto__', 'constructor', 'toString']) expect(methodFacts(method)).toBeUndefined();
    expect(sorted(methodsWhere(() => true))).toEqual(sorted(allMethods().keys()));
  });

  it('gives only requests the facts of requests, and only notifications those of notifications', () => {
    for (const [method, facts] of table) {
      if (facts.kind === 'notification') {
        expect({ method, facts }).toMatchObject({ facts: { retrySafe: false, rateFree: false, work: false, asksInput: false, cacheable: false } });
        expect({ method, request: facts.needs ?? facts.clientNeeds ?? facts.list ?? facts.listChanged ?? facts.mcpName }).toEqual({ method, request: undefined });
      } else expect({ method, droppable: facts.droppable, listenFlag: facts.listenFlag }).toEqual({ method, droppable: false, listenFlag: undefined });
    }
  });

  it('lets a sessions-era client send exactly what 2025-11-25 lets a client send', () => {
    expect(where((m) => existsIn(m, 'sessions'))).toEqual(sorted(union(SESSIONS_CLIENT_REQUESTS, SESSIONS_CLIENT_NOTIFICATIONS)));
  });

  it('lets a 2026-07-28 client send exactly its revision\'s requests and the Tasks extension\'s, and no notification', () => {
    expect(where((m) => existsIn(m, 'stateless'))).toEqual(sorted(union(STATELESS_CLIENT_REQUESTS, TASKS_EXTENSION_REQUESTS)));
    expect(rows((facts, m) => facts.kind === 'notification' && existsIn(m, 'stateless'))).toEqual([]);
    // What the 2026-07-28 changelog removed (2: the handshake; 4: subscribe; 5: ping, setLevel, roots list_changed; 6: tasks/result, tasks/list).
    for (const removed of ['initialize', 'notifications/initialized', 'resources/subscribe', 'resources/unsubscribe', 'ping', 'logging/setLevel', 'notifications/roots/list_changed', 'tasks/result', 'tasks/list']) {
      expect({ removed, stateless: existsIn(removed, 'stateless'), sessions: existsIn(removed, 'sessions') }).toEqual({ removed, stateless: false, sessions: true });
    }
  });

  it('has nothing an upstream only sends exist in any client era, and everything a client sends in one', () => {
    for (const [method, facts] of table) {
      expect({ method, eras: facts.eras.length > 0 }).toEqual({ method, eras: facts.from !== 'upstream' });
      expect({ method, clientSends: facts.from !== 'upstream' }).toEqual({ method, clientSends: CLIENT_MESSAGES.has(method) });
    }
  });

  it('gives every list method its own kind, and every kind one list method, named like a list', () => {
    const lists = rows((facts) => facts.list !== undefined);
    expect(lists).toHaveLength(Object.keys(LIST_KINDS).length);
    for (const kind of Object.keys(LIST_KINDS) as ListKind[]) expect(listKindOf(listMethodOf(kind))).toBe(kind);
    // A request a client sends is a list method exactly when its name ends in /list (roots/list is the client's own list).
    expect(lists).toEqual(rows((facts, m) => clientRequest(facts) && m.endsWith('/list')));
    for (const method of METHODS) expect({ method, kind: listKindOf(method) }).toEqual({ method, kind: methodFacts(method)?.list });
  });

  it('makes every list method name the notification that says it changed, except tasks', () => {
    for (const method of rows((facts) => facts.list !== undefined)) {
      const facts = methodFacts(method)!;
      // 2025-11-25 has no tasks list_changed; every other list's is its capability's (tools.mdx, prompts.mdx, resources.mdx).
      const expected = facts.list === 'tasks' ? undefined : `notifications/${facts.needs!.feature}/list_changed`;
      expect({ method, listChanged: facts.listChanged }).toEqual({ method, listChanged: expected });
      expect(listChangedOf(facts.list!)).toBe(expected);
    }
  });

  it('maps every list_changed notification back to the lists that name it, their capability and its listen flag', () => {
    const named = new Set(table.flatMap(([, facts]) => (facts.listChanged ? [facts.listChanged] : [])));
    const changes = [...listChanges()];
    expect(sorted(changes.map((change) => change.notification))).toEqual(sorted(named));
    expect(rows((facts) => facts.listenFlag !== undefined)).toEqual(sorted(named));
    for (const change of changes) {
      const lists = table.filter(([, facts]) => facts.listChanged === change.notification);
      expect(listChangeOf(change.notification)).toBe(change);
      expect(change.methods).toEqual(lists.map(([method]) => method));
      expect(change.kinds).toEqual(lists.map(([, facts]) => facts.list));
      for (const [, facts] of lists) expect(facts.needs?.feature).toBe(change.capability);
      expect(change.notification).toBe(`notifications/${change.capability}/list_changed`);
      expect(LISTEN_FILTER[change.listenFlag]).toBe(change.notification);
      expect(methodFacts(change.notification)).toMatchObject({ kind: 'notification', from: 'upstream', listenFlag: change.listenFlag, droppable: false });
    }
    for (const method of METHODS) if (!named.has(method)) expect({ method, change: listChangeOf(method) }).toEqual({ method, change: undefined });
  });

  it('makes every method that carries Mcp-Name mirror a string param it requires, as the header tables say', () => {
    expect(where(hasMcpName)).toEqual(sorted(Object.keys(MCP_NAME)));
    for (const [method, facts] of table) {
      if (facts.mcpName === undefined) continue;
      expect({ method, field: facts.mcpName }).toEqual({ method, field: MCP_NAME[method] });
      expect(REQUIRED_STRING_PARAMS[method]).toContain(facts.mcpName);
      // The header is 2026-07-28's, on what a client POSTs.
      expect({ method, request: clientRequest(facts), stateless: existsIn(method, 'stateless') }).toEqual({ method, request: true, stateless: true });
    }
  });

  it('finds the Mcp-Name value in the mirrored field when it is a string, and nowhere else', () => {
    const params: (JsonObject | undefined)[] = [undefined, {}, { name: 'a' }, { uri: 'file:///x' }, { taskId: 't-1' }, { name: 'a', uri: 'u', taskId: 't' }, { name: 1, uri: null, taskId: 2 }, { name: { x: 1 } }];
    for (const method of METHODS) {
      const field = MCP_NAME[method];
      for (const p of params) {
        const request = p === undefined ? { method } : { method, params: p };
        const value = field === undefined ? undefined : p?.[field];
        expect({ method, p, name: mirroredName(request) }).toEqual({ method, p, name: typeof value === 'string' ? value : undefined });
      }
    }
  });

  it('frees from rate limits exactly the handshake and liveness, the client requests that need no capability', () => {
    expect(where(isRateFree)).toEqual(sorted([...HANDSHAKE, ...LIVENESS]));
    expect(rows((facts) => facts.rateFree)).toEqual(rows((facts) => clientRequest(facts) && facts.needs === undefined));
  });

  it('counts as work exactly the requests an upstream may send server-initiated messages about', () => {
    // A feature's operations other than lists and subscriptions: calling a tool, getting a prompt,
    // reading a resource, completing an argument; and tasks/result, which blocks while the task runs
    // and carries its input_required requests (2025-11-25 tasks.mdx "Input Required Status"). Never
    // lifecycle, lists, subscriptions, log levels, or a task's bookkeeping, which answer at once.
    const work = (facts: MethodFacts, method: string): boolean =>
      clientRequest(facts) &&
      facts.needs !== undefined &&
      facts.list === undefined &&
      ['tools', 'prompts', 'resources', 'completions'].includes(facts.needs.feature) &&
      facts.needs.flag === undefined;
    expect(where(isWork)).toEqual(sorted([...rows(work), 'tasks/result']));
    // Where an upstream may ask for input mid-request, it may send messages about it.
    for (const method of where(asksInput)) expect({ method, work: isWork(method) }).toEqual({ method, work: true });
  });

  it('asks for input only where the multi round-trip pattern allows it', () => {
    expect(where(asksInput)).toEqual(sorted(MRTR_REQUESTS));
  });

  it('retries only requests that change nothing, outlive their upstream session, and are no handshake', () => {
    // A task lives in the upstream session that made it; a handshake is redone by the new session itself.
    const safe = (facts: MethodFacts, method: string): boolean =>
      clientRequest(facts) && !CHANGES_STATE.includes(method) && !HANDSHAKE.includes(method) && facts.needs?.feature !== 'tasks';
    expect(where(isRetrySafe)).toEqual(rows(safe));
    for (const method of where(isRetrySafe)) expect(CHANGES_STATE).not.toContain(method);
    // So every list but tasks', the reads, and ping are retried.
    for (const method of rows((facts) => facts.list !== undefined && facts.list !== 'tasks')) expect({ method, retrySafe: isRetrySafe(method) }).toEqual({ method, retrySafe: true });
    for (const method of ['prompts/get', 'resources/read', 'completion/complete', 'ping']) expect({ method, retrySafe: isRetrySafe(method) }).toEqual({ method, retrySafe: true });
  });

  it('marks cacheable the 2026-07-28 lists, resources/read and server/discover', () => {
    expect(where(isCacheable)).toEqual(sorted([...rows((facts, m) => facts.list !== undefined && existsIn(m, 'stateless')), ...CACHEABLE_READS]));
  });

  it('lets only informational notifications be dropped', () => {
    expect(where(isDroppable)).toEqual(sorted(INFORMATIONAL));
  });

  it('asks of each side the capability of the method\'s family, with the sub-capability the spec names', () => {
    for (const [method, facts] of table) {
      const expected = { feature: FAMILY_CAPABILITY[family(method)], ...SUB_CAPABILITY[method] };
      if (facts.kind === 'request' && facts.from !== 'upstream' && !facts.rateFree) expect({ method, needs: facts.needs }).toEqual({ method, needs: expected });
      // What a relayed request needs of the client is declared; one only a client sends needs nothing of it.
      if (facts.kind === 'request' && facts.from !== 'client') expect({ method, clientNeeds: facts.clientNeeds }).toEqual({ method, clientNeeds: expected });
      if (facts.from === 'client') expect({ method, clientNeeds: facts.clientNeeds }).toEqual({ method, clientNeeds: undefined });
    }
  });

  it('answers supportsMethod from each method\'s needs, for every method and capability form', () => {
    const variants = capabilityVariants();
    for (const method of METHODS) {
      // A tasks/* method the table does not list still needs `tasks`; a method that needs nothing, every server has.
      const need = methodFacts(method)?.needs ?? (method.startsWith('tasks/') ? { feature: 'tasks' } : undefined);
      for (const capabilities of variants) {
        const extensions = capabilities.extensions;
        const byExtension = TASKS_EXTENSION_REQUESTS.includes(method) && isObject(extensions) && isObject(extensions[TASKS_EXTENSION]);
        const expected = byExtension || need === undefined || declared(capabilities, need);
        expect({ method, capabilities, supported: supportsMethod(capabilities, method) }).toEqual({ method, capabilities, supported: expected });
      }
    }
  });

  it('answers clientSupports from each method\'s clientNeeds, for every method and capability form', () => {
    const variants = capabilityVariants();
    for (const method of METHODS) {
      const need = methodFacts(method)?.clientNeeds;
      for (const capabilities of variants) {
        const expected = need !== undefined && declared(capabilities, need);
        expect({ method, capabilities, supported: clientSupports(capabilities, method) }).toEqual({ method, capabilities, supported: expected });
      }
    }
  });

  it('labels metrics by what the specification lets each side send, and everything else "other"', () => {
    // Client requests: either era's (the table knows every one).
    const clientRequests = union(SESSIONS_CLIENT_REQUESTS, STATELESS_CLIENT_REQUESTS, TASKS_EXTENSION_REQUESTS);
    // Relayed requests: 2025-11-25's server requests, but ping, which the gateway answers itself.
    const relayedRequests = SESSIONS_SERVER_REQUESTS.filter((m) => m !== 'ping');
    // Relayed notifications: either revision's server notifications, but the gateway's own acknowledgement of
    // subscriptions/listen, and elicitation/complete, which the table does not relay (2026-07-28 removed it).
    const relayedNotifications = [...union(SESSIONS_SERVER_NOTIFICATIONS, STATELESS_SERVER_NOTIFICATIONS)].filter(
      (m) => m !== 'notifications/subscriptions/acknowledged' && m !== 'notifications/elicitation/complete',
    );
    expect(where(isClientRequest)).toEqual(sorted(clientRequests));
    expect(where(isRelayedRequest)).toEqual(sorted(relayedRequests));
    expect(where(isRelayedNotification)).toEqual(sorted(relayedNotifications));
    // And each follows from the table: who sends what.
    expect(where(isClientRequest)).toEqual(rows((facts) => facts.kind === 'request' && facts.from !== 'upstream'));
    expect(where(isRelayedRequest)).toEqual(rows((facts) => facts.kind === 'request' && facts.from !== 'client'));
    expect(where(isRelayedNotification)).toEqual(rows((facts) => facts.kind === 'notification' && facts.from !== 'client'));
    const metrics = new Metrics([], { serve: false });
    for (const method of METHODS) {
      expect(metrics.method(method)).toBe(clientRequests.has(method) ? method : 'other');
      expect(metrics.notification(method)).toBe(relayedNotifications.includes(method) ? method : 'other');
      expect(metrics.serverRequest(method)).toBe(relayedRequests.includes(method) ? method : 'other');
    }
  });
});
