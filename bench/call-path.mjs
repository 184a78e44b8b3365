// `node bench/call-path.mjs [BUILD_DIR]`: which source files (and folders) one tools/call runs
// through, in a compiled build of the gateway (default: this tree, compiled to .tmp/call-path-dist).
// V8's precise coverage counts the functions run in the gateway's process while one session
// makes one tools/call to the bench's stdio upstream, after a warm-up call; each file with a
// function run during that call is counted. A diagnostic of the floor plan, not a speed figure.
import { Session } from 'node:inspector/promises';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build, here, root } from './parts.mjs';

const buildDir = resolve(process.argv[2] ?? join(root, '.tmp', 'call-path-dist'));
if (!process.argv[2]) await build(buildDir);
const { createGateway } = await import(pathToFileURL(join(buildDir, 'gateway.js')).href);
const { configFromObject } = await import(pathToFileURL(join(buildDir, 'config', 'load.js')).href);
const { createLogger } = await import(pathToFileURL(join(buildDir, 'util', 'log.js')).href);

const config = configFromObject(
  { listen: { port: 0 }, health: { probeInterval: 0 }, upstreams: { bench: { stdio: { command: process.execPath, args: [join(here, 'upstream-stdio.mjs')] } } } },
  { file: join(root, 'gateway.call-path.yaml'), env: {} },
);
const gateway = createGateway(config, { logger: createLogger({ level: 'error', write: () => {} }), baseEnv: { PATH: process.env.PATH, HOME: process.env.HOME } });
const url = await gateway.start();
const inspector = new Session();
inspector.connect();
try {
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' };
  const post = async (body, session) => {
    const response = await fetch(url, { method: 'POST', headers: session ? { ...headers, 'mcp-session-id': session } : headers, body: JSON.stringify(body) });
    const text = await response.text();
    return { session: response.headers.get('mcp-session-id'), text };
  };
  const init = await post({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'call-path', version: '1' } } });
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
  const files = result
    .filter((script) => script.url.startsWith('file:') && fileURLToPath(script.url).startsWith(buildDir))
    .filter((script) => script.functions.some((fn) => fn.ranges.some((range) => range.count > 0)))
    .map((script) => relative(buildDir, fileURLToPath(script.url)).replace(/\.js$/, '.ts'))
    .sort();
  const folders = [...new Set(files.map((file) => (file.includes('/') ? file.slice(0, file.indexOf('/')) : '.')))].sort();
  console.log(`one tools/call ran functions in ${files.length} files in ${folders.length} folders (${folders.join(', ')})`);
  for (const file of files) console.log(`  ${file}`);
} finally {
  inspector.disconnect();
  await gateway.close();
}
