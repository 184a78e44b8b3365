// The audit file sink's writer: appends lines to a file and rotates it by size (`<path>.1` is
// the newest rotated file, `<path>.<keep>` the oldest kept). A line never straddles two files.
import { open, rename, rm, stat, type FileHandle } from 'node:fs/promises';
import type { LineWriter } from './queue.js';

export interface RotatingFileOptions {
  path: string;
  maxBytes: number;
  keep: number;
}

export class RotatingFile implements LineWriter {
  readonly #options: RotatingFileOptions;
  #handle: FileHandle | undefined;
  #size = 0;

  constructor(options: RotatingFileOptions) {
    this.#options = options;
  }

  async #file(): Promise<FileHandle> {
    if (this.#handle) return this.#handle;
    this.#handle = await open(this.#options.path, 'a', 0o600);
    this.#size = (await stat(this.#options.path)).size;
    return this.#handle;
  }

  async write(lines: readonly string[]): Promise<void> {
    let chunk: string[] = [];
    let chunkBytes = 0;
    for (const line of lines) {
      const bytes = Buffer.byteLength(line);
      await this.#file();
      if (this.#size + chunkBytes > 0 && this.#size + chunkBytes + bytes > this.#options.maxBytes) {
        await this.#append(chunk, chunkBytes);
        chunk = [];
        chunkBytes = 0;
        await this.#rotate();
      }
      chunk.push(line);
      chunkBytes += bytes;
    }
    await this.#append(chunk, chunkBytes);
  }

  async #append(lines: readonly string[], bytes: number): Promise<void> {
    if (lines.length === 0) return;
    const handle = await this.#file();
    await handle.write(lines.join(''));
    this.#size += bytes;
  }

  /** The current file becomes `.1`, each older one moves up by one, the oldest past `keep` goes. */
  async #rotate(): Promise<void> {
    const { path, keep } = this.#options;
    await this.#handle?.close();
    this.#handle = undefined;
    if (keep === 0) await rm(path, { force: true });
    else {
      for (let i = keep - 1; i >= 1; i--) await rename(`${path}.${i}`, `${path}.${i + 1}`).catch(ignoreMissing);
      await rename(path, `${path}.1`);
    }
    this.#size = 0;
  }

  async close(): Promise<void> {
    const handle = this.#handle;
    this.#handle = undefined;
    await handle?.close();
  }
}

function ignoreMissing(err: unknown): void {
  if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
}

/** Anything with a Node-style write(chunk, callback): stdout, in production. */
export interface WritableLike {
  write(chunk: string, callback: (err?: Error | null) => void): boolean;
}

/** The stdout sink's writer: one write per batch, settled when the stream has taken it. */
export class StreamWriter implements LineWriter {
  readonly #stream: WritableLike;

  constructor(stream: WritableLike) {
    this.#stream = stream;
  }

  write(lines: readonly string[]): Promise<void> {
    return new Promise((resolve, reject) => this.#stream.write(lines.join(''), (err) => (err ? reject(err) : resolve())));
  }

  async close(): Promise<void> {}
}
