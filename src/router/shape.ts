// What one principal is shown of a list: items its teams may not see are left out (the same
// decision that guards calls), and a team's view renames or re-describes a tool and removes
// its pinned arguments from the schema.
import { isObject, type JsonObject } from '../mcp/jsonrpc.js';
import { hintsOf, type Access, type ItemKind } from '../policy/policy.js';
import type { ListKind } from '../names/lists.js';

const ITEM: Partial<Record<ListKind, { kind: ItemKind; field: string }>> = {
  tools: { kind: 'tool', field: 'name' },
  prompts: { kind: 'prompt', field: 'name' },
  resources: { kind: 'resource', field: 'uri' },
  resourceTemplates: { kind: 'resource', field: 'uriTemplate' },
};

export function shapeItem(access: Access, list: ListKind, upstream: string, item: JsonObject): JsonObject | undefined {
  const info = ITEM[list];
  if (!info) return item; // tasks: the session's own
  const name = item[info.field];
  // A tool is decided on its upstream's annotations, never on what a view says of it.
  if (typeof name !== 'string' || !access.canSee(info.kind, name, upstream, info.kind === 'tool' && access.readsHints ? hintsOf(item) : undefined)) return undefined;
  if (list !== 'tools') return item;
  const view = access.view(name);
  if (!view) return item;
  const shaped: JsonObject = { ...item };
  if (view.name !== undefined) shaped.name = view.name;
  if (view.title !== undefined) shaped.title = view.title;
  if (view.description !== undefined) shaped.description = view.description;
  const pinned = Object.keys(view.pin);
  if (pinned.length > 0 && isObject(item.inputSchema)) shaped.inputSchema = withoutProperties(item.inputSchema, pinned);
  return shaped;
}

/** The schema without the pinned properties (and no longer requiring them). */
function withoutProperties(schema: JsonObject, names: readonly string[]): JsonObject {
  const out: JsonObject = { ...schema };
  if (isObject(schema.properties)) {
    const properties = { ...schema.properties };
    for (const name of names) delete properties[name];
    out.properties = properties;
  }
  if (Array.isArray(schema.required)) out.required = schema.required.filter((name) => !names.includes(name as string));
  return out;
}
