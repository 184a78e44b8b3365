// Child processes for tests: wait (bounded) for a line, and always clean up.
import { spawn, type ChildProcessWithoutNullStreams, type SpawnOptionsWithoutStdio } from 'node:child_process';
import { join } from 'node:path';
import { FIXTURES, NODE } from './paths.js';

/** Resolves with the first match of `pattern` on the child's stdout, or rejects after `timeoutMs`. */
export function waitForLine(child: ChildProcessWithoutNullStreams, pattern: RegExp, timeoutMs = 15_000): Promise<RegExpMatchArray> {
  return new Promise((resolve, reject) => {
    let buffer = '';
    let stderr = '';
    const timer = setTimeout(() => finish(new Error(`no line matching ${pattern} within ${timeoutMs} ms; stderr: ${stderr.slice(-500)}`)), timeoutMs);
    const onData = (chunk: Buffer): void => {
      buffer += chunk.toString('utf8');
      for (const line of buffer.split('\n')) {
        const match = line.match(pattern);
        if (match) return finish(undefined, match);
      }
    };
    const onErr = (chunk: Buffer): void => {
      stderr += chunk.toString('utf8');
    };
    const onExit = (code: number | null): void => finish(new Error(`process exited (${code}) before printing ${pattern}; stderr: ${stderr.slice(-500)}`));
    function finish(err?: Error, match?: RegExpMatchArray): void {
      clearTimeout(timer);
      child.stdout.off('data', onData);
      child.stderr.off('data', onErr);
      child.off('exit', onExit);
      if (err) reject(err);
      else resolve(match!);
    }
    child.stdout.on('data', onData);
    child.stderr.on('data', onErr);
    child.once('exit', onExit);
  });
}

/** Resolves with the exit code once the child exits, or rejects after `timeoutMs`. */
export function waitForExit(child: ChildProcessWithoutNullStreams, timeoutMs = 15_000): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`process did not exit within ${timeoutMs} ms`)), timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
}

export async function stopChild(child: ChildProcessWithoutNullStreams): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  try {
    await waitForExit(child, 5_000);
  } catch {
    child.kill('SIGKILL');
  }
}

export interface EverythingHttp {
  /** Streamable HTTP endpoint. */
  url: string;
  /** Deprecated HTTP+SSE endpoint. */
  sseUrl: string;
  stats(): Promise<{ sessions: number; legacy: number; deletes: number; initializes: number }>;
  close(): Promise<void>;
}

/** server-everything over HTTP in its own process on a free port. */
export async function startEverythingHttp(options: SpawnOptionsWithoutStdio = {}): Promise<EverythingHttp> {
  const child = spawn(NODE, [join(FIXTURES, 'everything-http.mjs')], { stdio: 'pipe', ...options });
  try {
    const [, base] = await waitForLine(child, /^listening on (\S+)/);
    return {
      url: `${base}/mcp`,
      sseUrl: `${base}/sse`,
      stats: async () => (await (await fetch(`${base}/stats`)).json()) as Awaited<ReturnType<EverythingHttp['stats']>>,
      close: () => stopChild(child),
    };
  } catch (err) {
    await stopChild(child);
    throw err;
  }
}

/** Whether a process by this pid exists (signal 0 probes without signalling). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
