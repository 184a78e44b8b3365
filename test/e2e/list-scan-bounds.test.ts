// What an upstream's lists cost the gateway when a client asks for what is not there, or pages
// on and on (test/fixtures/endless-lists-server.mjs: lists that never end, and a tool counting
// the requests its process received). A miss reads an upstream's list at most once per re-read
// interval for the session, however many requests make it; what a session remembers of a list
// is bounded; and a list_changed from the session's own upstream session is heard at once.
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectClient, endSessions, recordNotifications, startGateway, textOf, type NotificationLog, type TestGateway } from '../helpers/gateway.js';
import { retainedBytes } from '../helpers/memory.js';
import { FIXTURES, NODE } from '../helpers/paths.js';

const fixture = (env: Record<string, string>) => ({ stdio: { command: NODE, args: [join(FIXTURES, 'endless-lists-server.mjs')], env } });
/** The most pages a scan of one list reads (MAX_ALIAS_PAGES, src/names/lists.ts). */
const SCAN_PAGES = 100;

let endless: TestGateway;
let finite: TestGateway;
let wide: TestGateway;
let shared: TestGateway;
const clients: Client[] = [];

beforeAll(async () => {
  [endless, finite, wide, shared] = await Promise.all([
    startGateway({ upstreams: { endless: fixture({ ENDLESS: '1' }) } }, { logLevel: 'warn' }),
    startGateway({ upstreams: { finite: fixture({}) } }, { logLevel: 'warn' }),
    // Names as long as they come, so none is shortened (the catalog's map of shortened names holds
    // nothing), and no answers kept for resumption: what grows is what the session remembers.
    startGateway({ upstreams: { wide: fixture({ ENDLESS: '1', PAGE_SIZE: '500', NAME_PAD: '200' }) }, namespacing: { maxNameLength: 256 }, sessions: { replayBytes: 1024 } }, { logLevel: 'warn' }),
    startGateway({ upstreams: { pooled: { ...fixture({}), sharing: 'shared' } } }, { logLevel: 'warn' }),
  ]);
}, 30_000);

afterAll(async () => {
  await endSessions(clients);
  await Promise.allSettled([endless, finite, wide, shared].map((gw) => gw?.close()));
});

/** A client whose session has its own upstream session of `upstream` (a tool call opened it). */
async function client(gw: TestGateway, upstream: string): Promise<Client> {
  const c = await connectClient(gw.url);
  clients.push(c);
  await counts(c, upstream);
  return c;
}

/** How many requests of each method the session's own upstream session received. */
async function counts(c: Client, upstream: string): Promise<Record<string, number>> {
  return JSON.parse(textOf(await c.callTool({ name: `${upstream}__count`, arguments: {} }))) as Record<string, number>;
}

describe('a miss reads a list that never ends once per interval, not once per request', () => {
  it('bare reads of URIs no upstream lists', async () => {
    const c = await client(endless, 'endless');
    const before = (await counts(c, 'endless'))['resources/list'] ?? 0;
    for (let i = 0; i < 5; i++) await expect(c.readResource({ uri: `nosuch://x/${i}` })).rejects.toMatchObject({ code: -32602 });
    const concurrent = Array.from({ length: 5 }, (_, i) => c.readResource({ uri: `nosuch://y/${i}` }));
    for (const read of concurrent) await expect(read).rejects.toMatchObject({ code: -32602 });
    // A URI the scan did find is still read at its upstream, as its owner.
    expect((await c.readResource({ uri: 'endless://r/7' })).contents).toEqual([{ uri: 'endless+endless://r/7', text: 'read endless://r/7' }]);
    const after = (await counts(c, 'endless'))['resources/list'] ?? 0;
    expect(after - before).toBeLessThanOrEqual(SCAN_PAGES);
  });

  it('prompts/get of shortened names no upstream lists', async () => {
    const c = await client(endless, 'endless');
    const before = (await counts(c, 'endless'))['prompts/list'] ?? 0;
    for (let i = 0; i < 5; i++) await expect(c.getPrompt({ name: `endless__zz_1234567${i}` })).rejects.toMatchObject({ code: -32602 });
    const concurrent = Array.from({ length: 5 }, (_, i) => c.getPrompt({ name: `endless__zz_abcdef0${i}` }));
    for (const get of concurrent) await expect(get).rejects.toMatchObject({ code: -32602 });
    const after = (await counts(c, 'endless'))['prompts/list'] ?? 0;
    expect(after - before).toBeLessThanOrEqual(SCAN_PAGES);
  });
});

describe('what a session remembers of a list it pages through', () => {
  it('stays bounded however far the client pages, and its names are still asked for upstream', async () => {
    const c = await client(wide, 'wide');
    let cursor: string | undefined;
    const pages = async (n: number): Promise<void> => {
      for (let i = 0; i < n; i++) cursor = (await c.listPrompts(cursor === undefined ? {} : { cursor })).nextCursor;
    };
    // What paging costs once warm (and what is remembered reached its bound: 5,000 names of these).
    await pages(20);
    const before = retainedBytes();
    // 200 pages more, of 500 names of over 200 characters: some 20 MB of names if all were kept.
    await pages(200);
    const grown = retainedBytes() - before;
    expect(grown).toBeLessThan(8 * 1024 * 1024);
    // A name past what is remembered is not refused as unknown: its upstream answers.
    const late = `wide__p${219 * 500 + 3}${'x'.repeat(200)}`;
    await expect(c.getPrompt({ name: late })).resolves.toMatchObject({ messages: [{ content: { text: expect.stringContaining('prompt p109503') } }] });
  }, 60_000);
});

describe('list_changed from the session\'s own upstream session', () => {
  it('makes a prompt it added known at once, without listing again', async () => {
    let notes!: NotificationLog;
    const c = await connectClient(finite.url, {}, (sdk) => (notes = recordNotifications(sdk)));
    clients.push(c);
    await counts(c, 'finite');
    expect((await c.listPrompts()).prompts.map((p) => p.name)).toEqual(['finite__first']);
    await c.callTool({ name: 'finite__add', arguments: { prompt: 'second' } });
    await notes.waitFor((n) => n.method === 'notifications/prompts/list_changed', 'prompts/list_changed');
    await expect(c.getPrompt({ name: 'finite__second' })).resolves.toMatchObject({ messages: [{ content: { text: 'prompt second' } }] });
  });

  it('makes a resource it added readable by its bare URI at once', async () => {
    let notes!: NotificationLog;
    const c = await connectClient(finite.url, {}, (sdk) => (notes = recordNotifications(sdk)));
    clients.push(c);
    await counts(c, 'finite');
    expect((await c.readResource({ uri: 'finite://r/first' })).contents).toEqual([{ uri: 'finite+finite://r/first', text: 'read finite://r/first' }]);
    await c.callTool({ name: 'finite__add', arguments: { uri: 'finite://r/second' } });
    await notes.waitFor((n) => n.method === 'notifications/resources/list_changed', 'resources/list_changed');
    expect((await c.readResource({ uri: 'finite://r/second' })).contents).toEqual([{ uri: 'finite+finite://r/second', text: 'read finite://r/second' }]);
  });

  it('of a shared child makes a prompt it added known at once to every session it serves', async () => {
    const notes: NotificationLog[] = [];
    const [c1, c2] = await Promise.all([1, 2].map(() => connectClient(shared.url, {}, (sdk) => void notes.push(recordNotifications(sdk)))));
    clients.push(c1!, c2!);
    for (const c of [c1!, c2!]) expect((await c.listPrompts()).prompts.map((p) => p.name)).toEqual(['pooled__first']);
    await c1!.callTool({ name: 'pooled__add', arguments: { prompt: 'second' } });
    for (const n of notes) await n.waitFor((m) => m.method === 'notifications/prompts/list_changed', 'prompts/list_changed');
    for (const c of [c1!, c2!]) await expect(c.getPrompt({ name: 'pooled__second' })).resolves.toMatchObject({ messages: [{ content: { text: 'prompt second' } }] });
  });
});
