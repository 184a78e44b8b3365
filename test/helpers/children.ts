// The processes a test started, read from /proc: this process's live descendants, those whose
// command line names a tag or a binary, and bounded waits for them to exit.
import { readdir, readFile } from 'node:fs/promises';
import { poll } from './cli.js';

interface ProcessEntry {
  ppid: number;
  state: string;
}

async function processTable(): Promise<Map<number, ProcessEntry>> {
  const table = new Map<number, ProcessEntry>();
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    if (stat === '') continue;
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    table.set(Number(entry), { state: fields[0]!, ppid: Number(fields[1]) });
  }
  return table;
}

/** Live (non-zombie) descendants of `root`, this process unless given. */
export async function descendantsOf(root: number = process.pid): Promise<number[]> {
  const table = await processTable();
  const found: number[] = [];
  const queue = [root];
  while (queue.length > 0) {
    const parent = queue.shift()!;
    for (const [pid, entry] of table) {
      if (entry.ppid !== parent || entry.state === 'Z') continue;
      found.push(pid);
      queue.push(pid);
    }
  }
  return found;
}

/** Live descendants of this process whose command line contains `needle` (a tag argument, a binary's path). */
export async function childrenNamed(needle: string): Promise<number[]> {
  const found: number[] = [];
  for (const pid of await descendantsOf()) {
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    if (cmdline.split('\0').some((arg) => arg.includes(needle)) && (await running(pid))) found.push(pid);
  }
  return found.sort((a, b) => a - b);
}

/** Whether `pid` runs (a zombie waiting for its parent does not count). */
export async function running(pid: number): Promise<boolean> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  return stat !== undefined && stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
}

/** Resolves once none of `pids` runs; rejects after `timeoutMs`. */
export async function gone(pids: Iterable<number>, what: string, timeoutMs = 10_000): Promise<void> {
  const list = [...pids];
  await poll(async () => ((await Promise.all(list.map(running))).every((up) => !up) ? true : undefined), `${what} (${list.join(', ')}) to exit`, timeoutMs);
}
