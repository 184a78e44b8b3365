// Sessions that cost nothing until they are used: what a session lists comes from a catalog
// session per upstream and per (protocol version, capabilities), shared by every session with
// that key; a session's own upstream session opens on the first request that needs it, is
// closed when idle (not when `stateful`), may be handed a child spawned ahead (`warm`), and
// relays progress, cancellation, sampling, roots and log levels as an eagerly opened one does.
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateMessageRequestSchema, ListRootsRequestSchema, type ClientCapabilities } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { childrenNamed, descendantsOf, gone, running } from '../helpers/children.js';
import { poll } from '../helpers/cli.js';
import { connectClient, recordNotifications, startGateway, terminateSession, textOf, upstream, type NotificationLog, type TestGateway } from '../helpers/gateway.js';
import { EVERYTHING_BIN, FIXTURES, MEMORY_BIN, NODE } from '../helpers/paths.js';

/** Bounds every single wait for something that should happen soon. */
const WAIT_MS = 10_000;
const PROBE = join(FIXTURES, 'lazy-probe-server.mjs');

let dir: string;
let baseline = new Set<number>();
const gateways: TestGateway[] = [];
const clients: Client[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'switchyard-lazy-'));
  baseline = new Set(await descendantsOf());
});

// Each test's gateway and clients go, and every process it started with them.
afterEach(async () => {
  await Promise.allSettled(clients.splice(0).map(async (client) => {
    await terminateSession(client).catch(() => {});
    await client.close();
  }));
  await Promise.allSettled(gateways.splice(0).map((gw) => gw.close()));
  await gone((await descendantsOf()).filter((pid) => !baseline.has(pid)), 'the processes this test started');
});

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

// ---------------------------------------------------------------------------------------------

interface Probe {
  /** An argument no other test's children carry, so their command lines name it. */
  tag: string;
  /** The file each of its children appends its pid to when it starts. */
  startLog: string;
}

function newProbe(name: string): Probe {
  const id = `${name}-${randomUUID().slice(0, 8)}`;
  return { tag: `--tag=${id}`, startLog: join(dir, `${id}.starts`) };
}

/** The lazy-probe fixture as an upstream entry; `env` is added to its own. */
const probeUpstream = (probe: Probe, env: Record<string, string> = {}) => ({ stdio: { command: NODE, args: [PROBE, probe.tag], env: { START_LOG: probe.startLog, ...env } } });

/** The pids of every child of this probe started so far, in order. */
async function starts(probe: Probe): Promise<number[]> {
  const text = await readFile(probe.startLog, 'utf8').catch(() => '');
  return text.split('\n').filter((line) => line !== '').map(Number);
}

interface LogLine {
  level: string;
  msg: string;
  upstream?: string;
  session?: string;
}

const watchers = new WeakMap<TestGateway, Set<(line: LogLine) => void>>();

async function start(upstreams: Record<string, unknown>): Promise<TestGateway> {
  const gw = await startGateway({ upstreams });
  gateways.push(gw);
  // Every log line wakes the waiters: the logger writes through logs.push.
  const wakers = new Set<(line: LogLine) => void>();
  const push = gw.logs.push.bind(gw.logs);
  gw.logs.push = (...lines: string[]): number => {
    const length = push(...lines);
    for (const line of lines) for (const wake of [...wakers]) wake(JSON.parse(line) as LogLine);
    return length;
  };
  watchers.set(gw, wakers);
  return gw;
}

const logLines = (gw: TestGateway, predicate: (line: LogLine) => boolean): LogLine[] => gw.logs.map((line) => JSON.parse(line) as LogLine).filter(predicate);

/** Resolves with the `nth` (1-based) log line matching `predicate`, once it is written; bounded. */
function logLine(gw: TestGateway, predicate: (line: LogLine) => boolean, what: string, nth = 1): Promise<LogLine> {
  const already = logLines(gw, predicate);
  if (already.length >= nth) return Promise.resolve(already[nth - 1]!);
  let count = already.length;
  const wakers = watchers.get(gw)!;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      wakers.delete(wake);
      reject(new Error(`timed out after ${WAIT_MS} ms waiting for the log line: ${what}`));
    }, WAIT_MS);
    function wake(line: LogLine): void {
      if (!predicate(line) || ++count < nth) return;
      clearTimeout(timer);
      wakers.delete(wake);
      resolve(line);
    }
    wakers.add(wake);
  });
}

const sessionOf = (client: Client): string => (client.transport as StreamableHTTPClientTransport).sessionId!;

/** The log line's session field names this client's session (the whole id or its start). */
const aboutSession = (client: Client) => (line: LogLine): boolean => typeof line.session === 'string' && line.session !== '' && sessionOf(client).startsWith(line.session);

const reaped = (name: string, client?: Client) => (line: LogLine): boolean =>
  line.msg === 'idle upstream session closed' && line.upstream === name && (client === undefined || aboutSession(client)(line));

async function open(gw: TestGateway, capabilities: ClientCapabilities = {}, prepare?: (client: Client) => void): Promise<Client> {
  const client = await connectClient(gw.url, capabilities, prepare);
  clients.push(client);
  return client;
}

async function call(client: Client, name: string, args: Record<string, unknown> = {}): Promise<string> {
  return textOf(await client.callTool({ name, arguments: args }));
}

const pidOf = async (client: Client, tool = 'probe__pid'): Promise<number> => Number(await call(client, tool));

const toolNames = async (client: Client): Promise<string[]> => (await client.listTools()).tools.map((tool) => tool.name);

/** A client that answers sampling with `reply` and records the prompts it was asked. */
async function samplingClient(gw: TestGateway, reply: string): Promise<{ client: Client; prompts: string[] }> {
  const prompts: string[] = [];
  const client = await open(gw, { sampling: {} }, (c) =>
    c.setRequestHandler(CreateMessageRequestSchema, async (request) => {
      prompts.push(JSON.stringify(request.params.messages));
      return { model: 'test-model', role: 'assistant', content: { type: 'text', text: reply } };
    }),
  );
  return { client, prompts };
}

// ---------------------------------------------------------------------------------------------

describe('catalogs', () => {
  it('sessions that only initialize and list cost one child per upstream, however many they are', async () => {
    const probe = newProbe('catalog');
    const gw = await start({ everything: upstream.everything(), memory: upstream.memory(), probe: probeUpstream(probe) });
    const list = async (client: Client) => ({
      tools: await toolNames(client),
      prompts: (await client.listPrompts()).prompts.map((p) => p.name),
      resources: (await client.listResources()).resources.map((r) => r.uri),
      instructions: client.getInstructions(),
      capabilities: client.getServerCapabilities(),
    });
    const first = await list(await open(gw));
    expect(first.tools).toEqual(expect.arrayContaining(['everything__echo', 'memory__read_graph', 'probe__pid', 'probe__slow']));
    expect(first.prompts.length).toBeGreaterThan(0);
    expect(first.resources.length).toBeGreaterThan(0);
    expect(first.instructions).toContain('lazy probe instructions');
    expect(first.capabilities).toMatchObject({ tools: {} });
    // Four more at once: they share the catalog the first one opened.
    const later = await Promise.all(Array.from({ length: 4 }, async () => list(await open(gw))));
    for (const listing of later) expect(listing).toEqual(first);

    expect(await childrenNamed(EVERYTHING_BIN)).toHaveLength(1);
    expect(await childrenNamed(MEMORY_BIN)).toHaveLength(1);
    expect(await childrenNamed(probe.tag)).toHaveLength(1);
    expect(await starts(probe)).toHaveLength(1);
  });

  it('sessions with other capabilities open one more catalog, shared by all that declare the same', async () => {
    const probe = newProbe('caps');
    const gw = await start({ everything: upstream.everything(), probe: probeUpstream(probe) });
    for (let i = 0; i < 2; i++) expect(await toolNames(await open(gw))).toContain('probe__pid');
    expect(await starts(probe)).toHaveLength(1);

    const sampling = await Promise.all(Array.from({ length: 3 }, () => samplingClient(gw, 'unused')));
    for (const { client } of sampling) expect(await toolNames(client)).toEqual(expect.arrayContaining(['probe__pid', 'everything__echo']));
    expect(await starts(probe)).toHaveLength(2);
    expect(await childrenNamed(EVERYTHING_BIN)).toHaveLength(2);

    // Another plain session uses the first catalog again.
    expect(await toolNames(await open(gw))).toContain('probe__pid');
    expect(await starts(probe)).toHaveLength(2);
    expect(await childrenNamed(probe.tag)).toHaveLength(2);
  });

  it('an unused catalog session is closed after idleTimeout and opened again by the next initialize or list', async () => {
    const probe = newProbe('catalog-idle');
    const gw = await start({ probe: { ...probeUpstream(probe), idleTimeout: '1s' } });
    const closedCatalog = (line: LogLine): boolean => line.msg === 'idle catalog session closed' && line.upstream === 'probe';
    const a = await open(gw);
    expect(await toolNames(a)).toContain('probe__pid');
    const [firstCatalog] = await starts(probe);
    await logLine(gw, closedCatalog, 'the first catalog closed');
    await gone([firstCatalog!], 'the first catalog child');

    // A new session's initialize opens it again.
    const b = await open(gw);
    expect(await toolNames(b)).toContain('probe__pid');
    expect(await starts(probe)).toHaveLength(2);
    await logLine(gw, closedCatalog, 'the second catalog closed', 2);
    await gone([(await starts(probe))[1]!], 'the second catalog child');

    // A list in an existing session opens it again too.
    expect(await toolNames(a)).toContain('probe__pid');
    expect(await starts(probe)).toHaveLength(3);
    // No session ever called a tool: none of them had a child of its own.
    expect(logLines(gw, reaped('probe'))).toEqual([]);
  });
});

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

describe('a hung upstream', () => {
  it('is waited for by the first session only, left out once and never probed again; the good one is listed', async () => {
    const good = newProbe('good');
    const hung = newProbe('hung');
    const gw = await start({ good: probeUpstream(good), hung: { ...probeUpstream(hung, { HUNG: '1' }), initTimeoutMs: 500 } });
    const first = await open(gw);
    const tools = await toolNames(first);
    expect(tools).toContain('good__pid');
    expect(tools.filter((name) => name.startsWith('hung__'))).toEqual([]);

    const later = await Promise.all(Array.from({ length: 5 }, () => open(gw)));
    for (const client of later) {
      const names = await toolNames(client);
      expect(names).toContain('good__pid');
      expect(names.filter((name) => name.startsWith('hung__'))).toEqual([]);
    }
    expect(await pidOf(later[0]!, 'good__pid')).toBeGreaterThan(0);

    const leftOut = logLines(gw, (line) => line.msg === 'upstream left out of the catalog' && line.upstream === 'hung');
    expect(leftOut).toHaveLength(1);
    expect(leftOut[0]!.level).toBe('warn');
    expect(await starts(hung)).toHaveLength(1);
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

describe('what does not change', () => {
  it('a shared upstream still runs one child for every session, and each session gets its own progress', async () => {
    const probe = newProbe('shared');
    const gw = await start({ probe: { ...probeUpstream(probe), sharing: 'shared' } });
    const [a, b] = await Promise.all([open(gw), open(gw)]);
    const [pidA, pidB] = await Promise.all([pidOf(a), pidOf(b)]);
    expect(pidA).toBe(pidB);
    const seen = { a: [] as unknown[], b: [] as unknown[] };
    const [ra, rb] = await Promise.all([
      a.callTool({ name: 'probe__slow', arguments: { steps: 3 } }, CallToolResultSchema, { onprogress: (p) => void seen.a.push(p) }),
      b.callTool({ name: 'probe__slow', arguments: { steps: 5 } }, CallToolResultSchema, { onprogress: (p) => void seen.b.push(p) }),
    ]);
    expect([textOf(ra), textOf(rb)]).toEqual(['done', 'done']);
    expect(seen.a).toEqual([1, 2, 3].map((progress) => ({ progress, total: 3 })));
    expect(seen.b).toEqual([1, 2, 3, 4, 5].map((progress) => ({ progress, total: 5 })));
    expect(await pidOf(a)).toBe(pidA);
    expect(logLines(gw, reaped('probe'))).toEqual([]);
  });
});
