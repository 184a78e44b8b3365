// The CLI contract other repositories test against: `npm start -- --config FILE --port N`
// prints exactly one line, `listening on URL`, and a bad config is one line on stderr.
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectClient } from '../helpers/gateway.js';
import { FIXTURES, NODE, ROOT } from '../helpers/paths.js';
import { stopChild, waitForExit, waitForLine } from '../helpers/processes.js';

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'switchyard-cli-'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function npmStart(args: string[], env: Record<string, string> = {}) {
  const child = spawn('npm', ['start', '--', ...args], { cwd: ROOT, stdio: 'pipe', env: { ...process.env, ...env } });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return { child, output: () => ({ stdout, stderr }) };
}

async function writeConfig(name: string, text: string): Promise<string> {
  const file = join(dir, name);
  await writeFile(file, text);
  return file;
}

describe('npm start', () => {
  it('prints exactly one line, listening on URL, serves MCP there and exits 0 on SIGTERM', async () => {
    const file = await writeConfig('ok.yaml', `upstreams:\n  paged: { stdio: { command: ${NODE}, args: [${join(FIXTURES, 'paged-server.mjs')}] } }\n`);
    const { child, output } = npmStart(['--config', file, '--port', '0']);
    try {
      const [, url] = await waitForLine(child, /^listening on (http:\/\/127\.0\.0\.1:\d+\/mcp)$/, 20_000);
      const client = await connectClient(new URL(url!));
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toContain('paged__echo');
      await client.close();
      child.kill('SIGTERM');
      expect(await waitForExit(child)).toBe(0);
      expect(output().stdout).toBe(`listening on ${url}\n`);
    } finally {
      await stopChild(child);
    }
  });

  it('serves the bundled gateway.yaml with tools from server-everything and server-memory', async () => {
    const { child } = npmStart(['--port', '0'], { MEMORY_FILE_PATH: join(dir, 'memory.jsonl') });
    try {
      const [, url] = await waitForLine(child, /^listening on (http:\/\/127\.0\.0\.1:\d+\/mcp)$/, 20_000);
      const client = await connectClient(new URL(url!));
      const names = (await client.listTools()).tools.map((t) => t.name);
      expect(names).toContain('everything__echo');
      expect(names).toContain('memory__read_graph');
      await client.close();
    } finally {
      await stopChild(child);
    }
  });

  it.each([
    ['an unknown key', 'upstreams:\n  x: { stdio: { comand: node } }\n', /bad\.yaml: upstreams\.x\.stdio\.comand: unknown key/],
    ['a missing key', 'upstreams:\n  x: { stdio: { args: [] } }\n', /bad\.yaml: upstreams\.x\.stdio\.command: required/],
    ['a wrong type', 'listen: { port: "eighty" }\nupstreams: {}\n', /bad\.yaml: listen\.port: /],
    ['an unset variable', 'upstreams:\n  t: { http: { url: "http://127.0.0.1:1/mcp", headers: { Authorization: "Bearer ${SWITCHYARD_UNSET_TOKEN}" } } }\n', /bad\.yaml: upstreams\.t\.http\.headers\.Authorization: environment variable SWITCHYARD_UNSET_TOKEN is not set/],
    ['invalid YAML', 'upstreams: [\n', /bad\.yaml: invalid YAML: line \d+/],
  ])('exits 1 with one line naming file, key path and problem for %s', async (_, text, expected) => {
    const file = await writeConfig('bad.yaml', text);
    const { child, output } = npmStart(['--config', file, '--port', '0']);
    expect(await waitForExit(child)).toBe(1);
    const { stdout, stderr } = output();
    expect(stdout).toBe('');
    expect(stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(stderr).toMatch(expected);
    expect(stderr).not.toMatch(/\n\s+at /);
  });

  it('exits 1 naming a config file that does not exist', async () => {
    const { child, output } = npmStart(['--config', join(dir, 'nope.yaml')]);
    expect(await waitForExit(child)).toBe(1);
    expect(output().stderr).toMatch(/nope\.yaml: file not found/);
  });

  it('exits 2 with usage for a bad --port', async () => {
    const { child, output } = npmStart(['--port', 'eighty']);
    expect(await waitForExit(child)).toBe(2);
    expect(output().stderr).toMatch(/--port must be an integer/);
  });
});
