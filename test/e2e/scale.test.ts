// The scale features end to end (docs/deploy.md): shared stdio children (one
// process for many sessions, subscriptions counted, server-initiated requests refused),
// poolSize, maxProcesses, and self-describing session ids that another gateway process takes
// over, including key rotation, tampering and another principal presenting the id.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateMessageRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/auth/api-keys.js';
import { poll, startCli, type CliProcess } from '../helpers/cli.js';
import {
  connectClient,
  journal,
  recordNotifications,
  startGateway,
  terminateSession,
  textOf,
  upstream,
  type NotificationLog,
  type TestGateway,
} from '../helpers/gateway.js';
import { FIXTURES, NODE } from '../helpers/paths.js';
import { startEverythingHttp, type EverythingHttp } from '../helpers/processes.js';
import { initializeRaw, messagesOf, postRpc, rawFetch } from '../helpers/raw-http.js';
import { descendantsOf, gone as goneWithin, running } from '../helpers/children.js';

const LATEST = '2025-11-25';
/** Bounds every single wait for something that should happen soon. */
const WAIT_MS = 10_000;
/** What the gateway answers for a session id it does not know (or will not honour). */
const UNKNOWN_SESSION = { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Session not found' } };

/** A session key as the config wants one: at least 32 characters of secret (48 here). */
const sessionKey = (): string => randomBytes(36).toString('base64url');

// ---------------------------------------------------------------------------------------------
// Processes: every descendant of this worker seen during the file must be gone at its end.

/** Resolves once none of `pids` runs; bounded. */
const gone = (pids: Iterable<number>, what: string): Promise<void> => goneWithin(pids, what, WAIT_MS);

/** Processes that were already there before this file started anything. */
let baseline = new Set<number>();
/** Every process this file started, learned after each test and before each shutdown. */
const seen = new Set<number>();

async function noteDescendants(): Promise<void> {
  for (const pid of await descendantsOf(process.pid)) if (!baseline.has(pid)) seen.add(pid);
}

beforeAll(async () => {
  baseline = new Set(await descendantsOf(process.pid));
});

afterEach(async () => {
  await noteDescendants();
});

// Runs after every describe block's own afterAll: by then nothing may be left.
afterAll(async () => {
  await gone(seen, 'every process the scale tests started');
});

// ---------------------------------------------------------------------------------------------
// Raw HTTP.

interface Message {
  jsonrpc?: string;
  id?: string | number | null;
  method?: string;
  params?: Record<string, unknown>;
  result?: Record<string, unknown>;
  error?: { code: number; message: string };
}

/** initialize and notifications/initialized over raw HTTP, `extra` on both; the session id. */
async function openRaw(url: URL, extra: Record<string, string> = {}): Promise<string> {
  return (await initializeRaw(url, { protocolVersion: LATEST, clientInfo: { name: 'scale-test', version: '1' }, headers: extra, timeoutMs: 2 * WAIT_MS })).id;
}

interface Exchange {
  status: number;
  messages: Message[];
}

/** One request on a session: the HTTP status and every message of the answer. */
async function request(url: URL, session: string, id: number, method: string, params: Record<string, unknown> = {}, extra?: Record<string, string>): Promise<Exchange> {
  const reply = await postRpc(url, { jsonrpc: '2.0', id, method, params }, { session, protocolVersion: LATEST, headers: extra, timeoutMs: 2 * WAIT_MS });
  return { status: reply.status, messages: messagesOf<Message>(reply) };
}

/** The result of request `id` in an exchange that must have succeeded. */
function resultOf(exchange: Exchange, id: number): Record<string, unknown> {
  expect(exchange.status).toBe(200);
  const answer = exchange.messages.find((m) => m.id === id);
  expect(answer?.error).toBeUndefined();
  expect(answer?.result).toBeDefined();
  return answer!.result!;
}

function expectUnknown(exchange: Exchange, what: string): void {
  expect(exchange.status, what).toBe(404);
  expect(exchange.messages, what).toEqual([UNKNOWN_SESSION]);
}

async function statusOf(url: URL, method: 'GET' | 'DELETE', session: string, extra: Record<string, string> = {}): Promise<number> {
  const defaults: Record<string, string> = method === 'GET' ? { accept: 'text/event-stream' } : {};
  const res = await rawFetch(url, { method, defaults, session, protocolVersion: LATEST, headers: extra, timeoutMs: WAIT_MS });
  await res.body?.cancel();
  return res.status;
}

// ---------------------------------------------------------------------------------------------
// SDK clients and gateway state.

function sessionOf(client: Client): string {
  return (client.transport as StreamableHTTPClientTransport).sessionId!;
}

async function pidOf(client: Client, tool = 'rogue__pid'): Promise<number> {
  return Number(textOf(await client.callTool({ name: tool, arguments: {} })));
}

interface Health {
  sessions: number;
  upstreams: Record<string, { state: string; sessions: number; lastError?: string }>;
}

async function health(url: URL): Promise<Health> {
  const res = await fetch(new URL('/healthz', url), { signal: AbortSignal.timeout(WAIT_MS) });
  expect(res.status).toBe(200);
  return (await res.json()) as Health;
}

interface Recording {
  client: Client;
  log: NotificationLog;
}

async function recording(url: URL): Promise<Recording> {
  let log!: NotificationLog;
  const client = await connectClient(url, {}, (c) => (log = recordNotifications(c)));
  return { client, log };
}

/** Ends SDK sessions the way a host does (DELETE, then close), ignoring ones already gone. */
async function endAll(clients: Client[]): Promise<void> {
  await Promise.allSettled(clients.splice(0).map(async (client) => {
    await terminateSession(client).catch(() => {});
    await client.close();
  }));
}

// ---------------------------------------------------------------------------------------------

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

describe('two gateway processes with the same session keys', () => {
  let dir: string;
  let remote: EverythingHttp;
  let a: CliProcess | undefined;
  let b: CliProcess | undefined;
  const clients: Client[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'switchyard-scale-'));
    remote = await startEverythingHttp();
    const file = join(dir, 'gateway.yaml');
    const config = {
      // No probes: the upstream's initialize count is then the sessions' alone.
      health: { probeInterval: 0 },
      sessions: { keys: [sessionKey()] },
      upstreams: { remote: { http: { url: remote.url } }, rogue: { stdio: { command: NODE, args: [join(FIXTURES, 'rogue-server.mjs')] } } },
    };
    // JSON is YAML.
    await writeFile(file, `${JSON.stringify(config, null, 2)}\n`);
    const started = await Promise.allSettled([startCli(file), startCli(file)]);
    [a, b] = started.map((s) => (s.status === 'fulfilled' ? s.value : undefined));
    const failed = started.find((s) => s.status === 'rejected');
    if (failed) throw (failed as PromiseRejectedResult).reason;
  }, 60_000);

  afterAll(async () => {
    await Promise.allSettled(clients.splice(0).map((c) => c.close()));
    await noteDescendants();
    await Promise.allSettled([a?.stop(), b?.stop()]);
    await remote?.close();
    await rm(dir, { recursive: true, force: true });
  }, 30_000);

  it('continues a session opened on A through B: the HTTP upstream session taken over, stdio started afresh, DELETE ends it', async () => {
    const onA = await connectClient(a!.url);
    clients.push(onA);
    const session = sessionOf(onA);
    const childOnA = await pidOf(onA);
    expect(textOf(await onA.callTool({ name: 'remote__echo', arguments: { message: 'via A' } }))).toBe('Echo: via A');
    const before = await remote.stats();
    expect(before.sessions).toBe(1);

    // B never saw this session: it opens it from the id.
    const listed = resultOf(await request(b!.url, session, 1, 'tools/list'), 1);
    expect((listed.tools as { name: string }[]).map((t) => t.name)).toEqual(expect.arrayContaining(['remote__echo', 'remote__trigger-long-running-operation', 'rogue__pid']));
    await b!.waitForLog((line) => line.msg === 'session resumed from its id', 'the takeover');
    expect(textOf(resultOf(await request(b!.url, session, 2, 'tools/call', { name: 'remote__echo', arguments: { message: 'via B' } }), 2))).toBe('Echo: via B');
    const childOnB = Number(textOf(resultOf(await request(b!.url, session, 3, 'tools/call', { name: 'rogue__pid', arguments: {} }), 3)));
    expect(childOnB).not.toBe(childOnA);
    expect(await running(childOnB)).toBe(true);
    expect((await descendantsOf(b!.gatewayPid)).includes(childOnB)).toBe(true);

    const slow = await request(b!.url, session, 4, 'tools/call', {
      name: 'remote__trigger-long-running-operation',
      arguments: { duration: 0.6, steps: 3 },
      _meta: { progressToken: 'via-b' },
    });
    expect(textOf(resultOf(slow, 4))).toMatch(/Steps: 3/);
    expect(slow.messages.filter((m) => m.method === 'notifications/progress').map((m) => m.params)).toEqual(
      [1, 2, 3].map((progress) => ({ progressToken: 'via-b', progress, total: 3 })),
    );

    // The upstream session was continued, not opened again.
    const during = await remote.stats();
    expect(during.initializes).toBe(before.initializes);
    expect(during.sessions).toBe(before.sessions);
    // A still serves it too.
    expect(textOf(await onA.callTool({ name: 'remote__echo', arguments: { message: 'A again' } }))).toBe('Echo: A again');

    await noteDescendants();
    expect(await statusOf(b!.url, 'DELETE', session)).toBe(200);
    await poll(async () => ((await remote.stats()).deletes > before.deletes ? true : undefined), 'the upstream session to be deleted', WAIT_MS);
    await gone([childOnB], "B's child for the session");
    expect(await running(childOnA)).toBe(true);

    // Gone on B: it ended there and must not be opened again from its id.
    // Gone on B: it ended there and must not be opened again from its id (nor its upstream
    // session renewed for it).
    const afterDelete = await request(b!.url, session, 5, 'tools/list');
    expect.soft(afterDelete.status, 'B after DELETE').toBe(404);
    expect.soft(afterDelete.messages, 'B after DELETE').toEqual([UNKNOWN_SESSION]);
    expect.soft((await remote.stats()).initializes, 'upstream initializes after DELETE').toBe(before.initializes);
    expect.soft(b!.logs().filter((line) => line.msg === 'session resumed from its id'), 'takeovers on B').toHaveLength(1);
  }, 60_000);
});

describe('self-describing session ids', () => {
  const OLD = sessionKey();
  const NEW = sessionKey();
  const OTHER = sessionKey();
  const ALICE = `sk-alice-${randomBytes(12).toString('hex')}`;
  const BOB = `sk-bob-${randomBytes(12).toString('hex')}`;
  const asAlice = { 'x-api-key': ALICE };
  const asBob = { 'x-api-key': BOB };
  const upstreams = () => ({ rogue: upstream.rogue() });
  const auth = { apiKeys: [{ id: 'alice', hash: hashApiKey(ALICE) }, { id: 'bob', hash: hashApiKey(BOB) }] };

  /** keys [OLD]; one with [OTHER]; rotating: [NEW, OLD]; rotated: [NEW]; two with auth and [OLD]. */
  let sealer: TestGateway;
  let stranger: TestGateway;
  let rotating: TestGateway;
  let rotated: TestGateway;
  let alpha: TestGateway;
  let beta: TestGateway;

  beforeAll(async () => {
    const started = await Promise.allSettled([
      startGateway({ upstreams: upstreams(), sessions: { keys: [OLD] } }),
      startGateway({ upstreams: upstreams(), sessions: { keys: [OTHER] } }),
      startGateway({ upstreams: upstreams(), sessions: { keys: [NEW, OLD] } }),
      startGateway({ upstreams: upstreams(), sessions: { keys: [NEW] } }),
      startGateway({ upstreams: upstreams(), sessions: { keys: [OLD] }, auth }),
      startGateway({ upstreams: upstreams(), sessions: { keys: [OLD] }, auth }),
    ]);
    const [s, o, r, n, x, y] = started.map((p) => (p.status === 'fulfilled' ? p.value : undefined));
    [sealer, stranger, rotating, rotated, alpha, beta] = [s!, o!, r!, n!, x!, y!];
    const failed = started.find((p) => p.status === 'rejected');
    if (failed) throw (failed as PromiseRejectedResult).reason;
  });

  afterAll(async () => {
    await noteDescendants();
    await Promise.allSettled([sealer, stranger, rotating, rotated, alpha, beta].map((g) => g?.close()));
  });

  const pidVia = async (gw: TestGateway, session: string, id: number, extra?: Record<string, string>): Promise<number> =>
    Number(textOf(resultOf(await request(gw.url, session, id, 'tools/call', { name: 'rogue__pid', arguments: {} }, extra), id)));

  it('are visible ASCII; a tampered id is unknown, on the gateway that sealed it too', async () => {
    const id = await openRaw(sealer.url);
    expect(id).toMatch(/^[\x21-\x7e]+$/);
    expect(id.length).toBeGreaterThan(64);
    const middle = Math.floor(id.length / 2);
    const tampered = `${id.slice(0, middle)}${id[middle] === 'A' ? 'B' : 'A'}${id.slice(middle + 1)}`;
    for (const gw of [sealer, rotating]) {
      expectUnknown(await request(gw.url, tampered, 1, 'tools/list'), 'a tampered id');
      expect(await statusOf(gw.url, 'GET', tampered)).toBe(404);
      expect(await statusOf(gw.url, 'DELETE', tampered)).toBe(404);
    }
    // The real one still works.
    expect(await pidVia(sealer, id, 2)).toBeGreaterThan(0);
    expect(await statusOf(sealer.url, 'DELETE', id)).toBe(200);
  });

  it('is unknown to a gateway with another key', async () => {
    const id = await openRaw(sealer.url);
    expectUnknown(await request(stranger.url, id, 1, 'tools/list'), 'another key');
    expect(await statusOf(stranger.url, 'DELETE', id)).toBe(404);
    expect(await statusOf(sealer.url, 'DELETE', id)).toBe(200);
  });

  it('survives key rotation: [new, old] opens ids sealed under old, [new] alone does not', async () => {
    const id = await openRaw(sealer.url);
    const childOnSealer = await pidVia(sealer, id, 1);
    // Resumed on the rotating gateway: a child of its own for the session.
    const childOnRotating = await pidVia(rotating, id, 2);
    expect(childOnRotating).not.toBe(childOnSealer);
    expectUnknown(await request(rotated.url, id, 3, 'tools/list'), 'an old-key id on a new-key-only gateway');

    // What the rotating gateway seals uses the new key: the rotated gateway opens it, the old one not.
    const fresh = await openRaw(rotating.url);
    expect(await pidVia(rotated, fresh, 4)).toBeGreaterThan(0);
    expectUnknown(await request(sealer.url, fresh, 5, 'tools/list'), 'a new-key id on an old-key-only gateway');
    await Promise.allSettled([statusOf(sealer.url, 'DELETE', id), statusOf(rotating.url, 'DELETE', id), statusOf(rotating.url, 'DELETE', fresh), statusOf(rotated.url, 'DELETE', fresh)]);
  });

  it("is unknown to another principal, here and on another replica, while the owner keeps using it", async () => {
    const id = await openRaw(alpha.url, asAlice);
    for (const [name, gw] of [['alpha (the session\'s own)', alpha], ['beta (never saw it)', beta]] as const) {
      expectUnknown(await request(gw.url, id, 1, 'tools/call', { name: 'rogue__pid', arguments: {} }, asBob), `bob on ${name}`);
      expect(await statusOf(gw.url, 'GET', id, asBob), `bob's GET on ${name}`).toBe(404);
      expect(await statusOf(gw.url, 'DELETE', id, asBob), `bob's DELETE on ${name}`).toBe(404);
    }
    // The owner takes it over on beta, and beta still refuses bob now that it knows the session.
    const onBeta = await pidVia(beta, id, 2, asAlice);
    expect(onBeta).toBeGreaterThan(0);
    expectUnknown(await request(beta.url, id, 3, 'tools/list', {}, asBob), 'bob on beta after the takeover');
    expect(await pidVia(alpha, id, 4, asAlice)).not.toBe(onBeta);

    // An id of an unauthenticated session (same key) is nobody's: unknown to bob.
    const anonymous = await openRaw(sealer.url);
    expectUnknown(await request(beta.url, anonymous, 5, 'tools/list', {}, asBob), "an anonymous session's id presented by bob");
    await Promise.allSettled([
      statusOf(alpha.url, 'DELETE', id, asAlice),
      statusOf(beta.url, 'DELETE', id, asAlice),
      statusOf(sealer.url, 'DELETE', anonymous),
    ]);
  });
});
