// Issue 22 with mcp-remote, the stdio-to-remote bridge desktop hosts run for remote servers: the
// SDK v1 client talks stdio to `mcp-remote <url>`, which talks Streamable HTTP to server-everything
// directly or to Switchyard, and every check gets the same outcome. Its default mode passes the
// 2025 handshake through; `--protocol auto` speaks 2026-07-28 to a server that offers it.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scrape } from '../helpers/metrics.js';
import { answerAsV1, describeSdkParity, v1Session, startRig, type Asked, type Rig, type SdkSession, type Side } from '../helpers/parity.js';
import { NODE, ROOT } from '../helpers/paths.js';

const MCP_REMOTE = join(ROOT, 'node_modules/mcp-remote/dist/proxy.js');

let rig: Rig;
/** mcp-remote's config dir (and HOME): its lock and token files stay out of the real home. */
let home: string;

beforeAll(async () => {
  home = await mkdtemp(join(tmpdir(), 'switchyard-mcp-remote-'));
  rig = await startRig({ metrics: { enabled: true } });
});

afterAll(async () => {
  await rig?.close();
  if (home) await rm(home, { recursive: true, force: true });
});

/**
 * The SDK v1 client over stdio to mcp-remote bridging to `side`. Plain http needs no flag on
 * loopback (127.0.0.1 and localhost are allowed); with no 401 from the server it starts no
 * OAuth flow and opens no browser. `--transport http-only` keeps it off the SSE fallback.
 */
function openThroughMcpRemote(...flags: string[]) {
  return async (side: Side): Promise<SdkSession> => {
    const log: Asked[] = [];
    const client = new Client({ name: 'switchyard-parity', version: '1.0.0' }, { capabilities: { sampling: {}, elicitation: {} } });
    answerAsV1(client, log);
    const stderr: string[] = [];
    const transport = new StdioClientTransport({
      command: NODE,
      args: [MCP_REMOTE, side.url.href, '--transport', 'http-only', ...flags],
      env: { HOME: home, MCP_REMOTE_CONFIG_DIR: join(home, '.mcp-auth') },
      stderr: 'pipe',
    });
    transport.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk.toString('utf8')));
    try {
      await client.connect(transport);
    } catch (err) {
      await client.close();
      throw new Error(`mcp-remote did not connect to ${side.url.href}: ${String(err)}\n${stderr.join('').slice(-2_000)}`);
    }
    // The stdio client does not say which revision it negotiated with the bridge.
    return v1Session(client, log, undefined);
  };
}

// Directly too, mcp-remote may hand the client a tool's last progress notification after its result.
const NO_PROGRESS = 'mcp-remote can deliver the last notifications/progress after the result';

describeSdkParity('mcp-remote (default: the 2025 handshake passed through)', () => rig, openThroughMcpRemote(), { noProgress: NO_PROGRESS });

describe('mcp-remote --protocol auto', () => {
  let handshakes = 0;

  beforeAll(async () => {
    handshakes = await initializes();
  });

  /** initialize requests the gateway has answered: a 2026-07-28 client sends none. */
  async function initializes(): Promise<number> {
    const series = await scrape(new URL('/metrics', rig.gateway.url));
    return [...series].filter(([name]) => name.startsWith('switchyard_requests_total{') && name.includes('method="initialize"')).reduce((sum, [, n]) => sum + n, 0);
  }

  // Directly, server-everything answers no server/discover and the bridge stays in the 2025 era;
  // Switchyard answers it, and the bridge speaks 2026-07-28 to it from then on.
  describeSdkParity('through a bridge that probes for 2026-07-28', () => rig, openThroughMcpRemote('--protocol', 'auto'), { crossEra: true, noProgress: NO_PROGRESS });

  it('reached Switchyard without a handshake: in the 2026-07-28 era', async () => {
    expect(await initializes()).toBe(handshakes);
  });
});
