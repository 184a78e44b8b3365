// What one session can make the gateway keep is bounded, through the whole gateway: a forged
// list cursor longer than any the gateway issues is refused (-32602) before an upstream sees it,
// and resource subscriptions stop at 1,000 per session, counted across its upstreams, a shared
// child's included (-32600; an unsubscribe frees a place). Instructions name tools as the
// session's teams show them: a view's name, and a hidden item's name as its upstream wrote it.
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ListToolsResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectClient, endSessions, startGateway, type TestGateway } from '../helpers/gateway.js';
import { FIXTURES, NODE } from '../helpers/paths.js';

const docs = (name: string, extra: Record<string, unknown> = {}) => ({ stdio: { command: NODE, args: [join(FIXTURES, 'docs-server.mjs')], env: { DOCS_NAME: name } }, ...extra });

let gw: TestGateway;
const clients: Client[] = [];

beforeAll(async () => {
  gw = await startGateway(
    {
      upstreams: { fmcp: docs('a'), kid: docs('b', { sharing: 'shared' }) },
      teams: [{ name: 'everyone', default: true, allow: ['*'], deny: ['fmcp__greeting', 'fmcp+fmcp://docs/readme'], views: { fmcp__add: { name: 'sum' } } }],
    },
    { logLevel: 'warn' },
  );
}, 30_000);

afterAll(async () => {
  await endSessions(clients);
  await gw?.close();
});

async function client(): Promise<Client> {
  const c = await connectClient(gw.url);
  clients.push(c);
  return c;
}

/** Subscribes to `count` URIs of `prefix` in batches (the session's requests run in parallel). */
async function subscribeMany(c: Client, prefix: string, count: number): Promise<void> {
  for (let at = 0; at < count; at += 100) {
    await Promise.all(Array.from({ length: Math.min(100, count - at) }, (_, i) => c.subscribeResource({ uri: `${prefix}${at + i}` })));
  }
}

describe('bounds of one session', () => {
  it('refuses a forged cursor of 2 MiB as an invalid cursor', async () => {
    const c = await client();
    const cursor = Buffer.from(JSON.stringify({ k: 'tools', c: { fmcp: 'x'.repeat(2 * 1024 * 1024) } })).toString('base64url');
    await expect(c.request({ method: 'tools/list', params: { cursor } }, ListToolsResultSchema)).rejects.toMatchObject({ code: -32602, message: expect.stringContaining('Invalid cursor') });
  });

  it("stops resource subscriptions at 1,000 across the session's upstreams, a shared child's included", async () => {
    const c = await client();
    await subscribeMany(c, 'fmcp+fmcp://docs/page-', 600);
    await subscribeMany(c, 'kid+fmcp://docs/page-', 400);
    await expect(c.subscribeResource({ uri: 'kid+fmcp://docs/one-more' })).rejects.toMatchObject({ code: -32600, message: expect.stringContaining('at most 1000 per session') });
    await expect(c.subscribeResource({ uri: 'fmcp+fmcp://docs/one-more' })).rejects.toMatchObject({ code: -32600 });
    // A URI already held is answered as before; an unsubscribe frees a place.
    await expect(c.subscribeResource({ uri: 'kid+fmcp://docs/page-0' })).resolves.toEqual({});
    await c.unsubscribeResource({ uri: 'kid+fmcp://docs/page-0' });
    await expect(c.subscribeResource({ uri: 'kid+fmcp://docs/one-more' })).resolves.toEqual({});
    // Another session has places of its own.
    const other = await client();
    await expect(other.subscribeResource({ uri: 'kid+fmcp://docs/one-more' })).resolves.toEqual({});
  }, 60_000);

  it("names tools in instructions as the session's teams show them, and what they hide as the upstream wrote it", async () => {
    const c = await client();
    const merged = c.getInstructions() ?? '';
    const section = merged.slice(merged.indexOf('## fmcp\n'));
    expect(section).toContain('Call `sum` to add two numbers; the `greeting` prompt says hello.');
    expect(section).toContain('Read `fmcp://docs/readme` before anything else, or any page `fmcp+fmcp://docs/{page}`.');
    // What the instructions say is what works.
    await expect(c.callTool({ name: 'sum', arguments: { a: 2, b: 3 } })).resolves.toMatchObject({ content: [{ type: 'text', text: '5' }] });
  });
});
