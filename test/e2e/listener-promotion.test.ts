// What the listener keeps of answered requests: nothing the young-generation collector must
// copy to the old generation. Counting unanswered responses in a Set did: 5.4 KB per request
// (and all a request reaches with it) promoted, which in the gateway cost 10 µs of GC pauses
// per call (bench/HISTORY.md, "Fifteenth pass"). The fixture runs in a process of its own with
// a small young generation, and V8's trace of each young-generation collection says what it
// promoted while the requests ran.
import { describe, expect, it } from 'vitest';
import { measurePromotion } from '../helpers/promotion.js';

const REQUESTS = 4000;

describe('listener: answered requests leave nothing for the old generation', () => {
  it('promotes well under a kilobyte per request while requests come and go', async () => {
    const { scavenges, perUnit } = await measurePromotion('test/fixtures/listener-promotion.ts', { semiSpaceMb: 1, units: REQUESTS, env: { REQUESTS: String(REQUESTS) }, below: 1_500 });
    // Enough collections ran for the figure to mean something (about a hundred here).
    expect(scavenges).toBeGreaterThan(20);
    // About 260 bytes now (undici’s and Node’s own); 5,400 in all with the Set.
    expect(perUnit).toBeLessThan(1_500);
  });
});
