// An upstream's instructions as the client reads them through the gateway: the names it gives
// its own tools, prompts, resources and templates in backticks (`add`, `fmcp://docs/readme`)
// become the names the client sees (`fmcp__add`, `fmcp+fmcp://docs/readme`), read from the
// upstream's own lists, as the session is shown them (a team's view renames a tool). Text
// outside backticks, and a backticked word that names nothing the session can see there (an
// environment variable, a code sample, a tool its teams hide), stay as the upstream wrote them.
import { LIST_KINDS, type Catalog, type Listing } from '../names/lists.js';
import { hintsOf, type Access, type ItemKind } from '../policy/policy.js';
import type { JsonObject } from '../mcp/jsonrpc.js';

/** One inline code span: single backticks, within one line. */
const SPAN = /`([^`\n]+)`/g;

/** What a code span may name: a URI (it has `://`) is a resource's or template's, anything else a tool's or prompt's. */
const NAME_KINDS = ['tools', 'prompts'] as const;
const URI_KINDS = ['resources', 'resourceTemplates'] as const;

const ITEM_KINDS: Record<(typeof NAME_KINDS)[number] | (typeof URI_KINDS)[number], ItemKind> = { tools: 'tool', prompts: 'prompt', resources: 'resource', resourceTemplates: 'resource' };

/** The name `access` is shown an item by (its view's, for a tool), or undefined when it may not see the item: the same decision as its lists. */
function shownTo(access: Access, kind: keyof typeof ITEM_KINDS, upstream: string, item: JsonObject, exposed: string): string | undefined {
  const tool = kind === 'tools';
  if (!access.canSee(ITEM_KINDS[kind], exposed, upstream, tool && access.readsHints ? hintsOf(item) : undefined)) return undefined;
  return (tool ? access.view(exposed)?.name : undefined) ?? exposed;
}

/**
 * `text` with the backticked names of `listing`'s upstream rewritten as `access` is shown them.
 * The lists are read only when the text has a code span (tools and prompts for a name,
 * resources and templates for a URI); a list that cannot be read renames nothing.
 */
export async function exposeNamesIn(text: string, listing: Listing, catalog: Catalog, access: Access): Promise<string> {
  const wanted = new Set<string>();
  for (const match of text.matchAll(SPAN)) wanted.add(match[1]!);
  if (wanted.size === 0) return text;
  // Only the lists a span may name are read (a session opens on this path).
  const uris = [...wanted].some((span) => span.includes('://'));
  const names = [...wanted].some((span) => !span.includes('://'));
  const kinds = [...(names ? NAME_KINDS : []), ...(uris ? URI_KINDS : [])];
  const exposed = new Map<string, string>();
  await Promise.all(
    kinds.map((kind) =>
      catalog
        .scan(kind, listing, (page) => {
          const field = LIST_KINDS[kind].field;
          page.originals.forEach((original, i) => {
            const item = page.items[i];
            const name = item?.[field];
            if (!wanted.has(original) || exposed.has(original) || typeof name !== 'string') return;
            const shown = shownTo(access, kind, listing.name, item!, name);
            if (shown !== undefined) exposed.set(original, shown);
          });
        })
        .catch(() => {}),
    ),
  );
  if (exposed.size === 0) return text;
  return text.replace(SPAN, (span, inner: string) => {
    const shown = exposed.get(inner);
    return shown === undefined ? span : `\`${shown}\``;
  });
}

/** An upstream's instructions under a heading of the prefix its names carry here, its backticked names as the client sees them. */
export async function instructionsSection(upstream: string, raw: string, listing: Listing, catalog: Catalog, access: Access): Promise<string> {
  const prefix = catalog.codec.prefixOf(upstream);
  const text = await exposeNamesIn(raw, listing, catalog, access);
  return prefix === '' ? `## ${upstream} (names unchanged)\n${text}` : `## ${prefix}\n${text}`;
}

/** Said once above the sections: the upstreams' own texts name their tools without the prefix. */
export function namingNote(catalog: Catalog): string {
  const { separator } = catalog.codec;
  return `Each section below is one server's own instructions, under the prefix its names carry here: the names of its tools, prompts and resources in backticks are written as they are called here, and a tool or prompt its text calls \`x\` otherwise is \`<prefix>${separator}x\` through this gateway.`;
}
