// Runs test/fixtures/wiki-server.mjs (an internal MCP service that accepts only the company IdP's
// tokens for its own audience) in its own process on a free port.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { FIXTURES, NODE } from './paths.js';
import { stopChild, waitForLine } from './processes.js';

export interface WikiUpstream {
  url: string;
  /** The headers (lower-case) of every request /mcp received, in order, each with its answer's `:status`. */
  headers(): Promise<Array<Record<string, string>>>;
  /** Makes the service refuse this token (401) from now on. */
  revoke(token: string): Promise<void>;
  close(): Promise<void>;
}

export async function startWikiUpstream(issuer: string, audience: string): Promise<WikiUpstream> {
  const child = spawn(NODE, [join(FIXTURES, 'wiki-server.mjs')], { stdio: 'pipe', env: { ...process.env, ISSUER: issuer, AUDIENCE: audience } });
  try {
    const [, url] = await waitForLine(child, /^listening (http:\/\/127\.0\.0\.1:\d+\/mcp)$/);
    const origin = new URL(url!).origin;
    return {
      url: url!,
      headers: async () => (await (await fetch(`${origin}/_headers`, { signal: AbortSignal.timeout(5_000) })).json()) as Array<Record<string, string>>,
      revoke: async (token) => {
        const res = await fetch(`${origin}/_revoke?token=${encodeURIComponent(token)}`, { signal: AbortSignal.timeout(5_000) });
        if (!res.ok) throw new Error(`revoke answered ${res.status}`);
      },
      close: () => stopChild(child),
    };
  } catch (err) {
    await stopChild(child);
    throw err;
  }
}
