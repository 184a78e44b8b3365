// What the gateway knows about each MCP method, in one table: who sends it through the gateway,
// the capability it needs, the list it reads, whether it may be sent again, whether rate limits
// count it, whether it can ask the client for input, the revisions a client may send it in, the
// field `Mcp-Name` mirrors, whether its result is cacheable. Code asks the accessors below rather
// than keeping sets of its own; a method the table does not list has none of these facts.
import type { JsonRpcRequest } from './jsonrpc.js';

/** The lists a client reads through the gateway (names/lists.ts spells the same kinds). */
export type ListKind = 'tools' | 'prompts' | 'resources' | 'resourceTemplates' | 'tasks';

/** The two eras, as the config names them: sessions (initialize, Mcp-Session-Id) and stateless (2026-07-28). */
export type Era = 'sessions' | 'stateless';

/**
 * A capability the other side must have declared: `feature` an object; with `flag`,
 * `feature[flag] === true` as well; with `entry`, `feature[entry]` an object as well.
 */
export interface Capability {
  readonly feature: string;
  readonly flag?: string;
  readonly entry?: string;
}

export interface MethodFacts {
  readonly kind: 'request' | 'notification';
  /**
   * Who sends it through the gateway: a client (to the gateway), an upstream (relayed on to the
   * client), or either. An upstream's ping is answered by the gateway itself, so ping is the client's.
   */
  readonly from: 'client' | 'upstream' | 'either';
  /** The server capability a client's request needs of an upstream; absent, every server answers it. */
  readonly needs?: Capability;
  /** The client capability an upstream's request needs before it is relayed to the client. */
  readonly clientNeeds?: Capability;
  /** The merged list this request reads. */
  readonly list?: ListKind;
  /** For a list: the notification that tells a client it changed (tasks have none). */
  readonly listChanged?: string;
  /** The revisions in which a client may send it to the gateway (empty: only upstreams send it). */
  readonly eras: readonly Era[];
  /** Safe to send again on a new upstream session: it changes nothing. */
  readonly retrySafe: boolean;
  /** Not counted by a principal's rate limit: the handshake, liveness, and their 2026-07-28 successors. */
  readonly rateFree: boolean;
  /** Work an upstream may send server-initiated messages about (not lists or pings). */
  readonly work: boolean;
  /** May answer `resultType: "input_required"` (2026-07-28 patterns/mrtr.mdx "Supported Requests"). */
  readonly asksInput: boolean;
  /** The params field the `Mcp-Name` header mirrors (streamable-http.mdx "Request Metadata"). */
  readonly mcpName?: 'name' | 'uri' | 'taskId';
  /** Its results carry ttlMs and cacheScope (2026-07-28 server/utilities/caching.mdx). */
  readonly cacheable: boolean;
  /** A notification a server may drop for a client that does not read (best effort). */
  readonly droppable: boolean;
  /** For a list_changed notification: the 2026-07-28 subscriptions/listen filter flag that asks for it. */
  readonly listenFlag?: string;
}

type Row = Partial<MethodFacts> & Pick<MethodFacts, 'kind' | 'from'>;

const BOTH: readonly Era[] = ['sessions', 'stateless'];
const SESSIONS: readonly Era[] = ['sessions'];
const STATELESS: readonly Era[] = ['stateless'];

const request = (from: MethodFacts['from'], facts: Partial<MethodFacts> = {}): Row => ({ kind: 'request', from, ...facts });
const notification = (from: MethodFacts['from'], facts: Partial<MethodFacts> = {}): Row => ({ kind: 'notification', from, ...facts });

const TOOLS: Capability = { feature: 'tools' };
const PROMPTS: Capability = { feature: 'prompts' };
const RESOURCES: Capability = { feature: 'resources' };
const SUBSCRIBE: Capability = { feature: 'resources', flag: 'subscribe' };
const TASKS: Capability = { feature: 'tasks' };

/** Every method the gateway handles or relays, with the facts that are true of it. */
const TABLE: Record<string, Row> = {
  // Lifecycle and liveness.
  initialize: request('client', { eras: SESSIONS, rateFree: true }),
  ping: request('client', { eras: SESSIONS, retrySafe: true, rateFree: true }),
  'server/discover': request('client', { eras: STATELESS, rateFree: true, cacheable: true }),
  'subscriptions/listen': request('client', { eras: STATELESS, rateFree: true }),

  // Tools, prompts, resources, completions, logging.
  'tools/list': request('client', { needs: TOOLS, list: 'tools', listChanged: 'notifications/tools/list_changed', eras: BOTH, retrySafe: true, cacheable: true }),
  'tools/call': request('client', { needs: TOOLS, eras: BOTH, work: true, asksInput: true, mcpName: 'name' }),
  'prompts/list': request('client', { needs: PROMPTS, list: 'prompts', listChanged: 'notifications/prompts/list_changed', eras: BOTH, retrySafe: true, cacheable: true }),
  'prompts/get': request('client', { needs: PROMPTS, eras: BOTH, retrySafe: true, work: true, asksInput: true, mcpName: 'name' }),
  'resources/list': request('client', { needs: RESOURCES, list: 'resources', listChanged: 'notifications/resources/list_changed', eras: BOTH, retrySafe: true, cacheable: true }),
  'resources/templates/list': request('client', {
    needs: RESOURCES,
    list: 'resourceTemplates',
    listChanged: 'notifications/resources/list_changed',
    eras: BOTH,
    retrySafe: true,
    cacheable: true,
  }),
  'resources/read': request('client', { needs: RESOURCES, eras: BOTH, retrySafe: true, work: true, asksInput: true, mcpName: 'uri', cacheable: true }),
  'resources/subscribe': request('client', { needs: SUBSCRIBE, eras: SESSIONS }),
  'resources/unsubscribe': request('client', { needs: SUBSCRIBE, eras: SESSIONS }),
  'completion/complete': request('client', { needs: { feature: 'completions' }, eras: BOTH, retrySafe: true, work: true }),
  'logging/setLevel': request('client', { needs: { feature: 'logging' }, eras: SESSIONS }),

  // Tasks (2025-11-25): either side may run them for the other.
  // tasks/get, tasks/update and tasks/cancel are also the 2026-07-28 Tasks extension's (SEP-2663), Mcp-Name the task id.
  'tasks/get': request('either', { needs: TASKS, clientNeeds: TASKS, eras: BOTH, mcpName: 'taskId' }),
  'tasks/update': request('client', { needs: TASKS, eras: STATELESS, mcpName: 'taskId' }),
  'tasks/result': request('either', { needs: TASKS, clientNeeds: TASKS, eras: SESSIONS, work: true }),
  'tasks/list': request('either', { needs: { feature: 'tasks', entry: 'list' }, clientNeeds: { feature: 'tasks', entry: 'list' }, list: 'tasks', eras: SESSIONS }),
  'tasks/cancel': request('either', { needs: { feature: 'tasks', entry: 'cancel' }, clientNeeds: { feature: 'tasks', entry: 'cancel' }, eras: BOTH, mcpName: 'taskId' }),

  // Requests an upstream sends the client.
  'sampling/createMessage': request('upstream', { clientNeeds: { feature: 'sampling' } }),
  'elicitation/create': request('upstream', { clientNeeds: { feature: 'elicitation' } }),
  'roots/list': request('upstream', { clientNeeds: { feature: 'roots' } }),

  // Notifications.
  'notifications/initialized': notification('client', { eras: SESSIONS }),
  'notifications/roots/list_changed': notification('client', { eras: SESSIONS }),
  'notifications/cancelled': notification('either', { eras: SESSIONS }),
  'notifications/progress': notification('either', { eras: SESSIONS, droppable: true }),
  'notifications/tasks/status': notification('either', { eras: SESSIONS }),
  'notifications/message': notification('upstream', { droppable: true }),
  'notifications/tools/list_changed': notification('upstream', { listenFlag: 'toolsListChanged' }),
  'notifications/prompts/list_changed': notification('upstream', { listenFlag: 'promptsListChanged' }),
  'notifications/resources/list_changed': notification('upstream', { listenFlag: 'resourcesListChanged' }),
  'notifications/resources/updated': notification('upstream'),
};

function complete(row: Row): MethodFacts {
  return { eras: [], retrySafe: false, rateFree: false, work: false, asksInput: false, cacheable: false, droppable: false, ...row };
}

/** Read-only after this line: nothing adds to or removes from it. */
const FACTS: ReadonlyMap<string, MethodFacts> = new Map(Object.entries(TABLE).map(([method, row]) => [method, Object.freeze(complete(row))]));
const LIST_METHODS: ReadonlyMap<ListKind, string> = new Map([...FACTS].flatMap(([method, facts]) => (facts.list ? [[facts.list, method] as const] : [])));
/** Each list_changed notification: the list methods it makes stale and the capability whose lists those are. */
const LIST_CHANGES: ReadonlyMap<string, ListChange> = new Map(
  [...FACTS].flatMap(([notification, facts]) => {
    if (facts.listenFlag === undefined) return [];
    const lists = [...FACTS].filter(([, list]) => list.listChanged === notification);
    const change: ListChange = Object.freeze({
      notification,
      capability: lists[0]![1].needs!.feature,
      methods: Object.freeze(lists.map(([method]) => method)),
      kinds: Object.freeze(lists.map(([, list]) => list.list!)),
      listenFlag: facts.listenFlag,
    });
    return [[notification, change] as const];
  }),
);

/** The facts of `method`, or undefined for a method the gateway does not know. */
export function methodFacts(method: string): MethodFacts | undefined {
  return FACTS.get(method);
}

/** Every method the table lists, with its facts. */
export function allMethods(): ReadonlyMap<string, MethodFacts> {
  return FACTS;
}

/** The methods whose facts satisfy `test`, as a set (for the names kept from before the table). */
export function methodsWhere(test: (facts: MethodFacts, method: string) => boolean): ReadonlySet<string> {
  return new Set([...FACTS].filter(([method, facts]) => test(facts, method)).map(([method]) => method));
}

const fromClient = (facts: MethodFacts | undefined): boolean => facts !== undefined && facts.from !== 'upstream';
const fromUpstream = (facts: MethodFacts | undefined): boolean => facts !== undefined && facts.from !== 'client';

/** A request a client may send the gateway (a bounded metric label). */
export function isClientRequest(method: string): boolean {
  const facts = FACTS.get(method);
  return facts?.kind === 'request' && fromClient(facts);
}

/** A request an upstream sends that the gateway relays to the client (a bounded metric label). */
export function isRelayedRequest(method: string): boolean {
  const facts = FACTS.get(method);
  return facts?.kind === 'request' && fromUpstream(facts);
}

/** A notification from an upstream that the gateway forwards or drops (a bounded metric label). */
export function isRelayedNotification(method: string): boolean {
  const facts = FACTS.get(method);
  return facts?.kind === 'notification' && fromUpstream(facts);
}

export function isRetrySafe(method: string): boolean {
  return FACTS.get(method)?.retrySafe === true;
}

export function isRateFree(method: string): boolean {
  return FACTS.get(method)?.rateFree === true;
}

export function isWork(method: string): boolean {
  return FACTS.get(method)?.work === true;
}

export function asksInput(method: string): boolean {
  return FACTS.get(method)?.asksInput === true;
}

export function isCacheable(method: string): boolean {
  return FACTS.get(method)?.cacheable === true;
}

export function isDroppable(method: string): boolean {
  return FACTS.get(method)?.droppable === true;
}

/** Whether a client of `era` may send `method` to the gateway. */
export function existsIn(method: string, era: Era): boolean {
  return FACTS.get(method)?.eras.includes(era) === true;
}

/** The list a method reads, if it is a list method. */
export function listKindOf(method: string): ListKind | undefined {
  return FACTS.get(method)?.list;
}

/** The method that reads a list of `kind`. */
export function listMethodOf(kind: ListKind): string {
  return LIST_METHODS.get(kind)!;
}

/** The notification that says a list of `kind` changed (none for tasks). */
export function listChangedOf(kind: ListKind): string | undefined {
  return FACTS.get(listMethodOf(kind))!.listChanged;
}

/** What one list_changed notification says: which lists changed, of which capability, and how a 2026-07-28 listen filter asks for it. */
export interface ListChange {
  readonly notification: string;
  /** The server capability whose lists these are (the client is told only of what it was offered). */
  readonly capability: string;
  /** The list methods whose answers it makes stale. */
  readonly methods: readonly string[];
  readonly kinds: readonly ListKind[];
  /** The subscriptions/listen filter flag that asks for it. */
  readonly listenFlag: string;
}

/** Every list_changed notification, with what it says (tools, prompts, resources). */
export function listChanges(): Iterable<ListChange> {
  return LIST_CHANGES.values();
}

/** What a list_changed notification says, or undefined when `method` is none. */
export function listChangeOf(method: string): ListChange | undefined {
  return LIST_CHANGES.get(method);
}

/** Whether an HTTP POST of `method` carries `Mcp-Name`. */
export function hasMcpName(method: string): boolean {
  return FACTS.get(method)?.mcpName !== undefined;
}

/** The body value `Mcp-Name` mirrors: the tool or prompt name, or the resource URI. */
export function mirroredName(request: Pick<JsonRpcRequest, 'method' | 'params'>): string | undefined {
  const field = FACTS.get(request.method)?.mcpName;
  if (field === undefined) return undefined;
  const value = request.params?.[field];
  return typeof value === 'string' ? value : undefined;
}
