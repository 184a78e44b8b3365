// The bounded queue of one SSE connection: what waits for a client that does not read.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { KeepAlives, SseConnection } from '../../src/http/sse-connection.js';

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
    vi.useRealTimers();
  });

  it('writes a comment to each idle connection on one shared tick, skips those written to since, and stops when the last closes', async () => {
    vi.useFakeTimers();
    const keepAlives = new KeepAlives(1_000);
    const connections = Array.from({ length: 3 }, () => new SseConnection({}, keepAlives));
    const readers = connections.map((c) => c.response.body!.getReader());
    expect(keepAlives.size).toBe(3);
    // One interval, whatever the number of connections.
    expect(vi.getTimerCount()).toBe(1);

    connections[1]!.write('event;');
    vi.advanceTimersByTime(1_000);
    const first = await Promise.all(readers.map(async (r) => decoder.decode((await r.read()).value)));
    expect(first).toEqual([': keep-alive\n\n', 'event;', ': keep-alive\n\n']);

    for (const c of connections) c.close();
    // The connection written to got no comment on that tick.
    expect(await readAll(readers[1]!)).toBe('');
    expect(keepAlives.size).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });
});
