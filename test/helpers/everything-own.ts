// server-everything's own Streamable HTTP server (its `streamableHttp` entry, on PORT), as
// people run it: unlike the fixture (everything-http.mjs), it answers a session id it does not
// know with 400 "No valid session ID provided", and allows one GET stream per session (409).
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { poll } from './cli.js';
import { EVERYTHING_BIN, NODE } from './paths.js';
import { stopChild } from './processes.js';
import { freePort } from './redis.js';

export interface OwnEverything {
  url: string;
  port: number;
  close(): Promise<void>;
}

/** Starts it on `port` (a free one by default); resolves once it answers. */
export async function startOwnEverything(port?: number): Promise<OwnEverything> {
  const chosen = port ?? (await freePort());
  const child: ChildProcessWithoutNullStreams = spawn(NODE, [EVERYTHING_BIN, 'streamableHttp'], { stdio: 'pipe', env: { ...process.env, PORT: String(chosen) } });
  child.stdout.resume();
  child.stderr.resume();
  child.on('error', () => {});
  try {
    await poll(() => fetch(`http://127.0.0.1:${chosen}/mcp`).then((res) => (res.body?.cancel(), true), () => undefined), 'server-everything to listen', 15_000);
  } catch (err) {
    await stopChild(child);
    throw err;
  }
  return { url: `http://127.0.0.1:${chosen}/mcp`, port: chosen, close: () => stopChild(child) };
}
