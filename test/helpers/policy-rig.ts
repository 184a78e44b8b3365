// What the per-team policy tests (test/e2e/policy-*.test.ts) share: the names the fixture
// upstreams list, configs written as files, and the rig of a file: a local authorization server
// that signs tokens for the gateways' resource, a temp directory, and SDK sessions ended after
// each test.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { ClientCapabilities } from '@modelcontextprotocol/sdk/types.js';
import type { JWTPayload } from 'jose';
import { afterEach } from 'vitest';
import { connectClient, endSessions, recordNotifications, type NotificationLog } from './gateway.js';
import { useAuthServer } from './oauth.js';
import { FIXTURES, NODE } from './paths.js';
import { useScratch } from './scratch.js';

export const RESOURCE = 'https://mcp.example.test/mcp';
/** Bounds every wait for something that should happen soon. */
export const PROMPT_MS = 10_000;

// What the upstreams list (the fixtures in test/fixtures).
export const range = (n: number, name: (i: string) => string): string[] => Array.from({ length: n }, (_, i) => name(String(i).padStart(2, '0')));
/** paged's odd names, as the namespace shortens them (deterministic: a hash of the original). */
export const PAGED_SHORTENED = ['paged__a_tool_whose_name_is_far_too_long_for_the_strict_d4a56774', 'paged__admin_tools_list_ce33de31', 'paged__has_space_47b5c36f'];
export const PAGED_TOOLS = [...['echo', 'pid', 'sleep', 'unhandled'].map((n) => `paged__${n}`), ...PAGED_SHORTENED, ...range(25, (i) => `paged__tool-${i}`)];
export const PAGED_PROMPTS = range(12, (i) => `paged__prompt-${i}`);
export const PAGED_RESOURCES = Array.from({ length: 12 }, (_, i) => `paged+fixture://item/${i}`);
export const PAGED_TEMPLATE = 'paged+fixture://item/{id}';
export const ROGUE_TOOLS = ['slow', 'progress', 'journal', 'ask', 'notify', 'garbage', 'unknown-id', 'stderr', 'huge', 'crash', 'pid', 'fail'].map((n) => `rogue__${n}`);

/** Writes a config; JSON is YAML, so the file is the object as JSON. */
export async function writeConfig(file: string, config: Record<string, unknown>): Promise<void> {
  await writeFile(file, `${JSON.stringify(config, null, 2)}\n`);
}

export const fixture = (name: string) => ({ stdio: { command: NODE, args: [join(FIXTURES, name)] } });

export interface Session {
  client: Client;
  notes: NotificationLog;
}

export interface PolicyRig {
  /** The file's temp directory. */
  dir(): string;
  /** A token for the gateways' resource, signed by the local authorization server (RS256). */
  tokenFor(sub: string, extra?: Record<string, unknown>): Promise<Record<string, string>>;
  /** auth.oauth for a gateway that trusts the local authorization server. */
  oauthConfig(): { issuer: string; jwksUri: string; algorithms: string[] };
  /** The local authorization server's issuer. */
  issuer(): string;
  /** An SDK client session with `headers` on every request; notifications recorded; closed after the test. */
  open(gw: { url: URL }, headers: Record<string, string>, capabilities?: ClientCapabilities, prepare?: (client: Client) => void): Promise<Session>;
}

export const apiKey = (key: string): Record<string, string> => ({ 'x-api-key': key });

/** Registers the rig's hooks (call it at a file's top level) and returns its parts. */
export function usePolicyRig(): PolicyRig {
  const server = useAuthServer();
  /** Sessions the current test opened: ended (DELETE) and closed after it, whatever happened. */
  const opened: Client[] = [];
  const dir = useScratch('switchyard-policy-');

  afterEach(() => endSessions(opened));

  return {
    dir,
    async tokenFor(sub, extra = {}) {
      const now = Math.floor(Date.now() / 1_000);
      const claims: JWTPayload = { iss: server().issuer, aud: RESOURCE, sub, iat: now, exp: now + 600, ...extra };
      return { authorization: `Bearer ${await server().sign(claims)}` };
    },
    oauthConfig: () => ({ issuer: server().issuer, jwksUri: server().jwksUri, algorithms: ['RS256', 'ES256'] }),
    issuer: () => server().issuer,
    async open(gw, headers, capabilities = {}, prepare) {
      let notes: NotificationLog | undefined;
      const client = await connectClient(
        gw.url,
        capabilities,
        (c) => {
          notes = recordNotifications(c);
          prepare?.(c);
        },
        headers,
      );
      opened.push(client);
      return { client, notes: notes! };
    },
  };
}
