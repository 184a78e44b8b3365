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

/** What a session learned of one tool from its upstream session's list (see router/tool-facts.ts). */
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
}

export interface ListView {
  /** A hash over the pages seen so far, in order. */
  fingerprint: string;
  /** The client followed nextCursor to the end. */
  complete: boolean;
}

export interface SessionUpstream<C> {
  /** The session's own upstream session, once its handshake completed; undefined while left out or deferred. */
  client: C | undefined;
  /**
   * No upstream session of its own yet (or no longer: closed for idleness): its lists come from
   * the gateway's catalog of the upstream, and the first request that must reach it opens one.
   */
  deferred: boolean;
  /** That opening, while it runs (concurrent requests wait for the same one). */
  opening: Promise<void> | undefined;
  /** A task was created there: the upstream session is never closed for idleness. */
  tasks: boolean;
  /** When the idle sweep first saw it with nothing in flight, and how many requests it had sent by then. */
  idle: { since: number; requests: number } | undefined;
  /** Why it could not be opened for this session, and when that was tried (tried again on use). */
  leftOut: { reason: string; at: number } | undefined;
  /** Set when a shared child serves it: releases the lease (the child is never closed). */
  release: (() => void) | undefined;
  /** What the client has seen of each of its lists (list kind → view): list_changed after a restart only if something differs. */
  readonly listViews: Map<string, ListView>;
  /** The tools and prompts it lists (its own names), from the lists this session read: a name not among them is unknown. */
  readonly known: { tools?: KnownNames; prompts?: KnownNames };
  /** Resource URIs (its own) the client subscribed to: renewed after a restart. */
  readonly subscriptions: Set<string>;
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
    return this.#records.get(name)?.release !== undefined;
  }

  /** Records the opened upstream session (and the lease, for a shared child). */
  attach(name: string, client: C, release?: () => void): SessionUpstream<C> {
    const record = this.#ensure(name);
    record.client = client;
    record.leftOut = undefined;
    record.deferred = false;
    record.release = release;
    record.idle = undefined;
    return record;
  }

  /** Records an upstream the session lists from the catalog until a request needs its own session. */
  defer(name: string): SessionUpstream<C> {
    const record = this.#ensure(name);
    record.leftOut = undefined;
    record.deferred = true;
    return record;
  }

  /** Closes the session's own upstream session (idle) and lists from the catalog again; what it knew stays. */
  release(name: string): Promise<void> | undefined {
    const record = this.#records.get(name);
    if (!record || record.client === undefined || record.release !== undefined) return undefined;
    const closing = record.client.close();
    record.client = undefined;
    record.deferred = true;
    record.idle = undefined;
    return closing;
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
    const record = this.#ensure(name);
    if (record.client === undefined) {
      record.leftOut = { reason, at };
      record.deferred = false;
    }
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
    for (const record of this.#records.values()) if (record.deferred || record.release !== undefined) return true;
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
    giveBack(record);
  }

  /** Gives back every upstream session: shared leases are released, own sessions closed. */
  async closeAll(): Promise<void> {
    const records = [...this.#records.values()];
    await Promise.allSettled(records.map(giveBack));
  }

  #ensure(name: string): SessionUpstream<C> {
    let record = this.#records.get(name);
    if (!record) {
      record = { client: undefined, deferred: false, opening: undefined, tasks: false, idle: undefined, leftOut: undefined, release: undefined, listViews: new Map(), known: {}, subscriptions: new Set() };
      this.#records.set(name, record);
    }
    return record;
  }
}

function giveBack(record: SessionUpstream<UpstreamLink>): Promise<void> | undefined {
  if (record.release) {
    record.release();
    return undefined;
  }
  return record.client?.close();
}

/** The opened clients of a set of records, as a read-only map. */
class OpenedClients<C> implements ReadonlyMap<string, C> {
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
