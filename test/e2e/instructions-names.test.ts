// Issue 35 item 5: instructions name things as the client sees them. A fixture server whose
// instructions name its tool, prompt, resource and template in backticks (and an environment
// variable, and the same names in plain words) is put behind Switchyard; a sessions-era client
// (initialize) and a 2026-07-28 client (server/discover) read the backticked names as they call
// them through the gateway, and everything else as the server wrote it.
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectClient, startGateway, type TestGateway } from '../helpers/gateway.js';
import { FIXTURES, NODE } from '../helpers/paths.js';
import { sendStateless, statelessRequest } from '../helpers/stateless-wire.js';

const DOCS = join(FIXTURES, 'docs-server.mjs');

let gw: TestGateway;
let direct: Client;
const clients: Client[] = [];

beforeAll(async () => {
  gw = await startGateway({ upstreams: { fmcp: { stdio: { command: NODE, args: [DOCS], env: { DOCS_NAME: 'a' } } } } }, { logLevel: 'warn' });
  direct = new Client({ name: 'instructions-names', version: '1.0.0' });
  await direct.connect(new StdioClientTransport({ command: NODE, args: [DOCS], env: { ...getDefaultEnvironment(), DOCS_NAME: 'a' }, stderr: 'ignore' }));
}, 30_000);

afterAll(async () => {
  await Promise.allSettled([direct?.close(), ...clients.map((c) => c.close())]);
  await gw?.close();
});

/** The fmcp section of merged instructions: what follows its heading. */
function section(merged: string): string {
  const at = merged.indexOf('## fmcp\n');
  expect(at).toBeGreaterThanOrEqual(0);
  return merged.slice(at + '## fmcp\n'.length);
}

/** The upstream's own text with its backticked names as Switchyard shows them. */
function expected(text: string): string {
  return text
    .replace('`add`', '`fmcp__add`')
    .replace('`greeting`', '`fmcp__greeting`')
    .replace('`fmcp://docs/readme`', '`fmcp+fmcp://docs/readme`')
    .replace('`fmcp://docs/{page}`', '`fmcp+fmcp://docs/{page}`');
}

describe('an upstream\'s instructions through Switchyard', () => {
  it('name its tools, prompts, resources and templates in backticks as a sessions-era client calls them, the rest untouched', async () => {
    const own = direct.getInstructions() ?? '';
    expect(own).toContain('Call `add` to add two numbers');
    const c = await connectClient(gw.url);
    clients.push(c);
    const text = section(c.getInstructions() ?? '');
    expect(text).toBe(expected(own));
    expect(text).toContain('Set `DOCS_DIR` to move the docs. In plain words: call add, then read fmcp://docs/readme.');
    // What the names now say is what works.
    await expect(c.callTool({ name: 'fmcp__add', arguments: { a: 2, b: 3 } })).resolves.toMatchObject({ content: [{ type: 'text', text: '5' }] });
    await expect(c.readResource({ uri: 'fmcp+fmcp://docs/readme' })).resolves.toMatchObject({ contents: [{ text: 'readme of a' }] });
  });

  it('read the same in server/discover for a 2026-07-28 client', async () => {
    const own = direct.getInstructions() ?? '';
    const sent = await sendStateless(gw.url, statelessRequest(1, 'server/discover'));
    expect(sent.status).toBe(200);
    const result = sent.body?.result as { instructions?: string };
    expect(section(result.instructions ?? '')).toBe(expected(own));
  });
});
