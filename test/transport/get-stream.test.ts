import { describe, expect, it } from 'vitest';
import { GetStreamSupport } from '../../src/transport/streamable-http.js';

describe('GetStreamSupport', () => {
  it('is worth trying until refused, then not for five minutes, then again', () => {
    let now = 1_000;
    const support = new GetStreamSupport(() => now);
    expect(support.worthTrying).toBe(true);
    support.refused();
    now += 5 * 60_000 - 1;
    expect(support.worthTrying).toBe(false);
    now += 1;
    expect(support.worthTrying).toBe(true);
  });
});
