// One upstream subscription held for many (src/util/shared-holds.ts): opened by the first
// holder, shared by concurrent ones, closed by the last; a refused opening is given back.
import { describe, expect, it } from 'vitest';
import { SharedHolds } from '../../src/util/shared-holds.js';

describe('SharedHolds', () => {
  it('opens once for concurrent holders and closes once when the last lets go', async () => {
    const holds = new SharedHolds<string, string>();
    let opens = 0;
    let closes = 0;
    let answer!: () => void;
    const open = () => {
      opens++;
      return new Promise<void>((resolve) => (answer = resolve));
    };
    const a = holds.hold('u', 'a', open);
    const b = holds.hold('u', 'b', open);
    expect(opens).toBe(1);
    expect([...holds.holders('u')]).toEqual(['a', 'b']);
    answer();
    await Promise.all([a, b]);
    expect(holds.release('u', 'a', () => closes++)).toBeUndefined();
    expect(closes).toBe(0);
    await holds.release('u', 'b', () => closes++);
    expect(closes).toBe(1);
    expect(holds.size).toBe(0);
  });

  it('counts a holder once, however often it holds', async () => {
    const holds = new SharedHolds<string, string>();
    await holds.hold('u', 'a', async () => {});
    await holds.hold('u', 'a', async () => {});
    let closes = 0;
    await holds.release('u', 'a', () => closes++);
    expect(closes).toBe(1);
  });

  it('gives a refused opening back, so a later holder opens afresh', async () => {
    const holds = new SharedHolds<string, string>();
    await expect(holds.hold('u', 'a', async () => Promise.reject(new Error('refused')))).rejects.toThrow('refused');
    expect(holds.size).toBe(0);
    let opens = 0;
    await holds.hold('u', 'b', async () => void opens++);
    expect(opens).toBe(1);
  });

  it('releases every hold of a holder that is gone, closing only what no one else holds', async () => {
    const holds = new SharedHolds<string, string>();
    await holds.hold('x', 'gone', async () => {});
    await holds.hold('y', 'gone', async () => {});
    await holds.hold('y', 'stays', async () => {});
    const closed: string[] = [];
    holds.releaseAll('gone', (key) => closed.push(key));
    await new Promise<void>((resolve) => queueMicrotask(resolve));
    await Promise.resolve();
    expect(closed).toEqual(['x']);
    expect([...holds.holders('y')]).toEqual(['stays']);
    expect([...holds.keys()]).toEqual(['y']);
  });
});
