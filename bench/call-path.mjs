// `node bench/call-path.mjs [--http] [BUILD_DIR]`: which source files (and folders) one tools/call
// runs through, in a compiled build of the gateway (default: this tree, compiled to
// .tmp/call-path-dist), and how many of the gateway's functions it runs, how many times.
// V8's precise coverage counts the functions run in the gateway's process while one session
// makes one tools/call to the bench's stdio upstream (with --http: the call-path section's HTTP
// upstream, ids, GET stream and 50 tools, and a 2025-06-18 client), after two warm-up calls; each
// file with a function run during that call is counted. A diagnostic of the floor plan and of the
// path's size (bench/HISTORY.md, Sixteenth pass), not a speed figure.
import { Session } from 'node:inspector/promises';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build, here, root, start, stopAll } from './parts.mjs';

const http = process.argv.includes('--http');
const given = process.argv.slice(2).find((arg) => arg !== '--http');
const buildDir = resolve(given ?? join(root, '.tmp', 'call-path-dist'));
if (!given) await build(buildDir);
const version = http ? '2025-06-18' : '2025-11-25';
const upstream = http
  ? { http: { url: (await start('upstream', process.execPath, [join(here, 'upstream-http.mjs')], { GET: '1', TOOLS: '50' })).url } }
  : { stdio: { command: process.execPath, args: [join(here, 'upstream-stdio.mjs')] } };
const { createGateway } = await import(pathToFileURL(join(buildDir, 'gateway.js')).href);
const { configFromObject } = await import(pathToFileURL(join(buildDir, 'config', 'load.js')).href);
const { createLogger } = await import(pathToFileURL(join(buildDir, 'util', 'log.js')).href);

const config = configFromObject(
  { listen: { port: 0 }, health: { probeInterval: 0 }, upstreams: { bench: upstream } },
  { file: join(root, 'gateway.call-path.yaml'), env: {} },
);
const gateway = createGateway(config, { logger: createLogger({ level: 'error', write: () => {} }), baseEnv: { PATH: process.env.PATH, HOME: process.env.HOME } });
const url = await gateway.start();
const inspector = new Session();
inspector.connect();
try {
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': version };
  const post = async (body, session) => {
    const response = await fetch(url, { method: 'POST', headers: session ? { ...headers, 'mcp-session-id': session } : headers, body: JSON.stringify(body) });
    const text = await response.text();
    return { session: response.headers.get('mcp-session-id'), text };
  };
  const init = await post({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'call-path', version: '1' } } });
  await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, init.session);
  const call = (id) => post({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'bench__echo', arguments: { message: 'hi' } } }, init.session);
  await call(1);
  await call(2);
  await inspector.post('Profiler.enable');
  await inspector.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false });
  await inspector.post('Profiler.takePreciseCoverage'); // resets the counters
  const answer = await call(3);
  if (!answer.text.includes('hi')) throw new Error(`the call did not echo: ${answer.text}`);
  const { result } = await inspector.post('Profiler.takePreciseCoverage');
  await inspector.post('Profiler.stopPreciseCoverage');
  const ours = result.filter((script) => script.url.startsWith('file:') && fileURLToPath(script.url).startsWith(buildDir));
  // A function's first range is its whole body: its count is how many times it was called.
  const counts = ours.flatMap((script) => script.functions.map((fn) => fn.ranges[0].count)).filter((count) => count > 0);
  const files = ours
    .filter((script) => script.functions.some((fn) => fn.ranges.some((range) => range.count > 0)))
    .map((script) => relative(buildDir, fileURLToPath(script.url)).replace(/\.js$/, '.ts'))
    .sort();
  const folders = [...new Set(files.map((file) => (file.includes('/') ? file.slice(0, file.indexOf('/')) : '.')))].sort();
  console.log(`one tools/call ran functions in ${files.length} files in ${folders.length} folders (${folders.join(', ')})`);
  console.log(`  ${counts.length} functions of the gateway's, ${counts.reduce((sum, count) => sum + count, 0)} calls of them`);
  for (const file of files) console.log(`  ${file}`);
} finally {
  inspector.disconnect();
  await gateway.close();
  await stopAll();
}
