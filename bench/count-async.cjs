// Loaded with `--require` into a target of `npm run bench:ab` (its --flags): counts the async
// resources the process creates, by type (promises, timers, …), and the HTTP requests it serves,
// and at exit writes one JSON line of both, per request, to $ASYNC_COUNT_DIR (default
// /tmp/switchyard-async-counts), one file per process. A diagnostic (Ninth pass): the hook
// itself slows the process, so no other figure of that run means anything.
//
//   npm run bench:ab -- --rounds 1 --slices 4 hop=hop a=gateway:jwt+metrics \
//     --flags "hop=--require $PWD/bench/count-async.cjs" --flags "a=--require $PWD/bench/count-async.cjs"
//   cat /tmp/switchyard-async-counts/*.json
'use strict';
const { createHook } = require('node:async_hooks');
const { mkdirSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');
const http = require('node:http');

const dir = process.env.ASYNC_COUNT_DIR || '/tmp/switchyard-async-counts';
const counts = {};
let requests = 0;
const emit = http.Server.prototype.emit;
http.Server.prototype.emit = function countRequests(event, ...args) {
  if (event === 'request') requests++;
  return emit.call(this, event, ...args);
};
createHook({
  init(_id, type) {
    counts[type] = (counts[type] || 0) + 1;
  },
}).enable();

let written = false;
function write() {
  if (written) return;
  written = true;
  const perRequest = {};
  for (const [type, n] of Object.entries(counts)) perRequest[type] = Math.round((n / Math.max(requests, 1)) * 100) / 100;
  const script = process.argv.slice(1).find((arg) => /\.(m?js|cjs)$/.test(arg)) || process.argv[1];
  try {
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, `${process.pid}.json`), `${JSON.stringify({ script, argv: process.argv.slice(2), requests, perRequest })}\n`);
  } catch {
    // a diagnostic: nothing to do if the directory cannot be written
  }
}
process.on('exit', write);
for (const signal of ['SIGTERM', 'SIGINT']) {
  process.prependListener(signal, () => {
    write();
    process.exit(0);
  });
}
