// Runs test/fixtures/wiki-server.mjs (an internal MCP service that accepts only the company IdP's
// tokens for its own audience) in its own process on a free port.
import { startTokenCheckingFixture } from './user-auth-upstream.js';

export interface WikiUpstream {
  url: string;
  /** The headers (lower-case) of every request /mcp received, in order, each with its answer's `:status`. */
  headers(): Promise<Array<Record<string, string>>>;
  /** Makes the service refuse this token (401) from now on. */
  revoke(token: string): Promise<void>;
  close(): Promise<void>;
}

export function startWikiUpstream(issuer: string, audience: string): Promise<WikiUpstream> {
  return startTokenCheckingFixture('wiki-server.mjs', { ...process.env, ISSUER: issuer, AUDIENCE: audience });
}
