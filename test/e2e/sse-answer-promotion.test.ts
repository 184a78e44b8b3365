// What the gateway keeps of a call answered as an SSE stream of the session: nothing the
// young-generation collector must copy to the old generation but the stream's own record and
// its event in the replay log. When the POST's connection told its session stream of its end
// through a closure, every answered call's objects (the request, the response, the exchange
// upstream) stayed reachable for that collector until a full collection: 7 KB per call promoted
// here, 5.6 KB in the bench (bench/HISTORY.md, "Eighteenth pass"). That happens through V8's
// allocation-site pretenuring (with --no-allocation-site-pretenuring the closure promotes no
// more than the field), which can also befall the field now and then: one run in six here, so
// the measure is taken up to three times (test/helpers/promotion.ts). The fixture runs in a process
// of its own, and V8's trace of each young-generation collection says what it promoted.
import { describe, expect, it } from 'vitest';
import { measurePromotion } from '../helpers/promotion.js';

const CALLS = 8000;

describe('SSE answers: an answered call leaves only its stream record for the old generation', () => {
  it('promotes well under two kilobytes per call answered as a stream', async () => {
    const { scavenges, perUnit } = await measurePromotion('test/fixtures/sse-answer-promotion.ts', { semiSpaceMb: 4, units: CALLS, env: { CALLS: String(CALLS) }, below: 2_000 });
    // Enough collections ran for the figure to mean something (about 280 here).
    expect(scavenges).toBeGreaterThan(50);
    // About 390 bytes now (the stream kept for resumption, its event in the log); 6,200 with the closure, in every run.
    expect(perUnit).toBeLessThan(2_000);
  });
});
