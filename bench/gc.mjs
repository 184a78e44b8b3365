// `node bench/gc.mjs [--target gateway|floor] [--build DIR] [--duration 3] [--sessions 16] [--protocol-version V] [--env NAME=VALUE …]`:
// what the garbage collector does per call. The target (the compiled gateway, or the lean
// floor) serves in a process of its own started with --trace-gc-nvp, behind it the bench's
// HTTP upstream (its shape from --env, e.g. GET=1 TOOLS=50 for the call path's), in front of
// it loadgen (--sessions sessions of a --protocol-version client, C=16): after a warm-up of the
// same length, the collections during the measured calls give the bytes allocated and promoted
// to the old generation per call, and the main thread's GC pauses per call. A diagnostic of the
// Fifteenth pass (bench/HISTORY.md).
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { build, here, root, serveTarget, start, stopAll } from './parts.mjs';

const { values } = parseArgs({
  options: { target: { type: 'string', default: 'gateway' }, build: { type: 'string' }, duration: { type: 'string', default: '3' }, env: { type: 'string', multiple: true, default: [] }, sessions: { type: 'string', default: '16' }, 'protocol-version': { type: 'string', default: '2025-06-18' }, serve: { type: 'string' } },
});

if (values.serve) {
  // The child: the target in this process, its URL on stdout; MEASURE and DONE mark the window.
  let url;
  if (values.target === 'floor') {
    process.env.UPSTREAM = values.serve;
    const write = process.stdout.write.bind(process.stdout);
    url = await new Promise((resolveUrl) => {
      process.stdout.write = (text, ...rest) => {
        const found = /listening on (\S+)/.exec(String(text));
        if (found) resolveUrl(found[1]);
        return write(text, ...rest);
      };
      import(pathToFileURL(join(here, 'lean-floor.mjs')).href);
    });
  } else {
    const dist = resolve(values.build);
    const { createGateway } = await import(pathToFileURL(join(dist, 'gateway.js')).href);
    const { configFromObject } = await import(pathToFileURL(join(dist, 'config', 'load.js')).href);
    const { createLogger } = await import(pathToFileURL(join(dist, 'util', 'log.js')).href);
    const config = configFromObject(
      { listen: { port: 0 }, health: { probeInterval: 0 }, sessions: { max: 1000, maxPerPrincipal: 1000 }, logging: { level: 'warn' }, upstreams: { b: { http: { url: values.serve } } } },
      { file: join(root, 'gateway.gc.yaml'), env: {} },
    );
    const gateway = createGateway(config, { logger: createLogger({ level: 'error', write: () => {} }), baseEnv: { PATH: process.env.PATH } });
    url = String(await gateway.start());
    process.stdout.write(`listening on ${url}\n`);
  }
  process.stdin.on('data', (line) => process.stdout.write(String(line)));
  // Stopped with SIGTERM: exit normally, so that Node flags such as --cpu-prof write their files.
  process.once('SIGTERM', () => process.exit(0));
} else {
  const env = Object.fromEntries(values.env.map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]));
  const buildDir = resolve(values.build ?? join(root, '.tmp', 'gc-dist'));
  if (values.target !== 'floor' && !values.build) await build(buildDir);
  const upstream = await start('upstream', process.execPath, [join(here, 'upstream-http.mjs')], env);
  try {
    const target = await serveTarget(values.target, buildDir, upstream.url, ['--trace-gc-nvp'], { sessions: Number(values.sessions), version: values['protocol-version'] });
    await target.load(values.duration);
    const { summary: measured, printed: window } = await target.measured(values.duration);
    const field = (line, name) => Number(new RegExp(`${name}=([0-9.]+)`).exec(line)?.[1] ?? 0);
    const lines = window.split('\n').filter((line) => line.includes(' gc='));
    const sum = (name, which = () => true) => lines.filter(which).reduce((total, line) => total + field(line, name), 0);
    const calls = measured.calls;
    const scavenges = lines.filter((line) => line.includes(' gc=s ')).length;
    console.log(
      `${values.target}: ${calls} calls in ${values.duration} s; per call ${(sum('allocated') / calls).toFixed(0)} B allocated, ${(sum('promoted') / calls).toFixed(0)} B promoted, ` +
        `${((sum('pause') * 1000) / calls).toFixed(2)} µs of GC pauses (${scavenges} young-generation collections, ${lines.length - scavenges} others)`,
    );
  } finally {
    await stopAll();
  }
}
