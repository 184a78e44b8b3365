// Whether a tool or prompt exists at the session's upstream session, from the lists this
// session read, reading the list again (rarely) for a name not seen yet. The gateway answers
// unknown names itself, so a name that does not exist and one the policy hides look the same.
import type { JsonObject } from '../mcp/jsonrpc.js';
import type { ToolFact } from '../session/session.js';
import type { DownstreamSession } from './session.js';
import type { Catalog, ListedPage, Sources } from '../names/lists.js';
import type { Listing } from '../names/lists.js';

/** A name new to the session reads the upstream's list again at most this often (unless it changed). */
const REREAD_INTERVAL_MS = 10_000;

export type NamedKind = 'tools' | 'prompts';

/** What is kept of each listed item: a tool's facts (its schema, its destructiveness). */
export type FactOf = (item: JsonObject) => ToolFact;

/** Adds a list page to what the session knows its upstream session lists (with each tool's facts). */
export function rememberNames(session: DownstreamSession, kind: NamedKind, page: ListedPage, factOf?: FactOf): void {
  const record = session.links.get(page.upstream);
  if (!record) return;
  let names = record.known[kind]?.names;
  if (!names || page.first) {
    names = new Map();
    record.known[kind] = { names, readAt: Date.now() };
  }
  addNames(names, page, factOf);
}

function addNames(names: Map<string, ToolFact | undefined>, page: ListedPage, factOf: FactOf | undefined): void {
  page.originals.forEach((name, i) => names.set(name, factOf?.(page.items[i]!)));
}

/** Forgets what a session knew of an upstream (its list changed, or it was replaced). */
export function forgetNames(session: DownstreamSession, upstream: string, kind?: NamedKind): void {
  const known = session.links.get(upstream)?.known;
  if (!known) return;
  for (const k of kind ? [kind] : (['tools', 'prompts'] as const)) delete known[k];
}

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
  if (known && Date.now() - known.readAt < REREAD_INTERVAL_MS) return known.names === undefined;
  // Where the list is read from (`readFrom`: the catalog's cache) is asked only now, off the call path.
  return readListed(session, kind, readFrom?.() ?? client, name, catalog, learn, factOf);
}

/** The facts this session learned of a tool of its upstream session (undefined: nothing known). */
export function factOfTool(session: DownstreamSession, upstream: string, name: string): ToolFact | undefined {
  return session.links.get(upstream)?.known.tools?.names?.get(name);
}

async function readListed(session: DownstreamSession, kind: NamedKind, client: Listing, name: string, catalog: Catalog, learn?: (page: ListedPage) => void, factOf?: FactOf): Promise<boolean> {
  const names = new Map<string, ToolFact | undefined>();
  try {
    await catalog.scan(kind, client, (page) => {
      addNames(names, page, factOf);
      learn?.(page);
    });
  } catch {
    const known = session.links.get(client.name)?.known;
    if (known) known[kind] = { names: undefined, readAt: Date.now() };
    return true;
  }
  const known = session.links.get(client.name)?.known;
  if (known) known[kind] = { names, readAt: Date.now() };
  return names.has(name);
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
    let found = false;
    await catalog.scan('resources', listing, (page) => void (found ||= page.originals.includes(uri))).catch(() => {});
    return found;
  });
}
