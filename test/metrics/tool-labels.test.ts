// Tool names as label values: only names an upstream listed, at most 500 per upstream, and none
// longer than the MCP spec's 128 characters (server/tools, "Tool Names"): a longer one is
// `other`, so an upstream listing huge names cannot make every scrape megabytes long.
import { describe, expect, it } from 'vitest';
import { Metrics } from '../../src/metrics/metrics.js';

describe('tool label values', () => {
  it('a listed name of up to 128 characters is its own label; a longer one is other', () => {
    const metrics = new Metrics(['up'], { serve: true });
    const longest = 't'.repeat(128);
    const tooLong = 'x'.repeat(129);
    metrics.learnTools('up', ['echo', longest, tooLong]);
    expect(metrics.tool('up', 'echo')).toBe('echo');
    expect(metrics.tool('up', longest)).toBe(longest);
    expect(metrics.tool('up', tooLong)).toBe('other');
    expect(metrics.tool('up', 'never-listed')).toBe('other');
  });

  it('long names take none of the 500 places', () => {
    const metrics = new Metrics(['up'], { serve: true });
    metrics.learnTools('up', Array.from({ length: 600 }, (_, i) => `${i}`.padEnd(200, 'x')));
    metrics.learnTools('up', ['echo']);
    expect(metrics.tool('up', 'echo')).toBe('echo');
  });

  it('200 tools with 50,000-character names called once each keep the scrape small', async () => {
    const metrics = new Metrics(['up']);
    const names = Array.from({ length: 200 }, (_, i) => `t${i}_`.padEnd(50_000, 'x'));
    metrics.learnTools('up', names);
    for (const name of names) metrics.observeToolCall('up', metrics.tool('up', name), 0.01);
    metrics.observeToolCall('up', metrics.tool('up', 'short'), 0.01);
    const text = await metrics.registry.getSingleMetricAsString('switchyard_tool_call_duration_seconds');
    expect(text.length).toBeLessThan(5_000);
    expect(text).toContain('switchyard_tool_call_duration_seconds_count{upstream="up",tool="other"} 201');
  });
});
