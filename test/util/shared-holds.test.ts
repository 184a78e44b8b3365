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

  // Per-key ordering: the child must never see a closing after a newer holder's opening.
  const controllable = () => {
    const calls: string[] = [];
    const answers: (() => void)[] = [];
    const call = (name: string) => () => {
      calls.push(name);
      return new Promise<void>((resolve) => answers.push(resolve));
    };
    const answerAll = async () => {
      for (let i = 0; i < 10; i++) {
        answers.splice(0).forEach((answer) => answer());
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
    };
    return { calls, call, answerAll };
  };

  it('cancels a close not yet sent when a new holder arrives while the opening is in flight', async () => {
    const holds = new SharedHolds<string, string>();
    const { calls, call, answerAll } = controllable();
    const a = holds.hold('u', 'a', call('subscribe a'));
    const closed = holds.release('u', 'a', call('unsubscribe a'));
    const b = holds.hold('u', 'b', call('subscribe b'));
    await answerAll();
    await Promise.all([a, b, closed]);
    // One opening shared, no closing: b holds a live subscription.
    expect(calls).toEqual(['subscribe a']);
    expect([...holds.holders('u')]).toEqual(['b']);
    expect([...holds.keys()]).toEqual(['u']);
  });

  it('opens again only after a close already sent has answered', async () => {
    const holds = new SharedHolds<string, string>();
    const { calls, call, answerAll } = controllable();
    await Promise.all([holds.hold('u', 'a', call('subscribe a')), answerAll()]);
    const closed = holds.release('u', 'a', call('unsubscribe a'));
    await Promise.resolve();
    await Promise.resolve();
    expect(calls).toEqual(['subscribe a', 'unsubscribe a']);
    const b = holds.hold('u', 'b', call('subscribe b'));
    expect([...holds.holders('u')]).toEqual(['b']);
    await Promise.resolve();
    expect(calls).toEqual(['subscribe a', 'unsubscribe a']);
    await answerAll();
    await Promise.all([b, closed]);
    expect(calls).toEqual(['subscribe a', 'unsubscribe a', 'subscribe b']);
    expect([...holds.holders('u')]).toEqual(['b']);
    // b's own release still closes it.
    const last = holds.release('u', 'b', call('unsubscribe b'));
    await answerAll();
    await last;
    expect(calls.at(-1)).toBe('unsubscribe b');
    expect(holds.size).toBe(0);
  });

  it('never ends closed while someone holds, whatever the interleaving of hold and release', async () => {
    const holds = new SharedHolds<string, string>();
    const { calls, call, answerAll } = controllable();
    // a: hold, release; b: hold; a again: hold, release; all before any answer.
    const pending = [holds.hold('u', 'a', call('subscribe')), holds.release('u', 'a', call('unsubscribe'))];
    pending.push(holds.hold('u', 'b', call('subscribe')));
    pending.push(holds.hold('u', 'a', call('subscribe')), holds.release('u', 'a', call('unsubscribe')));
    await answerAll();
    await Promise.all(pending);
    expect(calls.at(-1)).toBe('subscribe');
    expect([...holds.holders('u')]).toEqual(['b']);
  });

  it('lists no key whose last holder let go while its close is pending', async () => {
    const holds = new SharedHolds<string, string>();
    const { call, answerAll } = controllable();
    await Promise.all([holds.hold('u', 'a', call('subscribe')), answerAll()]);
    const closed = holds.release('u', 'a', call('unsubscribe'));
    expect([...holds.keys()]).toEqual([]);
    expect(holds.size).toBe(0);
    await answerAll();
    await closed;
  });
});
