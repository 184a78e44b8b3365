// Merged lists across a session's upstreams: fan-out in parallel, rename through
// the namespace codec, merge in upstream-name order, and follow every upstream's nextCursor
// behind one opaque composite cursor, so nothing is truncated and nothing repeated. Also maps
// client-facing names back to their upstream and original name.
import { createHash } from 'node:crypto';
import { GatewayError } from '../mcp/errors.js';
import { isObject, type JsonObject } from '../mcp/jsonrpc.js';
import { supportsMethod } from '../mcp/capabilities.js';
import type { UpstreamClient } from '../upstream/client.js';
import type { Logger } from '../util/log.js';
import type { NamespaceCodec } from './namespace.js';
import type { CancelSignal } from '../util/cancel.js';
import { LRUCache } from 'lru-cache';
import { listMethodOf, type ListKind } from '../mcp/methods.js';
import { exposeToolMeta } from './content.js';

/** What a merged list needs of an upstream: its own session's client, or a catalog session. */
export interface Listing {
  readonly name: string;
  readonly closed: boolean;
  readonly capabilities: JsonObject;
  /** Whether the upstream answers as SSE streams (the gateway then answers its clients so too). */
  readonly streamsAnswers: boolean;
  request(method: string, params?: JsonObject, options?: { signal?: CancelSignal }): Promise<JsonObject>;
}

export type { ListKind } from '../mcp/methods.js';

interface KindInfo {
  /** The list method (mcp/methods.ts). */
  method: string;
  /** The item field the codec rewrites. */
  field: 'name' | 'uri' | 'uriTemplate' | 'taskId';
}

const kindInfo = (kind: ListKind, field: KindInfo['field']): KindInfo => ({ method: listMethodOf(kind), field });

export const LIST_KINDS: Record<ListKind, KindInfo> = {
  tools: kindInfo('tools', 'name'),
  prompts: kindInfo('prompts', 'name'),
  resources: kindInfo('resources', 'uri'),
  resourceTemplates: kindInfo('resourceTemplates', 'uriTemplate'),
  tasks: kindInfo('tasks', 'taskId'),
};

export type Upstreams = ReadonlyMap<string, UpstreamClient>;
/** What a merged list reads from: each upstream's own session, or its catalog (catalogs.ts). */
export type Sources = ReadonlyMap<string, Listing>;
/** An upstream client and a name (or URI) as that upstream knows it. */
export interface Target {
  client: UpstreamClient;
  name: string;
}

/** One upstream page of a merged list, as the client was shown it. */
export interface ListedPage {
  upstream: string;
  /** As the client sees them (renamed). */
  items: readonly JsonObject[];
  /** The names, URIs or ids the upstream itself used, in the same order. */
  originals: readonly string[];
  /** The first page of a traversal (no cursor). */
  first: boolean;
  /** The upstream has more pages. */
  more: boolean;
  /** A tool list's bound (upstreams.<name>.maxTools, maxToolBytes), when it has one. */
  limit?: ListLimit;
}

export type PageObserver = (page: ListedPage) => void;

/** Extends a list fingerprint with one more page (the same chain for the client's view and a re-read). */
export function extendFingerprint(previous: string, items: readonly JsonObject[]): string {
  return createHash('sha256').update(previous).update(JSON.stringify(items)).digest('base64url');
}

/** Pages followed when rebuilding an upstream's aliases; bounds a hostile upstream's cursor loop. */
const MAX_ALIAS_PAGES = 100;

/**
 * How long a read of an upstream's whole list for a name not found stands (a shortened name
 * here; a tool, prompt or bare URI in src/links/existence.ts): another miss within it reads
 * nothing, unless the upstream said the list changed.
 */
export const REREAD_INTERVAL_MS = 10_000;

/**
 * The longest cursor of one upstream a composite cursor carries, in bytes of its JSON string. A
 * cursor is a position, not a store: a longer one from a client is refused, and one from an
 * upstream ends its list there (the gateway would refuse it on the next page).
 */
export const MAX_UPSTREAM_CURSOR_BYTES = 8 * 1024;
/**
 * Characters a composite cursor may have per upstream the session lists from: one upstream's
 * cursor at its longest, its name and its count, in base64url (about 11 KiB), with room to
 * spare. A longer cursor is refused before it is decoded.
 */
const CURSOR_CHARS_PER_UPSTREAM = 16 * 1024;

/** Whether a composite cursor can carry this upstream cursor (MAX_UPSTREAM_CURSOR_BYTES). */
export function carriesCursor(cursor: string): boolean {
  // Every character is at least one byte of its JSON form: a long string needs no encoding to tell.
  return cursor.length <= MAX_UPSTREAM_CURSOR_BYTES && Buffer.byteLength(JSON.stringify(cursor)) <= MAX_UPSTREAM_CURSOR_BYTES;
}

/** How many tools, and how many bytes of their definitions, one upstream's list may bring. */
export interface ListLimit {
  count: number;
  bytes: number;
}

export interface CatalogOptions {
  /** Shortened names remembered for mapping back. */
  aliasLimit?: number;
  /** The bound on an upstream's tool list (upstreams.<name>.maxTools, maxToolBytes). */
  toolLimit?: (upstream: string) => ListLimit | undefined;
  /** An upstream's tool list was cut short at its limit. */
  ontruncate?: (upstream: string, limit: ListLimit) => void;
  /** Pinning (src/pinning/): what of a page of tools or prompts, as the upstream listed it, any client may see. */
  screen?: (kind: 'tools' | 'prompts', upstream: string, items: JsonObject[], last: boolean) => Promise<JsonObject[]>;
}

/** What of an upstream's list a traversal has listed so far: items and bytes. */
type Seen = [number, number];

/** A read of an upstream's list for its shortened names: under way (`at` undefined), or when it ended. */
interface AliasRead {
  at: number | undefined;
  done: Promise<void>;
}

export class Catalog {
  #codec: NamespaceCodec;
  readonly #logger: Logger;
  /** `${kind}:${exposed}` → original name, for shortened names only (deterministic, shared). */
  readonly #aliases: LRUCache<string, string>;
  readonly #toolLimit: CatalogOptions['toolLimit'];
  readonly #ontruncate: CatalogOptions['ontruncate'];
  readonly #screen: CatalogOptions['screen'];
  /** Upstreams whose list was cut short, warned about once. */
  readonly #warned = new Set<string>();
  /** Upstreams whose cursor was too long to carry, warned about once. */
  readonly #warnedCursor = new Set<string>();
  /** The last read of each upstream session's lists for shortened names (kept while the session is). */
  #aliasReads = new WeakMap<Listing, Map<ListKind, AliasRead>>();

  constructor(codec: NamespaceCodec, logger: Logger, options: CatalogOptions = {}) {
    this.#codec = codec;
    this.#logger = logger;
    this.#aliases = new LRUCache({ max: options.aliasLimit ?? 50_000 });
    this.#toolLimit = options.toolLimit;
    this.#ontruncate = options.ontruncate;
    this.#screen = options.screen;
  }

  get codec(): NamespaceCodec {
    return this.#codec;
  }

  /** A new naming scheme (config reload); aliases of the old one no longer apply. */
  setCodec(codec: NamespaceCodec): void {
    this.#codec = codec;
    this.#aliases.clear();
    this.#aliasReads = new WeakMap();
  }

  /** `client` said its list of `kind` changed: a shortened name not found there is looked for again at once. */
  listChanged(client: Listing, kind: ListKind): void {
    this.#aliasReads.get(client)?.delete(kind);
  }

  /**
   * One page of the merged list of `kind`. `observe` sees each upstream page as the upstream
   * gave it (renamed); `shape` decides what of it the client is shown.
   */
  async list(
    kind: ListKind,
    upstreams: Sources,
    cursor: unknown,
    options: { signal?: CancelSignal; observe?: PageObserver; shape?: (upstream: string, item: JsonObject) => JsonObject | undefined; extra?: (upstream: string) => readonly JsonObject[] | undefined } = {},
  ): Promise<JsonObject> {
    const { signal, observe, shape, extra } = options;
    const { method } = LIST_KINDS[kind];
    const first = cursor === undefined;
    const decoded = first ? undefined : decodeCursor(kind, cursor, upstreams.size);
    const targets: [string, string | undefined][] = decoded ? Object.entries(decoded.cursors) : [...upstreams.keys()].map((name) => [name, undefined]);
    const pages = await Promise.all(
      targets.map(async ([name, upstreamCursor]) => {
        const client = upstreams.get(name);
        if (!client || client.closed || !supportsMethod(client.capabilities, method)) return undefined;
        try {
          return { name, ...(await this.#page(kind, client, upstreamCursor, signal, decoded?.seen[name])) };
        } catch (err) {
          // A down upstream only removes its own items from a first page. Failing in the middle
          // of a traversal would silently truncate it, so that is the client's error to retry.
          if (!first) throw err;
          this.#logger.warn('upstream left out of a list', { upstream: name, method, err });
          return undefined;
        }
      }),
    );
    const items: JsonObject[] = [];
    const next: Record<string, string> = {};
    const seen: Record<string, Seen> = {};
    for (const page of pages.filter((p) => p !== undefined).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      // Items the gateway adds to an upstream's list (already exposed) go after its last page.
      const added = page.nextCursor === undefined && extra ? extra(page.name) : undefined;
      for (const item of added ? [...page.items, ...added] : page.items) {
        const shown = shape ? shape(page.name, item) : item;
        if (shown) items.push(shown);
      }
      if (page.nextCursor !== undefined) {
        next[page.name] = page.nextCursor;
        if (page.seen) seen[page.name] = page.seen;
      }
      observe?.({ upstream: page.name, items: page.items, originals: page.originals, first, more: page.nextCursor !== undefined, ...this.#limitOf(kind, page.name) });
    }
    const result: JsonObject = { [kind]: items };
    if (Object.keys(next).length > 0) result.nextCursor = encodeCursor(kind, next, seen);
    return result;
  }

  /** The fingerprint of an upstream's whole list of `kind`, read afresh (after a restart). */
  async fingerprint(kind: ListKind, client: Listing): Promise<string | undefined> {
    if (!supportsMethod(client.capabilities, LIST_KINDS[kind].method)) return undefined;
    let fingerprint = '';
    await this.scan(kind, client, (page) => (fingerprint = extendFingerprint(fingerprint, page.items)));
    return fingerprint;
  }

  /** Reads an upstream's whole list of `kind`, page by page (bounded), telling `onPage` each. */
  async scan(kind: ListKind, client: Listing, onPage: PageObserver): Promise<void> {
    if (!supportsMethod(client.capabilities, LIST_KINDS[kind].method)) return;
    let cursor: string | undefined;
    let seen: Seen | undefined;
    const limit = this.#limitOf(kind, client.name);
    for (let page = 0; page < MAX_ALIAS_PAGES; page++) {
      const result = await this.#page(kind, client, cursor, undefined, seen);
      onPage({ upstream: client.name, items: result.items, originals: result.originals, first: page === 0, more: result.nextCursor !== undefined, ...limit });
      cursor = result.nextCursor;
      seen = result.seen;
      if (cursor === undefined) return;
    }
  }

  /** The upstream client and original name behind a client-facing tool or prompt name. */
  resolveName(kind: 'tools' | 'prompts', exposed: string, upstreams: Upstreams): Target | undefined | Promise<Target | undefined> {
    const split = this.#codec.splitName(exposed);
    if (!split) return undefined;
    const client = this.#clientFor(split.upstream, upstreams);
    // Only a shortened name may need its upstream's list read (no promise otherwise).
    if (!this.#codec.isShortened(split.local)) return { client, name: split.local };
    const key = `${kind}:${exposed}`;
    const found = (): Target | undefined => {
      const name = this.#aliases.get(key);
      return name === undefined ? undefined : { client, name };
    };
    return this.#aliases.has(key) ? found() : this.#refreshAliases(kind, client).then(found);
  }

  /** The upstream client and original URI behind a client-facing resource URI or template. */
  resolveUri(exposed: string, upstreams: Upstreams): { client: UpstreamClient; uri: string } | undefined {
    const split = this.#codec.splitUri(exposed);
    if (!split) return undefined;
    return { client: this.#clientFor(split.upstream, upstreams), uri: split.uri };
  }

  #clientFor(upstream: string, upstreams: Upstreams): UpstreamClient {
    const client = upstreams.get(upstream);
    if (!client || client.closed) throw new GatewayError('upstream_unavailable', `Upstream ${upstream} is unavailable`);
    return client;
  }

  /**
   * One page of an upstream's list, renamed. `seen` is what earlier pages of the traversal
   * listed: a tool list stops at the upstream's limit (the rest of the page and its cursor go).
   */
  async #page(kind: ListKind, client: Listing, cursor: string | undefined, signal?: CancelSignal, seen?: Seen): Promise<{ items: JsonObject[]; originals: string[]; nextCursor?: string; seen?: Seen }> {
    const { method, field } = LIST_KINDS[kind];
    const result = await client.request(method, cursor === undefined ? undefined : { cursor }, { signal });
    const listed = Array.isArray(result[kind]) ? (result[kind] as unknown[]) : [];
    // Definitions are pinned as the upstream listed them, before any rename or view.
    const raw = this.#screen && (kind === 'tools' || kind === 'prompts') ? await this.#screen(kind, client.name, listed.filter((item): item is JsonObject => isObject(item) && typeof item.name === 'string' && item.name !== ''), typeof result.nextCursor !== 'string') : listed;
    const items: JsonObject[] = [];
    const originals: string[] = [];
    const limit = kind === 'tools' ? this.#toolLimit?.(client.name) : undefined;
    let [count, bytes] = seen ?? [0, 0];
    let truncated = false;
    for (const item of raw) {
      const original = isObject(item) ? item[field] : undefined;
      if (typeof original !== 'string' || original === '') continue; // hostile or broken entry
      if (limit) {
        bytes += JSON.stringify(item).length;
        if (++count > limit.count || bytes > limit.bytes) {
          truncated = true;
          break;
        }
      }
      originals.push(original);
      const exposed =
        field === 'name' ? this.#exposeName(kind, client.name, original)
        : field === 'taskId' ? this.#codec.exposeTaskId(client.name, original)
        : this.#codec.exposeUri(client.name, original);
      const renamed = exposed === original ? (item as JsonObject) : { ...(item as JsonObject), [field]: exposed };
      items.push(kind === 'tools' ? exposeToolMeta(renamed, this.#codec, client.name) : renamed);
    }
    if (truncated) {
      this.#truncated(client.name, limit!);
      return { items, originals };
    }
    const nextCursor = typeof result.nextCursor === 'string' ? result.nextCursor : undefined;
    if (nextCursor === undefined) return { items, originals };
    if (!carriesCursor(nextCursor)) {
      this.#cursorTooLong(client.name, nextCursor.length);
      return { items, originals };
    }
    return limit ? { items, originals, nextCursor, seen: [count, bytes] } : { items, originals, nextCursor };
  }

  #truncated(upstream: string, limit: ListLimit): void {
    this.#ontruncate?.(upstream, limit);
    if (this.#warned.has(upstream)) return;
    this.#warned.add(upstream);
    this.#logger.warn('upstream lists more tools than its limit; the rest are left out', { upstream, maxTools: limit.count, maxToolBytes: limit.bytes });
  }

  #cursorTooLong(upstream: string, length: number): void {
    if (this.#warnedCursor.has(upstream)) return;
    this.#warnedCursor.add(upstream);
    this.#logger.warn('upstream gave a cursor too long to carry; its list ends there', { upstream, length, maxBytes: MAX_UPSTREAM_CURSOR_BYTES });
  }

  #exposeName(kind: ListKind, upstream: string, original: string): string {
    const exposed = this.#codec.exposeName(upstream, original);
    const split = this.#codec.splitName(exposed);
    if (split && split.local !== original) {
      this.#aliases.set(`${kind}:${exposed}`, original);
    }
    return exposed;
  }

  /** A tool list's bound, as a page carries it. */
  #limitOf(kind: ListKind, upstream: string): { limit?: ListLimit } {
    const limit = kind === 'tools' ? this.#toolLimit?.(upstream) : undefined;
    return limit ? { limit } : {};
  }

  /**
   * Reads the upstream session's list for the shortened names it holds: concurrent misses wait
   * for one read, and a read that ended stands for REREAD_INTERVAL_MS (or until `listChanged`),
   * so a name it did not find stays unknown meanwhile. A read that failed stands for nothing.
   */
  #refreshAliases(kind: ListKind, client: Listing): Promise<void> {
    let reads = this.#aliasReads.get(client);
    if (!reads) this.#aliasReads.set(client, (reads = new Map()));
    const last = reads.get(kind);
    if (last && (last.at === undefined || Date.now() - last.at < REREAD_INTERVAL_MS)) return last.done;
    const read: AliasRead = { at: undefined, done: this.scan(kind, client, () => {}) };
    reads.set(kind, read);
    read.done.then(
      () => void (read.at = Date.now()),
      () => void (reads.get(kind) === read && reads.delete(kind)),
    );
    return read.done;
  }
}

function encodeCursor(kind: ListKind, cursors: Record<string, string>, seen: Record<string, Seen>): string {
  const value = Object.keys(seen).length > 0 ? { k: kind, c: cursors, n: seen } : { k: kind, c: cursors };
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

/** A composite cursor back to each upstream's own; `sources` is how many upstreams the list reads (the bound on its length). */
function decodeCursor(kind: ListKind, cursor: unknown, sources: number): { cursors: Record<string, string>; seen: Record<string, Seen> } {
  const invalid = new GatewayError('invalid_cursor', 'Invalid cursor');
  if (typeof cursor !== 'string' || cursor.length > CURSOR_CHARS_PER_UPSTREAM * Math.max(1, sources)) throw invalid;
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw invalid;
  }
  if (!isObject(value) || value.k !== kind || !isObject(value.c)) throw invalid;
  const cursors: Record<string, string> = {};
  for (const [name, c] of Object.entries(value.c)) {
    // Only a cursor the gateway could have issued goes upstream (and into a catalog's cache key).
    if (typeof c !== 'string' || !carriesCursor(c)) throw invalid;
    cursors[name] = c;
  }
  // What the traversal listed so far travels with the client. A forged count only changes how
  // much of its own list this client is shown; the work per page stays bounded by the page.
  const seen: Record<string, Seen> = {};
  if (isObject(value.n)) {
    for (const [name, n] of Object.entries(value.n)) {
      if (!Array.isArray(n) || n.length !== 2 || !n.every((x) => Number.isSafeInteger(x) && (x as number) >= 0)) throw invalid;
      seen[name] = [n[0] as number, n[1] as number];
    }
  }
  return { cursors, seen };
}
