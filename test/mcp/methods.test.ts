// The table of MCP method facts (src/mcp/methods.ts) reproduces, fact by fact, the sets and
// switches it replaced. Their contents are written here as they were before the table.
import { describe, expect, it } from 'vitest';
import { clientSupports, supportsMethod } from '../../src/mcp/capabilities.js';
import { isObject, type JsonObject, type JsonRpcRequest } from '../../src/mcp/jsonrpc.js';
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
  listKindOf,
  listMethodOf,
  methodFacts,
  methodsWhere,
  mirroredName,
  type ListKind,
} from '../../src/mcp/methods.js';
import { Metrics } from '../../src/metrics/metrics.js';

// ---- The old sets, as they were ----

/** src/transport/reconnecting.ts RETRY_SAFE */
const RETRY_SAFE = ['ping', 'tools/list', 'prompts/list', 'resources/list', 'resources/templates/list', 'resources/read', 'prompts/get', 'completion/complete'];
/** src/http/mcp-endpoint.ts FREE_METHODS */
const FREE_METHODS = ['initialize', 'ping', 'server/discover', 'subscriptions/listen'];
/** src/upstream/client.ts WORK_METHODS */
const WORK_METHODS = ['tools/call', 'prompts/get', 'resources/read', 'completion/complete', 'tasks/result'];
/** src/mcp/era.ts INPUT_METHODS */
const OLD_INPUT_METHODS = ['tools/call', 'prompts/get', 'resources/read'];
/** src/mcp/era.ts MODERN_METHODS */
const OLD_MODERN_METHODS = [
  'server/discover',
  'subscriptions/listen',
  'tools/list',
  'tools/call',
  'prompts/list',
  'prompts/get',
  'resources/list',
  'resources/templates/list',
  'resources/read',
  'completion/complete',
];
/** src/mcp/era.ts CACHEABLE_METHODS */
const OLD_CACHEABLE_METHODS = ['server/discover', 'tools/list', 'prompts/list', 'resources/list', 'resources/templates/list', 'resources/read'];
/** src/mcp/era.ts NAMED_METHODS */
const OLD_NAMED_METHODS = ['tools/call', 'prompts/get', 'resources/read'];
/** src/metrics/metrics.ts METHODS */
const METRIC_METHODS = [
  'initialize', 'ping', 'tools/list', 'tools/call', 'prompts/list', 'prompts/get', 'resources/list',
  'resources/templates/list', 'resources/read', 'resources/subscribe', 'resources/unsubscribe',
  'completion/complete', 'logging/setLevel', 'tasks/get', 'tasks/result', 'tasks/list', 'tasks/cancel',
  'server/discover', 'subscriptions/listen',
];
/** src/metrics/metrics.ts NOTIFICATIONS */
const METRIC_NOTIFICATIONS = [
  'notifications/tools/list_changed', 'notifications/prompts/list_changed', 'notifications/resources/list_changed',
  'notifications/resources/updated', 'notifications/message', 'notifications/progress', 'notifications/cancelled',
  'notifications/tasks/status',
];
/** src/metrics/metrics.ts SERVER_REQUESTS */
const METRIC_SERVER_REQUESTS = ['sampling/createMessage', 'elicitation/create', 'roots/list', 'tasks/get', 'tasks/result', 'tasks/list', 'tasks/cancel'];
/** src/session/streams.ts DROPPABLE */
const DROPPABLE = ['notifications/progress', 'notifications/message'];
/** src/router/router.ts LIST_METHODS */
const LIST_METHODS: Record<string, ListKind> = {
  'tools/list': 'tools',
  'prompts/list': 'prompts',
  'resources/list': 'resources',
  'resources/templates/list': 'resourceTemplates',
  'tasks/list': 'tasks',
};
/** src/links/recovery.ts LIST_CHANGED */
const LIST_CHANGED: Record<ListKind, string | undefined> = {
  tools: 'notifications/tools/list_changed',
  prompts: 'notifications/prompts/list_changed',
  resources: 'notifications/resources/list_changed',
  resourceTemplates: 'notifications/resources/list_changed',
  tasks: undefined,
};

// ---- The old switches, as they were (src/mcp/capabilities.ts, src/mcp/era.ts) ----

function oldSupportsMethod(capabilities: JsonObject, method: string): boolean {
  switch (method) {
    case 'tools/list':
    case 'tools/call':
      return isObject(capabilities.tools);
    case 'prompts/list':
    case 'prompts/get':
      return isObject(capabilities.prompts);
    case 'resources/list':
    case 'resources/templates/list':
    case 'resources/read':
      return isObject(capabilities.resources);
    case 'resources/subscribe':
    case 'resources/unsubscribe':
      return isObject(capabilities.resources) && capabilities.resources.subscribe === true;
    case 'completion/complete':
      return isObject(capabilities.completions);
    case 'logging/setLevel':
      return isObject(capabilities.logging);
    default:
      return oldSupportsTaskMethod(capabilities, method);
  }
}

function oldSupportsTaskMethod(capabilities: JsonObject, method: string): boolean {
  if (!method.startsWith('tasks/')) return true;
  const tasks = capabilities.tasks;
  if (!isObject(tasks)) return false;
  if (method === 'tasks/list') return isObject(tasks.list);
  if (method === 'tasks/cancel') return isObject(tasks.cancel);
  return true;
}

function oldClientSupports(capabilities: JsonObject, method: string): boolean {
  switch (method) {
    case 'sampling/createMessage':
      return isObject(capabilities.sampling);
    case 'elicitation/create':
      return isObject(capabilities.elicitation);
    case 'roots/list':
      return isObject(capabilities.roots);
    case 'tasks/get':
    case 'tasks/result':
    case 'tasks/list':
    case 'tasks/cancel':
      return oldSupportsTaskMethod(capabilities, method);
    default:
      return false;
  }
}

function oldMirroredName(request: Pick<JsonRpcRequest, 'method' | 'params'>): string | undefined {
  const params = request.params;
  switch (request.method) {
    case 'tools/call':
    case 'prompts/get':
      return typeof params?.name === 'string' ? params.name : undefined;
    case 'resources/read':
      return typeof params?.uri === 'string' ? params.uri : undefined;
    default:
      return undefined;
  }
}

// ---- Inputs to compare over ----

const known = [...allMethods().keys()];
/** Every method named anywhere above, the table's own, and some it does not know. */
const METHODS = [
  ...new Set([
    ...known,
    ...RETRY_SAFE,
    ...FREE_METHODS,
    ...WORK_METHODS,
    ...OLD_MODERN_METHODS,
    ...METRIC_METHODS,
    ...METRIC_NOTIFICATIONS,
    ...METRIC_SERVER_REQUESTS,
    'tasks/unknown',
    'tasks/',
    'notifications/elicitation/complete',
    'notifications/subscriptions/acknowledged',
    'other/method',
    '',
    '__proto__',
    'constructor',
    'toString',
  ]),
];

/** Capability objects with each feature absent, malformed, present, and with its sub-entries in each form. */
function capabilityVariants(): JsonObject[] {
  const features = ['tools', 'prompts', 'resources', 'completions', 'logging', 'tasks', 'sampling', 'elicitation', 'roots'];
  const forms: unknown[] = [undefined, true, [], {}, { subscribe: true }, { subscribe: {} }, { subscribe: false }, { list: {} }, { cancel: {} }, { list: true, cancel: true }, { list: {}, cancel: {} }];
  const out: JsonObject[] = [{}];
  for (const feature of features) for (const form of forms) out.push(form === undefined ? {} : { [feature]: form });
  // Everything at once, in the fullest form.
  out.push(Object.fromEntries(features.map((f) => [f, { subscribe: true, list: {}, cancel: {} }])));
  return out;
}

const sorted = (values: Iterable<string>): string[] => [...values].sort();
const where = (test: (method: string) => boolean): string[] => sorted(METHODS.filter(test));

describe('the table of MCP methods', () => {
  it('reproduces RETRY_SAFE, FREE_METHODS and WORK_METHODS exactly', () => {
    expect(where(isRetrySafe)).toEqual(sorted(RETRY_SAFE));
    expect(where(isRateFree)).toEqual(sorted(FREE_METHODS));
    expect(where(isWork)).toEqual(sorted(WORK_METHODS));
  });

  it('reproduces the 2026-07-28 sets exactly', () => {
    expect(where(asksInput)).toEqual(sorted(OLD_INPUT_METHODS));
    expect(where((m) => existsIn(m, 'stateless'))).toEqual(sorted(OLD_MODERN_METHODS));
    expect(where(isCacheable)).toEqual(sorted(OLD_CACHEABLE_METHODS));
    expect(where(hasMcpName)).toEqual(sorted(OLD_NAMED_METHODS));
  });

  it('reproduces the metric label sets exactly, and Metrics labels by them', () => {
    expect(where(isClientRequest)).toEqual(sorted(METRIC_METHODS));
    expect(where(isRelayedNotification)).toEqual(sorted(METRIC_NOTIFICATIONS));
    expect(where(isRelayedRequest)).toEqual(sorted(METRIC_SERVER_REQUESTS));
    const metrics = new Metrics([], { serve: false });
    for (const method of METHODS) {
      expect(metrics.method(method)).toBe(METRIC_METHODS.includes(method) ? method : 'other');
      expect(metrics.notification(method)).toBe(METRIC_NOTIFICATIONS.includes(method) ? method : 'other');
      expect(metrics.serverRequest(method)).toBe(METRIC_SERVER_REQUESTS.includes(method) ? method : 'other');
    }
  });

  it('reproduces DROPPABLE, LIST_METHODS and LIST_CHANGED exactly', () => {
    expect(where(isDroppable)).toEqual(sorted(DROPPABLE));
    expect(Object.fromEntries(METHODS.flatMap((m) => (listKindOf(m) ? [[m, listKindOf(m)]] : [])))).toEqual(LIST_METHODS);
    for (const [method, kind] of Object.entries(LIST_METHODS)) expect(listMethodOf(kind)).toBe(method);
    for (const [kind, changed] of Object.entries(LIST_CHANGED)) expect(listChangedOf(kind as ListKind)).toBe(changed);
  });

  it('answers supportsMethod as the old switch did, for every method and capability form', () => {
    const variants = capabilityVariants();
    for (const method of METHODS) {
      for (const capabilities of variants) {
        expect({ method, capabilities, supported: supportsMethod(capabilities, method) }).toEqual({ method, capabilities, supported: oldSupportsMethod(capabilities, method) });
      }
    }
  });

  it('answers clientSupports as the old switch did, for every method and capability form', () => {
    const variants = capabilityVariants();
    for (const method of METHODS) {
      for (const capabilities of variants) {
        expect({ method, capabilities, supported: clientSupports(capabilities, method) }).toEqual({ method, capabilities, supported: oldClientSupports(capabilities, method) });
      }
    }
  });

  it('finds the Mcp-Name value as the old mirroredName did', () => {
    const params: (JsonObject | undefined)[] = [undefined, {}, { name: 'a' }, { uri: 'file:///x' }, { name: 'a', uri: 'u' }, { name: 1, uri: null }, { name: { x: 1 } }];
    for (const method of METHODS) {
      for (const p of params) {
        const request = p === undefined ? { method } : { method, params: p };
        expect({ method, p, name: mirroredName(request) }).toEqual({ method, p, name: oldMirroredName(request) });
      }
    }
  });

  it('keeps its facts consistent with each other', () => {
    for (const [method, facts] of allMethods()) {
      expect(Object.isFrozen(facts)).toBe(true);
      expect(methodFacts(method)).toBe(facts);
      // Only requests are listed, named, retried, counted, cacheable; only notifications are dropped.
      if (facts.kind === 'notification') {
        expect({ method, facts }).toMatchObject({ facts: { retrySafe: false, rateFree: false, work: false, asksInput: false, cacheable: false } });
        expect(facts.needs ?? facts.clientNeeds ?? facts.list ?? facts.mcpName).toBeUndefined();
      } else expect({ method, droppable: facts.droppable }).toEqual({ method, droppable: false });
      // A client may send in some era what comes from a client; an upstream's own message, in none.
      expect({ method, eras: facts.eras.length > 0 }).toEqual({ method, eras: facts.from !== 'upstream' });
      // What a relayed request needs of the client is declared; a client's request may need nothing (ping).
      if (facts.kind === 'request' && facts.from !== 'client') expect(facts.clientNeeds).toBeDefined();
      if (facts.from === 'client') expect(facts.clientNeeds).toBeUndefined();
    }
    expect(methodFacts('no/such/method')).toBeUndefined();
    expect(methodsWhere((facts) => facts.list !== undefined).size).toBe(5);
  });
});
