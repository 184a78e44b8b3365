// Search mode's pieces on their own: the index ranks by what a tool does (names split at
// separators and humps, plurals and verb endings folded, argument names and descriptions
// counted), returns tools in the shape tools/list gives them, shares one index between sessions
// shown the same tools and builds a new one when a session's tools change, its upstreams change,
// or the index grew old; and the two tools' arguments are checked as a tool's would be.
import { describe, expect, it } from 'vitest';
import { callArguments, searchArguments, searchModeTools, searchResult, ToolIndex, ToolSearch } from '../../src/router/search.js';

const tool = (name: string, description: string, properties: Record<string, { description?: string }> = {}, extra: Record<string, unknown> = {}) => ({
  name,
  description,
  inputSchema: { type: 'object', properties },
  ...extra,
});

const TOOLS = [
  tool('everything__get-sum', 'Returns the sum of two numbers', { a: { description: 'First number' }, b: { description: 'Second number' } }),
  tool('everything__echo', 'Echoes back the input string', { message: { description: 'Message to echo' } }),
  tool('memory__search_nodes', 'Search for nodes in the knowledge graph based on a query', { query: { description: 'The search query to match against entity names, types, and observation content' } }),
  tool('memory__delete_entities', 'Delete multiple entities and their associated relations from the knowledge graph', { entityNames: {} }, { annotations: { destructiveHint: true } }),
  tool('files__readTextFile', 'Read the complete contents of a file as text', { path: {} }, { title: 'Read text file', _meta: { internal: true } }),
];

describe('ToolIndex', () => {
  const index = new ToolIndex(TOOLS);

  it('ranks the tool that does what was asked first', () => {
    expect(index.search('add two numbers', 5)[0]!.name).toBe('everything__get-sum');
    expect(index.search('repeat my message back', 5)[0]!.name).toBe('everything__echo');
    expect(index.search('look up an entity in the knowledge graph', 5).map((t) => t.name)).toContain('memory__search_nodes');
  });

  it('splits camelCase and separators in names, and folds plurals', () => {
    expect(index.search('read text', 5)[0]!.name).toBe('files__readTextFile');
    expect(index.search('remove an entity', 5)[0]!.name).toBe('memory__delete_entities');
  });

  it('gives at most limit results, in the shape tools/list gives (nothing else of the tool)', () => {
    const [first] = index.search('file', 1);
    expect(index.search('the knowledge graph', 1)).toHaveLength(1);
    expect(first).toEqual({ name: 'files__readTextFile', title: 'Read text file', description: 'Read the complete contents of a file as text', inputSchema: { type: 'object', properties: { path: {} } } });
  });

  it('keeps annotations, and gives an empty description to a tool without one', () => {
    const [found] = new ToolIndex([{ name: 'x__drop_table', inputSchema: { type: 'object' }, annotations: { destructiveHint: true } }]).search('drop table', 5);
    expect(found).toEqual({ name: 'x__drop_table', description: '', inputSchema: { type: 'object' }, annotations: { destructiveHint: true } });
  });

  it('finds nothing for words no tool has, or only stop words', () => {
    expect(index.search('zebra', 5)).toEqual([]);
    expect(index.search('the of and', 5)).toEqual([]);
  });
});

describe('ToolSearch', () => {
  const a = {};
  const b = {};
  const upstream1 = {};
  const upstream2 = {};

  it('shares one index between sessions shown the same tools', () => {
    const search = new ToolSearch();
    const first = search.remember(a, 0, [upstream1], TOOLS);
    expect(search.remember(b, 0, [upstream1], structuredClone(TOOLS))).toBe(first);
    expect(search.remember(b, 0, [upstream1], TOOLS.slice(1))).not.toBe(first);
  });

  it("stops using a session's index when its tools changed, its upstreams changed, or a minute passed", () => {
    let now = 1_000;
    const search = new ToolSearch(() => now);
    const index = search.remember(a, 3, [upstream1], TOOLS);
    expect(search.cached(a, 3, [upstream1])).toBe(index);
    expect(search.cached(a, 4, [upstream1])).toBeUndefined();
    expect(search.cached(a, 3, [upstream2])).toBeUndefined();
    expect(search.cached(a, 3, [upstream1, upstream2])).toBeUndefined();
    expect(search.cached(b, 3, [upstream1])).toBeUndefined();
    now += 60_001;
    expect(search.cached(a, 3, [upstream1])).toBeUndefined();
  });
});

describe('the arguments of search_tools and call_tool', () => {
  it('search_tools takes a non-empty query and an integer limit from 1 to 20 (default 5)', () => {
    expect(searchArguments({ query: 'x' })).toEqual({ query: 'x', limit: 5 });
    expect(searchArguments({ query: 'x', limit: 20 })).toEqual({ query: 'x', limit: 20 });
    for (const bad of [{}, { query: '' }, { query: '  ' }, { query: 3 }, { query: 'x', limit: 0 }, { query: 'x', limit: 21 }, { query: 'x', limit: 1.5 }, { query: 'x', limit: '5' }, undefined]) {
      expect(searchArguments(bad)).toMatch(/^Invalid arguments for tool search_tools: \/(query|limit) /);
    }
  });

  it('call_tool becomes the tools/call it names, _meta and task kept', () => {
    const params = { name: 'call_tool', arguments: { name: 'gh__get', arguments: { id: 1 } }, _meta: { progressToken: 7 }, task: { ttl: 1 } };
    expect(callArguments(params)).toEqual({ name: 'gh__get', arguments: { id: 1 }, _meta: { progressToken: 7 }, task: { ttl: 1 } });
    expect(callArguments({ name: 'call_tool', arguments: { name: 'gh__get' } })).toEqual({ name: 'gh__get' });
    expect(callArguments({ name: 'call_tool', arguments: {} })).toMatch(/\/name must be a tool name/);
    expect(callArguments({ name: 'call_tool', arguments: { name: 'x', arguments: [1] } })).toMatch(/\/arguments must be an object/);
  });

  it('a search result carries the tools as structured content and as its JSON text', () => {
    const result = searchResult([{ name: 'x', description: '' }]);
    expect(result).toEqual({ content: [{ type: 'text', text: '{"tools":[{"name":"x","description":""}]}' }], structuredContent: { tools: [{ name: 'x', description: '' }] } });
  });

  it('search_tools names the upstreams behind the endpoint in its description', () => {
    const [search, call] = searchModeTools(['everything', 'memory'], 25);
    expect(search!.name).toBe('search_tools');
    expect(search!.description).toContain('among 25 tools from: everything, memory.');
    expect(call!.name).toBe('call_tool');
    expect((call!.inputSchema as { required: string[] }).required).toEqual(['name']);
  });
});
