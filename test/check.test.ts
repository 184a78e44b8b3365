// `switchyard check` (src/check.ts) without --connect: what it prints of a config keeps the
// config's secrets hidden, as the logs do.
import { describe, expect, it } from 'vitest';
import { checkConfig } from '../src/check.js';
import { configFromObject } from '../src/config/load.js';

const FILE = '/etc/switchyard/gateway.yaml';

describe('switchyard check', () => {
  it('prints an upstream URL without the password and key ${VAR} put into it', async () => {
    const config = configFromObject(
      { listen: { host: '127.0.0.1' }, upstreams: { x: { http: { url: 'https://svc:${PW}@tickets.internal/mcp?api_key=${K}' } } } },
      { file: FILE, env: { PW: 'hunter2', K: 'sk-live-1234567890' } },
    );
    const lines: string[] = [];
    expect(await checkConfig(FILE, config, { connect: false, baseEnv: {}, print: (line) => lines.push(line) })).toBe(0);
    const upstream = lines.find((line) => line.startsWith('upstream x'));
    expect(upstream).toBe('upstream x (prefix "x") streamable-http: https://svc:[redacted]@tickets.internal/mcp?api_key=[redacted]');
  });
});
