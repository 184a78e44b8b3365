// stdio transport: spawns an MCP server as a child in its own process group, frames
// newline-delimited JSON-RPC on stdin/stdout, drains stderr into the log, and stops the whole
// group (grandchildren included) on close (spec: basic/transports.mdx "stdio", lifecycle.mdx "Shutdown").
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { parseMessage, type JsonRpcMessage } from '../mcp/jsonrpc.js';
import { truncate, type Logger } from '../util/log.js';
import { TransportError, type Transport } from './types.js';

export interface StdioTransportOptions {
  command: string;
  args: readonly string[];
  /** The child's entire environment: the caller decides what crosses over. */
  env: Readonly<Record<string, string>>;
  cwd: string;
  logger: Logger;
  /** A stdout line longer than this is treated like a crash. */
  maxMessageBytes?: number;
  /** How long to wait after closing stdin, and again after SIGTERM, before escalating. */
  stopGraceMs?: number;
}

const NEWLINE = 0x0a;
const STDERR_LINE_MAX = 8 * 1024;

export class StdioTransport implements Transport {
  readonly #options: StdioTransportOptions;
  readonly #maxMessage: number;
  #child: ChildProcessWithoutNullStreams | undefined;
  #stdout: Buffer[] = [];
  #stdoutLength = 0;
  #stderr = '';
  #exited: Promise<void> | undefined;
  #closing: Promise<void> | undefined;
  #ended = false;
  /** Lines waiting for the next write (see send). */
  #outbox: { line: string; resolve: () => void; reject: (err: Error) => void }[] = [];

  onmessage?: Transport['onmessage'];
  onerror?: Transport['onerror'];
  onclose?: Transport['onclose'];

  constructor(options: StdioTransportOptions) {
    this.#options = options;
    this.#maxMessage = options.maxMessageBytes ?? 16 * 1024 * 1024;
  }

  /** The child's pid once started (its process group id too). */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  async start(): Promise<void> {
    const { command, args, env, cwd } = this.#options;
    const child = spawn(command, args, { env, cwd, stdio: 'pipe', detached: true, windowsHide: true });
    this.#child = child;
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', (err) => reject(new TransportError('spawn_failed', `cannot start ${command}: ${err.message}`, undefined, { cause: err })));
    });
    child.on('error', (err) => this.onerror?.(err));
    this.#exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        // stdout may still hold the last messages; let it drain before declaring the end.
        const finish = (): void => {
          resolve();
          this.#end(this.#closing ? undefined : new TransportError('closed', `process exited (${signal ?? `code ${code}`})`));
        };
        if (child.stdout.readableEnded) finish();
        else {
          const timer = setTimeout(finish, 200);
          child.stdout.once('end', () => {
            clearTimeout(timer);
            finish();
          });
        }
      });
    });
    child.stdin.on('error', (err) => this.#options.logger.debug('stdin error', { err }));
    child.stdout.on('data', (chunk: Buffer) => this.#onStdout(chunk));
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => this.#onStderr(chunk));
  }

  /**
   * Queues the message; everything queued while the event loop handles one round of I/O goes
   * out in a single write (setImmediate runs after the poll phase). Under load that is one
   * pipe write, and one wake-up of the child, for many calls instead of one each.
   */
  send(message: JsonRpcMessage): Promise<void> {
    const stdin = this.#child?.stdin;
    if (!stdin || this.#ended || this.#closing || !stdin.writable) {
      return Promise.reject(new TransportError('closed', 'upstream process is not running'));
    }
    return new Promise((resolve, reject) => {
      if (this.#outbox.length === 0) setImmediate(() => this.#flush());
      this.#outbox.push({ line: `${JSON.stringify(message)}\n`, resolve, reject });
    });
  }

  #flush(): void {
    const batch = this.#outbox;
    this.#outbox = [];
    if (batch.length === 0) return;
    const stdin = this.#child?.stdin;
    if (!stdin || !stdin.writable) {
      for (const entry of batch) entry.reject(new TransportError('closed', 'upstream process is not running'));
      return;
    }
    const text = batch.length === 1 ? batch[0]!.line : batch.map((entry) => entry.line).join('');
    stdin.write(text, (err) => {
      for (const entry of batch) {
        if (err) entry.reject(new TransportError('closed', 'cannot write to upstream process', undefined, { cause: err }));
        else entry.resolve();
      }
    });
  }

  close(): Promise<void> {
    this.#closing ??= this.#stop();
    return this.#closing;
  }

  async #stop(): Promise<void> {
    const child = this.#child;
    if (!child || !this.#exited) return this.#end(undefined);
    const grace = this.#options.stopGraceMs ?? 2_000;
    if (child.exitCode === null && child.signalCode === null) {
      this.#flush(); // what was sent before close goes out before stdin ends
      child.stdin.end();
      if (!(await settlesWithin(this.#exited, grace))) {
        this.#killGroup('SIGTERM');
        if (!(await settlesWithin(this.#exited, grace))) this.#killGroup('SIGKILL');
        await this.#exited;
      }
    }
    // The leader is gone; anything it left in its group (npx's grandchildren) goes too.
    this.#killGroup('SIGKILL');
    await this.#exited;
  }

  #killGroup(signal: NodeJS.Signals): void {
    const pid = this.#child?.pid;
    if (pid === undefined) return;
    try {
      process.kill(-pid, signal);
    } catch {
      // ESRCH: the group is already empty.
    }
  }

  #end(reason: Error | undefined): void {
    if (this.#ended) return;
    this.#ended = true;
    this.onclose?.(reason);
  }

  #onStdout(chunk: Buffer): void {
    let start = 0;
    let newline = chunk.indexOf(NEWLINE, start);
    while (newline !== -1) {
      const piece = chunk.subarray(start, newline);
      const line = this.#stdoutLength === 0 ? piece : Buffer.concat([...this.#stdout, piece]);
      this.#stdout = [];
      this.#stdoutLength = 0;
      this.#onLine(line);
      start = newline + 1;
      newline = chunk.indexOf(NEWLINE, start);
    }
    if (start < chunk.length) {
      this.#stdout.push(chunk.subarray(start));
      this.#stdoutLength += chunk.length - start;
      if (this.#stdoutLength > this.#maxMessage) this.#oversized();
    }
  }

  #onLine(bytes: Buffer): void {
    if (bytes.length > this.#maxMessage) return this.#oversized();
    const text = bytes.toString('utf8').trim();
    if (text === '') return;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      this.#options.logger.warn('upstream wrote a non-JSON line on stdout; skipped', { line: truncate(text) });
      return;
    }
    const message = parseMessage(value);
    if (!message) {
      this.#options.logger.warn('upstream wrote a line that is not JSON-RPC; skipped', { line: truncate(text) });
      return;
    }
    this.onmessage?.(message);
  }

  #oversized(): void {
    this.#stdout = [];
    this.#stdoutLength = 0;
    this.#options.logger.error('upstream message exceeds the size limit; stopping the process', { limit: this.#maxMessage });
    this.#child?.stdout.pause();
    this.#end(new TransportError('oversized', `upstream message exceeds ${this.#maxMessage} bytes`));
    void this.close();
  }

  #onStderr(chunk: string): void {
    this.#stderr += chunk;
    let newline = this.#stderr.indexOf('\n');
    while (newline !== -1) {
      this.#logStderr(this.#stderr.slice(0, newline));
      this.#stderr = this.#stderr.slice(newline + 1);
      newline = this.#stderr.indexOf('\n');
    }
    if (this.#stderr.length > STDERR_LINE_MAX) {
      this.#logStderr(this.#stderr);
      this.#stderr = '';
    }
  }

  #logStderr(line: string): void {
    const text = line.trimEnd();
    if (text !== '') this.#options.logger.info('upstream stderr', { stderr: truncate(text, 1_000) });
  }
}

function settlesWithin(promise: Promise<void>, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    timer.unref();
    void promise.then(() => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}
