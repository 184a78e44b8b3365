// An HTTP upstream that accepts every request and never answers it, nor closes it: the hung
// upstream of the lazy section (bench/lazy.mjs, measurement 4). A request is held until its
// client gives up on it. Prints `listening on URL`.
import http from 'node:http';

const held = new Set();
const server = http.createServer((req, res) => {
  held.add(res);
  res.on('close', () => held.delete(res));
  req.resume(); // the body is read and dropped; no answer ever goes out
});
server.requestTimeout = 0; // Node's own 300 s limit would answer 408 in the end
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => process.stdout.write(`listening on http://127.0.0.1:${server.address().port}/mcp\n`));
process.on('SIGTERM', () => {
  for (const res of held) res.destroy();
  process.exit(0);
});
