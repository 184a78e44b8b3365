// What a client session holds of each upstream, in one record per upstream: its upstream session
// (or why it could not be opened), the lease when a shared child serves it, what the client has
// seen of its lists, the names it lists with their facts, and the client's subscriptions there.
// Lists differ between sessions (servers offer capability-gated tools), so all of it is per
// session: what one session learned never decides for another.
import type { JsonObject } from '../mcp/jsonrpc.js';

/** An upstream session as the session layer knows it: something it closes when it ends. */
export interface UpstreamLink {
  close(): Promise<void>;
}

/** What a session learned of one tool from its upstream session's list (the router's tool facts). */
export interface ToolFact {
  /** The fact's content (annotation hints and schema text): equal keys, equal facts. */
  readonly key: string;
  /** The inputSchema, when small enough to be checked. */
  readonly schema: JsonObject | undefined;
  readonly destructive: boolean;
  /** The annotation hints its upstream set to true (for `annotation:` rules). */
  readonly hints: readonly string[];
}

/** The names an upstream session lists, with what is known of each (tools: their facts). */
export interface KnownNames {
  /** Undefined while the list could not be read (calls then go on; the upstream answers). */
  names: Map<string, ToolFact | undefined> | undefined;
  readAt: number;
  /** Characters of the names kept (bounded with their number: src/links/existence.ts). */
  chars?: number;
  /** The list had more than is kept, or its read failed part way: a name not kept goes on, as when it could not be read. */
  partial?: boolean;
}

export interface ListView {
  /** A hash over the pages seen so far, in order. */
  fingerprint: string;
  /** The client followed nextCursor to the end. */
  complete: boolean;
}

/** When the idle sweep first saw an own upstream session with nothing in flight, and how many requests it had sent by then. */
export interface IdleMark {
  readonly since: number;
  readonly requests: number;
}

/**
 * Where one upstream stands in a session, one state at a time:
 * - `deferred`: no upstream session of its own yet (or no longer: closed for idleness); its lists
 *   come from the gateway's catalog of the upstream, and the first request that must reach it opens one;
 * - `own`: the session's own upstream session, once its handshake completed (and what the idle sweep saw of it);
 * - `shared`: a lease on a shared child (the child is never closed; `release` gives the lease back);
 * - `leftOut`: it could not be opened for this session, why, and when that was tried (tried again on use).
 */
export type LinkState<C extends UpstreamLink> =
  | { readonly kind: 'deferred' }
  | { readonly kind: 'own'; readonly client: C; readonly idle: IdleMark | undefined }
  | { readonly kind: 'shared'; readonly client: C; readonly release: () => void }
  | { readonly kind: 'leftOut'; readonly reason: string; readonly at: number };

/** One upstream in one session: its link state, with its transitions, and what the session learned there. */
export class SessionUpstream<C extends UpstreamLink> {
  #state: LinkState<C>;
  #keptForTask = false;
  /** An opening of the session's own upstream session, while it runs (concurrent requests wait for the same one). */
  opening: Promise<void> | undefined;
  /** What the client has seen of each of its lists (list kind → view): list_changed after a restart only if something differs. */
  readonly listViews = new Map<string, ListView>();
  /** The tools and prompts it lists (its own names), and resource URIs, from the lists this session read: a name not among them is unknown. */
  readonly known: { tools?: KnownNames; prompts?: KnownNames; resources?: KnownNames } = {};
  /** Reads of those lists under way (list kind → the read): concurrent misses wait for the same one. */
  readonly reading = new Map<string, Promise<KnownNames>>();
  /** Resource URIs (its own) the client subscribed to: renewed after a restart. */
  readonly subscriptions = new Set<string>();
  /** When its own upstream session was closed for idleness, until a new one replaces it (which is logged). */
  reapedAt: number | undefined;

  constructor(state: LinkState<C>) {
    this.#state = state;
  }

  get state(): LinkState<C> {
    return this.#state;
  }

  /** The upstream session serving it (own or a shared child's); undefined while deferred or left out. */
  get client(): C | undefined {
    const state = this.#state;
    return state.kind === 'own' || state.kind === 'shared' ? state.client : undefined;
  }

  get deferred(): boolean {
    return this.#state.kind === 'deferred';
  }

  get shared(): boolean {
    return this.#state.kind === 'shared';
  }

  /** Why it could not be opened, and when that was tried; undefined unless left out. */
  get leftOut(): { reason: string; at: number } | undefined {
    const state = this.#state;
    return state.kind === 'leftOut' ? { reason: state.reason, at: state.at } : undefined;
  }

  /** A task was created there: its own upstream session is never closed for idleness. */
  get keptForTask(): boolean {
    return this.#keptForTask;
  }

  keepForTask(): void {
    this.#keptForTask = true;
  }

  attach(client: C, release?: () => void): void {
    this.#state = release ? { kind: 'shared', client, release } : { kind: 'own', client, idle: undefined };
  }

  defer(): void {
    this.#state = { kind: 'deferred' };
  }

  /** Records that it could not be opened; an upstream session it has stays. */
  leaveOut(reason: string, at: number): void {
    if (this.client === undefined) this.#state = { kind: 'leftOut', reason, at };
  }

  /**
   * What the idle sweep sees of its own upstream session now, with `requests` sent so far: how
   * long it has been idle (0 when it just became so, or sent something since the last sweep).
   */
  idleFor(now: number, requests: number): number {
    const state = this.#state;
    if (state.kind !== 'own') return 0;
    if (state.idle?.requests === requests) return now - state.idle.since;
    this.#state = { ...state, idle: { since: now, requests } };
    return 0;
  }

  /** The idle sweep saw it busy (or not to be reaped): it starts idling afresh. */
  busy(): void {
    const state = this.#state;
    if (state.kind === 'own' && state.idle !== undefined) this.#state = { ...state, idle: undefined };
  }

  /** Closes its own upstream session (idle): it lists from the catalog again; what it knew stays. */
  releaseOwn(): Promise<void> | undefined {
    const state = this.#state;
    if (state.kind !== 'own') return undefined;
    this.#state = { kind: 'deferred' };
    this.reapedAt = Date.now();
    return state.client.close();
  }

  /** Gives its upstream session back: a shared lease is released, an own session closed. */
  giveBack(): Promise<void> | undefined {
    const state = this.#state;
    if (state.kind === 'shared') {
      state.release();
      return undefined;
    }
    return state.kind === 'own' ? state.client.close() : undefined;
  }
}

/** The records of one session, by upstream name, with a map view of the opened clients. */
export class UpstreamRecords<C extends UpstreamLink> {
  readonly #records = new Map<string, SessionUpstream<C>>();
  /** Opened upstream sessions by name, in the order they were opened (a live view). */
  readonly clients: ReadonlyMap<string, C> = new OpenedClients(this.#records);

  get(name: string): SessionUpstream<C> | undefined {
    return this.#records.get(name);
  }

  /** Whether the upstream is shared (served by a lease on a shared child) in this session. */
  isShared(name: string): boolean {
    return this.#records.get(name)?.shared === true;
  }

  /** Records the opened upstream session (and the lease, for a shared child). */
  attach(name: string, client: C, release?: () => void): SessionUpstream<C> {
    const record = this.#records.get(name);
    if (!record) return this.#add(name, release ? { kind: 'shared', client, release } : { kind: 'own', client, idle: undefined });
    record.attach(client, release);
    return record;
  }

  /** Records an upstream the session lists from the catalog until a request needs its own session. */
  defer(name: string): SessionUpstream<C> {
    const record = this.#records.get(name);
    if (!record) return this.#add(name, { kind: 'deferred' });
    record.defer();
    return record;
  }

  /** Closes the session's own upstream session (idle) and lists from the catalog again; what it knew stays. */
  release(name: string): Promise<void> | undefined {
    return this.#records.get(name)?.releaseOwn();
  }

  /** Every upstream the session has a record of, opened or not. */
  names(): IterableIterator<string> {
    return this.#records.keys();
  }

  /** Every record, by upstream name. */
  entries(): IterableIterator<[string, SessionUpstream<C>]> {
    return this.#records.entries();
  }

  /** Records that the upstream could not be opened, and why. */
  leaveOut(name: string, reason: string, at: number): void {
    const record = this.#records.get(name);
    if (record) record.leaveOut(reason, at);
    else this.#add(name, { kind: 'leftOut', reason, at });
  }

  /** Left-out upstreams with their reasons. */
  *leftOut(): IterableIterator<[string, { reason: string; at: number }]> {
    for (const [name, record] of this.#records) if (record.leftOut) yield [name, record.leftOut];
  }

  /** Whether some upstream lists from the catalog (has no own session yet). */
  hasDeferred(): boolean {
    for (const record of this.#records.values()) if (record.deferred) return true;
    return false;
  }

  /** Whether some upstream lists from elsewhere than the session's own upstream session: a catalog, or a shared child's cache. */
  listsElsewhere(): boolean {
    for (const record of this.#records.values()) if (record.deferred || record.shared) return true;
    return false;
  }

  /** Upstreams the session lists from: own sessions and deferred ones. */
  reachable(): number {
    let n = 0;
    for (const record of this.#records.values()) if (record.client !== undefined || record.deferred) n++;
    return n;
  }

  hasLeftOut(): boolean {
    for (const record of this.#records.values()) if (record.leftOut) return true;
    return false;
  }

  /** Forgets the upstream entirely (removed, changed, hidden by policy) and gives its session back. */
  drop(name: string): void {
    const record = this.#records.get(name);
    if (!record) return;
    this.#records.delete(name);
    void record.giveBack();
  }

  /** Gives back every upstream session: shared leases are released, own sessions closed. */
  async closeAll(): Promise<void> {
    const records = [...this.#records.values()];
    await Promise.allSettled(records.map((record) => record.giveBack()));
  }

  #add(name: string, state: LinkState<C>): SessionUpstream<C> {
    const record = new SessionUpstream(state);
    this.#records.set(name, record);
    return record;
  }
}

/** The opened clients of a set of records, as a read-only map. */
class OpenedClients<C extends UpstreamLink> implements ReadonlyMap<string, C> {
  readonly #records: Map<string, SessionUpstream<C>>;

  constructor(records: Map<string, SessionUpstream<C>>) {
    this.#records = records;
  }

  get size(): number {
    let n = 0;
    for (const record of this.#records.values()) if (record.client !== undefined) n++;
    return n;
  }

  get(name: string): C | undefined {
    return this.#records.get(name)?.client;
  }

  has(name: string): boolean {
    return this.#records.get(name)?.client !== undefined;
  }

  *entries(): MapIterator<[string, C]> {
    for (const [name, record] of this.#records) if (record.client !== undefined) yield [name, record.client];
  }

  *keys(): MapIterator<string> {
    for (const [name] of this.entries()) yield name;
  }

  *values(): MapIterator<C> {
    for (const [, client] of this.entries()) yield client;
  }

  forEach(callback: (value: C, key: string, map: ReadonlyMap<string, C>) => void): void {
    for (const [name, client] of this.entries()) callback(client, name, this);
  }

  [Symbol.iterator](): MapIterator<[string, C]> {
    return this.entries();
  }
}
