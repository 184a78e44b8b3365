// Issue 35 item 4: a bare URI finds its upstream. Two fixture servers (`fmcp` and `other`) both
// list `fmcp://docs/readme`; each one's `cite` tool names it, bare, in its text and
// structuredContent, as a server's tool points at its own docs. A client that reads (or
// subscribes to) the URI as given reaches the upstream whose result carried it, in its own
// session; with no result telling, two upstreams listing it is still an unknown resource.
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectClient, startGateway, type TestGateway } from '../helpers/gateway.js';
import { FIXTURES, NODE } from '../helpers/paths.js';

const README = 'fmcp://docs/readme';
const docs = (name: string) => ({ stdio: { command: NODE, args: [join(FIXTURES, 'docs-server.mjs')], env: { DOCS_NAME: name } } });

let gw: TestGateway;
const clients: Client[] = [];

beforeAll(async () => {
  gw = await startGateway({ upstreams: { fmcp: docs('fmcp'), other: docs('other') } }, { logLevel: 'warn' });
}, 30_000);

afterAll(async () => {
  await Promise.allSettled(clients.map((c) => c.close()));
  await gw?.close();
});

async function client(): Promise<Client> {
  const c = await connectClient(gw.url);
  clients.push(c);
  return c;
}

const textRead = async (c: Client, uri: string) => (await c.readResource({ uri })).contents.map((content) => ({ uri: content.uri, text: (content as { text?: string }).text }));

describe('a bare URI that two upstreams list', () => {
  it('is unknown while no result in the session has carried it', async () => {
    const c = await client();
    await expect(c.readResource({ uri: README })).rejects.toMatchObject({ code: -32602, data: { uri: README } });
  });

  it('is read at the upstream whose tool result carried it, the answer in that upstream\'s namespace', async () => {
    const c = await client();
    const cited = await c.callTool({ name: 'other__cite', arguments: {} });
    expect(cited).toMatchObject({ content: [{ type: 'text', text: `See ${README}` }], structuredContent: { uri: README } });
    expect(await textRead(c, README)).toEqual([{ uri: `other+${README}`, text: 'readme of other' }]);
    await expect(c.subscribeResource({ uri: README })).resolves.toEqual({});
  });

  it('follows the latest result that carried it, and only in the session that saw it', async () => {
    const c = await client();
    await c.callTool({ name: 'other__cite', arguments: {} });
    await c.callTool({ name: 'fmcp__cite', arguments: {} });
    expect(await textRead(c, README)).toEqual([{ uri: `fmcp+${README}`, text: 'readme of fmcp' }]);
    const stranger = await client();
    await expect(stranger.readResource({ uri: README })).rejects.toMatchObject({ code: -32602 });
  });
});
