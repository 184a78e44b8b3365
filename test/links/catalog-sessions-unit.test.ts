// The catalogs on their own, over a fake pool and fake upstream clients: one catalog session
// per upstream and key (protocol version, capabilities, client info), opened once for
// concurrent sessions; list pages cached and forgotten on list_changed; a failed probe leaves
// the upstream out at once for later sessions, retried in the background at most every 30 s;
// no room under maxProcesses is not a failure; idle catalogs closed; at most 16 keys. A
// catalog session keeps only first pages and pages of cursors its upstream gave (a client's
// forged cursor is passed on, never kept), at most MAX_CACHED_BYTES of them.
import { describe, expect, it } from 'vitest';
import type { JsonObject, JsonRpcNotification } from '../../src/mcp/jsonrpc.js';
import { CATALOG_RETRY_MS, CatalogSession, MAX_CACHED_BYTES, UpstreamCatalogs } from '../../src/links/catalog-sessions.js';
import type { UpstreamClient } from '../../src/upstream/client.js';
import { ProcessLimitError, type UpstreamPool } from '../../src/upstream/pool.js';
import { silentLogger } from '../../src/util/log.js';

interface FakeClient {
  name: string;
  closed: boolean;
  capabilities: JsonObject;
  initialized: { instructions?: string };
  pendingCount: number;
  requests: string[];
  onnotification?: (message: JsonRpcNotification, context: unknown) => void;
  onreconnect?: () => void;
  request(method: string, params?: JsonObject): Promise<JsonObject>;
  close(): Promise<void>;
}

function fakeClient(name: string, lists: () => JsonObject = () => ({ tools: [{ name: 'a' }] })): FakeClient {
  const client: FakeClient = {
    name,
    closed: false,
    capabilities: { tools: { listChanged: true } },
    initialized: { instructions: `${name} says hi` },
    pendingCount: 0,
    requests: [],
    request(method) {
      client.requests.push(method);
      return Promise.resolve(lists());
    },
    close() {
      client.closed = true;
      return Promise.resolve();
    },
  };
  return client;
}

/** A pool whose open() answers what `next` says, recording every open. */
function fakePool(next: (name: string, params: JsonObject) => Promise<FakeClient>) {
  const opens: { name: string; params: JsonObject; options: unknown }[] = [];
  const pool = {
    open(name: string, params: JsonObject, prepare?: (client: UpstreamClient) => void, options?: unknown) {
      opens.push({ name, params, options });
      return next(name, params).then((client) => {
        prepare?.(client as unknown as UpstreamClient);
        return client as unknown as UpstreamClient;
      });
    },
  };
  return { pool: pool as unknown as UpstreamPool, opens };
}

/** A pool of fake clients that keeps every client it made. */
function recordingPool() {
  const clients: FakeClient[] = [];
  const { pool } = fakePool(async (name) => {
    const client = fakeClient(name);
    clients.push(client);
    return client;
  });
  return { pool, clients };
}

const info = (caps: JsonObject = {}, client = 'host') => ({ protocolVersion: '2025-11-25', clientCapabilities: caps, clientInfo: { name: client, version: '1' } });

describe('UpstreamCatalogs', () => {
  it('opens one catalog session for concurrent sessions of one key, initialized as theirs would be, without a warm child', async () => {
    const { pool, opens } = fakePool(async (name) => fakeClient(name));
    const catalogs = new UpstreamCatalogs({ pool, logger: silentLogger, onListsChanged: () => {} });
    const [a, b] = await Promise.all([catalogs.ready('up', info()), catalogs.ready('up', info())]);
    expect(a).toBe(b);
    expect(opens).toEqual([{ name: 'up', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'host', version: '1' } }, options: { warm: false } }]);
    expect(catalogs.ready('up', info())).toBe(a);
    expect(a.instructions).toBe('up says hi');
  });

  it('keeps one catalog per protocol version, capabilities and client info', async () => {
    const { pool, opens } = fakePool(async (name) => fakeClient(name));
    const catalogs = new UpstreamCatalogs({ pool, logger: silentLogger, onListsChanged: () => {} });
    await catalogs.ready('up', info());
    await catalogs.ready('up', info({ sampling: {} }));
    await catalogs.ready('up', info({}, 'other-host'));
    await catalogs.ready('up', { ...info(), protocolVersion: '2025-06-18' });
    await catalogs.ready('up', info());
    expect(opens).toHaveLength(4);
    expect(catalogs.keyOf(info({ a: 1, b: 2 }))).toBe(catalogs.keyOf(info({ b: 2, a: 1 })));
  });

  it('reads each list page once, and again after the upstream says the list changed', async () => {
    const client = fakeClient('up');
    const { pool } = fakePool(async () => client);
    const changed: string[][] = [];
    const catalogs = new UpstreamCatalogs({ pool, logger: silentLogger, onListsChanged: (_catalog, methods) => void changed.push([...methods]) });
    const catalog = await catalogs.ready('up', info());
    await catalog.request('tools/list');
    await catalog.request('tools/list');
    await catalog.request('tools/list', { cursor: 'p2' });
    await catalog.request('prompts/list');
    expect(client.requests).toEqual(['tools/list', 'tools/list', 'prompts/list']);
    client.onnotification!({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' }, undefined);
    expect(changed).toEqual([['tools/list']]);
    await catalog.request('tools/list');
    await catalog.request('prompts/list');
    expect(client.requests).toEqual(['tools/list', 'tools/list', 'prompts/list', 'tools/list']);
    // Nothing but lists is served from a catalog.
    await expect(catalog.request('tools/call')).rejects.toThrow(/lists only/);
  });

  it('leaves a failed upstream out at once for later sessions, and retries it in the background at most every 30 s', async () => {
    let now = 1_000;
    let fail = true;
    const { pool, opens } = fakePool(async (name) => {
      if (fail) throw new Error('did not answer initialize within 1000 ms');
      return fakeClient(name);
    });
    const catalogs = new UpstreamCatalogs({ pool, logger: silentLogger, onListsChanged: () => {}, now: () => now });
    await expect(catalogs.ready('hung', info())).rejects.toThrow(/Upstream hung is unavailable: did not answer/);
    expect(() => catalogs.ready('hung', info())).toThrow(/Upstream hung is unavailable/);
    expect(opens).toHaveLength(1);
    now += CATALOG_RETRY_MS;
    fail = false;
    // Due: one probe starts in the background, and this session does not wait for it.
    expect(() => catalogs.ready('hung', info())).toThrow(/Upstream hung is unavailable/);
    expect(() => catalogs.ready('hung', info())).toThrow(/Upstream hung is unavailable/);
    expect(opens).toHaveLength(2);
    await new Promise((resolve) => setImmediate(resolve));
    expect(catalogs.ready('hung', info())).toMatchObject({ name: 'hung' });
  });

  it('does not count no room under maxProcesses as a failure', async () => {
    let full = true;
    const { pool, opens } = fakePool(async (name) => {
      if (full) throw new ProcessLimitError(name, 1);
      return fakeClient(name);
    });
    const catalogs = new UpstreamCatalogs({ pool, logger: silentLogger, onListsChanged: () => {} });
    await expect(catalogs.ready('up', info())).rejects.toThrow(/process limit/);
    full = false;
    await expect(catalogs.ready('up', info())).resolves.toMatchObject({ name: 'up' });
    expect(opens).toHaveLength(2);
  });

  it('closes a catalog no list used for the idle timeout, and one idle to make room', async () => {
    let now = 0;
    const { pool, clients } = recordingPool();
    const catalogs = new UpstreamCatalogs({ pool, logger: silentLogger, onListsChanged: () => {}, now: () => now });
    const catalog = await catalogs.ready('up', info());
    now = 900;
    await catalog.request('tools/list');
    now = 1_500;
    catalogs.sweep(() => 1_000);
    expect(clients[0]!.closed).toBe(false);
    now = 1_900;
    catalogs.sweep(() => undefined);
    expect(clients[0]!.closed).toBe(false);
    catalogs.sweep(() => 1_000);
    expect(clients[0]!.closed).toBe(true);
    await catalogs.ready('up', info());
    expect(catalogs.yieldOne('up')).toBe(true);
    expect(clients[1]!.closed).toBe(true);
    expect(catalogs.yieldOne('up')).toBe(false);
  });

  it('keeps at most 16 keys per upstream, closing the least used', async () => {
    let now = 0;
    const { pool, clients } = recordingPool();
    const catalogs = new UpstreamCatalogs({ pool, logger: silentLogger, onListsChanged: () => {}, now: () => ++now });
    for (let i = 0; i < 17; i++) await catalogs.ready('up', info({}, `host-${i}`));
    expect(clients.filter((c) => c.closed)).toEqual([clients[0]]);
    expect([...catalogs.sessions()]).toHaveLength(16);
  });

  it('closes the catalogs of an upstream a reload changed', async () => {
    const { pool, clients } = recordingPool();
    const catalogs = new UpstreamCatalogs({ pool, logger: silentLogger, onListsChanged: () => {} });
    await catalogs.ready('a', info());
    await catalogs.ready('b', info());
    catalogs.retire(['a']);
    expect(clients.map((c) => c.closed)).toEqual([true, false]);
    expect(catalogs.peek('a', catalogs.keyOf(info()))).toBeUndefined();
  });
});

describe('CatalogSession pages', () => {
  /** An upstream that answers every cursor (known or not) with a page whose nextCursor is `n<k+1>`. */
  function paging(pad = 0) {
    const sent: (string | undefined)[] = [];
    const client = fakeClient('up');
    client.request = (_method, params) => {
      const cursor = params?.cursor as string | undefined;
      sent.push(cursor);
      const at = cursor?.startsWith('n') ? Number(cursor.slice(1)) : 0;
      return Promise.resolve({ tools: [{ name: `t${at}`, description: 'd'.repeat(pad) }], nextCursor: `n${at + 1}` });
    };
    return { listing: new CatalogSession('k', client as unknown as UpstreamClient, Date.now), sent };
  }

  it("keeps first pages and pages of the upstream's own cursors; a forged cursor reaches the upstream each time and is not kept", async () => {
    const { listing, sent } = paging();
    await listing.request('tools/list');
    await listing.request('tools/list', { cursor: 'n1' });
    await listing.request('tools/list');
    await listing.request('tools/list', { cursor: 'n1' });
    expect(sent).toEqual([undefined, 'n1']);
    const kept = listing.cachedBytes;
    for (let i = 0; i < 50; i++) await listing.request('tools/list', { cursor: `forged-${i}-${'x'.repeat(4_000)}` });
    await listing.request('tools/list', { cursor: 'forged-0-' + 'x'.repeat(4_000) });
    expect(sent).toHaveLength(2 + 51);
    expect(listing.cachedBytes).toBe(kept);
  });

  it('keeps at most MAX_CACHED_BYTES of pages: a page larger than that is read each time', async () => {
    const { listing, sent } = paging(MAX_CACHED_BYTES);
    await listing.request('tools/list');
    await listing.request('tools/list');
    expect(sent).toEqual([undefined, undefined]);
    expect(listing.cachedBytes).toBe(0);
    // Pages that fit are kept, the oldest going first once they fill the bound.
    const small = paging(MAX_CACHED_BYTES / 8);
    let cursor: string | undefined;
    for (let i = 0; i < 12; i++) cursor = (await small.listing.request('tools/list', cursor === undefined ? undefined : { cursor })).nextCursor as string;
    expect(small.listing.cachedBytes).toBeLessThanOrEqual(MAX_CACHED_BYTES);
    expect(small.listing.cachedBytes).toBeGreaterThan(MAX_CACHED_BYTES / 2);
    await small.listing.request('tools/list', { cursor: 'n11' });
    expect(small.sent).toHaveLength(12);
  });
});
