// `npm run bench:fit [-- FILE …]`: what CPU per call the throughput target asks for. Reads the
// outputs of `npm run bench:ab` (default: every runs/ab-*.txt), takes each target's pair of
// ratios to the hop (CPU per call, throughput), and fits throughput = a + b × CPU by least
// squares. Prints the fit, its residual spread, and the CPU ratio at which the fitted
// throughput meets 0.90, and meets it with one and two residual spreads to spare.
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const TARGET = 0.9;

/** Every `NAME CPU THROUGHPUT …` row of an ab output whose target has a CPU figure. */
function pairsOf(text) {
  const rows = [];
  let table = false;
  for (const line of text.split('\n')) {
    if (line.startsWith('target ')) {
      table = true;
      continue;
    }
    const [name, cpu, throughput] = line.trim().split(/\s+/);
    if (!table || !name || Number.isNaN(Number(cpu)) || Number.isNaN(Number(throughput))) continue;
    rows.push({ name, cpu: Number(cpu), throughput: Number(throughput) });
  }
  return rows;
}

/** Least squares of y on x: intercept, slope and the residual standard deviation. */
function fit(points) {
  const n = points.length;
  const mean = (pick) => points.reduce((sum, p) => sum + pick(p), 0) / n;
  const mx = mean((p) => p.x);
  const my = mean((p) => p.y);
  const sxy = points.reduce((sum, p) => sum + (p.x - mx) * (p.y - my), 0);
  const sxx = points.reduce((sum, p) => sum + (p.x - mx) ** 2, 0);
  const slope = sxy / sxx;
  const intercept = my - slope * mx;
  const residual = Math.sqrt(points.reduce((sum, p) => sum + (p.y - intercept - slope * p.x) ** 2, 0) / (n - 2));
  return { intercept, slope, residual };
}

const given = process.argv.slice(2);
const runs = join(dirname(fileURLToPath(import.meta.url)), 'runs');
const files = given.length > 0 ? given : (await readdir(runs)).filter((f) => /^ab-.*\.txt$/.test(f)).sort().map((f) => join(runs, f));
const points = [];
for (const file of files) for (const row of pairsOf(await readFile(file, 'utf8'))) points.push({ x: row.cpu, y: row.throughput });
if (points.length < 3) throw new Error(`${points.length} ratio pairs in ${files.length} files: too few to fit`);
const { intercept, slope, residual } = fit(points);
const cpuFor = (throughput) => (throughput - intercept) / slope;
const xs = points.map((p) => p.x);
console.log(`${points.length} targets of ${files.length} bench:ab runs (CPU per call ${Math.min(...xs).toFixed(3)}–${Math.max(...xs).toFixed(3)} of the hop's)`);
console.log(`throughput ratio = ${intercept.toFixed(3)} ${slope < 0 ? '−' : '+'} ${Math.abs(slope).toFixed(3)} × CPU ratio, residual spread ${residual.toFixed(3)}`);
console.log(`throughput ${TARGET.toFixed(2)} is fitted at CPU ratio ${cpuFor(TARGET).toFixed(3)}`);
console.log(`  with one residual spread to spare at ${cpuFor(TARGET + residual).toFixed(3)}, with two at ${cpuFor(TARGET + 2 * residual).toFixed(3)}`);
