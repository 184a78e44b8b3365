// Runs test/fixtures/user-auth-server.mjs (an MCP server that takes only its own authorization
// server's tokens for its own audience) in its own process on a free port.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { FIXTURES, NODE } from './paths.js';
import { stopChild, waitForLine } from './processes.js';

export interface UserAuthUpstream {
  /** The MCP endpoint, also the resource (RFC 8707) its tokens must be for: http://127.0.0.1:PORT/mcp. */
  url: string;
  /** The headers (lower-case) of every request /mcp received, in order. */
  headers(): Promise<Array<Record<string, string>>>;
  /** Makes the upstream refuse this token (a whole JWT or its jti) from now on. */
  revoke(tokenOrJti: string): Promise<void>;
  close(): Promise<void>;
}

export async function startUserAuthUpstream(issuer: string, options: { scopes?: string[]; port?: number } = {}): Promise<UserAuthUpstream> {
  const env: NodeJS.ProcessEnv = { ...process.env, ISSUER: issuer };
  if (options.scopes) env.SCOPES = options.scopes.join(',');
  if (options.port !== undefined) env.PORT = String(options.port);
  return startTokenCheckingFixture('user-auth-server.mjs', env);
}

/**
 * Starts a token-checking fixture of test/fixtures/ (it prints `listening <url>`, records the
 * headers /mcp received at /_headers and refuses a token given to /_revoke).
 */
export async function startTokenCheckingFixture(file: string, env: NodeJS.ProcessEnv): Promise<UserAuthUpstream> {
  const child = spawn(NODE, [join(FIXTURES, file)], { stdio: 'pipe', env });
  try {
    const [, url] = await waitForLine(child, /^listening (http:\/\/127\.0\.0\.1:\d+\/mcp)$/);
    const origin = new URL(url!).origin;
    return {
      url: url!,
      headers: async () => (await (await fetch(`${origin}/_headers`, { signal: AbortSignal.timeout(5_000) })).json()) as Array<Record<string, string>>,
      revoke: async (tokenOrJti) => {
        const res = await fetch(`${origin}/_revoke?token=${encodeURIComponent(tokenOrJti)}`, { signal: AbortSignal.timeout(5_000) });
        if (!res.ok) throw new Error(`revoke answered ${res.status}`);
      },
      close: () => stopChild(child),
    };
  } catch (err) {
    await stopChild(child);
    throw err;
  }
}
