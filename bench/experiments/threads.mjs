// A measurement, not part of the bench: the CPU per call of each thread of the target (the
// compiled gateway in the bench's own process form, `main` for `node dist/main.js`, or the lean
// floor), from /proc/PID/task/*/stat over one loadgen window behind the call-path section's
// upstream (GET=1 TOOLS=50), after a warm-up window: the main thread against V8's helper threads
// (Sixteenth pass). One target at a time, so only its shares are worth comparing across runs.
//   node bench/experiments/threads.mjs gateway|main|floor [BUILD_DIR] [NODE_FLAG …]  (default:
//   this tree, compiled to .tmp/gc-dist)
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { build, gatewayConfig, here, loadgen, root, serveTarget, start, stopAll } from '../parts.mjs';

const [target = 'gateway', given, ...flags] = process.argv.slice(2);
const buildDir = resolve(given ?? join(root, '.tmp', 'gc-dist'));
if (target !== 'floor' && !given) await build(buildDir);
const upstream = await start('upstream', process.execPath, [join(here, 'upstream-http.mjs')], { GET: '1', TOOLS: '50' });
const config = join(tmpdir(), `threads-${process.pid}.yaml`);
writeFileSync(config, gatewayConfig({ b: { http: { url: upstream.url } } }, { sessions: 1000 }));

/** The target's process id and a way to load it: `main` started here, the others by serveTarget. */
async function serve() {
  if (target !== 'main') return serveTarget(target, buildDir, upstream.url, flags);
  const server = await start('main', process.execPath, [...flags, join(buildDir, 'main.js'), '--config', config, '--port', '0']);
  return { pid: server.pid, load: (duration) => loadgen(['--url', server.url, '--tool', 'b__echo', '--duration', String(duration)]) };
}

/** Clock ticks (utime + stime) of each thread of the child, by thread id. */
function ticks(pid) {
  const byThread = new Map();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      byThread.set(tid, Number(fields[11]) + Number(fields[12]));
    } catch {
      // the thread ended meanwhile
    }
  }
  return byThread;
}

try {
  const served = await serve();
  await served.load(4);
  const before = ticks(served.pid);
  const measured = await served.load(4);
  const after = ticks(served.pid);
  const tickMicros = 1e6 / 100; // USER_HZ
  const rows = [...after].map(([tid, value]) => [tid === String(served.pid) ? 'main' : `thread ${tid}`, value - (before.get(tid) ?? 0)]).filter(([, used]) => used > 0);
  const total = rows.reduce((sum, [, used]) => sum + used, 0);
  console.log(`${target}${flags.length ? ` ${flags.join(' ')}` : ''}: ${measured.calls} calls, ${((total * tickMicros) / measured.calls).toFixed(1)} µs of CPU per call`);
  for (const [name, used] of rows.sort((a, b) => b[1] - a[1])) console.log(`  ${name.padEnd(14)} ${((used * tickMicros) / measured.calls).toFixed(1)} µs per call (${((100 * used) / total).toFixed(1)} %)`);
} finally {
  await stopAll();
  rmSync(config, { force: true });
}
