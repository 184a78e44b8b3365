// A replay log lets go of the events it drops at once: the array that holds them is compacted
// only now and then (after a thousand drops), and until this held every dropped event's data, so
// a log bounded to a few events could keep a thousand answers alive. And what the log remembers
// of a stream whose events it dropped (to refuse a resumption that would skip them) goes with
// the stream: it was a Map entry per stream key, added again after the session had forgotten the
// stream, so a session answering calls as streams grew by one entry per call for its whole life.
import { runInNewContext } from 'node:vm';
import { setFlagsFromString } from 'node:v8';
import { describe, expect, it } from 'vitest';
import type { JsonRpcMessage } from '../../src/mcp/jsonrpc.js';
import { DownstreamSession } from '../../src/session/session.js';
import { EventLog } from '../../src/session/streams.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

describe('EventLog memory', () => {
  it('holds no more than its bound of events’ data after dropping the rest', () => {
    const log = new EventLog({ events: 2, bytes: 100_000_000 });
    gc();
    const before = process.memoryUsage().heapUsed;
    // 1,000 events of 100 KB each: 100 MB had the dropped ones been kept.
    const stream = { key: 'k', droppedUpTo: 0 };
    for (let i = 0; i < 1_000; i++) log.append(stream, i + 1, `${i}`.padEnd(100_000, 'x'));
    gc();
    const held = process.memoryUsage().heapUsed - before;
    expect(log.after(stream, 998)?.map((e) => e.seq)).toEqual([999, 1000]);
    expect(held).toBeLessThan(10_000_000);
  });
});

describe('a session’s request streams over a long life', () => {
  it('hold memory bounded by the log and the streams kept, however many came and went', () => {
    const session = new DownstreamSession('s', { protocolVersion: '2025-11-25', clientCapabilities: {}, clientInfo: {} }, Date.now(), { events: 1_000, bytes: 4_000_000 });
    const answer = (id: number): JsonRpcMessage => ({ jsonrpc: '2.0', id, result: {} });
    const run = (from: number, count: number): void => {
      for (let id = from; id < from + count; id++) {
        const stream = session.openRequestStream([id]);
        stream.send(answer(id));
        stream.finish();
      }
    };
    // The log (1,000 events) and the streams kept for resumption (100) are full after this.
    run(0, 20_000);
    gc();
    const before = process.memoryUsage().heapUsed;
    run(20_000, 200_000);
    gc();
    // What a stream's key left behind once its event dropped out of the log: 11 MB here.
    expect(process.memoryUsage().heapUsed - before).toBeLessThan(3_000_000);
  });
});
