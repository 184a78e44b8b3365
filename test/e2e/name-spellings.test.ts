// A team's rules, views and per-tool limits hold whatever spelling of an item a client sends:
// the prefixed form of an unprefixed upstream's name or URI and the raw original of a shortened
// name reach the same upstream item, so they are unknown names, not names no rule matches.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/auth/api-keys.js';
import { connectClient, endSessions, startGateway, textOf, type TestGateway } from '../helpers/gateway.js';
import { FIXTURES, NODE } from '../helpers/paths.js';
import { join } from 'node:path';

const KEY = 'sk-switchyard-spellings-7c2e9a41b0d35f86';
const fixture = () => ({ stdio: { command: NODE, args: [join(FIXTURES, 'spellings-server.mjs')] } });

let gw: TestGateway;
const opened: Client[] = [];

beforeAll(async () => {
  gw = await startGateway({
    auth: { apiKeys: [{ id: 'bot', hash: hashApiKey(KEY), team: 'limited' }] },
    teams: [
      {
        name: 'limited',
        allow: ['upstream:single', 'upstream:gh'],
        deny: ['delete_*', 'secret_*', 'file:///secret*', 'gh__delete_*'],
        views: { search: { pin: { owner: 'acme' } } },
      },
    ],
    rateLimits: { perTool: { search: { rate: 1, per: '1m' } } },
    upstreams: { single: { ...fixture(), prefix: '' }, gh: fixture() },
  });
});

afterEach(() => endSessions(opened));
afterAll(async () => {
  await gw?.close();
});

async function client(): Promise<Client> {
  const c = await connectClient(gw.url, {}, undefined, { 'x-api-key': KEY });
  opened.push(c);
  return c;
}

/** The error a request ended with, as code and message; or what it answered. */
async function outcome(request: Promise<unknown>): Promise<unknown> {
  try {
    const result = await request;
    return { answered: textOf(result) };
  } catch (err) {
    const { code, message } = err as { code?: number; message: string };
    return { code, message: message.replace(/^MCP error -?\d+: /, '') };
  }
}

describe('another spelling of an item', () => {
  it('of a denied tool is an unknown tool', async () => {
    const c = await client();
    const call = (name: string) => outcome(c.callTool({ name, arguments: {} }));
    expect(await call('delete_everything')).toEqual({ code: -32602, message: 'Unknown tool: delete_everything' });
    expect(await call('single__delete_everything')).toEqual({ code: -32602, message: 'Unknown tool: single__delete_everything' });
    expect(await call('gh__delete.repo')).toEqual({ code: -32602, message: 'Unknown tool: gh__delete.repo' });
    expect(await call('gh__delete_everything')).toEqual({ code: -32602, message: 'Unknown tool: gh__delete_everything' });
  });

  it('of a tool with pinned arguments is an unknown tool, not a way round the pin', async () => {
    const c = await client();
    expect(await outcome(c.callTool({ name: 'search', arguments: { owner: 'evil' } }))).toEqual({ answered: 'ran search with {"owner":"acme"}' });
    expect(await outcome(c.callTool({ name: 'single__search', arguments: { owner: 'evil' } }))).toEqual({ code: -32602, message: 'Unknown tool: single__search' });
  });

  it('of a rate-limited tool does not get a bucket of its own', async () => {
    const c = await client();
    // search allows one call a minute (another test may have spent it): the second is refused.
    await c.callTool({ name: 'search', arguments: {} });
    const again = (await c.callTool({ name: 'search', arguments: {} })) as { isError?: boolean; content: { text: string }[] };
    expect(again).toMatchObject({ isError: true });
    expect(again.content[0]!.text).toMatch(/^Rate limit for search reached/);
    expect(await outcome(c.callTool({ name: 'single__search', arguments: {} }))).toEqual({ code: -32602, message: 'Unknown tool: single__search' });
  });

  it('of a denied prompt or resource is unknown', async () => {
    const c = await client();
    expect(await outcome(c.getPrompt({ name: 'single__secret_prompt' }))).toEqual({ code: -32602, message: 'Unknown prompt: single__secret_prompt' });
    expect(await outcome(c.readResource({ uri: 'file:///secret' }))).toEqual({ code: -32602, message: 'Unknown resource: file:///secret' });
    expect(await outcome(c.readResource({ uri: 'single+file:///secret' }))).toEqual({ code: -32602, message: 'Unknown resource: single+file:///secret' });
    expect(await outcome(c.readResource({ uri: 'file:///public' }).then((r) => ({ content: [{ type: 'text', text: (r.contents[0] as { text: string }).text }] })))).toEqual({ answered: 'content of file:///public' });
  });
});

describe('a tool a view renamed', () => {
  it('is known by its new name only, not by its namespaced or its bare original name', async () => {
    const renamed = await startGateway({
      auth: { apiKeys: [{ id: 'bot', hash: hashApiKey(KEY), team: 'renaming' }] },
      teams: [{ name: 'renaming', views: { gh__search: { name: 'find' } } }],
      upstreams: { gh: fixture() },
    });
    try {
      const c = await connectClient(renamed.url, {}, undefined, { 'x-api-key': KEY });
      try {
        const call = (name: string) => outcome(c.callTool({ name, arguments: { owner: 'me' } }));
        expect(await call('find')).toEqual({ answered: 'ran search with {"owner":"me"}' });
        expect(await call('gh__search')).toEqual({ code: -32602, message: 'Unknown tool: gh__search' });
        // A bare name an upstream lists (as an MCP Apps View calls its server's tools).
        expect(await call('search')).toEqual({ code: -32602, message: 'Unknown tool: search' });
        expect(await call('delete_everything')).toEqual({ answered: 'ran delete_everything with {"owner":"me"}' });
      } finally {
        await c.close();
      }
    } finally {
      await renamed.close();
    }
  });
});
