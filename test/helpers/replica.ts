// A gateway process as a fleet runs it: `node --import tsx src/main.ts` (no npm in between, so
// signals reach it directly), on a free port, its JSON log lines kept. Starting is bounded
// generously: several replicas compile at once on a busy machine.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { NODE, ROOT } from './paths.js';
import { waitForExit, waitForLine } from './processes.js';

export interface ReplicaProcess {
  child: ChildProcessWithoutNullStreams;
  url: URL;
  /** host:port, as a load balancer names it. */
  backend: string;
  pid: number;
  /** Its log lines so far (stderr lines that parse as JSON). */
  logs(): { level: string; msg: string; [field: string]: unknown }[];
  /** SIGTERM: drains, then exits; SIGKILL if it has not exited within `timeoutMs`. */
  stop(timeoutMs?: number): Promise<number | null>;
  kill(): Promise<void>;
}

/** Starts one on `port` (0: a free one; a fixed one lets a restarted replica take its place). */
export async function startReplica(configFile: string, port = 0, timeoutMs = 60_000): Promise<ReplicaProcess> {
  const child = spawn(NODE, ['--import', 'tsx', 'src/main.ts', '--config', configFile, '--port', String(port)], { cwd: ROOT, stdio: 'pipe' });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  child.on('error', () => {});
  const gone = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await waitForExit(child, 10_000).catch(() => undefined);
  };
  try {
    const [, url] = await waitForLine(child, /^listening on (http:\/\/127\.0\.0\.1:\d+\/mcp)$/, timeoutMs);
    child.stdout.resume();
    const parsed = new URL(url!);
    return {
      child,
      url: parsed,
      backend: `127.0.0.1:${parsed.port}`,
      pid: child.pid!,
      logs: () =>
        stderr
          .split('\n')
          .filter((line) => line.startsWith('{'))
          .map((line) => JSON.parse(line) as { level: string; msg: string }),
      async stop(stopMs = 15_000) {
        if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
        child.kill('SIGTERM');
        const code = await waitForExit(child, stopMs).catch(() => undefined);
        if (code === undefined) await gone();
        return code ?? null;
      },
      kill: gone,
    };
  } catch (err) {
    await gone();
    throw err;
  }
}
