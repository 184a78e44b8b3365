// The real CLI as a child process for lifecycle tests: `npm start -- --config FILE --port 0`,
// its output captured, its stderr log lines parsed, and the pid of the gateway itself (npm
// forwards SIGTERM and SIGINT to it, but not SIGHUP).
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { ROOT } from './paths.js';
import { alive, stopChild, waitForExit, waitForLine } from './processes.js';

export { alive };

/** One JSON log line of the gateway (src/util/log.ts). */
export interface LogLine {
  level: string;
  msg: string;
  [field: string]: unknown;
}

export interface CliProcess {
  /** The npm process; signals sent to it reach the gateway only for SIGTERM and SIGINT. */
  child: ChildProcessWithoutNullStreams;
  url: URL;
  stdout(): string;
  stderr(): string;
  /** The gateway's log lines so far (stderr lines that parse as JSON). */
  logs(): LogLine[];
  /** Resolves with the first log line (seen so far or later) matching `predicate`; bounded. */
  waitForLog(predicate: (line: LogLine) => boolean, what: string, timeoutMs?: number): Promise<LogLine>;
  /** The pid of the node process running src/main.ts (npm's child: the script `exec`s node). */
  gatewayPid: number;
  /** SIGTERM through npm; SIGKILL to the gateway itself if it does not exit in time. */
  stop(): Promise<void>;
}

export async function startCli(configFile: string): Promise<CliProcess> {
  const child = spawn('npm', ['start', '--', '--config', configFile, '--port', '0'], { cwd: ROOT, stdio: 'pipe' });
  let stdout = '';
  let stderr = '';
  const wakers = new Set<() => void>();
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
    for (const wake of wakers) wake();
  });
  const logs = (): LogLine[] =>
    stderr
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as LogLine);

  try {
    const [, url] = await waitForLine(child, /^listening on (http:\/\/127\.0\.0\.1:\d+\/mcp)$/, 20_000);
    const gatewayPid = await childRunning(child.pid!, 'src/main.ts');
    return {
      child,
      url: new URL(url!),
      stdout: () => stdout,
      stderr: () => stderr,
      logs,
      waitForLog(predicate, what, timeoutMs = 10_000) {
        const found = (): LogLine | undefined => logs().find(predicate);
        const now = found();
        if (now) return Promise.resolve(now);
        return new Promise((resolve, reject) => {
          const done = (err?: Error, line?: LogLine): void => {
            clearTimeout(timer);
            wakers.delete(check);
            child.off('exit', onExit);
            if (err) reject(err);
            else resolve(line!);
          };
          const check = (): void => {
            const line = found();
            if (line) done(undefined, line);
          };
          const onExit = (code: number | null): void => done(new Error(`the gateway exited (${code}) before logging ${what}; stderr: ${stderr.slice(-1_000)}`));
          const timer = setTimeout(() => done(new Error(`timed out after ${timeoutMs} ms waiting for the log line ${what}; stderr: ${stderr.slice(-1_000)}`)), timeoutMs);
          wakers.add(check);
          child.once('exit', onExit);
        });
      },
      gatewayPid,
      async stop() {
        if (child.exitCode === null && child.signalCode === null) {
          child.kill('SIGTERM');
          // A drain waits up to shutdown.gracePeriod; a test that failed has no time for that.
          await waitForExit(child, 5_000).catch(() => undefined);
        }
        // Killing npm would orphan the gateway, so the gateway itself goes first.
        if (alive(gatewayPid)) process.kill(gatewayPid, 'SIGKILL');
        await stopChild(child);
      },
    };
  } catch (err) {
    await stopChild(child);
    throw err;
  }
}

/** The pid of `parent`'s child whose command line has the argument `arg` (Linux: reads /proc). */
async function childRunning(parent: number, arg: string): Promise<number> {
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    // "pid (comm) state ppid ...": comm may contain spaces and parentheses, so split after the last ')'.
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (ppid !== parent) continue;
    const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    if (cmdline.split('\0').includes(arg)) return Number(entry);
  }
  throw new Error(`no child of ${parent} runs ${arg}`);
}


/** Resolves with `probe`'s first defined answer, trying every `everyMs`; rejects after `timeoutMs`. */
export async function poll<T>(probe: () => Promise<T | undefined> | T | undefined, what: string, timeoutMs = 10_000, everyMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() >= deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
