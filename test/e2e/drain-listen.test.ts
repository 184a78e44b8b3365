// A draining gateway and a 2026-07-28 subscriptions/listen stream: the stream is a long-lived
// subscription, as a sessions-era GET stream is, not a request the drain waits for. It ends
// with its final result when the drain begins (protocol.md: "shutdown ends it with a final
// result"; subscriptions.mdx "Graceful Closure"), so its client reconnects to another replica,
// and the drain ends as soon as the real call in flight has, long before shutdown.gracePeriod.
// The sessions-era GET stream is hung up as before: a retry hint, after the call. The
// listener's part: a subscription stream counts among the answers a drain waits for only until
// its answer begins (while its session may be opening), a plain POST until its answer ends.
// (test/e2e/drain-stateless.test.ts: a call parked on input_required while draining.)
import { request, type IncomingMessage } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { startListener } from '../../src/http/listener.js';
import { createLogger } from '../../src/util/log.js';
import { poll } from '../helpers/cli.js';
import { startGateway, upstream, type TestGateway } from '../helpers/gateway.js';
import { initializeRaw, LATEST, openStream, postRaw } from '../helpers/raw-http.js';
import { SseReader } from '../helpers/sse-reader.js';
import { callStateless, statelessRequest, V } from '../helpers/stateless-wire.js';

/** Long enough that a drain waiting for it would time every bounded wait below out. */
const GRACE_MS = 60_000;
/** Every wait of this test: far below the grace period, far above what the drain takes. */
const WAIT_MS = 15_000;
const SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId';

let gw: TestGateway | undefined;
const controllers: AbortController[] = [];

afterEach(async () => {
  for (const controller of controllers.splice(0)) controller.abort();
  await gw?.close();
  gw = undefined;
});

/** How a promise settled, or 'pending' if it had not after `timeoutMs`. */
async function settledWithin(promise: Promise<unknown>, timeoutMs: number): Promise<'fulfilled' | 'rejected' | 'pending'> {
  let timer: NodeJS.Timeout | undefined;
  const pending = new Promise<'pending'>((resolve) => (timer = setTimeout(() => resolve('pending'), timeoutMs)));
  try {
    return await Promise.race([promise.then(() => 'fulfilled' as const, () => 'rejected' as const), pending]);
  } finally {
    clearTimeout(timer);
  }
}

/** An anonymous subscriptions/listen stream, read past its acknowledgement. */
async function listen(url: URL, id: string): Promise<SseReader> {
  const controller = new AbortController();
  controllers.push(controller);
  const message = statelessRequest(id, 'subscriptions/listen', { notifications: { toolsListChanged: true } });
  const res = await postRaw(url, message, { protocolVersion: V, headers: { 'mcp-method': 'subscriptions/listen' }, signal: controller.signal });
  expect(res.status).toBe(200);
  const stream = new SseReader(res);
  expect(await stream.nextMessage(WAIT_MS, 'the acknowledgement')).toMatchObject({ method: 'notifications/subscriptions/acknowledged', params: { _meta: { [SUBSCRIPTION_ID]: id } } });
  return stream;
}

/** A sessions-era session with its GET stream open, past the priming event. */
async function getStream(url: URL): Promise<SseReader> {
  const session = await initializeRaw(url, { protocolVersion: LATEST, id: 1, timeoutMs: 5_000 });
  const controller = new AbortController();
  controllers.push(controller);
  const stream = new SseReader(await openStream(url, { headers: session.headers, signal: controller.signal }));
  expect((await stream.next(WAIT_MS, 'the priming event'))?.retry).toBeDefined();
  return stream;
}

describe('a draining gateway with subscriptions/listen streams open', () => {
  it('ends each listen with its final result at once, still lets the call in flight finish, and is done without waiting for the grace period', async () => {
    gw = await startGateway({ shutdown: { gracePeriod: `${GRACE_MS}ms` }, upstreams: { rogue: upstream.rogue() } });
    const url = gw.url;
    const listens = await Promise.all([listen(url, 'listen-1'), listen(url, 'listen-2')]);
    const get = await getStream(url);

    // A real request in flight when the drain begins: the drain waits for it.
    let callDoneAt = Infinity;
    const call = callStateless(url, 7, 'rogue__slow', { ms: 2_000 }).finally(() => (callDoneAt = Date.now()));
    await poll(async () => ((await (await fetch(new URL('/healthz', url))).json()) as { upstreams: Record<string, { pending?: number }> }).upstreams.rogue?.pending || undefined, 'the call in flight');

    let drainedAt = Infinity;
    const drained = gw.gateway.drain().then(() => (drainedAt = Date.now()));

    // Each listen gets its final result and its stream ends, while the call still runs.
    for (const [i, stream] of listens.entries()) {
      const id = `listen-${i + 1}`;
      const final = await stream.messagesUntil((message) => message.id !== undefined, `the final result of ${id}`, WAIT_MS);
      expect(final.at(-1)).toEqual({ jsonrpc: '2.0', id, result: { resultType: 'complete', _meta: { [SUBSCRIPTION_ID]: id } } });
      expect(await stream.endsWithin(WAIT_MS)).toBe(true);
    }
    expect(callDoneAt, 'the listens ended before the call did').toBe(Infinity);

    // The call completes.
    const answered = await call;
    expect(answered.status).toBe(200);
    expect(answered.body).toMatchObject({ jsonrpc: '2.0', id: 7, result: { resultType: 'complete', content: [{ type: 'text', text: 'slow done' }] } });

    // The drain ends with the call, not when the grace period runs out.
    expect(await settledWithin(drained, WAIT_MS)).toBe('fulfilled');
    expect(drainedAt).toBeGreaterThanOrEqual(callDoneAt);
    expect(gw.logs.filter((line) => line.includes('grace period over'))).toEqual([]);
    // It counted the call as in flight, not the listens.
    expect(gw.logs.find((line) => line.includes('"msg":"draining"'))).toContain('"inflight":1');

    // The sessions-era GET stream is hung up as before: after the call, with a retry hint.
    const events = await get.rest(WAIT_MS);
    expect(events).toContainEqual({ retry: expect.any(Number) });
  }, 60_000);
});

describe("the listener's count of unanswered requests", () => {
  it('counts a subscription stream until its answer begins, not while it stays open; a plain POST until it ends', async () => {
    const gate = (): { promise: Promise<void>; open: () => void } => {
      let open!: () => void;
      const promise = new Promise<void>((resolve) => (open = resolve));
      return { promise, open };
    };
    const [listenEntered, listenAnswers, callEntered, callAnswers] = [gate(), gate(), gate(), gate()];
    const listener = await startListener({
      async fetch(req) {
        if (req.headers.get('mcp-method') === 'subscriptions/listen') {
          listenEntered.open();
          await listenAnswers.promise;
          // Open until the client goes: one event, then nothing.
          const body = new ReadableStream<Uint8Array>({ start: (controller) => controller.enqueue(new TextEncoder().encode('data: {}\n\n')) });
          return new Response(body, { headers: { 'content-type': 'text/event-stream' } });
        }
        callEntered.open();
        await callAnswers.promise;
        return new Response('done');
      },
      host: '127.0.0.1',
      port: 0,
      path: '/mcp',
      logger: createLogger({ level: 'silent', write: () => {} }),
      subscription: (incoming) => incoming.headers['mcp-method'] === 'subscriptions/listen',
    });
    const controller = new AbortController();
    try {
      const post = (headers: Record<string, string>): Promise<IncomingMessage> =>
        new Promise((resolve, reject) => {
          request(listener.url, { method: 'POST', headers, signal: controller.signal }, resolve)
            .on('error', reject)
            .end('{}');
        });
      const stream = post({ 'mcp-method': 'subscriptions/listen' });
      await listenEntered.promise;
      expect(listener.unanswered, 'a subscription whose answer has not begun').toBe(1);
      listenAnswers.open();
      expect((await stream).headers['content-type']).toBe('text/event-stream');
      expect(listener.unanswered, 'an open subscription stream').toBe(0);

      const call = post({});
      await callEntered.promise;
      expect(listener.unanswered, 'a plain POST in progress').toBe(1);
      callAnswers.open();
      const answer = await call;
      answer.resume();
      await new Promise((resolve) => answer.once('end', resolve));
      await poll(async () => listener.unanswered === 0 || undefined, 'the answered POST no longer counted', WAIT_MS);
    } finally {
      controller.abort();
      listenAnswers.open();
      callAnswers.open();
      await listener.close();
    }
  });
});
