// The real CLI on configs it refuses or cannot serve: one line on stderr naming the key or the
// address, exit 1, never a stack trace; and a reload of a file it refuses keeps the running config.
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startCli, type CliProcess } from '../helpers/cli.js';
import { ROOT } from '../helpers/paths.js';
import { stopChild, waitForExit } from '../helpers/processes.js';

let dir: string;
const running: CliProcess[] = [];
const servers: Server[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'switchyard-cli-config-'));
});

afterEach(async () => {
  await Promise.allSettled(running.splice(0).map((cli) => cli.stop()));
  await Promise.allSettled(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function writeConfig(name: string, text: string): Promise<string> {
  const file = join(await mkdtemp(join(dir, 'case-')), name);
  await writeFile(file, text);
  return file;
}

/** `npm start -- --config FILE --port 0` to its exit (bounded): its code and output. */
async function startAndExit(file: string, env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn('npm', ['start', '--', '--config', file, '--port', '0'], { cwd: ROOT, stdio: 'pipe', env: { ...process.env, ...env } });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  try {
    const code = await waitForExit(child, 20_000);
    return { code, stdout, stderr };
  } finally {
    await stopChild(child);
  }
}

/** Asserts exit 1 with nothing on stdout and exactly one line, matching `expected`, on stderr. */
function expectOneLine(result: { code: number | null; stdout: string; stderr: string }, expected: RegExp): void {
  expect(result.code, result.stderr).toBe(1);
  expect(result.stdout).toBe('');
  expect(result.stderr.trimEnd().split('\n'), result.stderr).toHaveLength(1);
  expect(result.stderr).toMatch(expected);
}

const BASE = 'listen: { host: 127.0.0.1 }\nupstreams: {}\nhealth: { probeInterval: 0 }\n';

describe('the CLI refuses a config', () => {
  it('whose metrics.path is the MCP endpoint, naming metrics.path', async () => {
    expectOneLine(await startAndExit(await writeConfig('gw.yaml', `${BASE}metrics: { enabled: true, path: /mcp }\n`)), /gw\.yaml: metrics\.path: \/mcp is already served on the main listener \(listen\.path\)/);
  });

  it('with an alias to no anchor, as invalid YAML', async () => {
    expectOneLine(await startAndExit(await writeConfig('gw.yaml', 'listen:\n  host: *nope\nupstreams: {}\n')), /gw\.yaml: invalid YAML: Unresolved alias .*nope$/m);
  });

  it('with an empty ${VAR}', async () => {
    const file = await writeConfig('gw.yaml', `${BASE.replace('upstreams: {}', 'upstreams:\n  x: { http: { url: "https://h/mcp", headers: { Authorization: "Bearer ${SWITCHYARD_EMPTY_TOKEN}" } } }')}`);
    expectOneLine(await startAndExit(file, { SWITCHYARD_EMPTY_TOKEN: '' }), /gw\.yaml: upstreams\.x\.http\.headers\.Authorization: environment variable SWITCHYARD_EMPTY_TOKEN is empty/);
  });
});

describe('the CLI cannot listen', () => {
  it('on a metrics port already taken: the line names metrics.host:port, not the main listener', async () => {
    const busy = createServer();
    servers.push(busy);
    const port = await new Promise<number>((resolve) => busy.listen(0, '127.0.0.1', () => resolve((busy.address() as { port: number }).port)));
    const result = await startAndExit(await writeConfig('gw.yaml', `${BASE}metrics: { enabled: true, port: ${port} }\n`));
    expectOneLine(result, new RegExp(`^switchyard: cannot listen on 127\\.0\\.0\\.1:${port}: .*EADDRINUSE`));
  });
});

describe('a reload of a file the CLI refuses', () => {
  it('with an alias to no anchor: one error line, the running config kept', async () => {
    const file = await writeConfig('gw.yaml', BASE);
    const cli = await startCli(file);
    running.push(cli);
    await writeFile(file, `${BASE}shutdown: { gracePeriod: *nope }\n`);
    const line = await cli.waitForLog((l) => l.msg.startsWith('config reload'), 'the reload outcome');
    expect(line).toMatchObject({ level: 'error', msg: expect.stringMatching(/^config reload rejected, keeping the running config: .*gw\.yaml: invalid YAML: Unresolved alias .*nope$/) });
    expect((await fetch(new URL('/healthz', cli.url))).status).toBe(200);
  });
});
