// --require'd by gc-position.mjs: counts the process's GCs by kind (1 scavenge, 4 mark-compact)
// and writes them, with each mark-compact's time and heap, to /tmp/gc-PID.json at exit.
const { PerformanceObserver } = require('node:perf_hooks');
const kinds = {}; let ms = 0; const majors = [];
new PerformanceObserver((list) => { for (const e of list.getEntries()) { const k = e.detail?.kind; kinds[k] = (kinds[k] ?? 0) + 1; ms += e.duration; if (k === 4) { const m = process.memoryUsage(); majors.push({ t: +process.uptime().toFixed(2), d: +e.duration.toFixed(1), flags: e.detail?.flags, heap: +(m.heapUsed / 2 ** 20).toFixed(1), ext: +(m.external / 2 ** 20).toFixed(1), ab: +(m.arrayBuffers / 2 ** 20).toFixed(1) }); } } }).observe({ entryTypes: ['gc'] });
process.on('exit', () => require('node:fs').writeFileSync(`/tmp/gc-${process.pid}.json`, JSON.stringify({ argv: process.argv.slice(1).join(' '), kinds, ms, majors, uptime: process.uptime() })));
