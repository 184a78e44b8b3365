// The chart's dashboards and alerts, checked without helm or a cluster: the alert rules parse
// and cover what operators are paged for, the dashboard has per upstream, tool and team panels
// that do not overlap, and the two templates that ship them are gated by their values and load
// the files that exist. test/e2e/dashboard-metrics.test.ts holds every metric name they use
// against a running gateway's /metrics.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/paths.js';

const CHART = join(ROOT, 'helm/switchyard');

interface Rule {
  alert: string;
  expr: string;
  for?: string;
  labels: { severity: string };
  annotations: { summary: string; description: string };
}

interface Panel {
  id: number;
  title: string;
  gridPos: { x: number; y: number; w: number; h: number };
  targets: { expr: string }[];
}

describe('the chart’s alerts (rules/switchyard.rules.yaml)', () => {
  it('parse as Prometheus rule groups and cover error rate, circuits, auth failures, drift and queue overflows', async () => {
    const rules = parse(await readFile(join(CHART, 'rules/switchyard.rules.yaml'), 'utf8')) as { groups: { name: string; rules: Rule[] }[] };
    const all = rules.groups.flatMap((g) => g.rules);
    for (const rule of all) {
      expect(rule.alert).toMatch(/^Switchyard[A-Za-z]+$/);
      expect(rule.expr.trim().length, rule.alert).toBeGreaterThan(0);
      expect(['info', 'warning', 'critical'], rule.alert).toContain(rule.labels.severity);
      expect(rule.annotations.summary, rule.alert).toBeTruthy();
      expect(rule.annotations.description, rule.alert).toBeTruthy();
      if (rule.for !== undefined) expect(rule.for).toMatch(/^\d+[smh]$/);
    }
    const byMetric = (metric: string): string[] => all.filter((r) => r.expr.includes(metric)).map((r) => r.alert);
    expect(byMetric('switchyard_requests_total')).toEqual(['SwitchyardUpstreamErrorRate']);
    expect(byMetric('switchyard_upstream_circuit_open')).toEqual(['SwitchyardCircuitOpen']);
    expect(byMetric('switchyard_auth_failures_total')).toEqual(['SwitchyardAuthFailures']);
    expect(byMetric('switchyard_tool_drift_total')).toEqual(['SwitchyardToolDrift']);
    expect(byMetric('switchyard_stream_overflows_total')).toEqual(['SwitchyardStreamQueueOverflow']);
    expect(byMetric('switchyard_audit_dropped_total')).toEqual(['SwitchyardAuditDropped']);
    expect(new Set(all.map((r) => r.alert)).size).toBe(all.length);
  });

  it('ship as a PrometheusRule only when prometheusRule is true', async () => {
    const template = await readFile(join(CHART, 'templates/prometheusrule.yaml'), 'utf8');
    const values = parse(await readFile(join(CHART, 'values.yaml'), 'utf8')) as Record<string, unknown>;
    expect(template.split('\n')[0]).toBe('{{- if .Values.prometheusRule }}');
    expect(template).toContain('kind: PrometheusRule');
    expect(template).toContain('.Files.Get "rules/switchyard.rules.yaml"');
    expect(values.prometheusRule).toBe(false);
  });
});

describe('the chart’s Grafana dashboard', () => {
  it('has per upstream, per tool and per team panels, with variables to pick them, none overlapping', async () => {
    const dashboard = JSON.parse(await readFile(join(CHART, 'dashboards/switchyard.json'), 'utf8')) as { panels: Panel[]; templating: { list: { name: string; query?: string }[] } };
    const titles = dashboard.panels.map((p) => p.title);
    for (const title of ['Requests by upstream', 'Errors by upstream and outcome', 'Latency p50 / p95 / p99 by upstream', 'Upstream sessions and children', 'Circuit state by upstream', 'Tool calls by tool', 'Tool latency p50 / p99 by tool', 'Requests by team', 'Error ratio by team', 'Sign-ins by upstream and outcome', 'Audit records and drops']) {
      expect(titles).toContain(title);
    }
    expect(new Set(dashboard.panels.map((p) => p.id)).size).toBe(dashboard.panels.length);
    const variables = new Map(dashboard.templating.list.map((v) => [v.name, v]));
    expect(variables.get('upstream')?.query).toContain('upstream');
    expect(variables.get('team')?.query).toContain('switchyard_team_requests_total');
    // Panels filter by the variables they are named for.
    for (const panel of dashboard.panels.filter((p) => / by team/.test(p.title))) for (const t of panel.targets) expect(t.expr, panel.title).toContain('team=~"$team"');
    for (const panel of dashboard.panels.filter((p) => p.id >= 19 && / by upstream/.test(p.title))) for (const t of panel.targets) expect(t.expr, panel.title).toContain('upstream=~"$upstream"');
    // No two panels share a cell of the 24-column grid.
    const cells = new Set<string>();
    for (const { gridPos: g, title } of dashboard.panels) {
      expect(g.x + g.w, title).toBeLessThanOrEqual(24);
      for (let x = g.x; x < g.x + g.w; x++) {
        for (let y = g.y; y < g.y + g.h; y++) {
          expect(cells.has(`${x},${y}`), `${title} overlaps at ${x},${y}`).toBe(false);
          cells.add(`${x},${y}`);
        }
      }
    }
  });

  it('ships in a ConfigMap with the Grafana sidecar label only when grafana.dashboards is true', async () => {
    const template = await readFile(join(CHART, 'templates/dashboard-configmap.yaml'), 'utf8');
    const values = parse(await readFile(join(CHART, 'values.yaml'), 'utf8')) as { grafana: Record<string, unknown> };
    expect(template.split('\n')[0]).toBe('{{- if .Values.grafana.dashboards }}');
    expect(template).toContain('kind: ConfigMap');
    expect(template).toContain('{{ .Values.grafana.sidecarLabel }}: {{ .Values.grafana.sidecarLabelValue | quote }}');
    expect(template).toContain('.Files.Get "dashboards/switchyard.json"');
    expect(values.grafana).toEqual({ dashboards: false, sidecarLabel: 'grafana_dashboard', sidecarLabelValue: '1', namespace: '' });
  });
});
