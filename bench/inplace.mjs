// The in-place build (`npm run bench -- --only inplace`): a copy of the compiled gateway with
// `process.hrtime` read around the steps of a tools/call, so each step's cost is measured where it
// runs (cold caches, between syscalls and other processes) rather than in a loop, where it is
// several times cheaper. The copy is made from the build the bench runs and never shipped. Every
// anchor must still be found: a step renamed in the source fails the build here, loudly.
import { cp, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** The timers module the patched files import: sums per step, written out on SIGUSR2. */
const TIMERS = `import { appendFileSync } from 'node:fs';
const sums = new Map();
export const now = () => process.hrtime.bigint();
export function add(name, since) {
  if (since === undefined) return;
  const sum = sums.get(name) ?? { n: 0, ns: 0n };
  sum.n++;
  sum.ns += process.hrtime.bigint() - since;
  sums.set(name, sum);
}
export function timed(name, run) {
  const since = now();
  try {
    return run();
  } finally {
    add(name, since);
  }
}
process.on('SIGUSR2', () => {
  const means = Object.fromEntries([...sums].map(([name, sum]) => [name, Number(sum.ns) / sum.n / 1000]));
  appendFileSync(process.env.INPLACE_OUT, JSON.stringify(means) + '\\n');
  sums.clear();
});
`;

/** The steps, in the order a call meets them; a step inside the one above it is marked `within`. */
export const STEPS = [
  { name: 'edge, synchronous part' },
  { name: 'authenticate', within: true },
  { name: 'body end → upstream request' },
  { name: 'JSON.parse client message', within: true },
  { name: 'JSON.stringify upstream request', within: true },
  { name: 'undici dispatch' },
  { name: 'upstream answer → write' },
  { name: 'JSON.parse upstream answer', within: true },
  { name: 'metrics and call log', within: true },
  { name: 'JSON.stringify client answer', within: true },
  { name: 'write (writeHead + end)' },
];

/** [file, anchor, replacement]: every occurrence of the anchor in the compiled file is replaced. */
const PATCHES = [
  [
    'http/listener.js',
    'const listener = direct ? (incoming, outgoing) => direct(incoming, outgoing) || void viaFetch(incoming, outgoing) : viaFetch;',
    "const listener = direct ? (incoming, outgoing) => timed('edge, synchronous part', () => direct(incoming, outgoing)) || void viaFetch(incoming, outgoing) : viaFetch;",
  ],
  ['http/app.js', 'const outcome = authenticate(input, requestId);', "const outcome = timed('authenticate', () => authenticate(input, requestId));"],
  ['http/input.js', 'const onEnd = () => {', 'const onEnd = () => { globalThis.__inplaceBody = now();'],
  ['http/mcp-endpoint.js', 'body = JSON.parse(text);', "body = timed('JSON.parse client message', () => JSON.parse(text));"],
  ['transport/streamable-http.js', 'body: JSON.stringify(message),', "body: timed('JSON.stringify upstream request', () => JSON.stringify(message)),"],
  [
    'transport/exchange.js',
    'dispatcher.dispatch(request, handler);',
    "add('body end → upstream request', globalThis.__inplaceBody); globalThis.__inplaceBody = undefined; timed('undici dispatch', () => dispatcher.dispatch(request, handler));",
  ],
  ['transport/exchange.js', 'onResponseEnd() {', 'onResponseEnd() { globalThis.__inplaceAnswer = now();'],
  ['transport/http-common.js', 'value = JSON.parse(text);', "value = timed('JSON.parse upstream answer', () => JSON.parse(text));"],
  ['http/reply.js', 'return new JsonReply(200, JSON.stringify(value), headers);', "return new JsonReply(200, timed('JSON.stringify client answer', () => JSON.stringify(value)), headers);"],
  [
    'http/reply.js',
    "res.writeHead(reply.status, reply.headers ? { ...extra, 'content-type': 'application/json', ...reply.headers, 'content-length': length } : jsonHeaders(extra, length)).end(reply.body);",
    "add('upstream answer → write', globalThis.__inplaceAnswer); globalThis.__inplaceAnswer = undefined; timed('write (writeHead + end)', () => res.writeHead(reply.status, reply.headers ? { ...extra, 'content-type': 'application/json', ...reply.headers, 'content-length': length } : jsonHeaders(extra, length)).end(reply.body));",
  ],
  ['router/router.js', 'this.#account(request, call, response === undefined && signal.aborted);', "timed('metrics and call log', () => this.#account(request, call, response === undefined && signal.aborted));"],
];

/** Copies the build in `from` to `to` and patches the copy; throws when an anchor is gone. */
export async function instrument(from, to) {
  await cp(from, to, { recursive: true });
  await writeFile(join(to, 'inplace-timers.js'), TIMERS);
  const patched = new Set();
  for (const [file, anchor, replacement] of PATCHES) {
    const path = join(to, file);
    const text = await readFile(path, 'utf8');
    if (!text.includes(anchor)) throw new Error(`in-place build: "${anchor}" is no longer in ${file}; update bench/inplace.mjs`);
    const head = patched.has(file) ? '' : "import { add, now, timed } from '../inplace-timers.js';\n";
    patched.add(file);
    await writeFile(path, head + text.replaceAll(anchor, replacement));
  }
}
