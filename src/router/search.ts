// Search mode (endpoints[].discovery: search): instead of every tool, tools/list shows the pinned
// tools and two of the gateway's own, `search_tools` and `call_tool`. A search ranks the tools
// this session may call by BM25 (MiniSearch) over their names, titles, descriptions and
// argument names and descriptions. Indexes are built from the tools as the session is shown
// them (views applied), shared between sessions shown the same tools, and rebuilt when the
// session hears its tools changed (list_changed, restart, reload), when its upstreams change,
// or after a while in any case.
import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import MiniSearch from 'minisearch';
import { isObject, type JsonObject, type JsonRpcRequest } from '../mcp/jsonrpc.js';

export const SEARCH_TOOL = 'search_tools';
export const CALL_TOOL = 'call_tool';
export const DEFAULT_LIMIT = 5;
export const MAX_LIMIT = 20;
/**
 * A query's length at most, in characters (UTF-16 code units), and the distinct words of it
 * searched at most (stop words and repeats dropped): each word is a prefix and fuzzy search over
 * every tool, so an unbounded query would hold the event loop and the heap for as long as it liked.
 */
export const MAX_QUERY_LENGTH = 1_000;
export const MAX_QUERY_TERMS = 32;
/** A session's index is rebuilt at least this often (an upstream may change its list unannounced). */
const MAX_INDEX_AGE_MS = 60_000;
/** Distinct indexes kept (sessions shown the same tools share one). */
const MAX_INDEXES = 32;

/** What a search result gives of a tool: the shape tools/list would give. */
const RESULT_FIELDS = ['name', 'title', 'description', 'inputSchema', 'annotations'] as const;

const STOP_WORDS = new Set(
  'a an and any are as at be by can could do does for from get give has have how i in into is it its me my of on or our please some that the their them then there this to up us use using want we what when which will with would you your'.split(' '),
);

/** Words of a name or text: split at non-letters and camelCase humps, lowercased. */
function tokenize(text: string): string[] {
  return text
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((word) => word.length > 0);
}

/** A light English stemmer (plural and verb endings), so "entity" finds "entities". */
function stem(word: string): string {
  if (word.length <= 3) return word;
  if (word.endsWith('ies') && word.length > 4) return `${word.slice(0, -3)}y`;
  if (word.endsWith('sses')) return word.slice(0, -2);
  if (word.endsWith('ing') && word.length > 5) return word.slice(0, -3);
  if (word.endsWith('ed') && word.length > 4) return word.slice(0, -2);
  if (word.endsWith('es') && /(ch|sh|x|ss)es$/.test(word)) return word.slice(0, -2);
  if (word.endsWith('s') && !word.endsWith('ss') && !word.endsWith('us')) return word.slice(0, -1);
  return word;
}

/**
 * Words tool names and descriptions use for the same action or thing (a user says "look up",
 * a tool says "search"). A query's words are also searched as their group's other words, at a
 * lower weight than the words themselves.
 */
const SYNONYMS: readonly (readonly string[])[] = [
  ['search', 'find', 'lookup', 'look', 'query', 'locate', 'seek'],
  ['get', 'fetch', 'retrieve', 'read', 'obtain', 'load', 'view'],
  ['create', 'add', 'new', 'make', 'insert', 'register'],
  ['delete', 'remove', 'drop', 'erase', 'destroy', 'purge', 'clear'],
  ['update', 'edit', 'modify', 'change', 'patch', 'set'],
  ['list', 'enumerate', 'browse', 'show', 'all'],
  ['run', 'execute', 'invoke', 'call', 'trigger', 'start', 'launch'],
  ['write', 'save', 'store', 'put', 'persist'],
  ['send', 'post', 'notify', 'message'],
  ['sum', 'add', 'total', 'plus'],
  ['compress', 'zip', 'gzip', 'archive'],
  ['move', 'rename', 'relocate'],
  ['copy', 'duplicate', 'clone'],
  ['directory', 'folder', 'dir'],
  ['file', 'document', 'doc'],
  ['image', 'picture', 'photo', 'screenshot'],
  ['environment', 'env', 'variable', 'config'],
  ['error', 'fail', 'failure', 'bug', 'issue'],
  ['repeat', 'echo', 'return', 'back'],
];

/** word → the other words of its groups (stemmed); built once, never changed. */
const RELATED: ReadonlyMap<string, readonly string[]> = relatedOf(SYNONYMS);

function relatedOf(groups: readonly (readonly string[])[]): ReadonlyMap<string, readonly string[]> {
  const related = new Map<string, string[]>();
  for (const group of groups) {
    const stems = group.map(stem);
    for (const word of stems) related.set(word, [...new Set([...(related.get(word) ?? []), ...stems.filter((other) => other !== word)])]);
  }
  return related;
}

/**
 * The words of a query that are searched: stop words and repeats (as stemmed) dropped, the first
 * MAX_QUERY_TERMS kept, each as it was written (lowercased), so MiniSearch tokenizes and stems
 * them as it would have.
 */
export function queryWords(query: string): string[] {
  const terms = new Set<string>();
  const words: string[] = [];
  for (const token of tokenize(query)) {
    const term = processTerm(token);
    if (term === null || terms.has(term)) continue;
    terms.add(term);
    words.push(token);
    if (words.length === MAX_QUERY_TERMS) break;
  }
  return words;
}

/** The query's words' related words, for a second, lighter query. */
function relatedWords(words: readonly string[]): string[] {
  const related = new Set<string>();
  const own = new Set<string>();
  for (const word of words) {
    const term = processTerm(word)!;
    own.add(term);
    for (const other of RELATED.get(term) ?? []) related.add(other);
  }
  return [...related].filter((word) => !own.has(word));
}

function processTerm(term: string): string | null {
  return STOP_WORDS.has(term) ? null : stem(term);
}

/** The text of a tool's arguments: their names and descriptions. */
function argumentText(schema: unknown): string {
  if (!isObject(schema) || !isObject(schema.properties)) return '';
  const parts: string[] = [];
  for (const [name, property] of Object.entries(schema.properties)) {
    parts.push(name);
    if (isObject(property) && typeof property.description === 'string') parts.push(property.description);
  }
  return parts.join(' ');
}

/** Field weights of a query's related words: half of the words' own. */
const RELATED_BOOST = { name: 1, title: 0.75, description: 0.5, args: 0.3 };

/** A tool as a search result: the fields tools/list gives (description always present). */
function resultOf(tool: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const field of RESULT_FIELDS) if (tool[field] !== undefined) out[field] = tool[field];
  if (typeof out.description !== 'string') out.description = '';
  return out;
}

interface Document {
  id: number;
  name: string;
  title: string;
  description: string;
  args: string;
}

/** One set of tools, indexed. */
export class ToolIndex {
  readonly #tools: readonly JsonObject[];
  readonly #search: MiniSearch<Document>;

  constructor(tools: readonly JsonObject[]) {
    this.#tools = tools;
    this.#search = new MiniSearch<Document>({
      fields: ['name', 'title', 'description', 'args'],
      tokenize,
      processTerm,
      searchOptions: {
        boost: { name: 2, title: 1.5, description: 1, args: 0.6 },
        prefix: (term) => term.length >= 4,
        fuzzy: (term) => (term.length >= 6 ? 0.2 : false),
        combineWith: 'OR',
      },
    });
    this.#search.addAll(
      tools.map((tool, id) => ({
        id,
        name: String(tool.name),
        title: typeof tool.title === 'string' ? tool.title : '',
        description: typeof tool.description === 'string' ? tool.description : '',
        args: argumentText(tool.inputSchema),
      })),
    );
  }

  get size(): number {
    return this.#tools.length;
  }

  /** The best `limit` matches of `text` (its first MAX_QUERY_TERMS distinct words), best first. */
  search(text: string, limit: number): JsonObject[] {
    const words = queryWords(text);
    if (words.length === 0) return [];
    const query = words.join(' ');
    const related = relatedWords(words);
    const expanded = related.length === 0 ? query : { combineWith: 'OR' as const, queries: [query, { queries: [related.join(' ')], boost: RELATED_BOOST }] };
    return this.#search
      .search(expanded)
      .slice(0, limit)
      .map((hit) => resultOf(this.#tools[hit.id as number]!));
  }
}

interface SessionIndex {
  /** How many times the session had heard its tools changed when this was built. */
  epoch: number;
  /** The upstream sessions it was built from (a change of them is a change of tools). */
  sources: readonly object[];
  builtAt: number;
  index: ToolIndex;
}

/** Per gateway: the indexes, shared by content, and which one each session uses. */
export class ToolSearch {
  readonly #indexes = new LRUCache<string, ToolIndex>({ max: MAX_INDEXES });
  readonly #sessions = new WeakMap<object, SessionIndex>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** The session's index if it still stands for what the session is shown. */
  cached(session: object, epoch: number, sources: readonly object[]): ToolIndex | undefined {
    const entry = this.#sessions.get(session);
    if (!entry || entry.epoch !== epoch || this.#now() - entry.builtAt > MAX_INDEX_AGE_MS) return undefined;
    if (entry.sources.length !== sources.length || entry.sources.some((source, i) => source !== sources[i])) return undefined;
    return entry.index;
  }

  /** The index of `tools` (one already built for the same tools, or a new one), now the session's. */
  remember(session: object, epoch: number, sources: readonly object[], tools: readonly JsonObject[]): ToolIndex {
    const key = createHash('sha256').update(JSON.stringify(tools)).digest('base64url');
    let index = this.#indexes.get(key);
    if (!index) {
      index = new ToolIndex(tools);
      this.#indexes.set(key, index);
    }
    this.#sessions.set(session, { epoch, sources, builtAt: this.#now(), index });
    return index;
  }
}

/** The arguments of a search_tools call, or the message saying what is wrong with them. */
export function searchArguments(args: unknown): { query: string; limit: number } | string {
  const given = isObject(args) ? args : {};
  const { query, limit = DEFAULT_LIMIT } = given;
  if (typeof query !== 'string' || query.trim() === '') return `Invalid arguments for tool ${SEARCH_TOOL}: /query must be a non-empty string`;
  if (query.length > MAX_QUERY_LENGTH) return `Invalid arguments for tool ${SEARCH_TOOL}: /query must be at most ${MAX_QUERY_LENGTH} characters (a few words saying what the tool should do)`;
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) {
    return `Invalid arguments for tool ${SEARCH_TOOL}: /limit must be an integer from 1 to ${MAX_LIMIT}`;
  }
  return { query, limit };
}

/** The tools/call a call_tool call stands for, or the message saying what is wrong with it. */
export function callArguments(params: JsonObject): JsonObject | string {
  const args = isObject(params.arguments) ? params.arguments : {};
  if (typeof args.name !== 'string' || args.name === '') return `Invalid arguments for tool ${CALL_TOOL}: /name must be a tool name`;
  if (args.arguments !== undefined && !isObject(args.arguments)) return `Invalid arguments for tool ${CALL_TOOL}: /arguments must be an object`;
  const forwarded: JsonObject = { ...params, name: args.name };
  if (args.arguments === undefined) delete forwarded.arguments;
  else forwarded.arguments = args.arguments;
  return forwarded;
}

/**
 * On a search endpoint, a call_tool with arguments it can run stands for the tools/call it
 * names: it is that request from the start, so its span, call log line and audit record name
 * that tool and its arguments. Undefined for anything else (a call_tool it cannot run is
 * answered, and observed, as itself).
 */
export function forwardedCall(request: JsonRpcRequest, discovery: string | undefined): JsonRpcRequest | undefined {
  if (discovery !== 'search' || request.params?.name !== CALL_TOOL) return undefined;
  const params = callArguments(request.params);
  return typeof params === 'string' ? undefined : { ...request, params };
}

/** The search_tools result: the matches as structured content and as its JSON text. */
export function searchResult(tools: readonly JsonObject[]): JsonObject {
  const structuredContent = { tools };
  return { content: [{ type: 'text', text: JSON.stringify(structuredContent) }], structuredContent };
}

/** The two tools search mode lists; `upstreams` are named in search_tools' description. */
export function searchModeTools(upstreams: readonly string[], count: number): JsonObject[] {
  const behind = upstreams.length === 0 ? 'no upstreams' : upstreams.join(', ');
  return [
    {
      name: SEARCH_TOOL,
      title: 'Search tools',
      description:
        `Finds tools by what they do, among ${count} tools from: ${behind}.\n` +
        `Describe the task in a few words; the best matches come back with their names and input schemas. Run one with ${CALL_TOOL}.`,
      inputSchema: {
        type: 'object',
        properties: {
          query: { type: 'string', maxLength: MAX_QUERY_LENGTH, description: 'What the tool should do, in natural language' },
          limit: { type: 'integer', minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT, description: 'How many tools to return' },
        },
        required: ['query'],
      },
      outputSchema: {
        type: 'object',
        properties: { tools: { type: 'array', items: { type: 'object' } } },
        required: ['tools'],
      },
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    {
      name: CALL_TOOL,
      title: 'Call a tool',
      description: `Runs a tool found with ${SEARCH_TOOL}, by its name, with arguments that fit its input schema.`,
      inputSchema: {
        type: 'object',
        properties: {
          name: { type: 'string', description: `The tool's name, as ${SEARCH_TOOL} gave it` },
          arguments: { type: 'object', description: "The tool's arguments" },
        },
        required: ['name'],
      },
    },
  ];
}
