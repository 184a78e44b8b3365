// Every metric the chart's Grafana dashboard plots and its alert rules watch is one a running
// gateway exports on /metrics (a renamed or removed metric fails here, not on a dark panel).
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, upstream, type TestGateway } from '../helpers/gateway.js';
import { ROOT } from '../helpers/paths.js';

const CHART = join(ROOT, 'helm/switchyard');

/** Metric names in a PromQL expression (ours and the process's). */
function metricsIn(expr: string): string[] {
  return expr.match(/\b(?:switchyard|process|nodejs)_[a-z_]+\b/g) ?? [];
}

describe('the chart’s dashboard and alerts against /metrics', () => {
  let gw: TestGateway;
  let exported: Set<string>;

  beforeAll(async () => {
    gw = await startGateway({ upstreams: { everything: upstream.everything() }, metrics: { enabled: true } });
    const text = await (await fetch(new URL('/metrics', gw.url))).text();
    exported = new Set<string>();
    // Every family is announced by its TYPE line, samples or not; a histogram's series add suffixes.
    for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
      exported.add(name!);
      if (type === 'histogram') for (const suffix of ['_bucket', '_count', '_sum']) exported.add(name! + suffix);
    }
  });

  afterAll(async () => {
    await gw?.close();
  });

  it('exports every metric the dashboard plots', async () => {
    const dashboard = JSON.parse(await readFile(join(CHART, 'dashboards/switchyard.json'), 'utf8')) as { panels: { title: string; targets: { expr: string }[] }[]; templating: { list: { query?: unknown }[] } };
    const used = new Set<string>();
    for (const panel of dashboard.panels) for (const { expr } of panel.targets) for (const name of metricsIn(expr)) used.add(name);
    for (const variable of dashboard.templating.list) if (typeof variable.query === 'string') for (const name of metricsIn(variable.query)) used.add(name);
    expect(used.size).toBeGreaterThan(20);
    expect([...used].filter((name) => !exported.has(name))).toEqual([]);
  });

  it('exports every metric the alert rules watch', async () => {
    const rules = parse(await readFile(join(CHART, 'rules/switchyard.rules.yaml'), 'utf8')) as { groups: { rules: { expr: string }[] }[] };
    const used = new Set(rules.groups.flatMap((g) => g.rules.flatMap((r) => metricsIn(r.expr))));
    expect(used.size).toBeGreaterThan(5);
    expect([...used].filter((name) => !exported.has(name))).toEqual([]);
  });
});
