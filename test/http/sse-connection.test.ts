// The bounded queue of one SSE connection (what waits for a client that does not read), and the
// one keep-alive timer of every connection. Written to Node's response: test/e2e/sse-writer.test.ts.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { KeepAlives } from '../../src/http/keep-alives.js';
import { SseConnection } from '../../src/http/sse-connection.js';

const decoder = new TextDecoder();

function bounded(bytes: number, messages: number) {
  const dropped: string[] = [];
  let overflows = 0;
  const connection = new SseConnection({}, 0, { bytes, messages, ondrop: (m) => dropped.push(m), onoverflow: () => overflows++ });
  return { connection, dropped, overflows: () => overflows, reader: connection.response.body!.getReader() };
}

async function readAll(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<string> {
  let text = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return text;
    text += decoder.decode(value);
  }
}

describe('SseConnection', () => {
  it('hands the client everything, in order, when it reads', async () => {
    const { connection, reader, dropped } = bounded(1_024, 3);
    for (let i = 0; i < 3; i++) connection.write(`m${i};`, 'notifications/progress');
    connection.close();
    expect(await readAll(reader)).toBe('m0;m1;m2;');
    expect(dropped).toEqual([]);
  });

  it('drops the oldest droppable messages past the bound, and keeps the others', async () => {
    const { connection, reader, dropped, overflows } = bounded(1_024, 3);
    // The stream holds one chunk; the rest waits in the connection's queue.
    connection.write('first;');
    connection.write('p1;', 'notifications/progress');
    connection.write('answer;');
    connection.write('p2;', 'notifications/message');
    connection.write('p3;', 'notifications/progress');
    expect(dropped).toEqual(['notifications/progress']);
    expect(connection.queued.messages).toBe(3);
    connection.close();
    expect(await readAll(reader)).toBe('first;answer;p2;p3;');
    expect(overflows()).toBe(0);
  });

  it('bounds the queued bytes too, but lets one big message through alone', async () => {
    const { connection, reader, dropped } = bounded(10, 100);
    connection.write('head;');
    connection.write('x'.repeat(50));
    expect(connection.queued.bytes).toBe(50);
    connection.write('p;', 'notifications/progress');
    // Over the bytes with nothing older to drop but the big answer: the progress goes.
    expect(dropped).toEqual(['notifications/progress']);
    connection.close();
    expect(await readAll(reader)).toBe(`head;${'x'.repeat(50)}`);
  });

  it('closes the connection when what waits may not be dropped', async () => {
    const { connection, reader, overflows } = bounded(1_024, 2);
    let closed = 0;
    connection.onclose = () => closed++;
    for (let i = 0; i < 4; i++) connection.write(`r${i};`);
    expect(overflows()).toBe(1);
    expect(closed).toBe(1);
    expect(connection.open).toBe(false);
    await expect(reader.read()).rejects.toThrow('the client did not read its stream');
    connection.write('late;');
    expect(connection.queued).toEqual({ bytes: 0, messages: 0 });
  });
});

describe('KeepAlives (one timer for every connection)', () => {
  afterEach(() => {
    vi.restoreAllMocks();
    vi.useRealTimers();
  });

  /** The first chunk each reader gets (each connection's stream holds one chunk at a time). */
  const next = (readers: ReadableStreamDefaultReader<Uint8Array>[]): Promise<string[]> => Promise.all(readers.map(async (r) => decoder.decode((await r.read()).value)));

  it('writes a comment to each connection silent for the interval, on one timer, and stops when the last closes', async () => {
    vi.useFakeTimers();
    const intervals = vi.spyOn(globalThis, 'setInterval');
    const keepAlives = new KeepAlives(1_000);
    const connections = Array.from({ length: 3 }, () => new SseConnection({}, keepAlives));
    const readers = connections.map((c) => c.response.body!.getReader());
    expect(keepAlives.size).toBe(3);
    // One interval, whatever the number of connections (counted as started, not in the worker's
    // timers: files share a worker, isolate: false, and another file's leftovers may start one).
    expect(keepAlives.ticking).toBe(true);
    expect(intervals).toHaveBeenCalledTimes(1);

    vi.advanceTimersByTime(500);
    connections[1]!.write('event;');
    expect(await next(readers.slice(1, 2))).toEqual(['event;']);
    vi.advanceTimersByTime(500);
    // The connection written to half an interval ago is not idle yet.
    expect(await next([readers[0]!, readers[2]!])).toEqual([': keep-alive\n\n', ': keep-alive\n\n']);
    vi.advanceTimersByTime(500);
    expect(await next(readers.slice(1, 2))).toEqual([': keep-alive\n\n']);

    for (const c of connections) c.close();
    expect(await Promise.all(readers.map((r) => readAll(r)))).toEqual(['', '', '']);
    expect(keepAlives.size).toBe(0);
    // Its own timer, not the worker's count: files share a worker (isolate: false), and a timer
    // another file's leftovers start meanwhile is faked too.
    expect(keepAlives.ticking).toBe(false);
  });

  it('never leaves a connection silent longer than the interval, whenever it was last written to', async () => {
    // Regression: a shared tick that skipped connections written to since the previous one let a
    // connection written just after a tick wait for the tick after next: nearly two intervals,
    // past a proxy's idle timeout set at twice the interval.
    vi.useFakeTimers();
    const every = 1_600;
    const keepAlives = new KeepAlives(every);
    const connection = new SseConnection({}, keepAlives);
    const start = Date.now();
    const bytes: number[] = [start];
    const piped = connection.response.body!.pipeTo(new WritableStream({ write: () => void bytes.push(Date.now()) }));
    // Writes just after a tick, mid-tick and just before one.
    for (const at of [1_601, 2_450, 3_199, 3_201, 7_777]) {
      await vi.advanceTimersByTimeAsync(start + at - Date.now());
      connection.write('event;');
    }
    await vi.advanceTimersByTimeAsync(start + 20_000 - Date.now());
    connection.close();
    await piped;
    const gaps = bytes.slice(1).map((t, i) => t - bytes[i]!);
    expect(Math.max(...gaps)).toBeLessThanOrEqual(every);
    // And no more comments than silence calls for: an idle connection gets one per interval.
    expect(bytes.filter((t) => t > start + 7_777).length).toBe(Math.floor((20_000 - 7_777) / every));
    expect(keepAlives.ticking).toBe(false);
  });
});
