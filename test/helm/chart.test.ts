// The Helm chart, checked without helm or a cluster: its files parse, the templates only use
// values that exist, and the gateway.yaml its ConfigMap renders from the default values is a
// config the gateway accepts.
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { configFromObject } from '../../src/config/load.js';
import { ROOT } from '../helpers/paths.js';

const CHART = join(ROOT, 'helm/switchyard');

async function templates(): Promise<Map<string, string>> {
  const dir = join(CHART, 'templates');
  const files = await readdir(dir);
  return new Map(await Promise.all(files.map(async (f) => [f, await readFile(join(dir, f), 'utf8')] as const)));
}

async function values(): Promise<Record<string, unknown>> {
  return parse(await readFile(join(CHART, 'values.yaml'), 'utf8')) as Record<string, unknown>;
}

function hasPath(root: unknown, path: string[]): boolean {
  let value = root;
  for (const key of path) {
    if (typeof value !== 'object' || value === null || !(key in value)) return false;
    value = (value as Record<string, unknown>)[key];
  }
  return true;
}

/** What templates/_helpers.tpl "switchyard.gatewayConfig" renders into the ConfigMap. */
function renderedConfig(v: Record<string, unknown>, tls?: { clientCa: boolean }): Record<string, unknown> {
  const config = structuredClone(v.config) as Record<string, Record<string, unknown>>;
  config.shutdown = { gracePeriod: `${v.drainSeconds as number}s` };
  if (tls) {
    config.listen!.tls = { cert: '/etc/switchyard/tls/tls.crt', key: '/etc/switchyard/tls/tls.key', ...(tls.clientCa ? { ca: '/etc/switchyard/client-ca/ca.crt' } : {}) };
  }
  return config;
}

describe('Helm chart', () => {
  it('has a Chart.yaml and a values.yaml that parse', async () => {
    const chart = parse(await readFile(join(CHART, 'Chart.yaml'), 'utf8')) as Record<string, unknown>;
    expect(chart).toMatchObject({ apiVersion: 'v2', name: 'switchyard', type: 'application' });
    expect(typeof chart.version).toBe('string');
    const v = await values();
    expect(v.config).toBeTypeOf('object');
  });

  it('uses only values that exist in values.yaml', async () => {
    const v = await values();
    const missing: string[] = [];
    for (const [file, text] of await templates()) {
      for (const [, path] of text.matchAll(/\.Values((?:\.[A-Za-z0-9_]+)+)/g)) {
        const keys = path!.slice(1).split('.');
        if (!hasPath(v, keys)) missing.push(`${file}: .Values.${keys.join('.')}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('has balanced template actions in every file', async () => {
    for (const [file, text] of await templates()) {
      expect((text.match(/\{\{/g) ?? []).length, file).toBe((text.match(/\}\}/g) ?? []).length);
    }
  });

  it('renders a gateway.yaml from the default values that the gateway accepts', async () => {
    const v = await values();
    const env = { SESSION_KEY: 'k'.repeat(48) };
    const config = configFromObject(renderedConfig(v), { file: '/etc/switchyard/gateway.yaml', env });
    expect(config.shutdown.gracePeriod).toBe((v.drainSeconds as number) * 1_000);
    expect(config.sessions.keys).toEqual([env.SESSION_KEY]);
    expect(config.auth?.oauth).toBeDefined();
    // The metrics listener answers the ServiceMonitor from outside the pod, not on loopback alone.
    expect(config.metrics.port).toBe(9464);
    expect(config.metrics.host).toBe('0.0.0.0');
    // With TLS on (and client certificates) too.
    const tls = configFromObject(renderedConfig(v, { clientCa: true }), { file: '/etc/switchyard/gateway.yaml', env });
    expect(tls.listen.tls).toEqual({ cert: '/etc/switchyard/tls/tls.crt', key: '/etc/switchyard/tls/tls.key', ca: '/etc/switchyard/client-ca/ca.crt' });
  });

  it('matches the pod lifecycle to the drain', async () => {
    const deployment = (await templates()).get('deployment.yaml')!;
    expect(deployment).toContain('terminationGracePeriodSeconds: {{ add .Values.preStopSeconds .Values.drainSeconds 10 }}');
    expect(deployment).toMatch(/livenessProbe:\s+httpGet: \{ path: \/healthz/);
    expect(deployment).toMatch(/readinessProbe:\s+httpGet: \{ path: \/readyz/);
    expect(deployment).toContain('preStop:');
    const helpers = (await templates()).get('_helpers.tpl')!;
    expect(helpers).toContain('(printf "%ds" (int .Values.drainSeconds))');
  });

  it('runs a fleet as the fleet test does: three replicas, one down at a time, a rolling update that adds before it removes, an Ingress that sends on what a replica refused and never a POST it was sent', async () => {
    const v = (await values()) as { replicaCount: number; autoscaling: { minReplicas: number }; podDisruptionBudget: { enabled: boolean; maxUnavailable: number; minAvailable: number | null }; config: { sessions: { keys?: unknown } } };
    expect(v.replicaCount).toBe(3);
    expect(v.autoscaling.minReplicas).toBe(3);
    expect(v.podDisruptionBudget.enabled).toBe(true);
    // One down at a time at any size (minAvailable 2 let 8 of 10 autoscaled pods go at once).
    expect(v.podDisruptionBudget.maxUnavailable).toBe(1);
    expect(v.podDisruptionBudget.minAvailable).toBeNull();
    // Every replica opens every session from its id.
    expect(v.config.sessions.keys).toEqual(['${SESSION_KEY}']);
    const deployment = (await templates()).get('deployment.yaml')!;
    expect(deployment).toMatch(/strategy:\s+type: RollingUpdate\s+rollingUpdate: \{ maxSurge: 1, maxUnavailable: 0 \}/);
    const pdb = (await templates()).get('pdb.yaml')!;
    expect(pdb).toContain('maxUnavailable: {{ .Values.podDisruptionBudget.maxUnavailable }}');
    // What a replica refused goes to the next one, a POST that was sent never does (no
    // non_idempotent: a crashed replica may have run it), as the fleet test's nginx and
    // docs/deploy.md's do.
    const ingress = (await templates()).get('ingress.yaml')!;
    expect(ingress).toContain('nginx.ingress.kubernetes.io/proxy-next-upstream: "error timeout http_503"');
    expect(ingress).toContain('nginx.ingress.kubernetes.io/proxy-request-buffering: "on"');
    const deploy = await readFile(join(ROOT, 'docs', 'deploy.md'), 'utf8');
    expect(deploy).toContain('proxy_next_upstream error timeout http_503;');
    expect(deploy).not.toContain('proxy_next_upstream error timeout http_503 non_idempotent');
    const nginx = await readFile(join(ROOT, 'test', 'helpers', 'nginx.ts'), 'utf8');
    expect(nginx).toContain('proxy_next_upstream error timeout http_503;');
    expect(deploy).toContain('proxy_request_buffering on;');
  });

  it('documents every top-level value in the chart README', async () => {
    const readme = await readFile(join(CHART, 'README.md'), 'utf8');
    for (const key of Object.keys(await values())) expect(readme, key).toContain(`\`${key}`);
  });
});
