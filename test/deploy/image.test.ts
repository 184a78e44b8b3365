// The container image, checked without a Docker engine: the Dockerfile's shape, the bundled
// container config, and the image's entrypoint command and health check run here.
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { FIXTURES, NODE, ROOT } from '../helpers/paths.js';
import { stopChild, waitForExit, waitForLine } from '../helpers/processes.js';

const run = promisify(execFile);
let dockerfile: string;
let dir: string;

beforeAll(async () => {
  dockerfile = await readFile(join(ROOT, 'Dockerfile'), 'utf8');
  dir = await mkdtemp(join(tmpdir(), 'switchyard-image-'));
  // What the build stage does.
  await run('npm', ['run', 'build'], { cwd: ROOT, timeout: 120_000 });
}, 150_000);

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('Dockerfile', () => {
  it('builds in a stage of its own and runs production dependencies only, as a non-root user', () => {
    expect(dockerfile.match(/^FROM /gm)).toHaveLength(2);
    expect(dockerfile).toMatch(/^FROM node:20[^\n]* AS build$/m);
    expect(dockerfile).toMatch(/npm ci --omit=dev/);
    expect(dockerfile).toMatch(/COPY --from=build \/app\/dist \.\/dist/);
    expect(dockerfile).toMatch(/^USER node$/m);
    expect(dockerfile).toMatch(/^HEALTHCHECK .*\n?.*\/healthz/m);
    expect(dockerfile).toContain('ENTRYPOINT ["node", "dist/main.js"]');
    expect(dockerfile).toContain('CMD ["--config", "/etc/switchyard/gateway.yaml"]');
  });

  it('bundles a container config the gateway accepts', async () => {
    const config = await loadConfig(join(ROOT, 'deploy/gateway.yaml'), {});
    expect(config.listen.host).toBe('0.0.0.0');
    expect(Object.keys(config.upstreams)).toEqual(['everything', 'memory']);
  });

  it('runs the entrypoint command, answers its health check, and stops on SIGTERM', async () => {
    const file = join(dir, 'gateway.yaml');
    await writeFile(file, `upstreams:\n  paged: { stdio: { command: ${NODE}, args: [${join(FIXTURES, 'paged-server.mjs')}] } }\n`);
    const child = spawn(NODE, ['dist/main.js', '--config', file, '--port', '0'], { cwd: ROOT, stdio: 'pipe' });
    try {
      const [, url] = await waitForLine(child, /^listening on (http:\/\/127\.0\.0\.1:\d+\/mcp)$/);
      const port = new URL(url!).port;
      // The HEALTHCHECK's own command, pointed at this port.
      const command = /CMD \["node", "-e", "(.*)"\]\s*$/m.exec(dockerfile.split('HEALTHCHECK')[1]!)![1]!.replaceAll('\\"', '"').replace(':8080/', `:${port}/`);
      await expect(run(NODE, ['-e', command], { timeout: 10_000 })).resolves.toBeDefined();
      child.kill('SIGTERM');
      expect(await waitForExit(child)).toBe(0);
    } finally {
      await stopChild(child);
    }
  });
});
