// The unfinished stdout line of a stdio child (PartialLine): bytes added in any pieces come out
// as one line, and the size limit holds for the line held and for the line taken.
import { describe, expect, it } from 'vitest';
import { PartialLine } from '../../src/transport/stdio.js';

describe('PartialLine', () => {
  it('gives back every piece added, a byte at a time or in runs past its first buffer, as one line, and empties itself', () => {
    const partial = new PartialLine(1 << 20);
    const text = `{"data":"${'z'.repeat(5_000)}"`;
    for (const byte of Buffer.from(text)) expect(partial.append(Buffer.from([byte]))).toBe(true);
    expect(partial.length).toBe(text.length);
    expect(partial.take(Buffer.from('}'))!.toString()).toBe(`${text}}`);
    expect(partial.length).toBe(0);
    expect(partial.append(Buffer.from('next'))).toBe(true);
    expect(partial.take(Buffer.alloc(0))!.toString()).toBe('next');
  });

  it('holds a line of exactly the limit, and refuses one byte more, holding nothing after', () => {
    const partial = new PartialLine(10);
    expect(partial.append(Buffer.from('0123456789'))).toBe(true);
    expect(partial.append(Buffer.from('x'))).toBe(false);
    expect(partial.length).toBe(0);
    expect(partial.append(Buffer.from('01234'))).toBe(true);
    expect(partial.take(Buffer.from('56789'))!.toString()).toBe('0123456789');
    expect(partial.append(Buffer.from('01234'))).toBe(true);
    expect(partial.take(Buffer.from('567890'))).toBeUndefined();
    expect(partial.length).toBe(0);
  });
});
