// Streamable HTTP upstreams on bad days: sessions the upstream forgets (renewed; only safe
// requests re-sent), runs of 5xx and refused connections (the circuit opens, fails fast, and one
// probe closes it), a 401 whose challenge must not reach the client, and keep-alive reuse. A
// healthy stdio upstream keeps working throughout, and no request is left pending.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFlakyHttp, type FlakyHttp, type FlakyStats } from '../helpers/flaky-http.js';
import { connectClient, startGateway, textOf, upstream, type TestGateway } from '../helpers/gateway.js';
import { initializeRaw, messagesOf, rawFetch, sendIn, type RawReply } from '../helpers/raw-http.js';

/** Short enough for a test to wait out, long enough to observe the open circuit. */
const OPEN_FOR_MS = 500;
/** Bounds every wait for something that should happen at once (a failure, not a hang). */
const PROMPT_MS = 5_000;

type Health = Record<string, { state: string; circuit?: string; pending: number; restarts: number; sessions: number; lastError?: string }>;

async function health(gw: TestGateway): Promise<Health> {
  return ((await (await fetch(new URL('/healthz', gw.url))).json()) as { upstreams: Health }).upstreams;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function echo(client: Client, message: string): Promise<string> {
  return client.callTool({ name: 'flaky__echo', arguments: { message } }).then(textOf);
}

/** The JSON-RPC error a call ended with; fails the test if it succeeds or takes over `timeoutMs`. */
async function failure(call: Promise<unknown>, timeoutMs = PROMPT_MS): Promise<{ code: number; message: string }> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the call neither failed nor succeeded within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    await Promise.race([call, timeout]);
  } catch (err) {
    if (err instanceof McpError) return { code: err.code, message: err.message };
    throw err;
  } finally {
    clearTimeout(timer);
  }
  throw new Error('expected the call to fail, but it succeeded');
}

/** Polls `check` until it returns true, bounded. */
async function until(check: () => Promise<boolean>, what: string, timeoutMs = PROMPT_MS): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(20);
  }
}

/** Every upstream of `gw` ends up with no request in flight (bounded), and says so. */
async function expectNothingPending(gw: TestGateway, names: string[]): Promise<void> {
  const idle = async (): Promise<boolean> => {
    const upstreams = await health(gw);
    return names.every((name) => upstreams[name]?.pending === 0);
  };
  await until(idle, 'no request pending upstream').catch(() => {});
  const upstreams = await health(gw);
  for (const name of names) expect(upstreams[name]?.pending, name).toBe(0);
}

const called = (stats: FlakyStats, method: string): number => stats.byMethod[method] ?? 0;
const gets = (stats: FlakyStats): number => stats.byHttpMethod.GET ?? 0;

/**
 * Connects an SDK client, opens its own upstream session (its first call does) and waits until
 * the gateway has opened that session's GET stream, so that request, fault and connection
 * counts measured afterwards are the test's own.
 */
async function connectListening(gw: TestGateway, flaky: FlakyHttp): Promise<Client> {
  const before = gets(await flaky.stats());
  const client = await connectClient(gw.url);
  try {
    await client.callTool({ name: 'flaky__echo', arguments: { message: 'open' } });
    await until(async () => gets(await flaky.stats()) > before, 'the upstream GET stream');
  } catch (err) {
    await client.close();
    throw err;
  }
  return client;
}

describe('a gateway in front of a flaky Streamable HTTP upstream', () => {
  let flaky: FlakyHttp;
  let gw: TestGateway;
  /** Every client session opened here stays open until afterAll, so the last test can check them all. */
  const clients: Client[] = [];

  async function open(): Promise<Client> {
    const client = await connectListening(gw, flaky);
    clients.push(client);
    return client;
  }

  beforeAll(async () => {
    flaky = await startFlakyHttp();
    gw = await startGateway({
      upstreams: {
        flaky: { ...upstream.http(flaky.url), circuit: { failures: 3, openFor: OPEN_FOR_MS } },
        paged: upstream.paged(),
      },
    });
  });

  afterAll(async () => {
    try {
      await Promise.allSettled(clients.map((c) => c.close()));
      await gw?.close();
    } finally {
      await flaky?.close();
    }
  });

  it('renews a forgotten upstream session and sends a list request again, once', async () => {
    const client = await open();
    expect(await echo(client, 'hello')).toBe('echo: hello');
    const before = await flaky.stats();
    const restarts = (await health(gw)).flaky!.restarts;

    await flaky.control({ forget: true });
    const names = (await client.listTools()).tools.map((t) => t.name);

    expect(names).toEqual(expect.arrayContaining(['flaky__echo', 'flaky__count', 'paged__echo']));
    const after = await flaky.stats();
    expect(after.initializes - before.initializes).toBe(1);
    // Refused once with 404, then sent again on the new session.
    expect(called(after, 'tools/list') - called(before, 'tools/list')).toBe(2);
    expect((await health(gw)).flaky!.restarts).toBe(restarts + 1);
    expect(await echo(client, 'again')).toBe('echo: again');
  });

  it('fails a tools/call that met a forgotten session without running it twice, then calls work on the renewed session', async () => {
    const client = await open();
    expect(await echo(client, 'hello')).toBe('echo: hello');
    const before = await flaky.stats();

    await flaky.control({ forget: true });
    const error = await failure(client.callTool({ name: 'flaky__echo', arguments: { message: 'only once' } }));

    expect(error.code).toBe(-32005);
    expect(error.message).toMatch(/upstream flaky: upstream session expired/);
    // The next call runs on the renewed session; its count shows the failed one never ran.
    expect(textOf(await client.callTool({ name: 'flaky__count', arguments: {} }))).toBe(String(before.calls + 1));
    const after = await flaky.stats();
    expect(after.initializes - before.initializes).toBe(1);
    expect(called(after, 'tools/call') - called(before, 'tools/call')).toBe(2);
    expect(after.calls - before.calls).toBe(1);
  });

  it('opens the circuit after consecutive 503s, fails fast while open, and closes it after one probe', async () => {
    const client = await open();
    expect(await echo(client, 'before')).toBe('echo: before');
    // paged's own child is opened now, not while the circuit is open (its spawn takes a while).
    expect(textOf(await client.callTool({ name: 'paged__echo', arguments: {} }))).toBe('echo {}');
    const start = await flaky.stats();

    await flaky.control({ fail: 3, status: 503 });
    for (let i = 0; i < 3; i++) {
      const error = await failure(echo(client, `fails ${i}`));
      expect(error.code).toBe(-32005);
      expect(error.message).toMatch(/upstream flaky: upstream answered HTTP 503/);
    }
    const opened = await flaky.stats();
    expect(opened.requests - start.requests).toBe(3);
    expect(opened.calls).toBe(start.calls);
    expect((await health(gw)).flaky!.circuit).toBe('open');

    for (let i = 0; i < 3; i++) {
      const error = await failure(echo(client, `fast ${i}`), OPEN_FOR_MS);
      expect(error.code).toBe(-32005);
      expect(error.message).toMatch(/upstream flaky: circuit open/);
    }
    expect(textOf(await client.callTool({ name: 'paged__echo', arguments: {} }))).toBe('echo {}');
    expect((await client.listTools()).tools.map((t) => t.name)).toContain('paged__echo');
    const whileOpen = await flaky.stats();
    // Each call above was refused as 'circuit open' (had openFor passed, the next one would have
    // been the probe and reached the upstream, which answers again): nothing reached it.
    expect(whileOpen.requests).toBe(opened.requests);

    // Once openFor has passed, the next call is the probe; until then calls keep failing fast.
    // The fixture holds the probe, so calls made alongside it meet the half-open circuit.
    await flaky.control({ stall: 200 });
    let round: PromiseSettledResult<string>[] = [];
    const deadline = Date.now() + PROMPT_MS;
    while (!round.some((outcome) => outcome.status === 'fulfilled')) {
      if (Date.now() > deadline) throw new Error('the circuit never let a probe through');
      await sleep(25);
      round = await Promise.allSettled([1, 2, 3].map((i) => echo(client, `probe ${i}`)));
      for (const outcome of round) if (outcome.status === 'rejected') expect(String(outcome.reason)).toMatch(/upstream flaky: circuit open/);
    }
    const answered = round.filter((outcome): outcome is PromiseFulfilledResult<string> => outcome.status === 'fulfilled').map((outcome) => outcome.value);
    expect(answered).toHaveLength(1);
    expect(answered[0]).toMatch(/^echo: probe \d$/);
    expect((await flaky.stats()).requests - opened.requests).toBe(1);
    expect((await health(gw)).flaky!.circuit).toBe('closed');
    expect(await echo(client, 'after')).toBe('echo: after');
  });

  it('turns an upstream 401 into a JSON-RPC error and never relays its WWW-Authenticate challenge', async () => {
    const client = await open();
    const getsBefore = gets(await flaky.stats());
    // initialize (200) and notifications/initialized (202) by hand, in 2025-06-18.
    const session = await initializeRaw(gw.url, { protocolVersion: '2025-06-18', id: 1 });
    // Its first call opens its own upstream session.
    await sendIn(session, { jsonrpc: '2.0', id: 100, method: 'tools/call', params: { name: 'flaky__echo', arguments: { message: 'open' } } });
    await until(async () => gets(await flaky.stats()) > getsBefore, 'the upstream GET stream of the raw session');

    const before = await flaky.stats();
    await flaky.control({ unauthorized: true });
    let res: RawReply;
    try {
      res = await sendIn(session, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'flaky__echo', arguments: { message: 'raw' } } });
      const sdkError = await failure(echo(client, 'sdk'));
      expect(sdkError.code).toBe(-32005);
      expect(sdkError.message).toMatch(/upstream flaky: upstream answered HTTP 401/);
      // 4xx says nothing about the upstream's health: more 401s than `failures` leave the circuit closed.
      for (let i = 0; i < 3; i++) await failure(echo(client, `again ${i}`));
      expect((await health(gw)).flaky!.circuit).toBe('closed');
      expect(textOf(await client.callTool({ name: 'paged__echo', arguments: {} }))).toBe('echo {}');
    } finally {
      await flaky.control({ unauthorized: false });
    }
    // The raw call and four SDK calls all reached the upstream (none failed fast); each
    // session's first call, which opened its upstream session, came before the counting.
    expect((await flaky.stats()).requests - before.requests).toBe(5);

    expect(res.status).toBe(200);
    expect(res.headers.get('www-authenticate')).toBeNull();
    const answer = rpcAnswer(res, 2);
    expect(answer).toMatchObject({ jsonrpc: '2.0', id: 2, error: { code: -32005 } });
    expect(answer.error?.message).toMatch(/upstream flaky: upstream answered HTTP 401/);
    expect(res.text).not.toMatch(/realm|invalid_token|bearer/i);

    expect(await echo(client, 'authorized')).toBe('echo: authorized');
    const ended = await rawFetch(gw.url, { method: 'DELETE', session: session.id, protocolVersion: session.protocolVersion });
    expect(ended.status).toBe(200);
  });

  it('sends 50 sequential calls over a few keep-alive connections', async () => {
    const client = await open();
    expect(await echo(client, 'warm up')).toBe('echo: warm up');
    const before = await flaky.stats();
    for (let i = 0; i < 50; i++) expect(await echo(client, `call ${i}`)).toBe(`echo: call ${i}`);
    const after = await flaky.stats();
    expect(after.calls - before.calls).toBe(50);
    expect(after.connections - before.connections).toBeLessThanOrEqual(4);
    expect(after.mcpConnections - before.mcpConnections).toBeLessThanOrEqual(2);
  });

  it('leaves no request pending on either upstream', async () => {
    expect(clients.length).toBeGreaterThan(0);
    await expectNothingPending(gw, ['flaky', 'paged']);
  });
});

describe('an upstream that forgets a session while the gateway listens on its GET stream', () => {
  it('renews the session before the next call, which then runs once', async () => {
    const flaky = await startFlakyHttp();
    let gw: TestGateway | undefined;
    let client: Client | undefined;
    try {
      gw = await startGateway({ upstreams: { flaky: upstream.http(flaky.url), paged: upstream.paged() } });
      client = await connectListening(gw, flaky);
      expect(await echo(client, 'hello')).toBe('echo: hello');
      const before = await flaky.stats();

      await flaky.control({ forget: true, hangUp: true });
      // Two sessions listen on a GET stream: the session's own and the catalog's (catalogs.ts).
      await until(async () => (await flaky.stats()).initializes >= before.initializes + 2, 'the gateway to renew both sessions');

      const renewed = await flaky.stats();
      expect(await echo(client, 'after')).toBe('echo: after');
      const after = await flaky.stats();
      expect(renewed.initializes - before.initializes).toBe(2);
      expect(after.initializes).toBe(renewed.initializes);
      expect(called(after, 'tools/call') - called(before, 'tools/call')).toBe(1);
      expect((await health(gw)).flaky).toMatchObject({ restarts: 2, circuit: 'closed' });
      await expectNothingPending(gw, ['flaky', 'paged']);
    } finally {
      await client?.close();
      await gw?.close();
      await flaky.close();
    }
  });
});

describe('requests in flight when the upstream forgets the session', () => {
  // Regression test for the renewal aborting what is still in flight on the old session
  // (ReconnectingTransport#reconnect closes the old inner transport at once).
  it('sends a safe request again when another request renewed the session before its own 404 arrived', async () => {
    const flaky = await startFlakyHttp();
    let gw: TestGateway | undefined;
    let client: Client | undefined;
    try {
      gw = await startGateway({ upstreams: { flaky: upstream.http(flaky.url) } });
      client = await connectListening(gw, flaky);
      expect(await echo(client, 'hello')).toBe('echo: hello');
      // The session knows the prompt (from its list), so the prompts/get goes out directly.
      await client.listPrompts();
      const before = await flaky.stats();

      // The first request after the forget, a prompts/get, is held so its 404 comes late...
      await flaky.control({ forget: true, stall: 500 });
      const held = client.getPrompt({ name: 'flaky__greeting' }).then(
        (prompt) => (prompt.messages[0]?.content as { text?: string }).text,
        (err: unknown) => String(err),
      );
      await until(async () => called(await flaky.stats(), 'prompts/get') > called(before, 'prompts/get'), 'the held prompts/get to arrive');
      // ...after a list met the forgotten session too and renewed it.
      expect((await client.listTools()).tools.map((t) => t.name)).toContain('flaky__echo');

      expect(await held).toBe('hello from flaky');
      const after = await flaky.stats();
      expect(after.initializes - before.initializes).toBe(1);
      expect(called(after, 'prompts/get') - called(before, 'prompts/get')).toBe(2);
      await expectNothingPending(gw, ['flaky']);
    } finally {
      await client?.close();
      await gw?.close();
      await flaky.close();
    }
  });
});

describe('an upstream that goes away', () => {
  it('fails calls promptly with an error naming it, and refused connections open the circuit', async () => {
    const flaky = await startFlakyHttp();
    let gw: TestGateway | undefined;
    let client: Client | undefined;
    try {
      gw = await startGateway({
        upstreams: { flaky: { ...upstream.http(flaky.url), circuit: { failures: 3, openFor: '1m' } }, paged: upstream.paged() },
      });
      client = await connectListening(gw, flaky);
      expect(await echo(client, 'hello')).toBe('echo: hello');

      await flaky.close();
      for (let i = 0; i < 3; i++) {
        const error = await failure(echo(client, `gone ${i}`));
        expect(error.code).toBe(-32005);
        expect(error.message).toMatch(/upstream flaky: upstream unreachable/);
      }
      const error = await failure(echo(client, 'fast'), OPEN_FOR_MS);
      expect(error.message).toMatch(/upstream flaky: circuit open/);
      expect((await health(gw)).flaky!.circuit).toBe('open');
      expect(textOf(await client.callTool({ name: 'paged__echo', arguments: {} }))).toBe('echo {}');
      await expectNothingPending(gw, ['flaky', 'paged']);
    } finally {
      await client?.close();
      await gw?.close();
      await flaky.close();
    }
  });
});

/** The JSON-RPC response with `id` in a POST answer, whether it came as JSON or as SSE. */
function rpcAnswer(reply: RawReply, id: number): { jsonrpc?: string; id?: unknown; error?: { code: number; message: string } } {
  const answer = messagesOf<ReturnType<typeof rpcAnswer>>(reply).find((m) => m.id === id);
  if (!answer) throw new Error(`no answer with id ${id} in ${reply.text}`);
  return answer;
}
