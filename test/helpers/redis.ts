// A real redis-server for tests: the one .ci/run started (REDIS_URL), or one started here on a
// free port when redis-server is installed. Each caller gets its own key prefix.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { stopChild, waitForLine } from './processes.js';

export interface TestRedis {
  url: string;
  /** A key prefix of this caller's own, so parallel tests never share buckets. */
  prefix: string;
  close(): Promise<void>;
}

/** A loopback port free a moment ago (for servers that must be told their port). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export async function startRedis(): Promise<TestRedis> {
  const prefix = `test-${randomBytes(6).toString('hex')}:`;
  const given = process.env.REDIS_URL;
  if (given) return { url: given, prefix, close: async () => {} };
  const port = await freePort();
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'pipe' });
  child.on('error', () => {});
  try {
    await waitForLine(child, /Ready to accept connections/, 10_000);
  } catch (err) {
    await stopChild(child);
    throw new Error(`these tests need redis-server (apt-get install redis-server, or set REDIS_URL): ${(err as Error).message}`);
  }
  return { url: `redis://127.0.0.1:${port}`, prefix, close: () => stopChild(child) };
}
