// What a session knows its upstream sessions list (src/links/existence.ts): bounded however long
// the lists a client pages through, read at most once per re-read interval for names that are not
// there (tools, prompts, bare resource URIs), however many requests miss and however they
// overlap, and forgotten when the upstream says a list changed.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { configSchema } from '../../src/config/schema.js';
import { forgetNames, forgetOnListChange, listed, ownerOfBareUri, rememberNames } from '../../src/links/existence.js';
import type { DownstreamSession } from '../../src/links/session.js';
import type { JsonObject } from '../../src/mcp/jsonrpc.js';
import { Catalog, type ListedPage, type Listing } from '../../src/names/lists.js';
import { NamespaceCodec } from '../../src/names/namespace.js';
import { Policy } from '../../src/policy/policy.js';
import { DownstreamSession as Session } from '../../src/session/session.js';
import type { UpstreamClient } from '../../src/upstream/client.js';
import { silentLogger } from '../../src/util/log.js';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

const codec = new NamespaceCodec({ separator: '__', maxNameLength: 64 }, [{ upstream: 'up', prefix: 'up' }]);
const field = { tools: 'name', prompts: 'name', resources: 'uri' } as const;

/** An upstream session whose lists never end (`size` items a page); it counts the pages it was asked for. */
function upstream(size = 50) {
  const state = { pages: 0 };
  const client = {
    name: 'up',
    closed: false,
    capabilities: { tools: {}, prompts: {}, resources: {} },
    streamsAnswers: false,
    onnotification: undefined as UpstreamClient['onnotification'],
    close: async () => {},
    request: async (method: string, params?: JsonObject) => {
      state.pages++;
      const kind = method.slice(0, method.indexOf('/')) as keyof typeof field;
      const n = params?.cursor === undefined ? 0 : Number(params.cursor);
      const item = (i: number) => ({ [field[kind]]: kind === 'resources' ? `up://r/${i}` : `n${i}`, ...(kind === 'tools' ? { inputSchema: { type: 'object' } } : {}) });
      return { [kind]: Array.from({ length: size }, (_, j) => item(n * size + j)), nextCursor: String(n + 1) };
    },
  };
  return { state, client: client as unknown as UpstreamClient & Listing };
}

function session(client: UpstreamClient): DownstreamSession {
  const config = configSchema.parse({ upstreams: { up: { stdio: { command: 'server' } } } });
  const s: DownstreamSession = new Session<UpstreamClient>('s1', { protocolVersion: '2025-11-25', clientCapabilities: {}, clientInfo: { name: 'unit', version: '1' } }, Date.now(), { events: 10, bytes: 1024 });
  s.access = new Policy(config.teams, { separator: '__', prefixes: new Map([['up', 'up']]) }).access(undefined);
  s.links.attach('up', client);
  return s;
}

/** Page `n` of a list a client pages through, `size` names of `pad` more characters each. */
const page = (n: number, size = 50, pad = 0, limit?: ListedPage['limit']): ListedPage => {
  const originals = Array.from({ length: size }, (_, j) => `n${n * size + j}${'x'.repeat(pad)}`);
  return { upstream: 'up', items: originals.map((name) => ({ name })), originals, first: n === 0, more: true, ...(limit ? { limit } : {}) };
};

describe('what a session remembers of a list a client pages through', () => {
  it('stops at 10,000 names; a name past them goes on to its upstream, without a read', async () => {
    const up = upstream();
    const s = session(up.client);
    for (let n = 0; n < 300; n++) rememberNames(s, 'prompts', page(n));
    expect(s.links.get('up')!.known.prompts!.names!.size).toBeLessThanOrEqual(10_000);
    expect(listed(s, 'prompts', up.client, 'n14999', new Catalog(codec, silentLogger))).toBe(true);
    expect(listed(s, 'prompts', up.client, 'n3', new Catalog(codec, silentLogger))).toBe(true);
    expect(up.state.pages).toBe(0);
  });

  it('stops at 1 MiB of names', () => {
    const s = session(upstream().client);
    for (let n = 0; n < 50; n++) rememberNames(s, 'prompts', page(n, 50, 1_000));
    const names = [...s.links.get('up')!.known.prompts!.names!.keys()];
    expect(names.reduce((sum, name) => sum + name.length, 0)).toBeLessThanOrEqual(1024 * 1024);
    expect(names.length).toBeGreaterThan(1_000);
  });

  it('keeps a tool list as far as its upstream\'s maxTools when that is more', () => {
    const s = session(upstream().client);
    const limit = { count: 20_000, bytes: 32 * 1024 * 1024 };
    for (let n = 0; n < 300; n++) rememberNames(s, 'tools', page(n, 50, 0, limit), () => ({ key: 'k', schema: undefined, destructive: true, hints: [] }));
    const known = s.links.get('up')!.known.tools!;
    expect([known.names!.size, known.partial]).toEqual([15_000, undefined]);
    expect(known.names!.get('n14999')?.destructive).toBe(true);
  });

  it('starts afresh with the list\'s first page', () => {
    const s = session(upstream().client);
    for (let n = 0; n < 300; n++) rememberNames(s, 'prompts', page(n));
    rememberNames(s, 'prompts', page(0));
    expect(s.links.get('up')!.known.prompts).toMatchObject({ chars: expect.any(Number) });
    expect([s.links.get('up')!.known.prompts!.names!.size, s.links.get('up')!.known.prompts!.partial]).toEqual([50, undefined]);
  });
});

describe('names that are not there', () => {
  it('read a prompt list once for many concurrent misses, and not again within the interval', async () => {
    const up = upstream();
    const s = session(up.client);
    const catalog = new Catalog(codec, silentLogger);
    const answers = await Promise.all(Array.from({ length: 5 }, (_, i) => listed(s, 'prompts', up.client, `nope${i}`, catalog)));
    expect(answers).toEqual([false, false, false, false, false]);
    expect(up.state.pages).toBe(100);
    expect(listed(s, 'prompts', up.client, 'nope9', catalog)).toBe(false);
    expect(listed(s, 'prompts', up.client, 'n4999', catalog)).toBe(true);
    expect(up.state.pages).toBe(100);
  });

  it('read a resource list once for many bare URIs no upstream lists, and again after the interval or a change', async () => {
    const up = upstream();
    const s = session(up.client);
    const catalog = new Catalog(codec, silentLogger);
    const sources = new Map([['up', up.client as Listing]]);
    for (let i = 0; i < 5; i++) expect(await ownerOfBareUri(s, `nosuch://x/${i}`, sources, catalog)).toBeUndefined();
    expect(await Promise.all([1, 2, 3].map((i) => ownerOfBareUri(s, `nosuch://y/${i}`, sources, catalog)))).toEqual([undefined, undefined, undefined]);
    expect(up.state.pages).toBe(100);
    expect(await ownerOfBareUri(s, 'up://r/7', sources, catalog)).toBe('up');
    expect(up.state.pages).toBe(100);
    vi.advanceTimersByTime(10_001);
    expect(await ownerOfBareUri(s, 'nosuch://z', sources, catalog)).toBeUndefined();
    expect(up.state.pages).toBe(200);
    forgetNames(s, 'up', 'resources');
    expect(await ownerOfBareUri(s, 'nosuch://z', sources, catalog)).toBeUndefined();
    expect(up.state.pages).toBe(300);
  });

  it('read no further than what is kept', async () => {
    const up = upstream(1_000);
    const s = session(up.client);
    expect(await listed(s, 'prompts', up.client, 'nope', new Catalog(codec, silentLogger))).toBe(true);
    expect(up.state.pages).toBe(11);
    expect(s.links.get('up')!.known.prompts).toMatchObject({ partial: true });
  });
});

describe('a list_changed from the upstream session', () => {
  it('forgets what the session knew of that list before the notification goes on', () => {
    const up = upstream();
    const s = session(up.client);
    const heard: string[] = [];
    up.client.onnotification = (message) => {
      heard.push(`${message.method} ${s.links.get('up')!.known.prompts === undefined} ${s.links.get('up')!.known.tools !== undefined}`);
    };
    forgetOnListChange(up.client, new Catalog(codec, silentLogger), () => [s]);
    rememberNames(s, 'prompts', page(0));
    rememberNames(s, 'tools', page(0));
    up.client.onnotification!({ jsonrpc: '2.0', method: 'notifications/prompts/list_changed' }, undefined);
    expect(heard).toEqual(['notifications/prompts/list_changed true true']);
    expect(listed(s, 'prompts', up.client, 'brand-new', new Catalog(codec, silentLogger))).toBeInstanceOf(Promise);
  });
});
