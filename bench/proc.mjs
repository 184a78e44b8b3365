// What Linux's /proc says about a process: the runner and the load generator both read it.
import { readFile } from 'node:fs/promises';

/** Linux USER_HZ: /proc/<pid>/stat counts CPU time in 1/100 s. */
export const CLK_TCK = 100;

/** The CPU seconds (user + system, all threads) the process has used so far. */
export async function cpuSeconds(pid) {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLK_TCK; // utime + stime
}

/**
 * The whole machine's CPU time so far (all CPUs, in ticks), from the first line of /proc/stat:
 * idle (idle + iowait) and total. Two readings tell how much of the machine sat idle between them.
 */
export async function machineTicks() {
  const stat = await readFile('/proc/stat', 'utf8');
  const fields = stat.slice(0, stat.indexOf('\n')).split(/\s+/).slice(1).map(Number);
  return { idle: fields[3] + fields[4], total: fields.reduce((sum, value) => sum + value, 0) };
}

/** The share of the machine idle between two machineTicks() readings (NaN when no tick passed). */
export const idleShare = (before, after) => (after.idle - before.idle) / (after.total - before.total);

/** The process's resident set size in bytes. */
export async function rssBytes(pid) {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)[1]) * 1024;
}
