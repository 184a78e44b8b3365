// Whether a tool or prompt exists at the session's upstream session, and which upstream lists a
// bare URI, from the lists this session read (bounded), reading a list again (at most once per
// re-read interval, unless it changed) for a name not seen yet. The gateway answers unknown
// names itself, so a name that does not exist and one the policy hides look the same.
import type { JsonObject } from '../mcp/jsonrpc.js';
import { listChangeOf, listKindOf } from '../mcp/methods.js';
import type { KnownNames, ToolFact } from '../session/session.js';
import type { UpstreamClient } from '../upstream/client.js';
import type { DownstreamSession } from './session.js';
import { REREAD_INTERVAL_MS, type Catalog, type ListedPage, type ListKind, type Listing, type Sources } from '../names/lists.js';

/**
 * The most names a session keeps of one list of one upstream, and the most characters of them
 * (a tool list's own bound, maxTools and maxToolBytes, when larger). Past either the list is
 * kept partial: a name not kept is taken to exist and goes to its upstream, which answers, as
 * when the list cannot be read.
 */
const MAX_KNOWN_NAMES = 10_000;
const MAX_KNOWN_CHARS = 1024 * 1024;

export type NamedKind = 'tools' | 'prompts';
/** The lists a session keeps names of: tools and prompts (unknown names answered here), resources (bare URIs' owners). */
type KnownKind = NamedKind | 'resources';

/** What is kept of each listed item: a tool's facts (its schema, its destructiveness). */
export type FactOf = (item: JsonObject) => ToolFact;

/** Adds a list page to what the session knows its upstream session lists (with each tool's facts), within the bounds. */
export function rememberNames(session: DownstreamSession, kind: NamedKind, page: ListedPage, factOf?: FactOf): void {
  const record = session.links.get(page.upstream);
  if (!record) return;
  let known = record.known[kind];
  if (!known || page.first) record.known[kind] = known = { names: new Map(), readAt: Date.now() };
  // A list that could not be read stays so until it is read from its first page.
  if (known.names) keep(known, page, factOf);
}

/** Adds a page's names to `known`; false once the bounds are reached (the list is then partial). */
function keep(known: KnownNames, page: ListedPage, factOf: FactOf | undefined): boolean {
  const names = known.names!;
  if (known.partial) return false;
  const most = Math.max(MAX_KNOWN_NAMES, page.limit?.count ?? 0);
  const mostChars = Math.max(MAX_KNOWN_CHARS, page.limit?.bytes ?? 0);
  for (const [i, name] of page.originals.entries()) {
    const added = !names.has(name);
    const chars = (known.chars ?? 0) + (added ? name.length : 0);
    if (added && (names.size >= most || chars > mostChars)) {
      known.partial = true;
      return false;
    }
    known.chars = chars;
    names.set(name, factOf?.(page.items[i]!));
  }
  return true;
}

/** Forgets what a session knew of an upstream (its list changed, or it was replaced); every list without `kind`. */
export function forgetNames(session: DownstreamSession, upstream: string, kind?: ListKind): void {
  const record = session.links.get(upstream);
  if (!record) return;
  for (const k of kind ? [kind] : (['tools', 'prompts', 'resources'] as const)) {
    if (k !== 'tools' && k !== 'prompts' && k !== 'resources') continue;
    delete record.known[k];
    // A read under way answers who waits for it, and is kept by nobody.
    record.reading.delete(k);
  }
}

/**
 * Has the list_changed notifications of `client` make the sessions it serves (`sessions()`)
 * forget what they knew of the lists that changed, before the notification is relayed: the
 * client may ask at once, and a name new to the list is then read, not refused.
 */
export function forgetOnListChange(client: UpstreamClient, catalog: Catalog, sessions: () => Iterable<DownstreamSession>): void {
  const relay = client.onnotification;
  client.onnotification = (message, context) => {
    for (const method of listChangeOf(message.method)?.methods ?? []) {
      const kind = listKindOf(method);
      if (kind === undefined) continue;
      catalog.listChanged(client, kind);
      for (const session of sessions()) forgetNames(session, client.name, kind);
    }
    relay?.(message, context);
  };
}

/** Whether what is known of a list says it has `name`: among its names, or not all of them could be kept or read. */
const says = (known: KnownNames, name: string): boolean => known.names === undefined || known.partial === true || known.names.has(name);

/**
 * Whether the upstream session lists `name`; true when its list cannot be read (it will answer).
 * Answered at once (no promise) from what the session knows; a promise only when the list must
 * be read again (every tools/call asks).
 */
export function listed(
  session: DownstreamSession,
  kind: NamedKind,
  client: Listing,
  name: string,
  catalog: Catalog,
  learn?: (page: ListedPage) => void,
  factOf?: FactOf,
  readFrom?: () => Listing,
): boolean | Promise<boolean> {
  const known = session.links.get(client.name)?.known[kind];
  if (known?.names?.has(name)) return true;
  if (known && Date.now() - known.readAt < REREAD_INTERVAL_MS) return says(known, name);
  // Where the list is read from (`readFrom`: the catalog's cache) is asked only now, off the call path.
  return readList(session, kind, readFrom?.() ?? client, catalog, learn, factOf).then((read) => says(read, name));
}

/** The facts this session learned of a tool of its upstream session (undefined: nothing known). */
export function factOfTool(session: DownstreamSession, upstream: string, name: string): ToolFact | undefined {
  return session.links.get(upstream)?.known.tools?.names?.get(name);
}

/**
 * Reads the upstream's list of `kind` (bounded: MAX_ALIAS_PAGES, and no further than what is
 * kept) into what the session knows of it. Concurrent misses wait for one read; what it read
 * stands for REREAD_INTERVAL_MS, unless the upstream says the list changed (`forgetNames`).
 */
function readList(session: DownstreamSession, kind: KnownKind, client: Listing, catalog: Catalog, learn?: (page: ListedPage) => void, factOf?: FactOf): Promise<KnownNames> {
  const record = session.links.get(client.name);
  const running = record?.reading.get(kind);
  if (running) return running;
  const read = scanNames(kind, client, catalog, learn, factOf).then((known) => {
    if (record?.reading.get(kind) === read) {
      record.known[kind] = known;
      record.reading.delete(kind);
    }
    return known;
  });
  record?.reading.set(kind, read);
  return read;
}

async function scanNames(kind: KnownKind, client: Listing, catalog: Catalog, learn?: (page: ListedPage) => void, factOf?: FactOf): Promise<KnownNames> {
  const known: KnownNames = { names: new Map(), readAt: 0 };
  const full = new Error('no more names are kept');
  try {
    await catalog.scan(kind, client, (page) => {
      learn?.(page);
      if (!keep(known, page, factOf)) throw full;
    });
  } catch (err) {
    // Failed part way: what was read is kept, and the rest goes on as when the list cannot be read.
    if (err !== full) known.partial = true;
  }
  known.readAt = Date.now();
  return known;
}

/** The one upstream among `sources` for which `owns` holds, asked of all at once; undefined when none or several. */
async function soleOwner(sources: Sources, owns: (upstream: string, listing: Listing) => Promise<boolean>): Promise<string | undefined> {
  const owners: string[] = [];
  await Promise.all([...sources].map(async ([upstream, listing]) => (await owns(upstream, listing)) && owners.push(upstream)));
  return owners.length === 1 ? owners[0] : undefined;
}

/**
 * The one upstream among `sources` whose tool list has `name` as the upstream's own name and
 * whose namespaced form the session may call (an MCP Apps View calls its server's tools by their
 * own names); undefined when none or several do. Only a list read says so: a list that could not
 * be read names nothing here.
 */
export function ownerOfBareName(session: DownstreamSession, name: string, sources: Sources, catalog: Catalog, learn?: (page: ListedPage) => void, factOf?: FactOf): Promise<string | undefined> {
  return soleOwner(sources, async (upstream, listing) => {
    if (!session.access.mayCall(catalog.codec.exposeName(upstream, name), upstream)) return false;
    await listed(session, 'tools', listing, name, catalog, learn, factOf);
    return session.links.get(upstream)?.known.tools?.names?.has(name) === true;
  });
}

/**
 * The one upstream among `sources` that lists a resource of exactly this URI, as it wrote it,
 * and whose namespaced form the session may see; undefined when none or several do.
 */
export function ownerOfBareUri(session: DownstreamSession, uri: string, sources: Sources, catalog: Catalog): Promise<string | undefined> {
  return soleOwner(sources, async (upstream, listing) => {
    if (!session.access.canSee('resource', catalog.codec.exposeUri(upstream, uri), upstream)) return false;
    // What the session read of the list answers within the re-read interval: a miss reads it once.
    const known = session.links.get(upstream)?.known.resources;
    if (known?.names?.has(uri)) return true;
    if (known && Date.now() - known.readAt < REREAD_INTERVAL_MS) return false;
    return (await readList(session, 'resources', listing, catalog)).names?.has(uri) === true;
  });
}
