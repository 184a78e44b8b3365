// A measurement, not part of the bench: gateways of one build taking turns as in the shapes
// section (loadgen --alternate, 1 or 16 client sessions), each with gc-count.cjs required, which
// counts its GCs by kind; prints each one's CPU per call in its turns and its mark-compacts.
// Shows that the process at an end of the turn order runs major GCs inside its turns (Tenth pass).
//   node bench/experiments/gc-position.mjs SESSIONS NAME,NAME,…  (a name starting with prod,
//   jwt or metrics gets those features; NOMR=1 adds --no-memory-reducer). Needs .tmp/shapes-dist
//   (npm run bench -- --shapes builds it there with --build-dir .tmp/shapes-dist).
import { writeFile, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { authServer, gatewayConfig, here, loadgen, root, start, stopAll } from '../parts.mjs';
const sessions = process.argv[2] ?? '1';
const auth = await authServer();
try {
  const up = await start('up', process.execPath, [join(here, 'upstream-shapes.mjs')], {});
  const targets = [];
  for (const v of (process.argv[3] ?? 'plain,jwt,metrics,prod').split(',')) {
    const file = `/tmp/gcprobe2-${v}.yaml`;
    const metrics = v.startsWith('prod') || v.startsWith('metrics'), jwt = v.startsWith('prod') || v.startsWith('jwt');
    await writeFile(file, gatewayConfig({ b: { http: { url: up.url } } }, { sessions: 1000, metrics, auth: jwt ? auth : undefined }));
    const g = await start(v, process.execPath, [...(process.env.NOMR ? ['--no-memory-reducer'] : []), '--require', join(here, 'experiments', 'gc-count.cjs'), join(root, '.tmp', 'shapes-dist', 'main.js'), '--config', file, '--port', '0']);
    targets.push({ ...g, v, jwt });
  }
  const specs = targets.map((t) => ({ name: t.v, url: t.url, tool: 'b__echo', pid: t.pid, ...(t.jwt ? { token: auth.token } : {}) }));
  const res = await loadgen(['--alternate', JSON.stringify(specs), '--sessions', sessions, '--concurrency', '16', '--slices', '8', '--slice', '0.5', '--warm-up', '2']);
  for (const t of targets) {
    const s = res.targets[t.v]; const calls = s.reduce((a, x) => a + x.calls, 0), cpu = s.reduce((a, x) => a + x.cpuSeconds, 0);
    await t.stop();
    const gc = JSON.parse(await readFile(`/tmp/gc-${t.pid}.json`, 'utf8'));
    console.log(sessions, t.v.padEnd(8), 'µs/call', (cpu * 1e6 / calls).toFixed(0), 'majors', gc.kinds['4'] ?? 0, 'scavenges', gc.kinds['1'], 'gc ms', gc.ms.toFixed(0));
  }
} finally { await stopAll(); await auth.close(); }
