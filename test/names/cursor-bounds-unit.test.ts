// Composite cursors are bounded: a client's cursor longer than the gateway could have issued
// (16 KiB per upstream listed, 8 KiB of any one upstream's cursor) is refused as an invalid
// cursor (-32602) before any upstream is asked, an upstream cursor up to the bound goes round
// trip, and an upstream's cursor past it ends that upstream's list. Forged cursors keep no
// memory: a hundred of 2 MiB each leave the heap where it was.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { GatewayError, toJsonRpcError } from '../../src/mcp/errors.js';
import type { JsonObject } from '../../src/mcp/jsonrpc.js';
import { CatalogSession } from '../../src/links/catalog-sessions.js';
import { Catalog, MAX_UPSTREAM_CURSOR_BYTES, type Listing } from '../../src/names/lists.js';
import { NamespaceCodec } from '../../src/names/namespace.js';
import type { UpstreamClient } from '../../src/upstream/client.js';
import { silentLogger, type Logger } from '../../src/util/log.js';

const NAMES = ['a', 'b', 'c', 'd'];
const codec = new NamespaceCodec({ separator: '__', maxNameLength: 64 }, NAMES.map((name) => ({ upstream: name, prefix: name })));

/** An upstream that lists one tool per page, answering `next(cursor)` as its nextCursor; it records the cursors it was sent. */
function upstream(name: string, next: (cursor: string | undefined) => string | undefined = () => undefined) {
  const cursors: (string | undefined)[] = [];
  const listing: Listing = {
    name,
    closed: false,
    capabilities: { tools: {} },
    streamsAnswers: false,
    request: async (_method, params) => {
      const cursor = params?.cursor as string | undefined;
      cursors.push(cursor);
      const nextCursor = next(cursor);
      return { tools: [{ name: `t${cursors.length}`, inputSchema: { type: 'object' } }], ...(nextCursor === undefined ? {} : { nextCursor }) };
    },
  };
  return { listing, cursors };
}

/** A cursor in the gateway's own shape, naming these upstream cursors. */
const forged = (cursors: Record<string, string>): string => Buffer.from(JSON.stringify({ k: 'tools', c: cursors })).toString('base64url');

async function refusal(promise: Promise<unknown>): Promise<unknown> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(GatewayError);
  return toJsonRpcError(err);
}

describe('composite cursor bounds', () => {
  it('refuses a cursor longer than the bound as an invalid cursor (-32602), asking no upstream', async () => {
    const up = upstream('a');
    const catalog = new Catalog(codec, silentLogger);
    const huge = forged({ a: 'x'.repeat(2 * 1024 * 1024) });
    expect(await refusal(catalog.list('tools', new Map([['a', up.listing]]), huge))).toEqual({ code: -32602, message: 'Invalid cursor' });
    expect(up.cursors).toEqual([]);
  });

  it("refuses one upstream's cursor past 8 KiB even when the whole cursor is within the bound for four upstreams", async () => {
    const sources = new Map(NAMES.map((name) => [name, upstream(name).listing]));
    const catalog = new Catalog(codec, silentLogger);
    const cursor = forged({ a: 'x'.repeat(MAX_UPSTREAM_CURSOR_BYTES) });
    expect(cursor.length).toBeLessThan(4 * 16 * 1024);
    expect(await refusal(catalog.list('tools', sources, cursor))).toEqual({ code: -32602, message: 'Invalid cursor' });
    // Measured as JSON: characters that must be escaped count as what they become.
    expect(await refusal(catalog.list('tools', sources, forged({ a: '\u0001'.repeat(2_000) })))).toMatchObject({ code: -32602 });
  });

  it("carries every upstream's cursor up to the bound, page after page", async () => {
    // Four upstreams, each with a cursor at the longest the gateway carries (its quotes count).
    const long = (name: string) => name.repeat(MAX_UPSTREAM_CURSOR_BYTES - 2);
    const ups = NAMES.map((name) => upstream(name, (cursor) => (cursor === undefined ? long(name) : undefined)));
    const catalog = new Catalog(codec, silentLogger);
    const sources = new Map(ups.map((up) => [up.listing.name, up.listing]));
    const first = await catalog.list('tools', sources, undefined);
    expect(typeof first.nextCursor).toBe('string');
    const second = await catalog.list('tools', sources, first.nextCursor);
    expect(second.nextCursor).toBeUndefined();
    for (const up of ups) expect(up.cursors).toEqual([undefined, long(up.listing.name)]);
  });

  it("ends an upstream's list at a cursor too long to carry, warned once", async () => {
    const warned: unknown[] = [];
    const logger = { ...silentLogger, warn: (message: string, fields?: unknown) => void warned.push([message, fields]) } as Logger;
    const up = upstream('a', () => 'y'.repeat(MAX_UPSTREAM_CURSOR_BYTES));
    const catalog = new Catalog(codec, logger);
    const page = await catalog.list('tools', new Map([['a', up.listing]]), undefined);
    expect(page).toEqual({ tools: [{ name: 'a__t1', inputSchema: { type: 'object' } }] });
    await catalog.list('tools', new Map([['a', up.listing]]), undefined);
    expect(warned).toEqual([['upstream gave a cursor too long to carry; its list ends there', { upstream: 'a', length: MAX_UPSTREAM_CURSOR_BYTES, maxBytes: MAX_UPSTREAM_CURSOR_BYTES }]]);
  });

  it('keeps no memory of forged cursors: a hundred of 2 MiB each, listed through a catalog session', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const heap = (): number => {
      gc();
      const { heapUsed, external } = process.memoryUsage();
      return (heapUsed + external) / 1024 / 1024;
    };
    // An upstream that, like most SDK servers, ignores a cursor it does not know and answers its list.
    const client = { name: 'a', closed: false, capabilities: { tools: {} }, streamsAnswers: false, request: async (): Promise<JsonObject> => ({ tools: [{ name: 'search', inputSchema: { type: 'object' } }] }) };
    const listing = new CatalogSession('k', client as unknown as UpstreamClient, Date.now);
    const catalog = new Catalog(codec, silentLogger);
    const sources = new Map([['a', listing]]);
    await catalog.list('tools', sources, undefined);
    const before = heap();
    for (let i = 0; i < 100; i++) {
      const cursor = forged({ a: `${i}:${'x'.repeat(2 * 1024 * 1024)}` });
      await catalog.list('tools', sources, cursor).catch(() => undefined);
    }
    expect(heap() - before).toBeLessThan(32);
  });
});
