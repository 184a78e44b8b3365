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

/**
 * A patch timing `expression` (an anchor in `file`, after `lead` when the expression alone is
 * not unique) as `step`, after the statements `before`. Every occurrence of the anchor is replaced.
 */
const wrap = (file, step, expression, { before = '', lead = '' } = {}) => [file, lead + expression, `${lead}${before}timed(${JSON.stringify(step)}, () => ${expression})`];
/** A patch starting the clock of a stretch (`global`) where `anchor` opens a function body. */
const mark = (file, anchor, global) => [file, anchor, `${anchor} globalThis.${global} = now();`];
/** The statements ending the stretch started by mark(). */
const until = (step, global) => `add(${JSON.stringify(step)}, globalThis.${global}); globalThis.${global} = undefined; `;

const PATCHES = [
  wrap('http/listener.js', 'edge, synchronous part', 'direct(incoming, outgoing)'),
  wrap('http/app.js', 'authenticate', 'authenticate(input, requestId, scope)', { lead: 'const outcome = ' }),
  mark('http/input.js', 'const onEnd = () => {', '__inplaceBody'),
  wrap('http/mcp-endpoint.js', 'JSON.parse client message', 'JSON.parse(text)'),
  wrap('transport/streamable-http.js', 'JSON.stringify upstream request', 'JSON.stringify(message)'),
  wrap('transport/exchange.js', 'undici dispatch', 'dispatcher.dispatch(request, this)', { before: until('body end → upstream request', '__inplaceBody') }),
  mark('transport/exchange.js', 'onComplete() {', '__inplaceAnswer'),
  wrap('transport/http-common.js', 'JSON.parse upstream answer', 'JSON.parse(text)'),
  wrap('http/reply.js', 'JSON.stringify client answer', 'JSON.stringify(value)'),
  wrap(
    'http/reply.js',
    'write (writeHead + end)',
    "res.writeHead(reply.status, reply.headers ? { ...extra, 'content-type': 'application/json', ...reply.headers, 'content-length': length } : jsonHeaders(extra, length)).end(reply.body)",
    { before: until('upstream answer → write', '__inplaceAnswer') },
  ),
  wrap('router/router.js', 'metrics and call log', 'this.#account(request, call, response === undefined && signal.aborted, response)'),
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

/** The in-place build's step means since the last signal: line `n` of its file, once written. */
export async function timersOf(pid, file, n) {
  process.kill(pid, 'SIGUSR2');
  const deadline = performance.now() + 10_000;
  for (;;) {
    const lines = (await readFile(file, 'utf8').catch(() => '')).split('\n').filter(Boolean);
    if (lines.length >= n) return JSON.parse(lines[n - 1]);
    if (performance.now() > deadline) throw new Error(`the in-place build wrote no timings to ${file}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
