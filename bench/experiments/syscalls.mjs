// A measurement, not part of the bench: the system calls the target (the compiled gateway, or
// the lean floor) makes per call, by `strace -c -f` attached for one loadgen window behind the
// call-path section's upstream (GET=1 TOOLS=50), after a warm-up window (Sixteenth pass).
//   node bench/experiments/syscalls.mjs gateway|floor [BUILD_DIR] [NAME=VALUE …]  (default: this
//   tree, compiled to .tmp/gc-dist; NAME=VALUE changes the upstream's shape, e.g. SSE=1). Needs
//   strace.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join, resolve } from 'node:path';
import { build, here, root, serveTarget, start, stopAll } from '../parts.mjs';

const target = process.argv[2] ?? 'gateway';
const buildDir = resolve(process.argv[3] ?? join(root, '.tmp', 'gc-dist'));
if (target !== 'floor' && !process.argv[3]) await build(buildDir);
const shape = Object.fromEntries(process.argv.slice(4).map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]));
const upstream = await start('upstream', process.execPath, [join(here, 'upstream-http.mjs')], { GET: '1', TOOLS: '50', ...shape });
try {
  const served = await serveTarget(target, buildDir, upstream.url);
  await served.load(2);
  const strace = spawn('strace', ['-c', '-f', '-p', String(served.pid)], { stdio: ['ignore', 'inherit', 'pipe'] });
  let report = '';
  strace.stderr.on('data', (chunk) => (report += chunk));
  const ended = once(strace, 'exit').then(() => {
    throw new Error(`strace did not attach: ${report.trim()}`);
  });
  while (!/attached/.test(report)) await Promise.race([once(strace.stderr, 'data'), ended]);
  const measured = await served.load(2);
  ended.catch(() => {}); // it exits now, as told
  strace.kill('SIGINT');
  await once(strace, 'exit');
  console.log(`${target}: ${measured.calls} calls under strace; system calls per call:`);
  for (const line of report.split('\n').filter((row) => /^\s*[0-9.]+\s+[0-9.]+/.test(row))) {
    const fields = line.trim().split(/\s+/);
    console.log(`  ${fields[fields.length - 1].padEnd(14)} ${(Number(fields[3]) / measured.calls).toFixed(2)}`);
  }
} finally {
  await stopAll();
}
