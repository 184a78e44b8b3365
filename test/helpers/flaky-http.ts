// The flaky Streamable HTTP fixture (test/fixtures/flaky-http.mjs) in its own process on a free
// port: start it, switch its faults on and off, and read what reached it.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { FIXTURES, NODE } from './paths.js';
import { stopChild, waitForLine } from './processes.js';

/** What the fixture has seen on /mcp since it started. */
export interface FlakyStats {
  /** Sessions initialized. */
  initializes: number;
  /** HTTP requests to /mcp, refused ones included. */
  requests: number;
  /** The same by HTTP method (GET, POST, DELETE). */
  byHttpMethod: Record<string, number>;
  /** JSON-RPC methods POSTed to /mcp, refused ones included. */
  byMethod: Record<string, number>;
  /** tools/call requests actually run. */
  calls: number;
  /** TCP connections accepted, the test's own control and stats requests included. */
  connections: number;
  /** Connections that carried at least one /mcp request. */
  mcpConnections: number;
  /** The last 20 tools/call requests: their trace and Authorization headers and _meta. */
  toolCalls: { traceparent: string | null; tracestate: string | null; authorization: string | null; meta: Record<string, unknown> | null }[];
  /** Sessions it knows now. */
  sessions: number;
  /** Connections that ended while idle between requests: by its own idle timeout, or the client's. */
  idleCloses: { byServer: number; byClient: number };
}

export interface FlakyControl {
  /** Drop every session: requests with an old Mcp-Session-Id get 404. */
  forget?: true;
  /** With forget: also end the open GET streams of the dropped sessions. */
  hangUp?: boolean;
  /** Answer the next `fail` /mcp requests with `status` (default 503) and do nothing else. */
  fail?: number;
  status?: number;
  /** Answer every /mcp request 401 with a WWW-Authenticate challenge, until turned off. */
  unauthorized?: boolean;
  /** Hold the next /mcp request this many ms before handling it (it is counted on arrival). */
  stall?: number;
}

export interface FlakyHttp {
  /** The Streamable HTTP endpoint. */
  url: string;
  control(body: FlakyControl): Promise<void>;
  stats(): Promise<FlakyStats>;
  /** Stops the process; its port then refuses connections. */
  close(): Promise<void>;
}

export interface FlakyOptions {
  /** Close a connection idle this long, with no Keep-Alive hint (as uvicorn and Go servers do). */
  idleCloseMs?: number;
}

export async function startFlakyHttp(options: FlakyOptions = {}): Promise<FlakyHttp> {
  const env = options.idleCloseMs === undefined ? process.env : { ...process.env, IDLE_CLOSE_MS: String(options.idleCloseMs) };
  const child = spawn(NODE, [join(FIXTURES, 'flaky-http.mjs')], { stdio: 'pipe', env });
  try {
    const [, base] = await waitForLine(child, /^listening on (\S+)/);
    return {
      url: `${base}/mcp`,
      async control(body) {
        const res = await fetch(`${base}/control`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
        if (!res.ok) throw new Error(`flaky fixture refused ${JSON.stringify(body)}: ${await res.text()}`);
        await res.body?.cancel();
      },
      stats: async () => (await (await fetch(`${base}/stats`)).json()) as FlakyStats,
      close: () => stopChild(child),
    };
  } catch (err) {
    await stopChild(child);
    throw err;
  }
}
