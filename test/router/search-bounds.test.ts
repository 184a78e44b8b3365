// What one search_tools query may cost: a query over MAX_QUERY_LENGTH characters is refused with
// a message saying the bound, and of the rest only the first MAX_QUERY_TERMS distinct words (stop
// words and repeats, as stemmed, dropped) are searched, so a query repeating one word a thousand
// times is the one word. (No time is asserted: what is bounded is the work, shown by what is searched.)
import { describe, expect, it } from 'vitest';
import { MAX_QUERY_LENGTH, MAX_QUERY_TERMS, queryWords, searchArguments, ToolIndex } from '../../src/router/search.js';

const tools = Array.from({ length: 40 }, (_, i) => ({
  name: `bulk__word${i}`,
  description: `does thing number ${i} with files`,
  inputSchema: { type: 'object', properties: { path: { type: 'string', description: 'where to look' } } },
}));

describe('the bounds of a search query', () => {
  it(`refuses a query over ${MAX_QUERY_LENGTH} characters, saying so`, () => {
    expect(MAX_QUERY_LENGTH).toBe(1_000);
    expect(searchArguments({ query: 'x'.repeat(MAX_QUERY_LENGTH) })).toEqual({ query: 'x'.repeat(MAX_QUERY_LENGTH), limit: 5 });
    for (const query of ['x'.repeat(MAX_QUERY_LENGTH + 1), 'number '.repeat(100_000)]) {
      expect(searchArguments({ query })).toBe('Invalid arguments for tool search_tools: /query must be at most 1000 characters (a few words saying what the tool should do)');
    }
  });

  it(`searches at most ${MAX_QUERY_TERMS} distinct words, stop words and repeats dropped`, () => {
    expect(MAX_QUERY_TERMS).toBe(32);
    expect(queryWords('number '.repeat(140))).toEqual(['number']);
    // Repeats are the same word once stemmed (files = file); stop words are not searched at all.
    expect(queryWords('the Files of a file, FILES and numbers')).toEqual(['files', 'numbers']);
    const many = Array.from({ length: 100 }, (_, i) => `word${i}`);
    expect(queryWords(many.join(' '))).toEqual(many.slice(0, MAX_QUERY_TERMS));
  });

  it('finds what the words within the bound find, and nothing of the words past it', () => {
    const index = new ToolIndex(tools);
    const fillers = Array.from({ length: MAX_QUERY_TERMS }, (_, i) => `filler${i}q`);
    expect(index.search(['word3', ...fillers].join(' '), 20).map((tool) => tool.name)).toContain('bulk__word3');
    expect(index.search([...fillers, 'word3'].join(' '), 20)).toEqual([]);
    expect(index.search('number '.repeat(140), 3)).toHaveLength(3);
    expect(index.search('the of and', 5)).toEqual([]);
  });
});
