// Progress and cancellation through the gateway: progress comes back with the client's own
// token on its own request's stream; a cancellation reaches only the upstream that owns the
// request, with that upstream's id; deadlines cancel upstream and answer the client.
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectClient, journal, startGateway, textOf, upstream, type TestGateway } from '../helpers/gateway.js';
import { startEverythingHttp, type EverythingHttp } from '../helpers/processes.js';
import { initializeRaw, postRaw, readReply } from '../helpers/raw-http.js';

let remote: EverythingHttp;
let gw: TestGateway;

beforeAll(async () => {
  remote = await startEverythingHttp();
  gw = await startGateway({
    upstreams: {
      everything: upstream.everything(),
      remote: upstream.http(remote.url),
      one: upstream.rogue(),
      two: upstream.rogue(),
      strict: { ...upstream.rogue(), timeoutMs: 300, maxTotalTimeoutMs: 900 },
    },
  });
});

afterAll(async () => {
  await gw?.close();
  await remote?.close();
});

describe('progress', () => {
  it.each(['everything', 'remote'])('comes back on the request\'s own stream with the client\'s token (%s)', async (name) => {
    // A raw session whose requests carry no MCP-Protocol-Version.
    const session = (await initializeRaw(gw.url, { versionHeader: false })).id;
    const res = await postRaw(
      gw.url,
      { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: `${name}__trigger-long-running-operation`, arguments: { duration: 0.6, steps: 3 }, _meta: { progressToken: 'mine' } } },
      { session, timeoutMs: 15_000 },
    );
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    const messages = (await readReply(res)).messages;
    const progress = messages.filter((m) => m.method === 'notifications/progress');
    expect(progress.map((m) => m.params)).toEqual([1, 2, 3].map((p) => ({ progressToken: 'mine', progress: p, total: 3 })));
    expect(messages.at(-1)).toMatchObject({ id: 7, result: { content: [{ type: 'text' }] } });
  });

  it('keeps two clients apart when they use the same token at the same moment', async () => {
    const [a, b] = await Promise.all([connectClient(gw.url), connectClient(gw.url)]);
    try {
      const seen = { a: [] as unknown[], b: [] as unknown[] };
      // Fresh SDK clients number their requests alike, so both use the same progress token.
      const [ra, rb] = await Promise.all([
        a.callTool({ name: 'everything__trigger-long-running-operation', arguments: { duration: 0.8, steps: 4 } }, undefined, { onprogress: (p) => void seen.a.push(p) }),
        b.callTool({ name: 'remote__trigger-long-running-operation', arguments: { duration: 0.6, steps: 3 } }, undefined, { onprogress: (p) => void seen.b.push(p) }),
      ]);
      expect(textOf(ra)).toMatch(/Steps: 4/);
      expect(textOf(rb)).toMatch(/Steps: 3/);
      expect(seen.a).toEqual([1, 2, 3, 4].map((progress) => ({ progress, total: 4 })));
      expect(seen.b).toEqual([1, 2, 3].map((progress) => ({ progress, total: 3 })));
    } finally {
      await Promise.allSettled([a.close(), b.close()]);
    }
  });

  it('gives the upstream a gateway-issued token, not the client\'s', async () => {
    const client = await connectClient(gw.url);
    try {
      await client.callTool({ name: 'one__progress', arguments: { count: 1, intervalMs: 10 } }, undefined, { onprogress: () => {} });
      const call = (await journal(client, 'one__journal')).find((m) => m.method === 'tools/call' && (m.params as { name: string }).name === 'progress')!;
      const token = ((call.params as { _meta: { progressToken: unknown } })._meta).progressToken;
      expect(token).toBe(call.id);
    } finally {
      await client.close();
    }
  });
});

describe('deadlines', () => {
  it('lets progress extend the idle timeout', async () => {
    const client = await connectClient(gw.url);
    try {
      // 6 × 100 ms = 600 ms in all, longer than the 300 ms idle timeout, shorter than the 900 ms total.
      const result = await client.callTool({ name: 'strict__progress', arguments: { count: 6, intervalMs: 100 } }, undefined, { onprogress: () => {}, timeout: 10_000 });
      expect(textOf(result)).toBe('progress done');
    } finally {
      await client.close();
    }
  });

  it('enforces the total timeout even while progress keeps arriving, and cancels upstream', async () => {
    const client = await connectClient(gw.url);
    try {
      const error = await client
        .callTool({ name: 'strict__progress', arguments: { count: 40, intervalMs: 100 } }, undefined, { onprogress: () => {}, timeout: 10_000 })
        .catch((e: unknown) => e);
      expect(error).toMatchObject({ code: -32001 });
      expect(String((error as Error).message)).toMatch(/strict did not answer tools\/call within \d+ ms/);
      const seen = await journal(client, 'strict__journal');
      const call = seen.find((m) => m.method === 'tools/call' && (m.params as { name: string }).name === 'progress')!;
      expect(seen).toContainEqual({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: call.id, reason: 'timeout' } });
    } finally {
      await client.close();
    }
  });

  it('times out a silent request with -32001 and cancels it upstream', async () => {
    const client = await connectClient(gw.url);
    try {
      await expect(client.callTool({ name: 'strict__slow', arguments: { ms: 2_000 } })).rejects.toMatchObject({ code: -32001 });
      const seen = await journal(client, 'strict__journal');
      const call = seen.find((m) => m.method === 'tools/call' && (m.params as { name: string }).name === 'slow')!;
      expect(seen.filter((m) => m.method === 'notifications/cancelled')).toEqual([{ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: call.id, reason: 'timeout' } }]);
    } finally {
      await client.close();
    }
  });
});

describe('cancellation', () => {
  it('reaches only the owning upstream, with its id; the late reply is dropped and the session stays usable', async () => {
    const client = await connectClient(gw.url);
    try {
      // Both rogue upstreams hold a slow call; the client cancels only the one on `one`.
      const controller = new AbortController();
      const cancelled = client.callTool({ name: 'one__slow', arguments: { ms: 600 } }, CallToolResultSchema, { signal: controller.signal });
      const other = client.callTool({ name: 'two__slow', arguments: { ms: 600 } });
      const started = await journalUntil(client, 'one__journal', (m) => m.method === 'tools/call' && (m.params as { name: string }).name === 'slow');
      controller.abort('user gave up');
      await expect(cancelled).rejects.toThrow();
      expect(textOf(await other)).toBe('slow done');

      const seenByOne = await journal(client, 'one__journal');
      expect(seenByOne.filter((m) => m.method === 'notifications/cancelled')).toEqual([
        { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: started.id, reason: 'cancelled by client' } },
      ]);
      const seenByTwo = await journal(client, 'two__journal');
      expect(seenByTwo.filter((m) => m.method === 'notifications/cancelled')).toEqual([]);
      // `one` answered the cancelled call anyway (it ignores cancellation): the gateway drops
      // that late reply, and the session goes on.
      expect(textOf(await client.callTool({ name: 'one__slow', arguments: { ms: 700 } }))).toBe('slow done');
      const dropped = gw.logs.map((line) => JSON.parse(line) as Record<string, unknown>).filter((l) => l.msg === 'dropped a response with an unknown id' && l.upstream === 'one');
      expect(dropped).toContainEqual(expect.objectContaining({ id: started.id }));
    } finally {
      await client.close();
    }
  });

  it('stops server-everything\'s long-running operation over HTTP', async () => {
    const client = await connectClient(gw.url);
    try {
      const controller = new AbortController();
      let progressed!: () => void;
      const firstProgress = new Promise<void>((resolve) => (progressed = resolve));
      const call = client.callTool({ name: 'remote__trigger-long-running-operation', arguments: { duration: 5, steps: 10 } }, CallToolResultSchema, {
        signal: controller.signal,
        onprogress: () => progressed(),
      });
      await firstProgress;
      controller.abort();
      await expect(call).rejects.toThrow();
      await expect(client.ping()).resolves.toEqual({});
    } finally {
      await client.close();
    }
  });
});

async function journalUntil(
  client: Awaited<ReturnType<typeof connectClient>>,
  tool: string,
  predicate: (m: Awaited<ReturnType<typeof journal>>[number]) => boolean,
): Promise<Awaited<ReturnType<typeof journal>>[number]> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const found = (await journal(client, tool)).find(predicate);
    if (found) return found;
    if (Date.now() > deadline) throw new Error(`${tool} never recorded the expected message`);
  }
}
