// A measurement, not part of the bench: the CPU per call of each thread of the target (the
// compiled gateway in the bench's own process form, `main` for `node dist/main.js`, or the lean
// floor), from /proc/PID/task/*/stat over one loadgen window behind the call-path section's
// upstream (GET=1 TOOLS=50), after a warm-up window: the main thread against V8's helper threads
// (Sixteenth pass). One target at a time, so only its shares are worth comparing across runs.
//   node bench/experiments/threads.mjs gateway|main|floor [BUILD_DIR] [NODE_FLAG …]  (default:
//   this tree, compiled to .tmp/gc-dist)
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { build, gatewayConfig, here, loadgen, root, start, stopAll } from '../parts.mjs';

const [target = 'gateway', given, ...flags] = process.argv.slice(2);
const buildDir = resolve(given ?? join(root, '.tmp', 'gc-dist'));
if (target !== 'floor' && !given) await build(buildDir);
const upstream = await start('upstream', process.execPath, [join(here, 'upstream-http.mjs')], { GET: '1', TOOLS: '50' });
const config = join(tmpdir(), `threads-${process.pid}.yaml`);
writeFileSync(config, gatewayConfig({ b: { http: { url: upstream.url } } }, { sessions: 1000 }));
const args = target === 'main' ? [join(buildDir, 'main.js'), '--config', config, '--port', '0'] : [join(here, 'gc.mjs'), '--target', target, '--build', buildDir, '--serve', upstream.url];
const child = spawn(process.execPath, [...flags, ...args], { stdio: ['pipe', 'pipe', 'inherit'] });
let out = '';
child.stdout.on('data', (chunk) => (out += chunk));

/** Clock ticks (utime + stime) of each thread of the child, by thread id. */
function ticks() {
  const byThread = new Map();
  for (const tid of readdirSync(`/proc/${child.pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${child.pid}/task/${tid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      byThread.set(tid, Number(fields[11]) + Number(fields[12]));
    } catch {
      // the thread ended meanwhile
    }
  }
  return byThread;
}

try {
  while (!/listening on (\S+)/.test(out)) await once(child.stdout, 'data');
  const url = /listening on (\S+)/.exec(out)[1];
  const load = ['--url', url, '--tool', target === 'floor' ? 'echo' : 'b__echo', '--duration', '4'];
  await loadgen(load);
  const before = ticks();
  const measured = await loadgen(load);
  const after = ticks();
  const tickMicros = 1e6 / 100; // USER_HZ
  const rows = [...after].map(([tid, value]) => [tid === String(child.pid) ? 'main' : `thread ${tid}`, value - (before.get(tid) ?? 0)]).filter(([, used]) => used > 0);
  const total = rows.reduce((sum, [, used]) => sum + used, 0);
  console.log(`${target}${flags.length ? ` ${flags.join(' ')}` : ''}: ${measured.calls} calls, ${((total * tickMicros) / measured.calls).toFixed(1)} µs of CPU per call`);
  for (const [name, used] of rows.sort((a, b) => b[1] - a[1])) console.log(`  ${name.padEnd(14)} ${((used * tickMicros) / measured.calls).toFixed(1)} µs per call (${((100 * used) / total).toFixed(1)} %)`);
} finally {
  child.kill();
  stopAll();
}
