// An OTLP/HTTP collector that keeps nothing: the tracing section's gateways export their spans
// here (POST /v1/traces, answered 200 `{}` as a collector does), in a process of its own so its
// work is not counted as the gateway's. GET /count says how many exports and bytes it took.
// Prints `listening on http://127.0.0.1:PORT` when ready.
import { createServer } from 'node:http';

let requests = 0;
let bytes = 0;
const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/count') return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ requests, bytes }));
  req.on('data', (chunk) => {
    bytes += chunk.length;
  });
  req.on('end', () => {
    requests++;
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`listening on http://127.0.0.1:${server.address().port}\n`));
