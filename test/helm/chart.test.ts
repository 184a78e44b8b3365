// The Helm chart, checked without helm or a cluster: its files parse, the templates only use
// values that exist, the gateway.yaml its ConfigMap renders (emulated below: default values,
// TLS, previous session keys, Redis) is a config the gateway accepts, and the Secrets, env and
// checksum annotations that carry them are wired in the templates.
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

interface ChartValues {
  config: Record<string, Record<string, unknown>>;
  exampleUpstreams: Record<string, unknown>;
  drainSeconds: number;
  tls: { enabled: boolean; clientCaSecret: string };
  sessionKeys: { existingSecret: string; key: string; previousKeys: string[]; existingSecretPreviousKeys: string[] };
  redis: { url: string; existingSecret: string; existingSecretKey: string; prefix: string };
}

/** What templates/_helpers.tpl "switchyard.gatewayConfig" renders into the ConfigMap. */
function renderedConfig(v: ChartValues): Record<string, unknown> {
  const config = structuredClone(v.config);
  if (!config.upstreams || Object.keys(config.upstreams).length === 0) config.upstreams = structuredClone(v.exampleUpstreams);
  config.shutdown = { gracePeriod: `${v.drainSeconds}s` };
  if (v.tls.enabled) {
    config.listen!.tls = { cert: '/etc/switchyard/tls/tls.crt', key: '/etc/switchyard/tls/tls.key', ...(v.tls.clientCaSecret ? { ca: '/etc/switchyard/client-ca/ca.crt' } : {}) };
  }
  const sessions = (config.sessions ??= {});
  const previous = v.sessionKeys.existingSecret ? v.sessionKeys.existingSecretPreviousKeys.length : v.sessionKeys.previousKeys.length;
  if (previous > 0) sessions.keys = [...(sessions.keys as string[]), ...Array.from({ length: previous }, (_, i) => `\${SESSION_KEY_PREVIOUS_${i + 1}}`)];
  if (v.redis.existingSecret || v.redis.url) {
    const url = '${SWITCHYARD_REDIS_URL}';
    if (!('store' in sessions)) sessions.store = { redis: { url, prefix: `${v.redis.prefix}sess:` } };
    if (config.rateLimits && !('store' in config.rateLimits)) config.rateLimits.store = { redis: { url, prefix: v.redis.prefix } };
    if (config.credentials && !('store' in config.credentials)) config.credentials.store = { redis: { url, prefix: `${v.redis.prefix}cred:` } };
  }
  return config;
}

/** The values with some of them replaced (a Helm -f file's merge, one level deep is enough here). */
function withValues(v: Record<string, unknown>, changes: Record<string, Record<string, unknown>>): ChartValues {
  const merged = structuredClone(v) as Record<string, Record<string, unknown>>;
  for (const [key, value] of Object.entries(changes)) merged[key] = { ...merged[key], ...value };
  return merged as unknown as ChartValues;
}

const FILE = '/etc/switchyard/gateway.yaml';

/** Values as Helm merges a values file over the chart's: maps key by key, anything else replaced. */
function helmMerge(base: unknown, over: unknown): unknown {
  const isMap = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
  if (!isMap(base) || !isMap(over)) return structuredClone(over);
  const merged: Record<string, unknown> = structuredClone(base);
  for (const [key, value] of Object.entries(over)) merged[key] = key in merged ? helmMerge(merged[key], value) : structuredClone(value);
  return merged;
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

  it("runs the upstreams a values file names, and the example's only when it names none (Helm merges maps key by key)", async () => {
    const v = await values();
    const env = { SESSION_KEY: 'k'.repeat(48) };
    expect(Object.keys(configFromObject(renderedConfig(v as unknown as ChartValues), { file: FILE, env }).upstreams)).toEqual(['everything']);
    const mine = { config: { upstreams: { github: { http: { url: 'http://github-mcp.mcp.svc/mcp' } } } } };
    const merged = helmMerge(v, mine) as unknown as ChartValues;
    expect(Object.keys(configFromObject(renderedConfig(merged), { file: FILE, env }).upstreams)).toEqual(['github']);
  });

  it('renders a gateway.yaml from the default values that the gateway accepts', async () => {
    const v = await values();
    const env = { SESSION_KEY: 'k'.repeat(48) };
    const config = configFromObject(renderedConfig(v as unknown as ChartValues), { file: FILE, env });
    expect(config.shutdown.gracePeriod).toBe((v.drainSeconds as number) * 1_000);
    expect(config.sessions.keys).toEqual([env.SESSION_KEY]);
    expect(config.auth?.oauth).toBeDefined();
    // The metrics listener answers the ServiceMonitor from outside the pod, not on loopback alone.
    expect(config.metrics.port).toBe(9464);
    expect(config.metrics.host).toBe('0.0.0.0');
    // With TLS on (and client certificates) too.
    const tls = configFromObject(renderedConfig(withValues(v, { tls: { enabled: true, existingSecret: 'tls', clientCaSecret: 'client-ca' } })), { file: FILE, env });
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

  it('gives the config the previous session keys from the Secret, after the current one: the current seals, every one opens', async () => {
    const v = await values();
    const [current, previous, older] = ['n', 'o', 'p'].map((c) => c.repeat(40)) as [string, string, string];
    const env = { SESSION_KEY: current, SESSION_KEY_PREVIOUS_1: previous, SESSION_KEY_PREVIOUS_2: older };
    const own = configFromObject(renderedConfig(withValues(v, { sessionKeys: { previousKeys: [previous, older] } })), { file: FILE, env });
    expect(own.sessions.keys).toEqual([current, previous, older]);
    const theirs = configFromObject(renderedConfig(withValues(v, { sessionKeys: { existingSecret: 'keys', existingSecretPreviousKeys: ['previous-session-key'] } })), { file: FILE, env });
    expect(theirs.sessions.keys).toEqual([current, previous]);
    // The pods get them from the Secret, the chart's own Secret stores them, and the helper appends them.
    const t = await templates();
    expect(t.get('secret.yaml')).toContain('previous-session-key-{{ add1 $i }}: {{ $key | b64enc }}');
    expect(t.get('deployment.yaml')).toContain('{{- $previousKeys = append $previousKeys (printf "previous-session-key-%d" (add1 $i)) }}');
    expect(t.get('deployment.yaml')).toMatch(/- name: SESSION_KEY_PREVIOUS_\{\{ add1 \$i \}\}\s+valueFrom:\s+secretKeyRef:\s+name: \{\{ include "switchyard.sessionSecret" \$ \}\}\s+key: \{\{ \$key \}\}/);
    expect(t.get('_helpers.tpl')).toContain('{{- range $i := until $previous -}}{{- $keys = append $keys (printf "${SESSION_KEY_PREVIOUS_%d}" (add1 $i)) -}}{{- end -}}');
  });

  it('shares one Redis across the fleet from one value: sessions, and the rate limits and credentials the config turns on, never a store the config sets', async () => {
    const v = await values();
    const env = { SESSION_KEY: 'k'.repeat(48), SWITCHYARD_REDIS_URL: 'rediss://:secret@redis.example:6380/0' };
    const fleet = configFromObject(renderedConfig(withValues(v, { redis: { url: env.SWITCHYARD_REDIS_URL } })), { file: FILE, env });
    expect(fleet.sessions.store).toEqual({ redis: { url: env.SWITCHYARD_REDIS_URL, prefix: 'switchyard:sess:' } });
    expect(fleet.rateLimits).toBeUndefined();
    const everything = withValues(v, { redis: { existingSecret: 'redis', prefix: 'prod:' }, config: { rateLimits: { perClient: { rate: 5, per: '1s' } }, credentials: { key: 'c'.repeat(40) } } });
    const all = configFromObject(renderedConfig(everything), { file: FILE, env });
    expect([all.sessions.store, all.rateLimits?.store, all.credentials?.store]).toEqual([
      { redis: { url: env.SWITCHYARD_REDIS_URL, prefix: 'prod:sess:' } },
      { redis: { url: env.SWITCHYARD_REDIS_URL, prefix: 'prod:' } },
      { redis: { url: env.SWITCHYARD_REDIS_URL, prefix: 'prod:cred:' } },
    ]);
    const own = withValues(v, { redis: { url: env.SWITCHYARD_REDIS_URL }, config: { sessions: { ...(v as unknown as ChartValues).config.sessions, store: 'memory' } } });
    expect(configFromObject(renderedConfig(own), { file: FILE, env }).sessions.store).toBe('memory');
    // Without it, nothing changes.
    expect(configFromObject(renderedConfig(v as unknown as ChartValues), { file: FILE, env }).sessions.store).toBe('memory');
    const t = await templates();
    expect(t.get('deployment.yaml')).toMatch(/\{\{- with include "switchyard.redisSecret" \. \}\}\s+- name: SWITCHYARD_REDIS_URL\s+valueFrom:\s+secretKeyRef:\s+name: \{\{ \. \}\}\s+key: \{\{ ternary \$\.Values\.redis\.existingSecretKey "redis-url"/);
    expect(t.get('secret.yaml')).toContain('redis-url: {{ .Values.redis.url | b64enc }}');
    const helpers = t.get('_helpers.tpl')!;
    expect(helpers).toContain('{{- $url := "${SWITCHYARD_REDIS_URL}" -}}');
    expect(helpers).toContain('{{- if not (hasKey $sessions "store") -}}');
    expect(helpers).toContain('(printf "%ssess:" .Values.redis.prefix)');
    expect(helpers).toContain('(printf "%scred:" $.Values.redis.prefix)');
  });

  it('rolls the pods when the config or a Secret the chart makes changes (subPath and env do not follow them)', async () => {
    const t = await templates();
    const deployment = t.get('deployment.yaml')!;
    // The mount that needs it, and the checksum of what the ConfigMap holds.
    expect(deployment).toContain('{ name: config, mountPath: /etc/switchyard/gateway.yaml, subPath: gateway.yaml, readOnly: true }');
    expect(t.get('configmap.yaml')).toContain('{{- include "switchyard.gatewayConfig" . | nindent 4 }}');
    expect(deployment).toMatch(/template:\s+metadata:\s+labels:[^]*?annotations:\s+#[^\n]*\n\s+checksum\/config: \{\{ include "switchyard.gatewayConfig" \. \| sha256sum \}\}\s+checksum\/secret: \{\{ include "switchyard.secretInputs" \. \| sha256sum \}\}/);
    // Every value the chart's Secrets are made from is in checksum/secret.
    const inputs = /define "switchyard.secretInputs" -\}\}\s*\{\{- toJson \(dict ([^)]*)\)/.exec(t.get('_helpers.tpl')!)?.[1] ?? '';
    const hashed = new Set([...inputs.matchAll(/\.Values\.([A-Za-z]+)/g)].map((m) => m[1]));
    const read = new Set([...t.get('secret.yaml')!.matchAll(/\.Values\.([A-Za-z]+)/g)].map((m) => m[1]));
    expect([...read].filter((key) => !hashed.has(key))).toEqual([]);
  });

  it('documents every top-level value in the chart README', async () => {
    const readme = await readFile(join(CHART, 'README.md'), 'utf8');
    for (const key of Object.keys(await values())) expect(readme, key).toContain(`\`${key}`);
  });
});
