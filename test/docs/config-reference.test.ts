// docs/configuration.md is generated from the config schema (npm run docs:config): the file in the
// repository must be exactly what the schema renders today, every key must carry a description,
// and every key the shipped configs and the guide's example use must be in it.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { configKeys, renderConfigReference, type ConfigKey } from '../../scripts/config-reference-lib.js';
import { ROOT } from '../helpers/paths.js';

const reference = (): string => readFileSync(join(ROOT, 'docs', 'configuration.md'), 'utf8');

function keyNamed(path: string): ConfigKey {
  const key = configKeys().find((candidate) => candidate.path === path);
  if (!key) throw new Error(`no key ${path} in the reference`);
  return key;
}

/** A key path as a pattern: `<name>` stands for any one key, `[]` for the items of a list. */
function patternOf(path: string): RegExp {
  const escaped = path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/<[^>]+>/g, '[^.\\[]+');
  return new RegExp(`^${escaped}$`);
}

/** The paths a key is reached through: `upstreams.<name>` for `upstreams.<name>.http.url`. */
function stepsOf(path: string): string[] {
  const steps: string[] = [];
  for (const match of path.matchAll(/\.|\[\]/g)) if (match.index > 0) steps.push(path.slice(0, match.index));
  return steps;
}

/** Every key path a YAML document uses that the reference does not list. */
function unlisted(document: unknown): string[] {
  const keys = configKeys().map((key) => ({ key, pattern: patternOf(key.path) }));
  const steps = [...new Set(configKeys().flatMap((key) => stepsOf(key.path)))].map(patternOf);
  const missing: string[] = [];
  const visit = (value: unknown, path: string): void => {
    if (path !== '') {
      const found = keys.find(({ pattern }) => pattern.test(path));
      if (!found && !steps.some((step) => step.test(path))) {
        missing.push(path);
        return;
      }
      // Below a key whose type holds no object (a list of strings; env, headers, pin) there is
      // nothing more to list: its items and keys are the user's own.
      if (found && !found.key.type.includes('object')) return;
    }
    if (Array.isArray(value)) value.forEach((item) => visit(item, `${path}[]`));
    else if (typeof value === 'object' && value !== null) {
      for (const [key, child] of Object.entries(value)) visit(child, path === '' ? key : `${path}.${key}`);
    }
  };
  visit(document, '');
  return missing;
}

describe('the configuration reference', () => {
  it('is what the schema renders (run `npm run docs:config` after changing src/config/schema.ts)', () => {
    expect(reference()).toBe(renderConfigReference());
  });

  it('says at its top that it is generated, and by which command', () => {
    const head = reference().split('\n').slice(0, 6).join('\n');
    expect(head).toMatch(/generated/i);
    expect(head).toContain('npm run docs:config');
  });

  it('lists known keys with their type, default and whether they are required', () => {
    const queue = keyNamed('sessions.streamQueueBytes');
    expect(queue).toMatchObject({ type: 'integer ≥ 1024', required: false });
    expect(queue.default).toContain('1048576');
    expect(keyNamed('upstreams.<name>.maxTools')).toMatchObject({ default: '`10000`', required: false });
    expect(keyNamed('upstreams.<name>.http.url')).toMatchObject({ type: 'http(s) URL', required: true, default: undefined });
    expect(keyNamed('upstreams')).toMatchObject({ required: true });
    expect(keyNamed('sessions.idleTimeout')).toMatchObject({ type: 'duration', default: '`30m`' });
    expect(keyNamed('upstreams.<name>.restart.backoff').default).toBe('`500ms`');
    expect(keyNamed('rateLimits.store.redis.prefix').default).toBe('`"switchyard:"`');
    expect(keyNamed('teams[].match.principal').required).toBe(true);

    const text = reference();
    expect(text).toMatch(/^\| `sessions\.streamQueueBytes` \| .* \| `1048576` \(1 MiB\) \| no \| .+ \|$/m);
    expect(text).toMatch(/^\| `upstreams\.<name>\.maxTools` \| integer ≥ 1 \| `10000` \| no \| .+ \|$/m);
  });

  it('gives every key a description', () => {
    expect(configKeys().filter((key) => !key.description).map((key) => key.path)).toEqual([]);
  });

  it('lists every key the bundled configs and the guide’s example use', () => {
    for (const file of ['gateway.yaml', 'deploy/gateway.yaml']) {
      expect(unlisted(parse(readFileSync(join(ROOT, file), 'utf8'))), file).toEqual([]);
    }
    const guide = readFileSync(join(ROOT, 'docs', 'configuration-guide.md'), 'utf8');
    const example = /```yaml\n([\s\S]*?)```/.exec(guide)?.[1];
    expect(example, 'the guide has a yaml example').toBeDefined();
    const keysUsed = unlisted(parse(example!));
    expect(keysUsed).toEqual([]);
  });

  it('would notice a key it does not list', () => {
    expect(unlisted({ upstreams: { a: { stdio: { comand: 'x' } } }, sessions: { idle: 1 } })).toEqual([
      'upstreams.a.stdio.comand',
      'sessions.idle',
    ]);
  });
});
