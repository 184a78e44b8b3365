// withinDepth (src/util/json-depth.ts): the depth guard run on every POST body before it is parsed.
import { describe, expect, it } from 'vitest';
import { withinDepth } from '../../src/util/json-depth.js';

/** The plain character-by-character scan, to compare against. */
function referenceDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (inString) {
      if (ch === '\\') i++;
      else if (ch === '"') inString = false;
    } else if (ch === '"') inString = true;
    else if (ch === '{' || ch === '[') deepest = Math.max(deepest, ++depth);
    else if (ch === '}' || ch === ']') depth--;
  }
  return deepest;
}

/** A random JSON value of nesting up to `depth`, with strings full of quotes, backslashes and brackets. */
function randomJson(random: () => number, depth: number): unknown {
  const pick = random();
  if (depth === 0 || pick < 0.3) {
    const alphabet = ['a', '"', '\\', '[', ']', '{', '}', '\\"', '\\\\', ' '];
    return Array.from({ length: Math.floor(random() * 12) }, () => alphabet[Math.floor(random() * alphabet.length)]).join('');
  }
  if (pick < 0.4) return Math.floor(random() * 1000);
  const children = Array.from({ length: 1 + Math.floor(random() * 3) }, () => randomJson(random, depth - 1));
  return pick < 0.7 ? children : Object.fromEntries(children.map((child, i) => [`k${i}"[{\\`, child]));
}

function seeded(seed: number): () => number {
  return () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed / 2 ** 31;
  };
}

describe('withinDepth', () => {
  it('agrees with a plain scan on random JSON whose strings hold quotes, escapes and brackets', () => {
    const random = seeded(7);
    for (let n = 0; n < 2000; n++) {
      const text = JSON.stringify(randomJson(random, 1 + Math.floor(random() * 9)));
      const depth = referenceDepth(text);
      for (const max of [4, 5, 6, 8]) expect(withinDepth(text, max), `${text} (depth ${depth}, max ${max})`).toBe(depth <= max);
    }
  });

  it('refuses deep nesting, also past a string ending in escaped backslashes', () => {
    expect(withinDepth('['.repeat(65) + ']'.repeat(65), 64)).toBe(false);
    expect(withinDepth('['.repeat(64) + ']'.repeat(64), 64)).toBe(true);
    expect(withinDepth(`{"a":"x\\\\","b":${'['.repeat(10)}${']'.repeat(10)}}`, 9)).toBe(false);
    expect(withinDepth(`{"a":"x\\"${'['.repeat(20)}"}`, 4)).toBe(true);
  });

  it('takes a text too short to nest past the limit, or a string never closed, as within it', () => {
    expect(withinDepth('[[[[[', 4)).toBe(true);
    expect(withinDepth(`"${'['.repeat(30)}`, 4)).toBe(true);
  });
});
