// A measurement, not part of the bench: the system calls the target (the compiled gateway, or
// the lean floor) makes per call, by `strace -c -f` attached for one loadgen window behind the
// call-path section's upstream (GET=1 TOOLS=50), after a warm-up window (Sixteenth pass).
//   node bench/experiments/syscalls.mjs gateway|floor [BUILD_DIR]  (default: this tree, compiled
//   to .tmp/gc-dist). Needs strace.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join, resolve } from 'node:path';
import { build, here, loadgen, root, start, stopAll } from '../parts.mjs';

const target = process.argv[2] ?? 'gateway';
const buildDir = resolve(process.argv[3] ?? join(root, '.tmp', 'gc-dist'));
if (target !== 'floor' && !process.argv[3]) await build(buildDir);
const upstream = await start('upstream', process.execPath, [join(here, 'upstream-http.mjs')], { GET: '1', TOOLS: '50' });
const child = spawn(process.execPath, [join(here, 'gc.mjs'), '--target', target, '--build', buildDir, '--serve', upstream.url], { stdio: ['pipe', 'pipe', 'inherit'] });
let out = '';
child.stdout.on('data', (chunk) => (out += chunk));
try {
  while (!/listening on (\S+)/.test(out)) await once(child.stdout, 'data');
  const url = /listening on (\S+)/.exec(out)[1];
  const args = ['--url', url, '--tool', target === 'floor' ? 'echo' : 'b__echo', '--duration', '2'];
  await loadgen(args);
  const strace = spawn('strace', ['-c', '-f', '-p', String(child.pid)], { stdio: ['ignore', 'inherit', 'pipe'] });
  let report = '';
  strace.stderr.on('data', (chunk) => (report += chunk));
  while (!/attached/.test(report)) await once(strace.stderr, 'data');
  const measured = await loadgen(args);
  strace.kill('SIGINT');
  await once(strace, 'exit');
  console.log(`${target}: ${measured.calls} calls under strace; system calls per call:`);
  for (const line of report.split('\n').filter((row) => /^\s*[0-9.]+\s+[0-9.]+/.test(row))) {
    const fields = line.trim().split(/\s+/);
    console.log(`  ${fields[fields.length - 1].padEnd(14)} ${(Number(fields[3]) / measured.calls).toFixed(2)}`);
  }
} finally {
  child.kill();
  stopAll();
}
