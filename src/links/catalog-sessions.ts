// The gateway's catalog of each upstream: one upstream session per upstream and per distinct
// protocol version, client capabilities and client info (servers offer different tools to
// clients with sampling, elicitation or roots, some by client), initialized as the client
// session's own would be, opened by the first client session that needs it and shared by every
// later one with the same key (at most MAX_KEYS per upstream, the least used closed first). A client session lists from it until a request of its
// own must reach the upstream (open.ts opens the session's own upstream session then), so a
// session that only initializes and lists costs no child of its own. Lists are cached per
// catalog session (first pages, and pages of cursors the upstream itself gave: a client's forged
// cursor is passed on but its page is not kept), bounded in count and bytes, and forgotten on
// its list_changed, its restart and a reload. A catalog child
// counts against the upstream's maxProcesses, and gives way (is closed) when a session needs a
// child of its own and there is no room. A probe that fails (or never answers) leaves the
// upstream out of every session's catalog at once, with one retry in the background at a time,
// so a hung upstream costs one initTimeoutMs, not one per session.
import { LRUCache } from 'lru-cache';
import { GatewayError } from '../mcp/errors.js';
import type { JsonObject } from '../mcp/jsonrpc.js';
import { stableJson } from '../util/stable-json.js';
import type { UpstreamClient } from '../upstream/client.js';
import { ProcessLimitError, type UpstreamPool } from '../upstream/pool.js';
import type { Logger } from '../util/log.js';
import { carriesCursor, type Listing } from '../names/lists.js';
import { listChangeOf, listKindOf } from '../mcp/methods.js';

/** The session facts a catalog is kept for. */
export interface CatalogKeyInfo {
  protocolVersion: string;
  clientCapabilities: JsonObject;
  clientInfo: JsonObject;
}

/** Whether a catalog answers `method`: the lists, but tasks (a session's own). */
function isCatalogList(method: string): boolean {
  const kind = listKindOf(method);
  return kind !== undefined && kind !== 'tasks';
}
/** Distinct catalogs kept per upstream (clients that vary their info cannot spawn without end). */
const MAX_KEYS = 16;
/** A failed probe is tried again (in the background) at most this often. */
export const CATALOG_RETRY_MS = 30_000;
/** Pages of lists kept per catalog session (a hostile upstream's endless cursors stay bounded). */
const MAX_CACHED_PAGES = 256;
/** Bytes of pages (their JSON, with their keys) kept per catalog session: a larger page is read each time. */
export const MAX_CACHED_BYTES = 16 * 1024 * 1024;

/** A page read or being read; `size` is counted once it is read (its key alone until then). */
interface CachedPage {
  readonly reading: Promise<JsonObject>;
  readonly size: number;
}

/** One catalog session: an upstream session read for its lists, shared by sessions of one key. */
export class CatalogSession implements Listing {
  readonly key: string;
  readonly client: UpstreamClient;
  usedAt: number;
  /** `${method}\0${cursor}` → its page; the first page's cursor is ''. */
  readonly #cache = new LRUCache<string, CachedPage>({ max: MAX_CACHED_PAGES, maxSize: MAX_CACHED_BYTES, sizeCalculation: (page) => page.size });
  /** The keys of pages the upstream's own nextCursor leads to: the only cursors whose pages are cached. */
  readonly #issued = new LRUCache<string, true>({ max: MAX_CACHED_PAGES });
  readonly #now: () => number;

  constructor(key: string, client: UpstreamClient, now: () => number) {
    this.key = key;
    this.client = client;
    this.#now = now;
    this.usedAt = now();
  }

  get name(): string {
    return this.client.name;
  }

  get closed(): boolean {
    return this.client.closed;
  }

  get capabilities(): JsonObject {
    return this.client.capabilities;
  }

  get streamsAnswers(): boolean {
    return this.client.streamsAnswers;
  }

  get instructions(): string | undefined {
    return this.client.initialized?.instructions;
  }

  /** Bytes of the pages kept now (for tests). */
  get cachedBytes(): number {
    return this.#cache.calculatedSize;
  }

  /**
   * A list page, from the cache or read once for every session asking (no caller's signal
   * cancels it). Only a first page, or one the upstream's own cursor leads to, is kept: a cursor
   * a client made up is passed on each time, and what it costs ends with the request.
   */
  request(method: string, params?: JsonObject): Promise<JsonObject> {
    this.usedAt = this.#now();
    if (!isCatalogList(method)) return Promise.reject(new GatewayError('method_not_found', `a catalog answers lists only, not ${method}`));
    const cursor = params?.cursor;
    const key = `${method}\0${typeof cursor === 'string' ? cursor : ''}`;
    const kept = cursor === undefined || this.#issued.has(key);
    const cached = kept ? this.#cache.get(key) : undefined;
    if (cached) return cached.reading;
    const reading = this.client.request(method, cursor === undefined ? undefined : { cursor });
    // Before any caller hears the page: its nextCursor is the upstream's, so its page may be kept.
    reading.then((page) => {
      if (typeof page.nextCursor === 'string' && carriesCursor(page.nextCursor)) this.#issued.set(`${method}\0${page.nextCursor}`, true);
    }, () => {});
    if (!kept) return reading;
    this.#cache.set(key, { reading, size: key.length });
    reading.then(
      (page) => {
        // Counted again at its size once read (a page over the bound is then not kept).
        if (this.#cache.peek(key)?.reading === reading) this.#cache.set(key, { reading, size: key.length + JSON.stringify(page).length });
      },
      () => {
        if (this.#cache.peek(key)?.reading === reading) this.#cache.delete(key);
      },
    );
    return reading;
  }

  /** Forgets the cached pages of these list methods (all, without any), and the cursors that led to them. */
  forget(methods?: readonly string[]): void {
    if (!methods) {
      this.#cache.clear();
      this.#issued.clear();
      return;
    }
    const listed = (key: string): boolean => methods.includes(key.slice(0, key.indexOf('\0')));
    for (const key of [...this.#cache.keys()]) if (listed(key)) this.#cache.delete(key);
    for (const key of [...this.#issued.keys()]) if (listed(key)) this.#issued.delete(key);
  }

  /** The methods whose cached first pages differ from what the upstream lists now (after a restart). */
  async changedLists(): Promise<string[]> {
    const before = [...this.#cache.entries()].filter(([key]) => key.endsWith('\0'));
    this.forget();
    const changed = await Promise.all(
      before.map(async ([key, old]) => {
        const method = key.slice(0, -1);
        const [was, now] = await Promise.allSettled([old.reading, this.request(method)]);
        return was.status !== 'fulfilled' || now.status !== 'fulfilled' || stableJson(was.value) !== stableJson(now.value) ? method : undefined;
      }),
    );
    return changed.filter((method): method is string => method !== undefined);
  }
}

interface Slot {
  session?: CatalogSession;
  opening?: Promise<CatalogSession>;
  /** The latest probe failed: sessions leave the upstream out without waiting. */
  failed?: { reason: string; at: number };
}

export interface CatalogsDeps {
  pool: UpstreamPool;
  logger: Logger;
  /** A catalog session's lists of these methods changed: tell the sessions listing from it. */
  onListsChanged: (catalog: CatalogSession, methods: readonly string[]) => void;
  now?: () => number;
}

export class UpstreamCatalogs {
  readonly #deps: CatalogsDeps;
  readonly #slots = new Map<string, Map<string, Slot>>();
  readonly #now: () => number;
  /** Keys by a session's info object (the same object for the session's life). */
  readonly #keys = new WeakMap<CatalogKeyInfo, string>();

  constructor(deps: CatalogsDeps) {
    this.#deps = deps;
    this.#now = deps.now ?? Date.now;
  }

  /** The key of the catalog sessions like `info` list from (computed once per session's info). */
  keyOf(info: CatalogKeyInfo): string {
    let key = this.#keys.get(info);
    if (key === undefined) {
      key = `${info.protocolVersion}\0${stableJson(info.clientCapabilities)}\0${stableJson(info.clientInfo)}`;
      this.#keys.set(info, key);
    }
    return key;
  }

  /** The catalog session of `upstream` if it is open. */
  peek(upstream: string, key: string): CatalogSession | undefined {
    const session = this.#slots.get(upstream)?.get(key)?.session;
    return session && !session.closed ? session : undefined;
  }

  /**
   * The catalog of `upstream` for sessions like `info`, opened on first need. Throws at once
   * (no waiting) when its latest probe failed; the next probe then runs in the background.
   */
  ready(upstream: string, info: CatalogKeyInfo): CatalogSession | Promise<CatalogSession> {
    const key = this.keyOf(info);
    let slots = this.#slots.get(upstream);
    if (!slots) this.#slots.set(upstream, (slots = new Map()));
    let slot = slots.get(key);
    if (!slot) {
      if (slots.size >= MAX_KEYS) this.#evict(slots);
      slots.set(key, (slot = {}));
    }
    const open = slot.session;
    if (open && !open.closed) {
      open.usedAt = this.#now();
      return open;
    }
    const { failed } = slot;
    if (slot.opening) {
      if (failed) throw leftOut(upstream, failed.reason);
      return slot.opening;
    }
    if (failed && this.#now() - failed.at < CATALOG_RETRY_MS) throw leftOut(upstream, failed.reason);
    const opening = this.#open(upstream, key, info, slot);
    if (!failed) return opening;
    // Tried again in the background: nobody waits for an upstream that failed last time.
    opening.catch(() => {});
    throw leftOut(upstream, failed.reason);
  }

  #open(upstream: string, key: string, info: CatalogKeyInfo, slot: Slot): Promise<CatalogSession> {
    const { pool, logger } = this.#deps;
    let catalog: CatalogSession | undefined;
    const params = { protocolVersion: info.protocolVersion, capabilities: info.clientCapabilities, clientInfo: info.clientInfo };
    const opening = pool
      .open(upstream, params, (client) => {
        // Only list changes matter here: no client is behind a catalog to hear anything else,
        // and its server-initiated requests are refused (UpstreamClient answers them so).
        client.onnotification = (message) => {
          const methods = listChangeOf(message.method)?.methods;
          if (!methods || !catalog) return;
          catalog.forget(methods);
          this.#deps.onListsChanged(catalog, methods);
        };
        client.onreconnect = () => {
          if (!catalog) return;
          const restarted = catalog;
          void restarted.changedLists().then((methods) => methods.length > 0 && this.#deps.onListsChanged(restarted, methods));
        };
        // Children spawned ahead are for sessions' first calls.
      }, { warm: false })
      .then(
        (client) => {
          catalog = new CatalogSession(key, client, this.#now);
          // Retired (reload) or closed while opening: this one is nobody's.
          if (this.#slots.get(upstream)?.get(key) !== slot) {
            void client.close();
            return catalog;
          }
          slot.session = catalog;
          slot.failed = undefined;
          return catalog;
        },
        (err: unknown) => {
          const reason = err instanceof Error ? err.message : String(err);
          // No room for a child is not the upstream failing: the next session tries again.
          if (err instanceof ProcessLimitError) throw err;
          slot.failed = { reason, at: this.#now() };
          logger.warn('upstream left out of the catalog', { upstream, err });
          throw leftOut(upstream, reason);
        },
      )
      .finally(() => {
        slot.opening = undefined;
      });
    slot.opening = opening;
    return opening;
  }

  /** Makes room for one more key: the least recently used catalog that is not opening goes. */
  #evict(slots: Map<string, Slot>): void {
    let oldest: [string, Slot] | undefined;
    for (const entry of slots) {
      if (entry[1].opening) continue;
      if (!oldest || (entry[1].session?.usedAt ?? 0) < (oldest[1].session?.usedAt ?? 0)) oldest = entry;
    }
    if (!oldest) return;
    slots.delete(oldest[0]);
    void oldest[1].session?.client.close();
  }

  /** Closes one catalog session of `upstream` with nothing in flight, to make room; whether there was one. */
  yieldOne(upstream: string): boolean {
    const slots = this.#slots.get(upstream);
    for (const [key, slot] of slots ?? []) {
      const { session } = slot;
      if (!session || session.closed || session.client.pendingCount > 0) continue;
      slots!.delete(key);
      void session.client.close();
      this.#deps.logger.info('catalog session closed to make room for a session of its own', { upstream });
      return true;
    }
    return false;
  }

  /** The catalogs of upstreams a reload changed or removed: closed, opened afresh on next need. */
  retire(upstreams: readonly string[]): void {
    for (const upstream of upstreams) {
      const slots = this.#slots.get(upstream);
      this.#slots.delete(upstream);
      for (const slot of slots?.values() ?? []) void slot.session?.client.close();
    }
  }

  /** Closes catalog sessions no list has used for their upstream's idle timeout. */
  sweep(idleMs: (upstream: string) => number | undefined): void {
    const now = this.#now();
    for (const [upstream, slots] of this.#slots) {
      const idle = idleMs(upstream);
      for (const [key, slot] of slots) {
        const { session } = slot;
        if (session?.closed && !slot.opening) slots.delete(key);
        if (!session || session.closed || idle === undefined || now - session.usedAt < idle || session.client.pendingCount > 0) continue;
        slots.delete(key);
        void session.client.close();
        this.#deps.logger.info('idle catalog session closed', { upstream, idleMs: now - session.usedAt });
      }
    }
  }

  /** Every catalog session open now (for tests and health). */
  *sessions(): IterableIterator<CatalogSession> {
    for (const slots of this.#slots.values()) for (const slot of slots.values()) if (slot.session && !slot.session.closed) yield slot.session;
  }
}

function leftOut(upstream: string, reason: string): GatewayError {
  return new GatewayError('upstream_unavailable', `Upstream ${upstream} is unavailable: ${reason}`);
}

/** Why `upstream` could not be opened, as its unavailability error says it after its prefix (so never said twice). */
export function unavailableReason(upstream: string, err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  const prefix = `Upstream ${upstream} is unavailable: `;
  return message.startsWith(prefix) ? message.slice(prefix.length) : message;
}
