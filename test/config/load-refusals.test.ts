// Configs refused at load, one ConfigError line each: paths that meet the probes, the metrics or
// each other, empty ${VAR}s, YAML references that cannot be resolved, "__proto__" keys; and an
// IPv6 bind address written in brackets, taken without them.
import { describe, expect, it } from 'vitest';
import { configFromObject, parseConfig, type Env } from '../../src/config/load.js';
import type { Config } from '../../src/config/schema.js';
import { configError } from '../helpers/config-error.js';

const FILE = '/etc/switchyard/gateway.yaml';
const STDIO = { stdio: { command: 'node', args: ['server.js'] } };

function fromObject(raw: Record<string, unknown>, env: Env = {}): Config {
  return configFromObject({ upstreams: { a: STDIO }, ...raw }, { file: FILE, env });
}

function fromYaml(text: string, env: Env = {}): Config {
  return parseConfig(text, { file: FILE, env });
}


describe('served paths', () => {
  it.each(['/mcp', '/healthz', '/readyz'])('refuses metrics.path %s on the main listener, naming metrics.path', (path) => {
    const error = configError(() => fromObject({ metrics: { enabled: true, path } }));
    expect(error.keyPath).toBe('metrics.path');
    expect(error.problem).toMatch(new RegExp(`^${path} is already served on the main listener \\((listen\\.path|a health probe)\\)`));
  });

  it('refuses metrics.path equal to a listen.path of its own choosing', () => {
    expect(configError(() => fromObject({ listen: { path: '/gw' }, metrics: { enabled: true, path: '/gw' } })).message).toBe(
      `${FILE}: metrics.path: /gw is already served on the main listener (listen.path); choose another path, or a metrics.port`,
    );
  });

  it.each(['/healthz', '/readyz', '/oauth/token', '/.well-known/oauth-protected-resource', '/connect', '/admin/pins'])('refuses listen.path %s, naming listen.path', (path) => {
    const error = configError(() => fromObject({ listen: { path } }));
    expect(error.keyPath).toBe('listen.path');
    expect(error.problem).toMatch(new RegExp(`^${path} is reserved \\(`));
  });

  it('accepts a metrics.path anywhere on its own port, and listen.path /metrics when metrics are off or elsewhere', () => {
    expect(fromObject({ metrics: { enabled: true, port: 0, path: '/mcp' } }).metrics.path).toBe('/mcp');
    expect(fromObject({ listen: { path: '/metrics' } }).listen.path).toBe('/metrics');
    expect(fromObject({ listen: { path: '/metrics' }, metrics: { enabled: true, port: 9090 } }).listen.path).toBe('/metrics');
  });

  it('still refuses an endpoint on the metrics path or a probe', () => {
    expect(configError(() => fromObject({ endpoints: [{ path: '/metrics' }] })).message).toBe(`${FILE}: endpoints[0].path: /metrics is reserved`);
    expect(configError(() => fromObject({ endpoints: [{ path: '/admin/x' }] })).keyPath).toBe('endpoints[0].path');
  });
});

describe('empty ${VAR}', () => {
  it('refuses a bare ${VAR} that is set but empty, naming the key path and the variable', () => {
    const error = configError(() => fromObject({ upstreams: { a: { http: { url: 'https://h/mcp', headers: { Authorization: 'Bearer ${TOK}' } } } } }, { TOK: '' }));
    expect(error.message).toBe(`${FILE}: upstreams.a.http.headers.Authorization: environment variable TOK is empty (write \${TOK:-} if an empty value is meant)`);
  });

  it('takes ${VAR:-} as an explicit empty default, set empty or unset', () => {
    expect(fromObject({ upstreams: { a: { stdio: { command: 'node', args: ['x${S:-}'] } } } }, { S: '' }).upstreams.a?.stdio?.args).toEqual(['x']);
    expect(fromObject({ upstreams: { a: { stdio: { command: 'node', args: ['x${S:-}'] } } } }).upstreams.a?.stdio?.args).toEqual(['x']);
  });
});

describe('YAML references', () => {
  it('refuses an alias to no anchor as invalid YAML, one line', () => {
    const error = configError(() => fromYaml('listen:\n  host: *nope\nupstreams: {}\n'));
    expect(error.keyPath).toBe('');
    expect(error.message).toMatch(new RegExp(`^${FILE.replaceAll('/', '\\/')}: invalid YAML: Unresolved alias.*nope$`));
  });

  it('refuses aliases that expand past the alias limit (a "billion laughs" document)', () => {
    const levels = Array.from({ length: 8 }, (_, i) => (i === 0 ? 'a0: &a0 [x,x,x,x,x,x,x,x,x,x]' : `a${i}: &a${i} [${Array(10).fill(`*a${i - 1}`).join(',')}]`));
    const error = configError(() => fromYaml(`${levels.join('\n')}\nupstreams: {}\n`));
    expect(error.message).toMatch(/: invalid YAML: Excessive alias count/);
  });
});

describe('__proto__ keys', () => {
  it('refuses one in YAML, naming where it is, instead of inheriting its keys', () => {
    const error = configError(() => fromYaml('listen:\n  __proto__: { host: 0.0.0.0 }\nupstreams: {}\n'));
    expect(error.message).toBe(`${FILE}: listen.__proto__: this key is not allowed`);
  });

  it('refuses one at the top level and in an object parsed from JSON', () => {
    expect(configError(() => fromYaml('upstreams: {}\n__proto__: { bogus: 1 }\n')).keyPath).toBe('__proto__');
    expect(configError(() => configFromObject(JSON.parse('{"upstreams":{},"listen":{"__proto__":{"allowUnauthenticated":true}}}'), { file: FILE, env: {} })).keyPath).toBe('listen.__proto__');
  });
});

describe('bracketed IPv6 bind addresses', () => {
  it('takes [::1] as ::1 for listen.host and metrics.host', () => {
    const config = fromObject({ listen: { host: '[::1]' }, metrics: { enabled: true, port: 0, host: '[::1]' } });
    expect(config.listen.host).toBe('::1');
    expect(config.metrics.host).toBe('::1');
  });
});
