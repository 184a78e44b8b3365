// A shortened name the catalog does not know (src/names/lists.ts, resolveName) reads its
// upstream's list for it, bounded; a miss is remembered for the re-read interval, so many
// requests for names that are not there cost one read, not one each. Concurrent misses wait for
// the same read; the upstream saying the list changed, or the interval passing, allows another;
// a read that failed is not remembered.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Catalog, type Listing } from '../../src/names/lists.js';
import { NamespaceCodec } from '../../src/names/namespace.js';
import type { UpstreamClient } from '../../src/upstream/client.js';
import { silentLogger } from '../../src/util/log.js';

const codec = new NamespaceCodec({ separator: '__', maxNameLength: 64 }, [{ upstream: 'up', prefix: 'up' }]);
const LONG = `a_prompt_${'x'.repeat(80)}`;

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

/** An upstream whose prompt list never ends (two prompts a page, the first page's second one long); it counts the pages it was asked for. */
function upstream() {
  const state = { pages: 0, fail: false };
  const listing: Listing = {
    name: 'up',
    closed: false,
    capabilities: { prompts: {} },
    streamsAnswers: false,
    request: async (_method, params) => {
      state.pages++;
      if (state.fail) throw new Error('down');
      const n = params?.cursor === undefined ? 0 : Number(params.cursor);
      return { prompts: [{ name: `p${n}` }, { name: n === 0 ? LONG : `q${n}` }], nextCursor: String(n + 1) };
    },
  };
  const upstreams = new Map([['up', listing as unknown as UpstreamClient]]);
  return { state, listing, upstreams };
}

/** The pages read to resolve `names`, one after another, then all at once. */
async function pagesFor(catalog: Catalog, up: ReturnType<typeof upstream>, names: string[]): Promise<number> {
  const before = up.state.pages;
  for (const name of names) expect(await catalog.resolveName('prompts', name, up.upstreams)).toBeUndefined();
  expect(await Promise.all(names.map((name) => catalog.resolveName('prompts', name, up.upstreams)))).toEqual(names.map(() => undefined));
  return up.state.pages - before;
}

const misses = (n: number, salt: string): string[] => Array.from({ length: n }, (_, i) => `up__zz_${salt}${String(i).padStart(7, '0')}`);

describe('shortened names no upstream lists', () => {
  it('cost one bounded read of the list for many requests, sequential and concurrent', async () => {
    const catalog = new Catalog(codec, silentLogger);
    const up = upstream();
    expect(await pagesFor(catalog, up, misses(5, 'a'))).toBe(100);
  });

  it('are looked for again once the re-read interval has passed', async () => {
    const catalog = new Catalog(codec, silentLogger);
    const up = upstream();
    expect(await pagesFor(catalog, up, misses(3, 'b'))).toBe(100);
    vi.advanceTimersByTime(9_000);
    expect(await pagesFor(catalog, up, misses(3, 'c'))).toBe(0);
    vi.advanceTimersByTime(1_001);
    expect(await pagesFor(catalog, up, misses(3, 'd'))).toBe(100);
  });

  it('are looked for again at once after the upstream said its list changed', async () => {
    const catalog = new Catalog(codec, silentLogger);
    const up = upstream();
    expect(await pagesFor(catalog, up, misses(2, 'e'))).toBe(100);
    catalog.listChanged(up.listing, 'tools');
    expect(await pagesFor(catalog, up, misses(2, 'f'))).toBe(0);
    catalog.listChanged(up.listing, 'prompts');
    expect(await pagesFor(catalog, up, misses(2, '0'))).toBe(100);
  });

  it('are looked for again after a read that failed', async () => {
    const catalog = new Catalog(codec, silentLogger);
    const up = upstream();
    up.state.fail = true;
    await expect(catalog.resolveName('prompts', 'up__zz_00000001', up.upstreams)).rejects.toThrow('down');
    await expect(catalog.resolveName('prompts', 'up__zz_00000002', up.upstreams)).rejects.toThrow('down');
    expect(up.state.pages).toBe(2);
    up.state.fail = false;
    expect(await pagesFor(catalog, up, misses(2, '1'))).toBe(100);
  });
});

describe('a shortened name the upstream lists', () => {
  it('is found by the read a miss made, without another', async () => {
    const catalog = new Catalog(codec, silentLogger);
    const up = upstream();
    const exposed = codec.exposeName('up', LONG);
    expect(exposed).not.toBe(`up__${LONG}`);
    expect(await pagesFor(catalog, up, misses(1, '2'))).toBe(100);
    expect(await catalog.resolveName('prompts', exposed, up.upstreams)).toEqual({ client: up.listing, name: LONG });
    expect(up.state.pages).toBe(100);
  });
});
