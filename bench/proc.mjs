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

/** The process's resident set size in bytes. */
export async function rssBytes(pid) {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)[1]) * 1024;
}
