// Resumable SSE streams over real sockets (spec: basic/transports.mdx "Sending Messages to the
// Server", "Listening for Messages from the Server", "Resumability and Redelivery"): priming
// events, resumption with Last-Event-ID after a dropped connection, the SDK client resuming by
// itself, the refusals of ids the gateway cannot honour, the standalone GET stream, keep-alives.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { connectClient, startGateway, textOf, upstream, type TestGateway } from '../helpers/gateway.js';
import { startProxy } from '../helpers/proxy.js';
import { initializeRaw, openStream, openStreamWhenFree, postRaw, rawFetch, readReply, type RawSession } from '../helpers/raw-http.js';
import { SseReader, type JsonRpc, type SseEvent } from '../helpers/sse-reader.js';

const LATEST = '2025-11-25';
const PREVIOUS = '2025-06-18';
/** Bounds every single wait for an event, an end of stream or an HTTP exchange. */
const WAIT_MS = 10_000;
/** The reconnect delay the main gateway suggests; short, so the SDK client resumes quickly. */
const RETRY_MS = 200;
/** src/http/responder.ts STREAM_AFTER_MS: a request running this long is answered over SSE. */
const STREAM_AFTER_MS = 250;

const upstreams = () => ({ rogue: upstream.rogue(), everything: upstream.everything() });

let gw: TestGateway;
/** replayEvents: 2, so ids become too old quickly. */
let smallLog: TestGateway;
/** keepAlive: 100 ms. */
let chatty: TestGateway;

beforeAll(async () => {
  [gw, smallLog, chatty] = await Promise.all([
    startGateway({ upstreams: upstreams(), sessions: { retry: RETRY_MS } }),
    startGateway({ upstreams: upstreams(), sessions: { replayEvents: 2 } }),
    startGateway({ upstreams: upstreams(), sessions: { keepAlive: 100 } }),
  ]);
});

afterAll(async () => {
  await Promise.allSettled([gw?.close(), smallLog?.close(), chatty?.close()]);
});

// ---------------------------------------------------------------------------------------------
// Raw HTTP sessions.

/** Sessions opened by the current test, ended after it so their upstream processes stop. */
const opened: RawSession[] = [];

afterEach(async () => {
  const sessions = opened.splice(0);
  await Promise.allSettled(
    sessions.map((s) => rawFetch(s.url, { method: 'DELETE', session: s.id, timeoutMs: WAIT_MS }).then((r) => r.body?.cancel())),
  );
});

function post(url: URL, session: RawSession | undefined, message: unknown, signal: AbortSignal = AbortSignal.timeout(WAIT_MS)): Promise<Response> {
  return postRaw(url, message, { headers: session?.headers, signal });
}

/** A GET on the MCP endpoint: the standalone stream, or a resumption with Last-Event-ID. */
function get(session: RawSession, lastEventId?: string, signal: AbortSignal = AbortSignal.timeout(30_000)): Promise<Response> {
  return openStream(session.url, { headers: session.headers, lastEventId, signal });
}

/** initialize with `version`, then notifications/initialized, as a client does. */
async function openSession(url: URL, version: string): Promise<RawSession> {
  const session = await initializeRaw(url, { protocolVersion: version, clientInfo: { name: 'resumption-test', version: '1.0.0' } });
  opened.push(session);
  return session;
}

const toolCall = (id: number, name: string, args: Record<string, unknown>, progressToken?: string): JsonRpc => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name, arguments: args, ...(progressToken === undefined ? {} : { _meta: { progressToken } }) },
});

/** Calls a tool in `session` and returns its response. */
async function call(session: RawSession, id: number, name: string, args: Record<string, unknown> = {}): Promise<JsonRpc> {
  const res = await post(session.url, session, toolCall(id, name, args));
  expect(res.status).toBe(200);
  const response = (await readReply(res)).messages.find((m) => m.id === id);
  expect(response).toBeDefined();
  return response!;
}

/** Makes the session's rogue upstream emit a notification (the gateway puts it on the standalone stream). */
async function emit(session: RawSession, id: number, method: string, params?: Record<string, unknown>): Promise<void> {
  const response = await call(session, id, 'rogue__notify', params === undefined ? { method } : { method, params });
  expect(textOf(response.result)).toBe('notified');
}

// server-everything itself announces notifications/tools/list_changed once per session, soon
// after initialization (it registers more tools then), so a list_changed on the standalone
// stream may be its. Log messages with a unique text tell the rogue's notifications apart.
const listChanged = (session: RawSession, id: number): Promise<void> => emit(session, id, 'notifications/tools/list_changed');
const mark = (session: RawSession, id: number, text: string): Promise<void> => emit(session, id, 'notifications/message', { level: 'info', data: text });
const markOf = (message: JsonRpc): unknown => (message.method === 'notifications/message' ? message.params?.data : undefined);
const isMark = (text: string) => (message: JsonRpc): boolean => markOf(message) === text;

/** What the session's rogue upstream received. */
async function rogueJournal(session: RawSession, id: number): Promise<JsonRpc[]> {
  return JSON.parse(textOf((await call(session, id, 'rogue__journal')).result)) as JsonRpc[];
}

const isPriming = (event: SseEvent | undefined): boolean => event !== undefined && event.id !== undefined && event.data === '';
const progressOf = (message: JsonRpc): number => (message.params as { progress: number }).progress;

/** Opens the standalone stream, retrying while the gateway has not yet noticed an earlier one went away (bounded). */
function getWhenFree(session: RawSession): Promise<Response> {
  return openStreamWhenFree(session.url, { headers: session.headers, timeoutMs: 30_000 });
}

// ---------------------------------------------------------------------------------------------

describe('a request answered over SSE', () => {
  it('starts with a priming event and is resumed with its id after a dropped connection, without cancelling', async () => {
    const session = await openSession(gw.url, LATEST);
    const abort = new AbortController();
    const started = Date.now();
    const slowMs = 1_500;
    const res = await post(gw.url, session, toolCall(7, 'rogue__slow', { ms: slowMs }), abort.signal);
    const elapsed = Date.now() - started;
    expect(res.status).toBe(200);
    // Answered as a stream once the call had run for STREAM_AFTER_MS: the response began before
    // the call could have finished, so before its answer existed.
    expect(elapsed).toBeGreaterThanOrEqual(STREAM_AFTER_MS - 10);
    expect(elapsed).toBeLessThan(slowMs);
    const first = new SseReader(res);
    const priming = await first.next(WAIT_MS, 'the priming event');
    expect(priming).toEqual({ id: expect.stringMatching(/^[0-9a-f]{12}\.\d+$/), retry: RETRY_MS, data: '' });
    // The client's connection drops: this is not a cancellation (transports.mdx).
    abort.abort();

    const resumed = new SseReader(await get(session, priming!.id));
    const events = await resumed.rest();
    const messages = events.filter((e) => e.data).map((e) => JSON.parse(e.data!) as JsonRpc);
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatchObject({ jsonrpc: '2.0', id: 7, result: { content: [{ type: 'text', text: 'slow done' }] } });

    const seen = await rogueJournal(session, 8);
    expect(seen.some((m) => m.method === 'tools/call' && (m.params as { name: string }).name === 'slow')).toBe(true);
    expect(seen.filter((m) => m.method === 'notifications/cancelled')).toEqual([]);
  });

  it('replays only the events after the Last-Event-ID of a stream dropped mid-way', async () => {
    const session = await openSession(gw.url, LATEST);
    const abort = new AbortController();
    const res = await post(gw.url, session, toolCall(9, 'everything__trigger-long-running-operation', { duration: 2, steps: 4 }, 'tok'), abort.signal);
    expect(res.status).toBe(200);
    const first = new SseReader(res);
    let firstProgress: { id: string; message: JsonRpc } | undefined;
    while (!firstProgress) {
      const event = await first.next(WAIT_MS, 'the first progress event');
      expect(event).toBeDefined();
      if (!event!.data) continue;
      firstProgress = { id: event!.id!, message: JSON.parse(event!.data) as JsonRpc };
    }
    abort.abort();
    expect(firstProgress.message).toMatchObject({ method: 'notifications/progress', params: { progressToken: 'tok', progress: 1, total: 4 } });

    const resumed = new SseReader(await get(session, firstProgress.id));
    const events = (await resumed.rest()).filter((e) => e.data);
    const messages = events.map((e) => JSON.parse(e.data!) as JsonRpc);
    const progress = messages.filter((m) => m.method === 'notifications/progress');
    expect(progress.map(progressOf)).toEqual([2, 3, 4]);
    for (const message of progress) expect(message.params).toMatchObject({ progressToken: 'tok', total: 4 });
    expect(messages).toHaveLength(4);
    expect(messages.at(-1)).toMatchObject({ id: 9, result: { content: [{ type: 'text', text: expect.stringContaining('Long running operation completed') }] } });
    // Same stream, later positions.
    const [key, seq] = firstProgress.id.split('.');
    const later = events.map((e) => e.id!.split('.'));
    expect(later.every(([k]) => k === key)).toBe(true);
    const seqs = later.map(([, s]) => Number(s));
    expect(seqs[0]).toBeGreaterThan(Number(seq));
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(new Set(seqs).size).toBe(seqs.length);
  });
});

// ---------------------------------------------------------------------------------------------

describe('the SDK client', () => {
  it('resumes a tool call by itself after its connections are cut', async () => {
    const proxy = await startProxy(gw.url);
    const client = await connectClient(proxy.url);
    try {
      const seen: number[] = [];
      let cuts = 0;
      const result = await client.callTool({ name: 'everything__trigger-long-running-operation', arguments: { duration: 2, steps: 4 } }, undefined, {
        timeout: 20_000,
        onprogress: (progress) => {
          seen.push(progress.progress);
          if (seen.length === 1) cuts = proxy.cut();
        },
      });
      expect(cuts).toBeGreaterThan(0);
      expect(proxy.resumptions()).toBeGreaterThan(0);
      expect(textOf(result)).toContain('Long running operation completed');
      expect(seen.at(-1)).toBe(4);
      // Nothing replayed twice, nothing out of order.
      expect(seen).toEqual([...new Set(seen)].sort((a, b) => a - b));
    } finally {
      await client.close().catch(() => {});
      await proxy.close();
    }
  });
});

// ---------------------------------------------------------------------------------------------

describe('Last-Event-ID the gateway cannot honour', () => {
  it('answers 400 to a malformed id', async () => {
    const session = await openSession(gw.url, LATEST);
    for (const id of ['nonsense', '000000000000.1']) {
      const res = await get(session, id);
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({ jsonrpc: '2.0', error: { code: -32600 } });
    }
  });

  it('answers 400 to an id of another session\'s stream and leaves that stream alone', async () => {
    const owner = await openSession(gw.url, LATEST);
    const stranger = await openSession(gw.url, LATEST);
    const ownerStream = new SseReader(await get(owner));
    try {
      const priming = await ownerStream.next(WAIT_MS, 'the priming event');
      expect(isPriming(priming)).toBe(true);

      const refused = await get(stranger, priming!.id);
      expect(refused.status).toBe(400);
      await refused.body?.cancel();

      // The owner's stream is still attached and delivers what follows.
      await mark(owner, 2, 'still-here');
      await ownerStream.messagesUntil(isMark('still-here'), 'the mark on the owner\'s stream');
    } finally {
      await ownerStream.cancel();
    }
  });

  it('answers 400 to an id of another session\'s request stream', async () => {
    const owner = await openSession(gw.url, LATEST);
    const stranger = await openSession(gw.url, LATEST);
    const res = await post(gw.url, owner, toolCall(3, 'rogue__slow', { ms: 600 }));
    const stream = new SseReader(res);
    try {
      const priming = await stream.next(WAIT_MS, 'the priming event');
      expect(isPriming(priming)).toBe(true);
      const refused = await get(stranger, priming!.id);
      expect(refused.status).toBe(400);
      await refused.body?.cancel();
      // The owner still gets its answer on its own connection.
      expect(await stream.nextMessage()).toMatchObject({ id: 3, result: { content: [{ text: 'slow done' }] } });
    } finally {
      await stream.cancel();
    }
  });

  it('answers 400 when events after the id were dropped from the replay log, and replays from a newer one', async () => {
    const session = await openSession(smallLog.url, LATEST);
    const res = await post(smallLog.url, session, toolCall(4, 'rogue__progress', { count: 5, intervalMs: 20 }, 'p'));
    expect(res.status).toBe(200);
    const events = (await new SseReader(res).rest()).filter((e) => e.data);
    const messages = events.map((e) => JSON.parse(e.data!) as JsonRpc);
    expect(messages.filter((m) => m.method === 'notifications/progress').map(progressOf)).toEqual([1, 2, 3, 4, 5]);
    expect(messages.at(-1)).toMatchObject({ id: 4, result: { content: [{ text: 'progress done' }] } });

    // replayEvents: 2 keeps progress 5 and the response; progress 2..4 followed progress 1 and are gone.
    const tooOld = await get(session, events[0]!.id);
    expect(tooOld.status).toBe(400);
    expect(await tooOld.json()).toMatchObject({ jsonrpc: '2.0', error: { code: -32600 } });

    const fresh = new SseReader(await get(session, events[3]!.id));
    const replayed = (await fresh.rest()).filter((e) => e.data).map((e) => JSON.parse(e.data!) as JsonRpc);
    expect(replayed.map((m) => m.method ?? m.id)).toEqual(['notifications/progress', 4]);
    expect(progressOf(replayed[0]!)).toBe(5);
  });
});

// ---------------------------------------------------------------------------------------------

describe('the standalone GET stream', () => {
  it('starts with a priming event in a 2025-11-25 session', async () => {
    const session = await openSession(gw.url, LATEST);
    const stream = new SseReader(await get(session));
    try {
      const first = await stream.next(WAIT_MS, 'the priming event');
      expect(first).toEqual({ id: expect.stringMatching(/^[0-9a-f]{12}\.\d+$/), retry: RETRY_MS, data: '' });
    } finally {
      await stream.cancel();
    }
  });

  it('does not prime in a 2025-06-18 session: the first event is the first message', async () => {
    const session = await openSession(gw.url, PREVIOUS);
    const res = await get(session);
    expect(res.status).toBe(200);
    const stream = new SseReader(res);
    try {
      await listChanged(session, 2);
      const first = await stream.next(WAIT_MS, 'the first event');
      expect(first!.retry).toBeUndefined();
      expect(first!.id).toMatch(/^[0-9a-f]{12}\.[1-9]\d*$/);
      expect(JSON.parse(first!.data!)).toEqual({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
    } finally {
      await stream.cancel();
    }
  });

  it.each([LATEST, PREVIOUS])('delivers notifications emitted while no GET stream was open, once one opens (%s)', async (version) => {
    const session = await openSession(gw.url, version);
    await listChanged(session, 2);
    await mark(session, 3, 'queued');
    const stream = new SseReader(await get(session));
    try {
      const first = await stream.next(WAIT_MS, 'the first event');
      if (version === LATEST) expect(isPriming(first)).toBe(true);
      else expect(JSON.parse(first!.data!)).toMatchObject({ jsonrpc: '2.0', method: expect.any(String) });
      const queued = version === LATEST ? [] : [JSON.parse(first!.data!) as JsonRpc];
      if (!queued.some(isMark('queued'))) queued.push(...(await stream.messagesUntil(isMark('queued'), 'the queued mark')));
      // The rogue's list_changed came before its mark (server-everything may have sent one too).
      expect(queued.at(-2)).toEqual({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
      expect(queued.slice(0, -1).every((m) => m.method === 'notifications/tools/list_changed')).toBe(true);
      expect(queued.at(-1)).toMatchObject({ method: 'notifications/message', params: { level: 'info', logger: 'rogue', data: 'queued' } });
      // What comes next is new: nothing queued was delivered twice.
      await mark(session, 4, 'live');
      const next = await stream.messagesUntil(isMark('live'), 'the live mark');
      expect(next.map(markOf).filter((m) => m !== undefined)).toEqual(['live']);
    } finally {
      await stream.cancel();
    }
  });

  it('still opens when notifications emitted meanwhile were pushed out of the replay log', async () => {
    // replayEvents: 2, three notifications while no stream is open: the first is lost, but the
    // session's GET stream must still open (and go on working), not fail.
    const session = await openSession(smallLog.url, LATEST);
    for (const id of [2, 3, 4]) await listChanged(session, id);
    const res = await get(session);
    expect(res.status).toBe(200);
    const stream = new SseReader(res);
    try {
      await mark(session, 5, 'after-drop');
      await stream.messagesUntil(isMark('after-drop'), 'a notification on the reopened stream');
    } finally {
      await stream.cancel();
    }
  });

  it('sends keep-alive comments while open', async () => {
    const session = await openSession(chatty.url, LATEST);
    const stream = new SseReader(await get(session));
    try {
      await stream.comment('keep-alive', 2_000);
      expect(stream.comments.every((c) => c === 'keep-alive')).toBe(true);
    } finally {
      await stream.cancel();
    }
  });

  it('refuses a second GET with 409 while one is open', async () => {
    const session = await openSession(gw.url, LATEST);
    const stream = new SseReader(await get(session));
    try {
      expect(isPriming(await stream.next())).toBe(true);
      const second = await get(session);
      expect(second.status).toBe(409);
      expect(await second.json()).toMatchObject({ jsonrpc: '2.0', error: { code: -32600 } });
      // The first stream is unaffected.
      await mark(session, 2, 'first-stream');
      await stream.messagesUntil(isMark('first-stream'), 'the mark on the first stream');
    } finally {
      await stream.cancel();
    }
  });

  it('takes over from the open connection when resumed with its own Last-Event-ID', async () => {
    const session = await openSession(gw.url, LATEST);
    const old = new SseReader(await get(session));
    let taken: SseReader | undefined;
    try {
      const priming = await old.next();
      expect(isPriming(priming)).toBe(true);
      const res = await get(session, priming!.id);
      expect(res.status).toBe(200);
      taken = new SseReader(res);
      expect(await old.endsWithin(2_000)).toBe(true);
      await mark(session, 2, 'taken-over');
      await taken.messagesUntil(isMark('taken-over'), 'the mark on the new connection');
      // The old connection ended without it (it may have had server-everything's list_changed).
      const leftovers: JsonRpc[] = [];
      for (let event = await old.next(0); event; event = await old.next(0)) if (event.data) leftovers.push(JSON.parse(event.data) as JsonRpc);
      expect(leftovers.filter((m) => m.method !== 'notifications/tools/list_changed')).toEqual([]);
    } finally {
      await Promise.all([old.cancel(), taken?.cancel()]);
    }
  });

  it('opens again after the client closed its previous GET stream', async () => {
    const session = await openSession(gw.url, LATEST);
    const first = new SseReader(await get(session));
    expect(isPriming(await first.next())).toBe(true);
    await first.cancel();
    const res = await getWhenFree(session);
    expect(res.status).toBe(200);
    const second = new SseReader(res);
    try {
      // A reopened stream replays what it missed first, then primes with a fresh id.
      let event = await second.next();
      for (let i = 0; i < 5 && !isPriming(event); i++) event = await second.next();
      expect(isPriming(event)).toBe(true);
    } finally {
      await second.cancel();
    }
  });
});
