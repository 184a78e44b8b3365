// Shared stdio children end to end (docs/deploy.md): one process for many sessions, each
// session getting only its own results and progress, subscriptions counted on the child,
// server-initiated requests refused; poolSize and maxProcesses.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CreateMessageRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { running } from '../helpers/children.js';
import { connectClient, journal, startGateway, textOf, upstream, type TestGateway } from '../helpers/gateway.js';
import { endAll, gone, health, openRaw, pidOf, recording, request, resultOf, statusOf, trackProcesses, type Exchange, type Recording } from '../helpers/scale.js';

// Every descendant of this worker seen during the file must be gone at its end.
const noteDescendants = trackProcesses('every process the shared-children tests started');

describe('a shared stdio upstream (sharing: shared)', () => {
  let gw: TestGateway;
  const clients: Client[] = [];

  beforeAll(async () => {
    gw = await startGateway({
      upstreams: {
        rogue: { ...upstream.rogue(), sharing: 'shared' },
        paged: { ...upstream.paged(), sharing: 'shared' },
        // Per-session, for contrast: server-initiated requests reach the client from it.
        solo: upstream.rogue(),
      },
    });
  });

  afterAll(async () => {
    await endAll(clients);
    await noteDescendants();
    await gw?.close();
  });

  it('runs one child for every session; a later session reuses it, and it outlives them until the gateway closes', async () => {
    const own = await startGateway({ upstreams: { rogue: { ...upstream.rogue(), sharing: 'shared' } } });
    const local: Client[] = [];
    let closed = false;
    let child: number | undefined;
    try {
      const [a, b] = await Promise.all([connectClient(own.url), connectClient(own.url)]);
      local.push(a, b);
      const [pidA, pidB] = await Promise.all([pidOf(a), pidOf(b)]);
      child = pidA;
      expect(pidB).toBe(pidA);
      const both = await health(own.url);
      expect(both.sessions).toBe(2);
      expect(both.upstreams.rogue).toMatchObject({ state: 'up', sessions: 1 });
      // The gateway initialized the child once, as itself, declaring no client capabilities.
      const initializes = (await journal(b, 'rogue__journal')).filter((m) => m.method === 'initialize');
      expect(initializes).toHaveLength(1);
      expect(initializes[0]!.params).toMatchObject({ capabilities: {}, clientInfo: { name: 'switchyard' } });

      const c = await connectClient(own.url);
      local.push(c);
      expect(await pidOf(c)).toBe(child);
      expect((await health(own.url)).upstreams.rogue).toMatchObject({ sessions: 1 });

      await endAll(local);
      const after = await health(own.url);
      expect(after.sessions).toBe(0);
      expect(after.upstreams.rogue).toMatchObject({ state: 'up', sessions: 1 });
      expect(await running(child)).toBe(true);
      // Still the same child for a session that comes after all the others left.
      const d = await connectClient(own.url);
      local.push(d);
      expect(await pidOf(d)).toBe(child);
      await endAll(local);
      expect(await running(child)).toBe(true);

      await noteDescendants();
      await own.close();
      closed = true;
      await gone([child], 'the shared child after gateway close');
    } finally {
      await endAll(local);
      if (!closed) await own.close();
    }
  });

  it('gives each of two concurrent SDK clients only its own results and its own progress', async () => {
    const [a, b] = await Promise.all([connectClient(gw.url), connectClient(gw.url)]);
    clients.push(a, b);
    const progress = { a: [] as unknown[], b: [] as unknown[] };
    // Fresh SDK clients number their requests alike: both use the same progress token here.
    const echo = (client: Client, who: string): Promise<string[]> =>
      Promise.all(Array.from({ length: 8 }, (_, i) => client.callTool({ name: 'paged__echo', arguments: { message: `${who}-${i}` } }).then(textOf)));
    const [ra, rb, pidA, pidB, echoedA, echoedB] = await Promise.all([
      a.callTool({ name: 'rogue__progress', arguments: { count: 3, intervalMs: 40 } }, undefined, { onprogress: (p) => void progress.a.push(p) }),
      b.callTool({ name: 'rogue__progress', arguments: { count: 5, intervalMs: 25 } }, undefined, { onprogress: (p) => void progress.b.push(p) }),
      pidOf(a),
      pidOf(b),
      echo(a, 'a'),
      echo(b, 'b'),
    ]);
    expect(pidA).toBe(pidB);
    expect(textOf(ra)).toBe('progress done');
    expect(textOf(rb)).toBe('progress done');
    expect(progress.a).toEqual([1, 2, 3].map((p) => ({ progress: p, total: 3 })));
    expect(progress.b).toEqual([1, 2, 3, 4, 5].map((p) => ({ progress: p, total: 5 })));
    expect(echoedA).toEqual(Array.from({ length: 8 }, (_, i) => `echo {"message":"a-${i}"}`));
    expect(echoedB).toEqual(Array.from({ length: 8 }, (_, i) => `echo {"message":"b-${i}"}`));

    // The one child got both calls, each with a progress token of the gateway's own.
    const calls = (await journal(a, 'rogue__journal')).filter((m) => m.method === 'tools/call' && m.params?.name === 'progress');
    expect(calls).toHaveLength(2);
    const tokens = calls.map((m) => (m.params!._meta as { progressToken: unknown }).progressToken);
    expect(new Set(tokens).size).toBe(2);
    expect((await health(gw.url)).upstreams.rogue).toMatchObject({ state: 'up', sessions: 1 });
  });

  it('gives two raw sessions using the same request id and progress token their own progress', async () => {
    const [first, second] = await Promise.all([openRaw(gw.url), openRaw(gw.url)]);
    try {
      const call = (session: string, count: number): Promise<Exchange> =>
        request(gw.url, session, 7, 'tools/call', { name: 'rogue__progress', arguments: { count, intervalMs: 30 }, _meta: { progressToken: 'the-token' } });
      const [one, two] = await Promise.all([call(first, 2), call(second, 4)]);
      for (const [exchange, count] of [[one, 2], [two, 4]] as const) {
        expect(textOf(resultOf(exchange, 7))).toBe('progress done');
        const seenProgress = exchange.messages.filter((m) => m.method === 'notifications/progress').map((m) => m.params);
        expect(seenProgress).toEqual(Array.from({ length: count }, (_, i) => ({ progressToken: 'the-token', progress: i + 1, total: count })));
      }
    } finally {
      await Promise.allSettled([statusOf(gw.url, 'DELETE', first), statusOf(gw.url, 'DELETE', second)]);
    }
  });

  it('answers server-initiated requests of the shared child -32601 (it was told of no client capabilities)', async () => {
    let sampled = 0;
    const client = await connectClient(gw.url, { sampling: {}, elicitation: {}, roots: {} }, (c) =>
      c.setRequestHandler(CreateMessageRequestSchema, async () => {
        sampled++;
        return { model: 'test-model', role: 'assistant', content: { type: 'text', text: 'sampled' } };
      }),
    );
    clients.push(client);
    const sampling = { messages: [{ role: 'user', content: { type: 'text', text: 'hi' } }], maxTokens: 5 };
    for (const [method, params] of [['sampling/createMessage', sampling], ['elicitation/create', { message: 'ok?', requestedSchema: { type: 'object', properties: {} } }], ['roots/list', {}]] as const) {
      const answer = JSON.parse(textOf(await client.callTool({ name: 'rogue__ask', arguments: { method, params } }))) as { error?: { code: number; message: string } };
      expect(answer.error?.code, method).toBe(-32601);
      expect(answer.error?.message, method).toContain(method);
    }
    expect(sampled).toBe(0);
    // The same client, through a per-session child, is asked.
    const solo = JSON.parse(textOf(await client.callTool({ name: 'solo__ask', arguments: { method: 'sampling/createMessage', params: sampling } })));
    expect(solo).toEqual({ result: { model: 'test-model', role: 'assistant', content: { type: 'text', text: 'sampled' } } });
    expect(sampled).toBe(1);
  });
});

describe('resource subscriptions on a shared child', () => {
  let gw: TestGateway;

  beforeAll(async () => {
    // rogue (per session) only sends each session its own marker notifications.
    gw = await startGateway({ upstreams: { everything: { ...upstream.everything(), sharing: 'shared' }, rogue: upstream.rogue() } });
  });

  afterAll(async () => {
    await noteDescendants();
    await gw?.close();
  });

  it('sends updates to subscribed sessions only, and subscribes and unsubscribes the child once', async () => {
    const a = await recording(gw.url);
    const b = await recording(gw.url);
    const clients = [a.client, b.client];
    let updatesOn = false;
    try {
      const { resources } = await a.client.listResources();
      const uri = resources.find((r) => r.uri.startsWith('everything+'))!.uri;
      const original = uri.slice('everything+'.length);
      const isUpdate = (n: { method: string }): boolean => n.method === 'notifications/resources/updated';
      const updatesSince = (who: Recording, from: number) => who.log.all.slice(from).filter(isUpdate);
      const nextUpdate = (who: Recording, from: number, what: string) => who.log.waitFor((n) => isUpdate(n) && who.log.all.indexOf(n) >= from, what);
      const childSaid = (who: Recording, text: string) => who.log.all.filter((n) => n.method === 'notifications/message' && String(n.params?.data).startsWith(text));
      let markers = 0;
      /** A notification of the session's own rogue child: what came before it has arrived. */
      const marker = async (who: Recording): Promise<void> => {
        const data = `marker ${++markers}`;
        await who.client.callTool({ name: 'rogue__notify', arguments: { method: 'notifications/message', params: { level: 'info', data } } });
        await who.log.waitFor((n) => n.params?.data === data, data);
      };
      // server-everything keeps one switch per upstream session (a stdio child has one): turning
      // it on sends an update for every subscribed resource at once, then every 5 s.
      const pulse = async (who: Recording): Promise<void> => {
        if (updatesOn) await who.client.callTool({ name: 'everything__toggle-subscriber-updates', arguments: {} });
        await who.client.callTool({ name: 'everything__toggle-subscriber-updates', arguments: {} });
        updatesOn = true;
      };
      const mark = (): { a: number; b: number } => ({ a: a.log.all.length, b: b.log.all.length });

      // Only A subscribes: only A hears of updates, under the namespaced URI.
      await a.client.subscribeResource({ uri });
      let from = mark();
      await pulse(a);
      expect((await nextUpdate(a, from.a, "A's update")).params).toEqual({ uri });
      await marker(b);
      expect(b.log.all.filter(isUpdate)).toEqual([]);

      // Both subscribed: both hear the next one.
      await b.client.subscribeResource({ uri });
      from = mark();
      await pulse(b);
      expect((await nextUpdate(a, from.a, "A's second update")).params).toEqual({ uri });
      expect((await nextUpdate(b, from.b, "B's first update")).params).toEqual({ uri });

      // A leaves: B still hears them, A does not.
      await a.client.unsubscribeResource({ uri });
      from = mark();
      await pulse(a);
      await nextUpdate(b, from.b, "B's update after A unsubscribed");
      await marker(a);
      expect(updatesSince(a, from.a)).toEqual([]);

      // The last subscriber leaves: the child is unsubscribed, and nobody hears of updates.
      await b.client.unsubscribeResource({ uri });
      const unsubscribed = `Received Unsubscribe Resource request: ${original}`;
      await b.log.waitFor((n) => n.method === 'notifications/message' && String(n.params?.data).startsWith(unsubscribed), 'the child told of the unsubscribe');
      from = mark();
      await pulse(b);
      await marker(a);
      await marker(b);
      expect(updatesSince(a, from.a)).toEqual([]);
      expect(updatesSince(b, from.b)).toEqual([]);
      // Two sessions subscribed and unsubscribed; the child heard of each once (its log messages
      // reach every session it serves).
      await a.log.waitFor((n) => n.method === 'notifications/message' && String(n.params?.data).startsWith(unsubscribed), 'A hearing the unsubscribe log');
      expect(childSaid(a, `Received Subscribe Resource request for URI: ${original}`)).toHaveLength(1);
      expect(childSaid(a, unsubscribed)).toHaveLength(1);
    } finally {
      if (updatesOn) await a.client.callTool({ name: 'everything__toggle-subscriber-updates', arguments: {} }).catch(() => {});
      await endAll(clients);
    }
  });
});

describe('poolSize', () => {
  it('spreads three sessions over at most poolSize (2) children', async () => {
    const gw = await startGateway({ upstreams: { rogue: { ...upstream.rogue(), sharing: 'shared', poolSize: 2 } } });
    const clients: Client[] = [];
    try {
      for (let i = 0; i < 3; i++) clients.push(await connectClient(gw.url));
      const pids = await Promise.all(clients.map((c) => pidOf(c)));
      expect(new Set(pids).size).toBeLessThanOrEqual(2);
      // A second session does not wait for the first child: it gets the second one.
      expect(pids[1]).not.toBe(pids[0]);
      expect(new Set(pids).size).toBe(2);
      expect((await health(gw.url)).upstreams.rogue).toMatchObject({ state: 'up', sessions: 2 });
      await noteDescendants();
    } finally {
      await endAll(clients);
      await gw.close();
    }
  });
});

describe('maxProcesses', () => {
  it('refuses a per-session child beyond the limit with an error naming it, and frees the slot when a session ends', async () => {
    const gw = await startGateway({ upstreams: { rogue: { ...upstream.rogue(), maxProcesses: 1 }, paged: upstream.paged() } });
    const clients: Client[] = [];
    try {
      const first = await connectClient(gw.url);
      clients.push(first);
      const firstChild = await pidOf(first);
      const second = await connectClient(gw.url);
      clients.push(second);
      // Its other upstreams work.
      expect(textOf(await second.callTool({ name: 'paged__echo', arguments: { message: 'still here' } }))).toBe('echo {"message":"still here"}');
      expect(await running(firstChild)).toBe(true);
      const refused = await second.callTool({ name: 'rogue__pid', arguments: {} }).then(
        (result) => ({ result }),
        (error: unknown) => ({ error: error as { code?: number; message: string } }),
      );
      // Soft: what follows (the slot freed) is checked whatever this message says.
      expect.soft(refused).toMatchObject({ error: { message: expect.stringMatching(/process limit \(maxProcesses 1\)/) } });

      await endAll([first]);
      clients.splice(clients.indexOf(first), 1);
      await gone([firstChild], "the first session's child");
      const third = await connectClient(gw.url);
      clients.push(third);
      const thirdChild = await pidOf(third);
      expect(thirdChild).not.toBe(firstChild);
      await noteDescendants();
    } finally {
      await endAll(clients);
      await gw.close();
    }
  });
});
