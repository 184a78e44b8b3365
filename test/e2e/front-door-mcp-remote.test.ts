// mcp-remote, the bridge desktop hosts run for remote servers, meeting the front door as a user
// runs it: it registers by DCR with a loopback redirect, prints the authorization URL (no browser
// opens here: the openers on its PATH do nothing), Chromium signs alice in at the Entra-like IdP
// and approves, mcp-remote takes the code on its loopback callback, and tools are listed and called.
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBrowser, type TestBrowser } from '../helpers/browser.js';
import { ACCOUNTS, answerConsent, frontDoorConfig, loginClient, reachConsent, startFrontDoorGateway } from '../helpers/front-door.js';
import { upstream, type TestGateway } from '../helpers/gateway.js';
import { startIdp, type TestIdp } from '../helpers/oidc.js';
import { NODE, ROOT } from '../helpers/paths.js';
import { freePort } from '../helpers/redis.js';

const MCP_REMOTE = join(ROOT, 'node_modules/mcp-remote/dist/proxy.js');
/** Programs mcp-remote (and the `open` package) may try to start a browser with. */
const OPENERS = ['xdg-open', 'x-www-browser', 'sensible-browser', 'www-browser', 'chromium', 'firefox', 'google-chrome', 'gio', 'gnome-open', 'kde-open', 'wslview'];

let idp: TestIdp;
let gateway: TestGateway;
let browser: TestBrowser;
let home: string;

beforeAll(async () => {
  home = await mkdtemp(join(tmpdir(), 'switchyard-frontdoor-mcp-remote-'));
  const bin = join(home, 'bin');
  await mkdir(bin);
  for (const name of OPENERS) {
    await writeFile(join(bin, name), '#!/bin/sh\nexit 0\n');
    await chmod(join(bin, name), 0o755);
  }
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  idp = await startIdp({ entra: true, clients: [loginClient(origin)], accounts: ACCOUNTS });
  gateway = await startFrontDoorGateway(frontDoorConfig(idp.issuer, `${origin}/mcp`, {}, { upstreams: { everything: upstream.everything() } }), port);
  browser = await startBrowser();
}, 60_000);

afterAll(async () => {
  await Promise.allSettled([browser?.close(), gateway?.close()]);
  await idp?.close();
  if (home) await rm(home, { recursive: true, force: true });
});

describe('mcp-remote through the front door', () => {
  it('registers by DCR, signs alice in through the browser, then lists and calls what team eng may', async () => {
    const callbackPort = await freePort();
    const stderr: string[] = [];
    let printed: (url: string) => void = () => {};
    const authorizationUrl = new Promise<string>((resolve) => (printed = resolve));
    const transport = new StdioClientTransport({
      command: NODE,
      args: [MCP_REMOTE, gateway.url.href, String(callbackPort), '--host', '127.0.0.1', '--transport', 'http-only', '--auth-timeout', '60'],
      env: { HOME: home, MCP_REMOTE_CONFIG_DIR: join(home, '.mcp-auth'), PATH: `${join(home, 'bin')}:/usr/bin:/bin` },
      stderr: 'pipe',
    });
    transport.stderr?.on('data', (chunk: Buffer) => {
      stderr.push(chunk.toString('utf8'));
      const url = /Please authorize this client by visiting:\s+(\S+)/.exec(stderr.join(''))?.[1];
      if (url) printed(url);
    });
    const client = new Client({ name: 'front-door-mcp-remote', version: '1' });
    const connecting = client.connect(transport);
    try {
      const url = await Promise.race([
        authorizationUrl,
        connecting.then(() => Promise.reject(new Error('mcp-remote connected without signing in'))),
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`mcp-remote printed no authorization URL:\n${stderr.join('').slice(-2_000)}`)), 30_000).unref()),
      ]);
      expect(new URL(url).origin).toBe(new URL(gateway.url).origin);
      const { page, text } = await reachConsent(browser, url, 'alice');
      expect(text).toContain('unverified');
      await answerConsent(page, 'approve');
      await connecting;
      await page.context().close();
      expect((await client.listTools()).tools.map((tool) => tool.name).sort()).toEqual(['everything__echo', 'everything__get-sum']);
      const result = (await client.callTool({ name: 'everything__echo', arguments: { message: 'bridged' } })) as { content: Array<{ text?: string }> };
      expect(result.content[0]?.text).toContain('bridged');
      expect(gateway.logs.some((line) => line.includes('"event":"token_issued"') && line.includes(`${idp.issuer}|alice`))).toBe(true);
    } catch (err) {
      throw new Error(`${(err as Error).message}\nmcp-remote said:\n${stderr.join('').slice(-3_000)}`);
    } finally {
      await client.close();
    }
  }, 120_000);
});
