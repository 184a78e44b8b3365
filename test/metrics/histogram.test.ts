// FastHistogram must be exported exactly as prom-client's own Histogram would export the same
// observations: same text format, same JSON, through a prom-client Registry.
import { Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { FastHistogram } from '../../src/metrics/histogram.js';

const config = {
  name: 'switchyard_test_seconds',
  help: 'A histogram for the test',
  labelNames: ['upstream', 'tool'] as const,
  buckets: [0.001, 0.01, 0.1, 1, 10],
};

const observations: [string, string, number][] = [
  ['a', 'echo', 0.0005],
  ['a', 'echo', 0.001], // on a bound: counted in that bucket (le)
  ['a', 'echo', 0.05],
  ['a', 'add', 2],
  ['b', 'echo', 30], // above every bound: only +Inf, sum and count
  ['a', 'echo', 0.2],
];

function both(): { own: Registry; theirs: Registry; fast: FastHistogram<'upstream' | 'tool'>; reference: Histogram<'upstream' | 'tool'> } {
  const own = new Registry();
  const theirs = new Registry();
  const fast = new FastHistogram({ ...config, registers: [own] });
  const reference = new Histogram({ ...config, registers: [theirs] });
  return { own, theirs, fast, reference };
}

describe('FastHistogram', () => {
  it('renders the same text format and JSON as prom-client for the same observations', async () => {
    const { own, theirs, fast, reference } = both();
    for (const [upstream, tool, value] of observations) {
      fast.child(upstream, tool).observe(value);
      reference.labels(upstream, tool).observe(value);
    }
    expect(await own.metrics()).toBe(await theirs.metrics());
    // prom-client adds `exemplar: null` (exemplars are off); the values are otherwise the same.
    const withoutExemplars = (json: unknown): unknown => JSON.parse(JSON.stringify(json, (key, value: unknown) => (key === 'exemplar' ? undefined : value)));
    expect(withoutExemplars(await own.getMetricsAsJSON())).toEqual(withoutExemplars(await theirs.getMetricsAsJSON()));
    expect(await own.metrics()).toContain('switchyard_test_seconds_bucket{le="0.001",upstream="a",tool="echo"} 2');
  });

  it('renders nothing for a histogram never observed, and starts again after reset', async () => {
    const { own, theirs, fast, reference } = both();
    expect(await own.metrics()).toBe(await theirs.metrics());
    fast.child('a', 'echo').observe(1);
    reference.labels('a', 'echo').observe(1);
    fast.reset();
    reference.reset();
    expect(await own.metrics()).toBe(await theirs.metrics());
    fast.child('a', 'echo').observe(3);
    reference.labels('a', 'echo').observe(3);
    expect(await own.metrics()).toBe(await theirs.metrics());
  });

  it('ignores a value that is not a finite number instead of poisoning the sum', async () => {
    const { own, fast } = both();
    fast.child('a', 'echo').observe(Number.NaN);
    fast.child('a', 'echo').observe(0.5);
    expect(await own.metrics()).toContain('switchyard_test_seconds_sum{upstream="a",tool="echo"} 0.5');
    expect(await own.metrics()).toContain('switchyard_test_seconds_count{upstream="a",tool="echo"} 1');
  });
});
