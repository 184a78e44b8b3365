import { describe, expect, it } from 'vitest';
import { RequestIds } from '../../src/util/request-ids.js';

describe('RequestIds', () => {
  it('makes distinct UUID-shaped ids, counting after a random prefix', () => {
    const ids = new RequestIds();
    const made = Array.from({ length: 1000 }, () => ids.next());
    for (const id of made) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(new Set(made).size).toBe(made.length);
    expect(made[0]!.slice(-12)).toBe('000000000000');
    expect(made[999]!.slice(-12)).toBe((999).toString(16).padStart(12, '0'));
  });

  it('draws its random part per generator, so two processes do not collide', () => {
    const a = new RequestIds().next();
    const b = new RequestIds().next();
    expect(a.slice(0, 24)).not.toBe(b.slice(0, 24));
  });
});
