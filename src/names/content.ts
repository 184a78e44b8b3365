// URIs an upstream writes inside content, shown as the client can use them through the gateway:
// a `resource_link`'s uri and an embedded `resource`'s uri in tool results
// (content, and a task's result), in prompt messages, and `contents[].uri` of resources/read
// come back namespaced (`<prefix>+<uri>`; unchanged for an unprefixed upstream), so the client
// can read or subscribe to what it was given. structuredContent and free text are the tool's
// data and stay as they are. A result with nothing to rewrite is returned as it came (no copy).
// A listed tool's MCP Apps UI resource (`_meta.ui.resourceUri`, and the legacy flat key) is
// namespaced the same way, keeping its `ui://` scheme (namespace.ts).
import { isObject, type JsonObject } from '../mcp/jsonrpc.js';

/** What rewrites a URI of one upstream (the namespace codec). */
export interface UriCodec {
  exposeUri(upstream: string, uri: string): string;
}

/** One content block with its URI namespaced, or the same block. */
function block(item: unknown, codec: UriCodec, upstream: string): unknown {
  if (!isObject(item)) return item;
  if (item.type === 'resource_link' && typeof item.uri === 'string') {
    const uri = codec.exposeUri(upstream, item.uri);
    return uri === item.uri ? item : { ...item, uri };
  }
  if (item.type === 'resource' && isObject(item.resource) && typeof item.resource.uri === 'string') {
    const uri = codec.exposeUri(upstream, item.resource.uri);
    return uri === item.resource.uri ? item : { ...item, resource: { ...item.resource, uri } };
  }
  return item;
}

/** The legacy flat key of a tool's UI resource (ext-apps keeps both in step). */
const LEGACY_UI_KEY = 'ui/resourceUri';

/** A listed tool with the UI resource its `_meta` names (MCP Apps) namespaced; the same item when it names none. */
export function exposeToolMeta(item: JsonObject, codec: UriCodec, upstream: string): JsonObject {
  const meta = item._meta;
  if (!isObject(meta)) return item;
  let out: JsonObject | undefined;
  const ui = meta.ui;
  if (isObject(ui) && typeof ui.resourceUri === 'string') {
    const uri = codec.exposeUri(upstream, ui.resourceUri);
    if (uri !== ui.resourceUri) out = { ...meta, ui: { ...ui, resourceUri: uri } };
  }
  const flat = meta[LEGACY_UI_KEY];
  if (typeof flat === 'string') {
    const uri = codec.exposeUri(upstream, flat);
    if (uri !== flat) out = { ...(out ?? meta), [LEGACY_UI_KEY]: uri };
  }
  return out ? { ...item, _meta: out } : item;
}

function isLink(item: unknown): boolean {
  return isObject(item) && (item.type === 'resource_link' || item.type === 'resource');
}

/** The blocks of an array, the same array when none changed. */
function blocks(items: unknown[], map: (item: unknown) => unknown): unknown[] {
  let out: unknown[] | undefined;
  for (let i = 0; i < items.length; i++) {
    const mapped = map(items[i]);
    if (mapped !== items[i]) (out ??= items.slice())[i] = mapped;
  }
  return out ?? items;
}

/** A tools/call (or tasks/result) result with the URIs of its content blocks namespaced. */
export function exposeToolResult(result: JsonObject, codec: UriCodec, upstream: string): JsonObject {
  if (!Array.isArray(result.content)) return result;
  // Every call's path: most results carry text only, and are returned untouched without a copy.
  if (!result.content.some(isLink)) return result;
  const content = blocks(result.content, (item) => block(item, codec, upstream));
  return content === result.content ? result : { ...result, content };
}

/**
 * What a request about a task answers, with its result's URIs namespaced as a tools/call's are:
 * tasks/result's tool result, or a task (tasks/get, notifications/tasks of the Tasks extension)
 * carrying its result inline.
 */
export function exposeTaskAnswer(answer: JsonObject, codec: UriCodec, upstream: string): JsonObject {
  const own = exposeToolResult(answer, codec, upstream);
  if (!isObject(own.result)) return own;
  const result = exposeToolResult(own.result, codec, upstream);
  return result === own.result ? own : { ...own, result };
}

/** A prompts/get result with the URIs of its messages' content namespaced. */
export function exposePromptResult(result: JsonObject, codec: UriCodec, upstream: string): JsonObject {
  if (!Array.isArray(result.messages)) return result;
  const messages = blocks(result.messages, (message) => {
    if (!isObject(message)) return message;
    const content = Array.isArray(message.content) ? blocks(message.content, (item) => block(item, codec, upstream)) : block(message.content, codec, upstream);
    return content === message.content ? message : { ...message, content };
  });
  return messages === result.messages ? result : { ...result, messages };
}

/** A resources/read result with each content's uri namespaced. */
export function exposeReadResult(result: JsonObject, codec: UriCodec, upstream: string): JsonObject {
  if (!Array.isArray(result.contents)) return result;
  const contents = blocks(result.contents, (item) => {
    if (!isObject(item) || typeof item.uri !== 'string') return item;
    const uri = codec.exposeUri(upstream, item.uri);
    return uri === item.uri ? item : { ...item, uri };
  });
  return contents === result.contents ? result : { ...result, contents };
}
