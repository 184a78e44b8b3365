// What an error message quotes of a client's name or URI: whole when short, cut and marked when long.
import { describe, expect, it } from 'vitest';
import { cut, quote, QUOTE_LIMIT } from '../../src/util/cut.js';

describe('quote', () => {
  it('keeps a short name whole', () => {
    expect(quote('gh__create_issue')).toBe('gh__create_issue');
    expect(quote('x'.repeat(QUOTE_LIMIT))).toBe('x'.repeat(QUOTE_LIMIT));
  });

  it('cuts a long one to QUOTE_LIMIT characters and marks the cut', () => {
    const quoted = quote('y'.repeat(3_000_000));
    expect(quoted).toBe(`${'y'.repeat(QUOTE_LIMIT)}…`);
  });

  it('never splits a surrogate pair', () => {
    const text = `${'a'.repeat(QUOTE_LIMIT - 1)}😀${'b'.repeat(10)}`;
    expect(quote(text)).toBe(`${'a'.repeat(QUOTE_LIMIT - 1)}…`);
    expect(cut(text, QUOTE_LIMIT)).toBe('a'.repeat(QUOTE_LIMIT - 1));
  });
});
