import { describe, expect, it } from 'vitest';
import { Cancellation } from '../../src/util/cancel.js';

describe('Cancellation', () => {
  it('runs each listener once, in order, with the reason set before they run', () => {
    const c = new Cancellation();
    const seen: string[] = [];
    c.addEventListener('abort', () => seen.push(`a:${String(c.reason)}`));
    c.addEventListener('abort', () => seen.push(`b:${String(c.aborted)}`));
    c.abort('stop');
    c.abort('again');
    expect(seen).toEqual(['a:stop', 'b:true']);
    expect(c.reason).toBe('stop');
  });

  it('does not run a removed listener, nor one added after the abort', () => {
    const c = new Cancellation();
    let calls = 0;
    const listener = (): void => {
      calls++;
    };
    c.addEventListener('abort', listener);
    c.removeEventListener('abort', listener);
    c.abort();
    c.addEventListener('abort', listener);
    expect(calls).toBe(0);
    expect(c.aborted).toBe(true);
    expect(c.reason).toBeInstanceOf(Error);
  });
});
