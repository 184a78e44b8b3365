// A session's own upstream session, opened lazily: on the first request that needs it, closed
// when idle (not while a call is in flight or a subscription stands, never when `stateful`),
// possibly handed a child spawned ahead (`warm`), and relaying progress, cancellation, sampling,
// roots and log levels to its own client only, as an eagerly opened one does.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CallToolResultSchema, ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { childrenNamed, gone, running } from '../helpers/children.js';
import { poll } from '../helpers/cli.js';
import { recordNotifications, textOf, upstream, type NotificationLog } from '../helpers/gateway.js';
import { call, logLines, pidOf, probeUpstream, reaped, starts, toolNames, useLazyRig, WAIT_MS } from '../helpers/lazy.js';
import { EVERYTHING_BIN } from '../helpers/paths.js';

const { newProbe, start, logLine, open, samplingClient } = useLazyRig();

describe("a session's own upstream session", () => {
  it('is opened by the first tools/call: exactly one more child, and the answer is right', async () => {
    const probe = newProbe('first-call');
    const gw = await start({ everything: upstream.everything(), probe: probeUpstream(probe) });
    const a = await open(gw);
    expect(await toolNames(a)).toContain('probe__pid');
    const catalog = await childrenNamed(probe.tag);
    expect(catalog).toHaveLength(1);

    const own = await pidOf(a);
    expect(catalog).not.toContain(own);
    expect(await childrenNamed(probe.tag)).toEqual([...catalog, own].sort((x, y) => x - y));
    expect(await starts(probe)).toEqual([...catalog, own]);
    expect(await pidOf(a)).toBe(own);

    expect(await call(a, 'everything__echo', { message: 'lazy' })).toBe('Echo: lazy');
    expect(await childrenNamed(EVERYTHING_BIN)).toHaveLength(2);

    // Another session's first call: a child of its own, one more.
    const b = await open(gw);
    const theirs = await pidOf(b);
    expect([...catalog, own]).not.toContain(theirs);
    expect(await starts(probe)).toHaveLength(3);
  });

  it('is opened by prompts/get, resources/read and completion/complete too, each right', async () => {
    const gw = await start({ everything: upstream.everything() });
    const lister = await open(gw);
    const { resources } = await lister.listResources();
    const uri = resources.find((r) => r.uri.startsWith('everything+'))!.uri;
    const argument = (await lister.listPrompts()).prompts.find((p) => p.name === 'everything__completable-prompt')!.arguments![0]!.name;
    expect(await childrenNamed(EVERYTHING_BIN)).toHaveLength(1);
    const firsts: [string, (client: Client) => Promise<unknown>][] = [
      ['prompts/get', async (c) => expect((await c.getPrompt({ name: 'everything__simple-prompt' })).messages.length).toBeGreaterThan(0)],
      ['resources/read', async (c) => expect((await c.readResource({ uri })).contents[0]).toMatchObject({ uri })],
      ['completion/complete', async (c) => expect((await c.complete({ ref: { type: 'ref/prompt', name: 'everything__completable-prompt' }, argument: { name: argument, value: '' } })).completion.values.length).toBeGreaterThan(0)],
    ];
    for (const [i, [method, first]] of firsts.entries()) {
      const client = await open(gw);
      expect(await childrenNamed(EVERYTHING_BIN), `before ${method}`).toHaveLength(i + 1);
      await first(client);
      expect(await childrenNamed(EVERYTHING_BIN), `after ${method}`).toHaveLength(i + 2);
    }
  });

  it('gets a log level the client set before it opened, and later ones at once', async () => {
    const probe = newProbe('level');
    const gw = await start({ probe: probeUpstream(probe) });
    const a = await open(gw);
    await a.setLoggingLevel('warning');
    // Setting a level opens nothing.
    expect(await starts(probe)).toHaveLength(1);
    expect(await call(a, 'probe__level')).toBe('warning');
    await a.setLoggingLevel('error');
    expect(await call(a, 'probe__level')).toBe('error');
    expect(await starts(probe)).toHaveLength(2);
  });

  it("asks the client itself for its roots", async () => {
    const probe = newProbe('roots');
    const gw = await start({ probe: probeUpstream(probe) });
    const roots = [{ uri: 'file:///lazy/one', name: 'one' }, { uri: 'file:///lazy/two', name: 'two' }];
    const a = await open(gw, { roots: { listChanged: true } }, (c) => c.setRequestHandler(ListRootsRequestSchema, async () => ({ roots })));
    expect(await starts(probe)).toHaveLength(1);
    expect(await call(a, 'probe__roots')).toBe('file:///lazy/one,file:///lazy/two');
    expect(await starts(probe)).toHaveLength(2);
  });
});

describe('idle own upstream sessions', () => {
  it('are closed after idleTimeout; the next call opens a new child, which gets the level again', async () => {
    const probe = newProbe('idle');
    const gw = await start({ probe: { ...probeUpstream(probe), idleTimeout: '200ms' } });
    const a = await open(gw);
    await a.setLoggingLevel('critical');
    const first = await pidOf(a);
    const line = await logLine(gw, reaped('probe', a), "a's child closed for idleness");
    expect(line.level).toBe('info');
    await gone([first], "a's idle child");

    const second = await pidOf(a);
    expect(second).not.toBe(first);
    expect(await starts(probe)).toContain(second);
    expect(await call(a, 'probe__level')).toBe('critical');
  });

  it('are kept while a call is in flight, however long it is silent', async () => {
    const probe = newProbe('in-flight');
    const gw = await start({ probe: { ...probeUpstream(probe), idleTimeout: '200ms' } });
    const a = await open(gw);
    // No progress token, so no progress: 6 × 100 ms without a word from the child.
    expect(await call(a, 'probe__slow', { steps: 6 })).toBe('done');
    expect(logLines(gw, reaped('probe', a))).toEqual([]);
    expect(await starts(probe)).toHaveLength(2);
    // Once nothing is in flight, it goes.
    await logLine(gw, reaped('probe', a), "a's child closed after its call");
    await gone([(await starts(probe))[1]!], "a's child");
  });

  it('are kept while subscribed, and closed once unsubscribed', async () => {
    const clock = newProbe('clock');
    const gw = await start({ everything: { ...upstream.everything(), idleTimeout: '200ms' }, clock: probeUpstream(clock) });
    const a = await open(gw);
    const uri = (await a.listResources()).resources.find((r) => r.uri.startsWith('everything+'))!.uri;
    await a.subscribeResource({ uri });
    // 6 × 100 ms on another upstream, three idle timeouts and more.
    expect(await call(a, 'clock__slow', { steps: 6 })).toBe('done');
    expect(logLines(gw, reaped('everything', a))).toEqual([]);
    await a.unsubscribeResource({ uri });
    await logLine(gw, reaped('everything', a), "a's everything child closed after the unsubscribe");
  });

  it('are never closed for a stateful upstream', async () => {
    const keep = newProbe('stateful');
    const loose = newProbe('stateless');
    const gw = await start({
      keep: { ...probeUpstream(keep), stateful: true, idleTimeout: '200ms' },
      loose: { ...probeUpstream(loose), idleTimeout: '200ms' },
    });
    const a = await open(gw);
    // keep's child is idle at least as long as loose's.
    const kept = await pidOf(a, 'keep__pid');
    const dropped = await pidOf(a, 'loose__pid');
    await logLine(gw, reaped('loose', a), "loose's child closed for idleness");
    await gone([dropped], "loose's child");

    expect(await running(kept)).toBe(true);
    expect(await childrenNamed(keep.tag)).toContain(kept);
    expect(await pidOf(a, 'keep__pid')).toBe(kept);
    expect(logLines(gw, reaped('keep'))).toEqual([]);
    expect(await pidOf(a, 'loose__pid')).not.toBe(dropped);
  });
});

describe('two concurrent clients through lazily opened children', () => {
  it("each is asked only its own sampling requests by its first call's child", async () => {
    const probe = newProbe('sampling');
    const gw = await start({ probe: probeUpstream(probe) });
    const [a, b] = await Promise.all([samplingClient(gw, 'answer from A'), samplingClient(gw, 'answer from B')]);
    expect(await starts(probe)).toHaveLength(1);
    const [ra, rb] = await Promise.all([call(a.client, 'probe__sample', { prompt: 'question A' }), call(b.client, 'probe__sample', { prompt: 'question B' })]);
    expect(ra).toBe('answer from A');
    expect(rb).toBe('answer from B');
    expect(a.prompts).toHaveLength(1);
    expect(a.prompts[0]).toContain('question A');
    expect(b.prompts).toHaveLength(1);
    expect(b.prompts[0]).toContain('question B');
    expect(await pidOf(a.client)).not.toBe(await pidOf(b.client));
  });

  it("each gets only its own progress, and cancelling one's call leaves the other's alone", async () => {
    const probe = newProbe('progress');
    const gw = await start({ probe: probeUpstream(probe) });
    const [a, b] = await Promise.all([open(gw), open(gw)]);
    expect(await starts(probe)).toHaveLength(1);
    const seen = { a: [] as unknown[], b: [] as unknown[] };
    const controller = new AbortController();
    // Fresh SDK clients number their requests alike: both calls carry the same progress token.
    const [resultA, resultB] = await Promise.all([
      a.callTool({ name: 'probe__slow', arguments: { steps: 4 } }, CallToolResultSchema, { onprogress: (p) => void seen.a.push(p) }),
      b
        .callTool({ name: 'probe__slow', arguments: { steps: 100 } }, CallToolResultSchema, {
          signal: controller.signal,
          onprogress: (p) => {
            seen.b.push(p);
            controller.abort('user gave up');
          },
        })
        .then(
          () => 'answered',
          () => 'rejected',
        ),
    ]);
    expect(textOf(resultA)).toBe('done');
    expect(seen.a).toEqual([1, 2, 3, 4].map((progress) => ({ progress, total: 4 })));
    expect(resultB).toBe('rejected');
    expect(seen.b.length).toBeGreaterThan(0);
    for (const p of seen.b) expect(p).toMatchObject({ total: 100 });

    // The cancellation reached b's child, and only it.
    await poll(async () => ((await call(b, 'probe__cancelled')) === '1' ? true : undefined), "b's child to see the cancellation", WAIT_MS);
    expect(await call(a, 'probe__cancelled')).toBe('0');
    expect(await pidOf(a)).not.toBe(await pidOf(b));
  });

  it("each gets only its own child's log messages", async () => {
    const probe = newProbe('log');
    const gw = await start({ probe: probeUpstream(probe) });
    const logs: NotificationLog[] = [];
    const [a, b] = await Promise.all([0, 1].map((i) => open(gw, {}, (c) => (logs[i] = recordNotifications(c)))));
    expect(await starts(probe)).toHaveLength(1);
    const messageWith = (data: string) => (n: { method: string; params?: Record<string, unknown> }) => n.method === 'notifications/message' && n.params?.data === data;
    expect(await call(a!, 'probe__log', { data: 'for A' })).toBe('logged');
    await logs[0]!.waitFor(messageWith('for A'), "A's log message");
    expect(await call(b!, 'probe__log', { data: 'for B' })).toBe('logged');
    await logs[1]!.waitFor(messageWith('for B'), "B's log message");
    expect(logs[0]!.all.filter(messageWith('for B'))).toEqual([]);
    expect(logs[1]!.all.filter(messageWith('for A'))).toEqual([]);
  });
});

describe('warm children', () => {
  it("are spawned ahead; a session's first call is served by one, and another replaces it", async () => {
    const probe = newProbe('warm');
    const gw = await start({ probe: { ...probeUpstream(probe), warm: 1 } });
    // Before any session: the warm child alone.
    await poll(async () => ((await childrenNamed(probe.tag)).length > 0 ? true : undefined), 'the warm child to be spawned', WAIT_MS);
    const [warm] = await childrenNamed(probe.tag);
    expect(await childrenNamed(probe.tag)).toEqual([warm]);

    const roots = [{ uri: 'file:///warm', name: 'warm' }];
    const withRoots = (c: Client): void => c.setRequestHandler(ListRootsRequestSchema, async () => ({ roots }));
    const a = await open(gw, { roots: { listChanged: true } }, withRoots);
    expect(await toolNames(a)).toContain('probe__pid');
    // Live processes: a child just spawned shows here before it has run a line of its own.
    const before = await childrenNamed(probe.tag);
    // The list made a catalog child beside the warm one, which waits for a session's own use.
    expect(before).toHaveLength(2);
    expect(before).toContain(warm);

    // Initialized at hand-over with a's own capabilities: it may ask a for its roots.
    expect(await call(a, 'probe__roots')).toBe('file:///warm');
    const served = await pidOf(a);
    expect(served, 'the child spawned ahead of any session').toBe(warm);
    const replacement = await poll(async () => (await starts(probe)).find((pid) => !before.includes(pid)), 'a replacement warm child', WAIT_MS);
    expect(await running(replacement)).toBe(true);

    // The next session's first call is served by a child that existed before it, too.
    const b = await open(gw, { roots: { listChanged: true } }, withRoots);
    const ready = await childrenNamed(probe.tag);
    const servedB = await pidOf(b);
    expect(ready).toContain(servedB);
    expect(servedB).not.toBe(served);
    expect(await call(b, 'probe__roots')).toBe('file:///warm');
  });
});

