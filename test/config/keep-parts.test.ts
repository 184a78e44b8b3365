// keepParts (src/config/load.ts): the config a reload leaves running, the new one with the parts
// that need a restart as they run, and the secrets substituted into each part still known.
import { describe, expect, it } from 'vitest';
import { configFromObject, keepParts, type Env } from '../../src/config/load.js';
import { secretsOf } from '../../src/config/secrets.js';
import type { Config } from '../../src/config/schema.js';

const FILE = '/etc/switchyard/gateway.yaml';
const KEY = 'k'.repeat(43);

function config(raw: Record<string, unknown>, env: Env = {}): Config {
  return configFromObject(raw, { file: FILE, env });
}

const values = (config: Config): string[] => secretsOf(config).map((s) => (typeof s === 'string' ? s : s.value));

describe('keepParts', () => {
  const running = config(
    { upstreams: { old: { http: { url: 'https://u:${OLD_PW}@old.internal/mcp' } } }, logging: { arguments: 'shape' }, sessions: { keys: ['${SESSION_KEY}'] }, rateLimits: { store: { redis: { url: 'redis://:${REDIS_PW}@r:6379' } } } },
    { OLD_PW: 'old-password', SESSION_KEY: KEY, REDIS_PW: 'redis-password' },
  );
  const next = config(
    { upstreams: { fresh: { http: { url: 'https://u:${NEW_PW}@new.internal/mcp' } } }, logging: { arguments: 'values' }, auth: { apiKeys: [{ id: 'a', hash: `sha256:${'0'.repeat(64)}` }] }, rateLimits: { perTool: { '*': { rate: 1, per: '1s' } } } },
    { NEW_PW: 'new-password' },
  );
  const kept = keepParts(running, next, [['logging'], ['sessions'], ['auth'], ['rateLimits', 'store']]);

  it('takes the new config but the kept parts of the running one, a section the running one lacks left out', () => {
    expect(Object.keys(kept.upstreams)).toEqual(['fresh']);
    expect(kept.logging.arguments).toBe('shape');
    expect(kept.sessions.keys).toEqual([KEY]);
    expect(kept.auth).toBeUndefined();
    expect(kept.rateLimits?.perTool['*']).toEqual({ rate: 1, per: 1_000 });
    expect(kept.rateLimits?.store).toEqual(running.rateLimits?.store);
    expect(Object.isFrozen(kept)).toBe(true);
    expect(Object.isFrozen(kept.rateLimits)).toBe(true);
  });

  it('keeps the secrets substituted into the kept parts and the new config, not those of what was replaced', () => {
    expect(values(kept)).toEqual(expect.arrayContaining([KEY, 'redis-password', 'new-password']));
    expect(values(kept)).not.toContain('old-password');
  });

  it('leaves a key of a section the new config lacks as the new config has it', () => {
    const none = config({ upstreams: {} });
    expect(keepParts(running, none, [['rateLimits', 'store']]).rateLimits).toBeUndefined();
  });
});
