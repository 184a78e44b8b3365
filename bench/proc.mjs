// What Linux's /proc says about a process (its CPU time, its RSS, its children): the runner, the
// load generator and the sections read it; and stopping a gateway without leaving its children.
import { readdir, readFile } from 'node:fs/promises';

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

/** Live (non-zombie) processes whose parent is `pid`. */
export async function childrenOf(pid) {
  const found = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    if (stat === '') continue;
    // "pid (comm) state ppid …": comm may hold spaces and parentheses.
    const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(ppid) === pid && state !== 'Z') found.push(Number(entry));
  }
  return found;
}

async function running(pid) {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  return stat !== undefined && stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
}

/**
 * Stops a gateway and waits for each child it had to exit; a child still running after 10 s
 * (its gateway killed before it could stop them) is killed by its pid. Resolves to how many were.
 */
export async function stopGateway(gateway) {
  const children = await childrenOf(gateway.pid);
  await gateway.stop();
  const deadline = performance.now() + 10_000;
  let left = children;
  while (left.length > 0 && performance.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    left = (await Promise.all(left.map(async (pid) => ((await running(pid)) ? pid : undefined)))).filter((pid) => pid !== undefined);
  }
  for (const pid of left) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone meanwhile
    }
  }
  return left.length;
}
