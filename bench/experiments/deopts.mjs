// A measurement, not part of the bench: the deoptimizations in the target (the compiled gateway,
// or the lean floor) during one loadgen window behind the call-path section's upstream (GET=1
// TOOLS=50), after a warm-up window, by V8's --trace-deopt; a function deoptimized again and again
// would show as a repeated line (Sixteenth pass).
//   node bench/experiments/deopts.mjs gateway|floor [BUILD_DIR]  (default: this tree, compiled to
//   .tmp/gc-dist)
import { join, resolve } from 'node:path';
import { build, here, root, serveTarget, start, stopAll } from '../parts.mjs';

const target = process.argv[2] ?? 'gateway';
const buildDir = resolve(process.argv[3] ?? join(root, '.tmp', 'gc-dist'));
if (target !== 'floor' && !process.argv[3]) await build(buildDir);
const upstream = await start('upstream', process.execPath, [join(here, 'upstream-http.mjs')], { GET: '1', TOOLS: '50' });
try {
  const served = await serveTarget(target, buildDir, upstream.url, ['--trace-deopt']);
  await served.load(3);
  const { summary, printed } = await served.measured(3);
  const lines = printed.split('\n').filter((line) => /bailout|deoptimiz|marking dependent code/.test(line));
  const counts = new Map();
  for (const line of lines) {
    const named = /<(?:JSFunction|SharedFunctionInfo) ([^ >]+)/.exec(line);
    const key = named ? named[1] : line.slice(0, 100);
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  console.log(`${target}: ${summary.calls} calls, ${lines.length} deoptimization lines in their window`);
  for (const [name, count] of [...counts].sort((a, b) => b[1] - a[1])) console.log(`  ${String(count).padStart(4)}  ${name}`);
} finally {
  await stopAll();
}
