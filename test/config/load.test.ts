// Config loading of src/config/load.ts and src/config/schema.ts: defaults, ${VAR} substitution,
// validation errors naming file and key path, path resolution, freezing.
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, configFromObject, loadConfig, parseConfig, type Env } from '../../src/config/load.js';
import type { Config } from '../../src/config/schema.js';
import { configError } from '../helpers/config-error.js';
import { ROOT } from '../helpers/paths.js';

const FILE = '/etc/switchyard/gateway.yaml';
const STDIO = { stdio: { command: 'node', args: ['server.js'] } };

function fromObject(raw: unknown, env: Env = {}): Config {
  return configFromObject(raw, { file: FILE, env });
}

function fromYaml(text: string, env: Env = {}): Config {
  return parseConfig(text, { file: FILE, env });
}


function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

async function configErrorAsync(build: () => Promise<unknown>): Promise<ConfigError> {
  try {
    await build();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error('expected a ConfigError, but nothing was thrown');
}

describe('config defaults', () => {
  const config = fromObject({ upstreams: { everything: STDIO, remote: { http: { url: 'http://127.0.0.1:3001/mcp' } } } });

  it('listens on 127.0.0.1:8080 at /mcp by default', () => {
    expect(config.listen.host).toBe('127.0.0.1');
    expect(config.listen.port).toBe(8080);
    expect(config.listen.path).toBe('/mcp');
  });

  it('namespaces with "__" and 64-character names by default', () => {
    expect(config.namespacing).toEqual({ separator: '__', maxNameLength: 64 });
  });

  it('gives upstreams a 60 s request timeout and a 10 s initialize timeout by default', () => {
    expect(config.upstreams.everything?.timeoutMs).toBe(60_000);
    expect(config.upstreams.everything?.initTimeoutMs).toBe(10_000);
  });

  it('expires idle sessions after 30 minutes by default', () => {
    expect(config.sessions.idleTimeout).toBe(1_800_000);
  });

  it('logs at info by default', () => {
    expect(config.logging.level).toBe('info');
  });

  it('fills stdio args and env and http headers and transport with defaults', () => {
    const bare = fromObject({ upstreams: { a: { stdio: { command: 'node' } }, b: { http: { url: 'https://example.com/mcp' } } } });
    expect(bare.upstreams.a?.stdio).toMatchObject({ command: 'node', args: [], env: {} });
    expect(bare.upstreams.b?.http).toEqual({ url: 'https://example.com/mcp', headers: {}, transport: 'streamable-http' });
  });

  it('an empty YAML document lacks only the required upstreams', () => {
    expect(configError(() => fromYaml('')).message).toBe(`${FILE}: upstreams: required`);
  });
});

describe('config ${VAR} substitution', () => {
  it('substitutes ${VAR} from the env passed in', () => {
    const config = fromYaml(
      'upstreams:\n  t:\n    http:\n      url: https://tickets.internal/mcp\n      headers:\n        Authorization: "Bearer ${TICKETS_TOKEN}"\n',
      { TICKETS_TOKEN: 's3cret' },
    );
    expect(config.upstreams.t?.http?.headers.Authorization).toBe('Bearer s3cret');
  });

  it('does not read process.env', () => {
    expect(process.env.PATH).toBeDefined();
    const error = configError(() => fromObject({ upstreams: { a: { stdio: { command: '${PATH}' } } } }, {}));
    expect(error.message).toContain('PATH');
  });

  it('substitutes several references in one value', () => {
    const config = fromObject({ upstreams: { a: { http: { url: 'http://${HOST}:${PORT}/mcp' } } } }, { HOST: 'example.com', PORT: '9000' });
    expect(config.upstreams.a?.http?.url).toBe('http://example.com:9000/mcp');
  });

  it('uses the default of ${VAR:-default} when VAR is unset', () => {
    const config = fromObject({ upstreams: { a: { stdio: { command: 'node', env: { FILE: '${MEMORY_FILE:-/tmp/memory.jsonl}' } } } } });
    expect(config.upstreams.a?.stdio?.env.FILE).toBe('/tmp/memory.jsonl');
  });

  it('uses the default of ${VAR:-default} when VAR is empty', () => {
    const config = fromObject({ upstreams: { a: { stdio: { command: '${CMD:-node}' } } } }, { CMD: '' });
    expect(config.upstreams.a?.stdio?.command).toBe('node');
  });

  it('prefers the value of ${VAR:-default} when VAR is set', () => {
    const config = fromObject({ upstreams: { a: { stdio: { command: '${CMD:-node}' } } } }, { CMD: 'deno' });
    expect(config.upstreams.a?.stdio?.command).toBe('deno');
  });

  it('accepts an empty default', () => {
    const config = fromObject({ upstreams: { a: { stdio: { command: 'node', args: ['x${SUFFIX:-}'] } } } });
    expect(config.upstreams.a?.stdio?.args).toEqual(['x']);
  });

  it('reads "$${" as a literal "${"', () => {
    const config = fromObject({ upstreams: { a: { stdio: { command: 'node', args: ['$${NOT_A_VAR}'] } } } });
    expect(config.upstreams.a?.stdio?.args).toEqual(['${NOT_A_VAR}']);
  });

  it('names the key path and the variable when a variable is unset', () => {
    const error = configError(() =>
      fromYaml('upstreams:\n  t:\n    http:\n      url: https://t.internal/mcp\n      headers:\n        Authorization: "Bearer ${TICKETS_TOKEN}"\n'),
    );
    expect(error.keyPath).toBe('upstreams.t.http.headers.Authorization');
    expect(error.message).toBe(`${FILE}: upstreams.t.http.headers.Authorization: environment variable TICKETS_TOKEN is not set`);
  });

  it('names an array element as [index] in the key path', () => {
    const error = configError(() => fromObject({ upstreams: { a: { stdio: { command: 'node', args: ['x', '${MISSING}'] } } } }));
    expect(error.keyPath).toBe('upstreams.a.stdio.args[1]');
  });
});

describe('config validation errors', () => {
  it('formats every error as FILE: KEY.PATH: problem', () => {
    const error = configError(() => fromObject({ upstreams: { a: { ...STDIO, bogus: 1 } } }));
    expect(error.message).toBe(`${FILE}: upstreams.a.bogus: unknown key`);
    expect(error.name).toBe('ConfigError');
    expect(error.file).toBe(FILE);
    expect(error.keyPath).toBe('upstreams.a.bogus');
    expect(error.problem).toBe('unknown key');
  });

  it('rejects an unknown top-level key', () => {
    expect(configError(() => fromObject({ upstreams: { a: STDIO }, listne: {} })).message).toBe(`${FILE}: listne: unknown key`);
  });

  it('rejects an unknown nested key with the path ending in that key', () => {
    const error = configError(() => fromObject({ upstreams: { a: STDIO }, listen: { prot: 9000 } }));
    expect(error.keyPath).toBe('listen.prot');
    expect(error.problem).toMatch(/unknown key/);
  });

  it('lists the other unknown keys of the same object', () => {
    const error = configError(() => fromObject({ upstreams: { a: { stdio: { command: 'node', cmd: 'x', argv: [] } } } }));
    expect(error.keyPath).toBe('upstreams.a.stdio.cmd');
    expect(error.problem).toBe('unknown key (also unknown: argv)');
  });

  it('counts the problems beyond the first', () => {
    const error = configError(() => fromObject({ upstreams: { a: STDIO }, listen: { prot: 1 }, logging: { lvl: 'debug' } }));
    expect(error.problem).toBe('unknown key (and 1 more problem)');
  });

  it('reports a missing required key as "required"', () => {
    const error = configError(() => fromObject({ upstreams: { a: { stdio: { args: [] } } } }));
    expect(error.message).toBe(`${FILE}: upstreams.a.stdio.command: required`);
  });

  it('reports a value of the wrong type as the wrong type, not as "required"', () => {
    const error = configError(() => fromObject({ upstreams: { a: STDIO }, listen: { port: '8080' } }));
    expect(error.keyPath).toBe('listen.port');
    expect(error.problem).not.toBe('required');
    expect(error.problem).toMatch(/expected number/);
  });

  it('rejects an upstream with both stdio and http', () => {
    const error = configError(() => fromObject({ upstreams: { a: { ...STDIO, http: { url: 'http://127.0.0.1:1/mcp' } } } }));
    expect(error.message).toBe(`${FILE}: upstreams.a: needs exactly one of \`stdio\` or \`http\``);
  });

  it('rejects an upstream with neither stdio nor http', () => {
    const error = configError(() => fromObject({ upstreams: { a: { timeoutMs: 1000 } } }));
    expect(error.keyPath).toBe('upstreams.a');
    expect(error.problem).toMatch(/exactly one of `stdio` or `http`/);
  });

  it('rejects an http url that is not http or https', () => {
    const error = configError(() => fromObject({ upstreams: { a: { http: { url: 'ftp://example.com/mcp' } } } }));
    expect(error.keyPath).toBe('upstreams.a.http.url');
  });

  it.each(['GitHub', 'my_server', '-lead', 'a'.repeat(33), 'dot.ted'])('rejects the upstream name %j', (name) => {
    const error = configError(() => fromObject({ upstreams: { [name]: STDIO } }));
    expect(error.keyPath).toBe(`upstreams.${name}`);
    expect(error.problem).toMatch(/upstream names must match/);
  });

  it('accepts upstream names of lowercase letters, digits and hyphens up to 32 characters', () => {
    const name = `a${'-9'.repeat(15)}z`;
    expect(name.length).toBe(32);
    expect(Object.keys(fromObject({ upstreams: { [name]: STDIO, '0x': STDIO } }).upstreams)).toEqual([name, '0x']);
  });

  it('rejects a second unprefixed upstream', () => {
    const error = configError(() => fromObject({ upstreams: { a: { ...STDIO, prefix: '' }, b: { ...STDIO, prefix: '' } } }));
    expect(error.keyPath).toBe('upstreams.b.prefix');
    expect(error.problem).toBe('only one upstream may be unprefixed ("a" already is)');
  });

  it('rejects two upstreams with the same prefix', () => {
    const error = configError(() => fromObject({ upstreams: { a: { ...STDIO, prefix: 'z' }, b: { ...STDIO, prefix: 'z' } } }));
    expect(error.keyPath).toBe('upstreams.b.prefix');
    expect(error.problem).toBe('names would collide with upstream "a" (both use "z")');
  });

  it('rejects a prefix equal to another upstream\'s name', () => {
    const error = configError(() => fromObject({ upstreams: { github: STDIO, mirror: { ...STDIO, prefix: 'github' } } }));
    expect(error.keyPath).toBe('upstreams.mirror.prefix');
    expect(error.problem).toMatch(/collide with upstream "github"/);
  });

  it('rejects a prefix equal to the unprefixed upstream\'s name, which it falls back to', () => {
    const error = configError(() => fromObject({ upstreams: { single: { ...STDIO, prefix: '' }, other: { ...STDIO, prefix: 'single' } } }));
    expect(error.problem).toMatch(/collide with upstream "single"/);
  });

  it('rejects a prefix containing the separator', () => {
    const error = configError(() => fromObject({ upstreams: { a: { ...STDIO, prefix: 'git-hub' } }, namespacing: { separator: '-' } }));
    expect(error.message).toBe(`${FILE}: upstreams.a.prefix: "git-hub" contains or runs into the separator "-"`);
  });

  it('rejects an upstream name containing the separator', () => {
    const error = configError(() => fromObject({ upstreams: { 'git-hub': STDIO }, namespacing: { separator: '-' } }));
    expect(error.keyPath).toBe('upstreams.git-hub.prefix');
    expect(error.problem).toMatch(/contains or runs into the separator/);
  });

  it('rejects a prefix whose end runs into the separator, which would split names at the wrong place', () => {
    // "gh-x" + "-x-" + "tool" holds the separator first at index 2, right after "gh".
    const error = configError(() => fromObject({ upstreams: { gh: STDIO, 'gh-x': STDIO }, namespacing: { separator: '-x-' } }));
    expect(error.keyPath).toBe('upstreams.gh-x.prefix');
    expect(error.problem).toMatch(/runs into the separator "-x-"/);
    const trailing = configError(() => fromObject({ upstreams: { 'gh-': STDIO }, namespacing: { separator: '--' } }));
    expect(trailing.keyPath).toBe('upstreams.gh-.prefix');
  });

  it('rejects a prefix outside [a-z0-9-]', () => {
    const error = configError(() => fromObject({ upstreams: { a: { ...STDIO, prefix: 'Git_Hub' } } }));
    expect(error.keyPath).toBe('upstreams.a.prefix');
  });

  it('rejects a maxNameLength that leaves no room under a prefix', () => {
    const error = configError(() => fromObject({ upstreams: { [`a${'b'.repeat(20)}`]: STDIO }, namespacing: { maxNameLength: 16 } }));
    expect(error.keyPath).toBe('namespacing.maxNameLength');
  });

  it('rejects a listen path that is not absolute', () => {
    const error = configError(() => fromObject({ upstreams: { a: STDIO }, listen: { path: 'mcp' } }));
    expect(error.message).toBe(`${FILE}: listen.path: must be an absolute path such as /mcp`);
  });

  it('reports invalid YAML with its line number', () => {
    const error = configError(() => fromYaml('upstreams:\n  a:\n    stdio:\n      command: node\n   bad: 1\n'));
    expect(error.keyPath).toBe('');
    expect(error.message).toMatch(new RegExp(`^${escapeRegExp(FILE)}: invalid YAML: line 5, column \\d+: `));
  });

  it('rejects duplicate YAML keys', () => {
    const error = configError(() => fromYaml('upstreams:\n  a:\n    stdio: { command: node }\n  a:\n    stdio: { command: deno }\n'));
    expect(error.message).toMatch(/invalid YAML: line 4, column \d+: .*unique/);
  });
});

describe('config durations', () => {
  it.each([
    ['500ms', 500],
    ['30s', 30_000],
    ['5m', 300_000],
    ['1h', 3_600_000],
    ['1.5s', 1_500],
    [2500, 2500],
  ] as const)('reads the duration %j as %d ms', (value, ms) => {
    expect(fromObject({ upstreams: { a: STDIO }, sessions: { idleTimeout: value } }).sessions.idleTimeout).toBe(ms);
  });

  it('reads a duration written in YAML', () => {
    expect(fromYaml('upstreams: { a: { stdio: { command: node } } }\nsessions:\n  idleTimeout: 45s\n').sessions.idleTimeout).toBe(45_000);
  });

  it.each(['soon', '5 minutes', '-1s', -5])('rejects the duration %j', (value) => {
    const error = configError(() => fromObject({ upstreams: { a: STDIO }, sessions: { idleTimeout: value } }));
    expect(error.keyPath).toBe('sessions.idleTimeout');
    expect(error.problem).toMatch(/expected a duration such as 500ms, 30s, 5m, 1h or 30d/);
  });
});

describe('config paths and freezing', () => {
  it('defaults stdio.cwd to the config file\'s directory', () => {
    expect(fromObject({ upstreams: { a: STDIO } }).upstreams.a?.stdio?.cwd).toBe('/etc/switchyard');
  });

  it('resolves a relative stdio.cwd against the config file\'s directory', () => {
    const config = fromObject({ upstreams: { a: { stdio: { command: 'node', cwd: '../servers/a' } } } });
    expect(config.upstreams.a?.stdio?.cwd).toBe('/etc/servers/a');
  });

  it('keeps an absolute stdio.cwd', () => {
    const config = fromObject({ upstreams: { a: { stdio: { command: 'node', cwd: '/srv/mcp' } } } });
    expect(config.upstreams.a?.stdio?.cwd).toBe('/srv/mcp');
  });

  it('freezes the whole result', () => {
    const config = fromObject({ upstreams: { a: STDIO, b: { http: { url: 'http://127.0.0.1:1/mcp', headers: { X: 'y' } } } } });
    for (const part of [
      config,
      config.listen,
      config.listen.allowedOrigins,
      config.upstreams,
      config.upstreams.a,
      config.upstreams.a?.stdio,
      config.upstreams.a?.stdio?.args,
      config.upstreams.a?.stdio?.env,
      config.upstreams.b?.http?.headers,
      config.namespacing,
      config.sessions,
      config.logging,
    ]) {
      expect(Object.isFrozen(part)).toBe(true);
    }
    expect(() => {
      config.listen.port = 1;
    }).toThrow(TypeError);
    expect(() => {
      config.upstreams.a?.stdio?.args.push('--evil');
    }).toThrow(TypeError);
  });

  it('does not modify the object passed in', () => {
    const raw = { upstreams: { a: { stdio: { command: '${CMD:-node}' } } } };
    fromObject(raw);
    expect(raw).toEqual({ upstreams: { a: { stdio: { command: '${CMD:-node}' } } } });
    expect(Object.isFrozen(raw)).toBe(false);
  });
});

describe('loadConfig', () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'switchyard-config-'));
    await mkdir(join(dir, 'servers'));
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('reports a missing file as "file not found"', async () => {
    const file = join(dir, 'absent.yaml');
    const error = await configErrorAsync(() => loadConfig(file, {}));
    expect(error.message).toBe(`${file}: file not found`);
    expect(error.keyPath).toBe('');
  });

  it('reads a file and substitutes from the env passed in', async () => {
    const file = join(dir, 'gateway.yaml');
    await writeFile(file, 'listen:\n  port: 9090\nupstreams:\n  a:\n    stdio:\n      command: "${CMD}"\n');
    const config = await loadConfig(file, { CMD: 'node' });
    expect(config.listen.port).toBe(9090);
    expect(config.upstreams.a?.stdio?.command).toBe('node');
  });

  it('defaults stdio.cwd to the loaded file\'s directory and resolves a relative cwd against it', async () => {
    const file = join(dir, 'cwd.yaml');
    await writeFile(file, 'upstreams:\n  a:\n    stdio: { command: node }\n  b:\n    stdio: { command: node, cwd: servers }\n');
    const config = await loadConfig(file, {});
    expect(config.upstreams.a?.stdio?.cwd).toBe(dir);
    expect(config.upstreams.b?.stdio?.cwd).toBe(join(dir, 'servers'));
  });

  it('names the file in validation errors', async () => {
    const file = join(dir, 'bad.yaml');
    await writeFile(file, 'upstreams:\n  a:\n    stdio: { command: node }\n    prefx: x\n');
    const error = await configErrorAsync(() => loadConfig(file, {}));
    expect(error.message).toBe(`${file}: upstreams.a.prefx: unknown key`);
  });

  it('reports invalid YAML in a file with its line number', async () => {
    const file = join(dir, 'broken.yaml');
    await writeFile(file, 'upstreams:\n  a: [\n');
    const error = await configErrorAsync(() => loadConfig(file, {}));
    expect(error.message).toMatch(new RegExp(`^${escapeRegExp(file)}: invalid YAML: line \\d+, column \\d+: `));
  });

  it('loads the repository\'s gateway.yaml', async () => {
    const config = await loadConfig(join(ROOT, 'gateway.yaml'), {});
    expect(Object.keys(config.upstreams)).toEqual(['everything', 'memory']);
    expect(config.upstreams.memory?.stdio?.env.MEMORY_FILE_PATH).toBe('/tmp/switchyard-memory.jsonl');
    // One child for every session of memory (its state is a file); everything keeps one spawned ahead.
    expect(config.upstreams.memory?.sharing).toBe('shared');
    expect(config.upstreams.everything).toMatchObject({ stateful: true, warm: 1 });
  });
});

