// The Grafana dashboard kept next to the Helm chart only plots metrics the gateway exports.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Metrics } from '../../src/metrics/metrics.js';
import { ROOT } from '../helpers/paths.js';

interface Panel {
  title: string;
  gridPos: { x: number; y: number; w: number; h: number };
  targets: { expr: string }[];
}

describe('Grafana dashboard', () => {
  it('parses, and every expression names only metrics the gateway exports', async () => {
    const dashboard = JSON.parse(await readFile(join(ROOT, 'helm/switchyard/dashboards/switchyard.json'), 'utf8')) as { uid: string; panels: Panel[] };
    expect(dashboard.uid).toBe('switchyard');
    const metrics = new Metrics(['a']);
    metrics.observe({ sessions: () => 0, streams: () => ({ request: 0, standalone: 0 }), upstreams: () => ({}) });
    const exported = new Set<string>();
    for (const metric of await metrics.registry.getMetricsAsJSON()) {
      exported.add(metric.name);
      if (String(metric.type) === 'histogram') for (const suffix of ['_bucket', '_count', '_sum']) exported.add(metric.name + suffix);
    }
    expect(dashboard.panels.length).toBeGreaterThan(10);
    for (const panel of dashboard.panels) {
      expect(panel.targets.length, panel.title).toBeGreaterThan(0);
      for (const { expr } of panel.targets) {
        const names = expr.match(/\b(switchyard_[a-z_]+|process_[a-z_]+)\b/g) ?? [];
        expect(names.length, `${panel.title}: ${expr}`).toBeGreaterThan(0);
        for (const name of names) expect(exported.has(name), `${panel.title}: ${name}`).toBe(true);
      }
    }
  });
});
