// stdio transport: spawns an MCP server as a child in its own process group, frames
// newline-delimited JSON-RPC on stdin/stdout, drains stderr into the log, and stops the whole
// group (grandchildren included) on close (spec: basic/transports.mdx "stdio", lifecycle.mdx "Shutdown").
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { isRequest, parseMessage, type JsonRpcId, type JsonRpcMessage, type JsonRpcNotification } from '../mcp/jsonrpc.js';
import { later } from '../util/callbacks.js';
import type { CancelSignal } from '../util/cancel.js';
import { truncate, type Logger } from '../util/log.js';
import { sendByPost, systemCodeOf, TransportError, type SendDone, type SendOptions, type Transport } from './types.js';

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
  /**
   * The most bytes waiting for a child that reads slowly or not at all (queued here and in
   * stdin's own buffer); a send beyond it fails at once with `queue_full`. Default 16 MiB.
   */
  maxQueuedBytes?: number;
  /** The most messages waiting likewise. Default 10,000. */
  maxQueuedMessages?: number;
}

const NEWLINE = 0x0a;
const STDERR_LINE_MAX = 8 * 1024;
/** The first buffer an unfinished stdout line gets (it doubles from there). */
const PARTIAL_LINE_MIN_BYTES = 1024;
/**
 * Defaults for what may wait for a child (not yet from config): far more than a child that
 * reads keeps queued, small enough that a child that stopped reading cannot grow the gateway.
 */
export const MAX_QUEUED_BYTES = 16 * 1024 * 1024;
export const MAX_QUEUED_MESSAGES = 10_000;
/**
 * What one write hands to stdin at most (one line always goes, whatever its size). Lines still
 * in the outbox can be withdrawn when their request is given up on; lines handed over cannot.
 */
const WRITE_BATCH_BYTES = 64 * 1024;

/** Ids of withdrawn requests remembered, so their notifications/cancelled can be dropped too. */
const MAX_WITHDRAWN_IDS = 1_000;

/** A line waiting to be written, and the send that wants it. */
interface Outgoing {
  line: string;
  bytes: number;
  /** The request's id, if the line is a request. */
  id: JsonRpcId | undefined;
  done: SendDone;
  signal: CancelSignal | undefined;
  onAbort: (() => void) | undefined;
}

export class StdioTransport implements Transport {
  readonly #options: StdioTransportOptions;
  readonly #maxMessage: number;
  #child: ChildProcessWithoutNullStreams | undefined;
  /** The unfinished line of stdout. */
  readonly #partial: PartialLine;
  #stderr = '';
  #exited: Promise<void> | undefined;
  #closing: Promise<void> | undefined;
  #ended = false;
  readonly #maxQueuedBytes: number;
  readonly #maxQueuedMessages: number;
  /** Lines waiting for the next write (see post), in order. */
  #outbox: Outgoing[] = [];
  #outboxBytes = 0;
  /** Lines handed to stdin whose write has not called back yet. */
  #writing = 0;
  /** A flush is scheduled (setImmediate). */
  #scheduled = false;
  /** stdin's buffer is past its high-water mark: nothing more is handed to it until 'drain'. */
  #blocked = false;
  /**
   * Requests withdrawn unwritten: the child never saw them, so the notifications/cancelled the
   * client sends next is dropped (cancellation.mdx: only reference requests previously issued).
   */
  readonly #withdrawn = new Set<JsonRpcId>();

  onmessage?: Transport['onmessage'];
  onerror?: Transport['onerror'];
  onclose?: Transport['onclose'];

  constructor(options: StdioTransportOptions) {
    this.#options = options;
    this.#maxMessage = options.maxMessageBytes ?? 16 * 1024 * 1024;
    this.#partial = new PartialLine(this.#maxMessage);
    this.#maxQueuedBytes = options.maxQueuedBytes ?? MAX_QUEUED_BYTES;
    this.#maxQueuedMessages = options.maxQueuedMessages ?? MAX_QUEUED_MESSAGES;
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
      // The command and its path are the operator's to read (in the log, with the cause), not a client's.
      child.once('error', (err) => {
        this.#options.logger.warn('cannot start the upstream command', { command, err });
        reject(new TransportError('spawn_failed', `cannot start the upstream's command${systemCodeOf(err) ? ` (${systemCodeOf(err)})` : ''}`, undefined, { cause: err }));
      });
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

  send(message: JsonRpcMessage, options?: SendOptions): Promise<void> {
    return sendByPost(this, message, options);
  }

  /**
   * Queues the message; everything queued while the event loop handles one round of I/O goes
   * out in a single write (setImmediate runs after the poll phase). Under load that is one
   * pipe write, and one wake-up of the child, for many calls instead of one each.
   *
   * Writes honour backpressure: once stdin's buffer is full, lines wait here until 'drain',
   * within a bound (bytes and messages); a send past it fails at once with `queue_full`, and
   * the child stays up. A line whose exchange is aborted (its request timed out or was
   * cancelled) while it waits here is withdrawn and never written.
   */
  post(message: JsonRpcMessage, options: SendOptions | undefined, done: SendDone): void {
    const stdin = this.#child?.stdin;
    if (!stdin || this.#ended || this.#closing || !stdin.writable) return later(done, new TransportError('closed', 'upstream process is not running'));
    const signal = options?.cancel;
    if (signal?.aborted) return later(done, new TransportError('closed', 'request abandoned before it was sent'));
    // A cancellation may name a line given up on that still waits unwatched: withdraw those first.
    if (this.#outbox.length > 0 && isCancellation(message)) this.#sweepAborted();
    if (this.#withdrawn.size > 0 && this.#forgetWithdrawn(message)) return queueMicrotask(() => done());
    const line = `${JSON.stringify(message)}\n`;
    const bytes = Buffer.byteLength(line);
    // stdin.writableLength: what it holds that the child has not taken yet.
    const queuedBytes = this.#outboxBytes + stdin.writableLength;
    if (queuedBytes + bytes > this.#maxQueuedBytes || this.#outbox.length + this.#writing >= this.#maxQueuedMessages) {
      return later(done, new TransportError('queue_full', `upstream process is not reading its input (${queuedBytes} bytes waiting); try again later`));
    }
    const entry: Outgoing = { line, bytes, id: isRequest(message) ? message.id : undefined, done, signal, onAbort: undefined };
    // A line written on the next turn needs no abort listener (the flush skips it if aborted
    // by then); one that waits for 'drain' gets one, so it is withdrawn the moment it is given up.
    if (this.#blocked) this.#watch(entry);
    this.#outbox.push(entry);
    this.#outboxBytes += bytes;
    if (!this.#scheduled && !this.#blocked) {
      this.#scheduled = true;
      setImmediate(() => {
        this.#scheduled = false;
        this.#flush();
      });
    }
  }

  /** Withdraws every waiting line whose exchange was aborted. */
  #sweepAborted(): void {
    for (const entry of [...this.#outbox]) if (entry.signal?.aborted) this.#withdraw(entry);
  }

  /** Withdraws the line as soon as its exchange is aborted (it waits for 'drain'). */
  #watch(entry: Outgoing): void {
    if (!entry.signal || entry.onAbort) return;
    entry.onAbort = () => this.#withdraw(entry);
    entry.signal.addEventListener('abort', entry.onAbort);
  }

  /** Takes a line out of the outbox before it was written: its request was given up on. */
  #withdraw(entry: Outgoing): void {
    const i = this.#outbox.indexOf(entry);
    if (i === -1) return; // already handed to stdin
    this.#outbox.splice(i, 1);
    this.#outboxBytes -= entry.bytes;
    this.#abandoned(entry);
  }

  /** A line not written because its request was given up on: remembered, and its sender told. */
  #abandoned(entry: Outgoing): void {
    if (entry.onAbort) entry.signal!.removeEventListener('abort', entry.onAbort);
    if (entry.id !== undefined) {
      if (this.#withdrawn.size >= MAX_WITHDRAWN_IDS) this.#withdrawn.delete(this.#withdrawn.values().next().value!);
      this.#withdrawn.add(entry.id);
    }
    entry.done(new TransportError('closed', 'request abandoned before it was sent'));
  }

  /** Whether `message` cancels a request that was withdrawn unwritten (and forgets that request). */
  #forgetWithdrawn(message: JsonRpcMessage): boolean {
    if (!isCancellation(message)) return false;
    const id = message.params?.requestId;
    return (typeof id === 'string' || typeof id === 'number') && this.#withdrawn.delete(id);
  }

  /**
   * Hands queued lines to stdin, a batch at a time, until it says its buffer is full; 'drain'
   * brings the rest. `all` (closing) hands over everything: stdin is about to end.
   */
  #flush(all = false): void {
    const stdin = this.#child?.stdin;
    if (!stdin || !stdin.writable) return this.#failQueued(new TransportError('closed', 'upstream process is not running'));
    while (this.#outbox.length > 0 && (all || !this.#blocked)) {
      const batch = this.#takeBatch(all);
      if (batch.length === 0) continue;
      const text = batch.length === 1 ? batch[0]!.line : batch.map((entry) => entry.line).join('');
      this.#writing += batch.length;
      const more = stdin.write(text, (err) => {
        this.#writing -= batch.length;
        for (const entry of batch) {
          if (err) entry.done(new TransportError('closed', 'cannot write to upstream process', undefined, { cause: err }));
          else entry.done();
        }
      });
      if (!more && !this.#blocked) {
        this.#blocked = true;
        // What waits now may wait long: each line is withdrawn when given up on.
        for (const waiting of this.#outbox) this.#watch(waiting);
        stdin.once('drain', () => {
          this.#blocked = false;
          this.#flush();
        });
      }
    }
  }

  /** The next lines to write, at most WRITE_BATCH_BYTES (but at least one), out of the outbox for good. */
  #takeBatch(all: boolean): Outgoing[] {
    let count = 0;
    let bytes = 0;
    while (count < this.#outbox.length && (all || count === 0 || bytes + this.#outbox[count]!.bytes <= WRITE_BATCH_BYTES)) {
      bytes += this.#outbox[count]!.bytes;
      count++;
    }
    const taken = count === this.#outbox.length ? this.#outbox : this.#outbox.slice(0, count);
    this.#outbox = count === this.#outbox.length ? [] : this.#outbox.slice(count);
    this.#outboxBytes -= bytes;
    let batch = taken;
    for (const entry of taken) {
      if (entry.signal?.aborted) {
        // Given up on before its turn came (no listener was needed): never written.
        batch = batch.filter((e) => e !== entry);
        this.#abandoned(entry);
      } else if (entry.onAbort) entry.signal!.removeEventListener('abort', entry.onAbort);
    }
    return batch;
  }

  /** Fails every line still waiting (the child is gone): no send is left unanswered. */
  #failQueued(err: TransportError): void {
    const queued = this.#outbox;
    this.#outbox = [];
    this.#outboxBytes = 0;
    for (const entry of queued) {
      if (entry.onAbort) entry.signal!.removeEventListener('abort', entry.onAbort);
      entry.done(err);
    }
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
      this.#flush(true); // what was sent before close goes out before stdin ends
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
    // A child that exited never drains: what waits for it fails now rather than never.
    this.#failQueued(new TransportError('closed', 'upstream process is not running'));
    this.onclose?.(reason);
  }

  #onStdout(chunk: Buffer): void {
    let start = 0;
    let newline = chunk.indexOf(NEWLINE, start);
    while (newline !== -1) {
      const piece = chunk.subarray(start, newline);
      const line = this.#partial.length === 0 ? piece : this.#partial.take(piece);
      if (line === undefined) return this.#oversized();
      this.#onLine(line);
      start = newline + 1;
      newline = chunk.indexOf(NEWLINE, start);
    }
    if (start < chunk.length && !this.#partial.append(chunk.subarray(start))) this.#oversized();
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
    this.#partial.clear();
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

/**
 * The unfinished line of a child's stdout, copied into one buffer that doubles as it fills: its
 * memory stays proportional to the bytes held however small the reads they came in (a list of
 * the reads costs a Buffer object each: 13 to 30 bytes of heap per byte for a child writing one
 * byte at a time), and it never holds more than `max` bytes.
 */
export class PartialLine {
  readonly #max: number;
  #buffer: Buffer | undefined;
  #length = 0;

  constructor(max: number) {
    this.#max = max;
  }

  get length(): number {
    return this.#length;
  }

  /** Adds `bytes` to the line; false, holding nothing any more, when it would then exceed the limit. */
  append(bytes: Buffer): boolean {
    const length = this.#length + bytes.length;
    if (length > this.#max) {
      this.clear();
      return false;
    }
    if (this.#buffer === undefined || this.#buffer.length < length) {
      const grown = Buffer.allocUnsafe(Math.min(this.#max, Math.max(length, 2 * (this.#buffer?.length ?? 0), PARTIAL_LINE_MIN_BYTES)));
      this.#buffer?.copy(grown, 0, 0, this.#length);
      this.#buffer = grown;
    }
    bytes.copy(this.#buffer, this.#length);
    this.#length = length;
    return true;
  }

  /** The whole line, `end` added, and empties itself; undefined when the line exceeds the limit. */
  take(end: Buffer): Buffer | undefined {
    if (!this.append(end)) return undefined;
    const line = this.#buffer!.subarray(0, this.#length);
    // Let go of the buffer: the next line may be far shorter than this one.
    this.#buffer = undefined;
    this.#length = 0;
    return line;
  }

  clear(): void {
    this.#buffer = undefined;
    this.#length = 0;
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

function isCancellation(message: JsonRpcMessage): message is JsonRpcNotification {
  return 'method' in message && !('id' in message) && message.method === 'notifications/cancelled';
}
