// Which traces the gateway records: its own keyed share of trace ids, the same on every replica
// that holds the same secret (sessions.keys), unguessable without it.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { GatewaySampler } from '../../src/telemetry/sampler.js';

const ids = Array.from({ length: 2_000 }, () => randomBytes(16).toString('hex'));
const share = (sampler: GatewaySampler) => ids.map((id) => sampler.inShare(id));

describe('the sampled share of trace ids', () => {
  it('is the same on two replicas holding the same secret', () => {
    const secret = 'a session key of the fleet, 32 characters or more';
    expect(share(new GatewaySampler(0.5, secret))).toEqual(share(new GatewaySampler(0.5, secret)));
  });

  it('differs between processes without one, and between secrets', () => {
    expect(share(new GatewaySampler(0.5))).not.toEqual(share(new GatewaySampler(0.5)));
    expect(share(new GatewaySampler(0.5, 'x'.repeat(32)))).not.toEqual(share(new GatewaySampler(0.5, 'y'.repeat(32))));
  });

  it('keeps to the ratio', () => {
    const sampled = share(new GatewaySampler(0.25, 'z'.repeat(32))).filter(Boolean).length;
    expect(sampled).toBeGreaterThan(ids.length * 0.18);
    expect(sampled).toBeLessThan(ids.length * 0.32);
    expect(share(new GatewaySampler(0, 'z'.repeat(32))).some(Boolean)).toBe(false);
    expect(share(new GatewaySampler(1)).every(Boolean)).toBe(true);
  });
});
