// An upstream's instructions as the client reads them through the gateway: the names it gives
// its own tools, prompts, resources and templates in backticks (`add`, `fmcp://docs/readme`)
// become the names the client sees (`fmcp__add`, `fmcp+fmcp://docs/readme`), read from the
// upstream's own lists. Text outside backticks, and a backticked word that names nothing the
// upstream lists (an environment variable, a code sample), stay as the upstream wrote them.
import { LIST_KINDS, type Catalog, type Listing } from '../names/lists.js';

/** One inline code span: single backticks, within one line. */
const SPAN = /`([^`\n]+)`/g;

const NAMED_KINDS = ['tools', 'prompts', 'resources', 'resourceTemplates'] as const;

/**
 * `text` with the backticked names of `listing`'s upstream rewritten. The lists are read only
 * when the text has a code span; a list that cannot be read renames nothing.
 */
export async function exposeNamesIn(text: string, listing: Listing, catalog: Catalog): Promise<string> {
  const wanted = new Set<string>();
  for (const match of text.matchAll(SPAN)) wanted.add(match[1]!);
  if (wanted.size === 0) return text;
  const exposed = new Map<string, string>();
  await Promise.all(
    NAMED_KINDS.map((kind) =>
      catalog
        .scan(kind, listing, (page) => {
          const field = LIST_KINDS[kind].field;
          page.originals.forEach((original, i) => {
            const shown = page.items[i]?.[field];
            if (wanted.has(original) && typeof shown === 'string' && !exposed.has(original)) exposed.set(original, shown);
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
