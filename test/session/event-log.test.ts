// The session's replay log (src/session/streams.ts, EventLog) and the budget all logs share: what
// it keeps and drops, and the memory it holds. A replay log lets go of the events it drops at once: the array that holds them is compacted
// only now and then (after a thousand drops), and until this held every dropped event's data, so
// a log bounded to a few events could keep a thousand answers alive. And what the log remembers
// of a stream whose events it dropped (to refuse a resumption that would skip them) goes with
// the stream: it was a Map entry per stream key, added again after the session had forgotten the
// stream, so a session answering calls as streams grew by one entry per call for its whole life.
import { runInNewContext } from 'node:vm';
import { setFlagsFromString } from 'node:v8';
import { afterEach, describe, expect, it } from 'vitest';
import type { JsonRpcMessage } from '../../src/mcp/jsonrpc.js';
import { DownstreamSession } from '../../src/session/session.js';
import { EventLog, ReplayBudget, type LoggedStream } from '../../src/session/streams.js';

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

describe('a session’s request streams kept for resumption', () => {
  it('are the newest hundred, and every one still running however old, each found by its key', () => {
    const session = new DownstreamSession('s', { protocolVersion: '2025-11-25', clientCapabilities: {}, clientInfo: {} }, Date.now(), { events: 1_000, bytes: 4_000_000 });
    const running = session.openRequestStream([0]);
    const done = Array.from({ length: 150 }, (_, i) => {
      const stream = session.openRequestStream([i + 1]);
      stream.send({ jsonrpc: '2.0', id: i + 1, result: {} });
      stream.finish();
      return stream;
    });
    expect(session.stream(running.key)).toBe(running);
    // Each stream opened past a hundred let the oldest done one go: the 51st is the last gone.
    for (const stream of done.slice(0, 51)) expect(session.stream(stream.key)).toBeUndefined();
    for (const stream of done.slice(51)) expect(session.stream(stream.key)).toBe(stream);
    expect(new Set([running, ...done].map((stream) => stream.key)).size).toBe(151);
  });

  it('have keys of their own in each session, not shared with another session’s', () => {
    const keys = (log: EventLog): string[] => Array.from({ length: 50 }, () => log.newKey());
    const one = keys(new EventLog({ events: 10, bytes: 1_000 }));
    const other = keys(new EventLog({ events: 10, bytes: 1_000 }));
    for (const key of [...one, ...other]) expect(key).toMatch(/^[0-9a-f]{12}$/);
    expect(new Set([...one, ...other]).size).toBe(100);
  });
});

describe('EventLog', () => {
  const a: LoggedStream = { key: 'a', droppedUpTo: 0 };
  const b: LoggedStream = { key: 'b', droppedUpTo: 0 };
  afterEach(() => {
    a.droppedUpTo = b.droppedUpTo = 0;
  });

  it('keeps the newest events across compaction of its backing array', () => {
    const log = new EventLog({ events: 10, bytes: 1_000_000 });
    for (let seq = 1; seq <= 3_000; seq++) log.append(a, seq, `d${seq}`);
    expect(log.after(a, 2_990)!.map((e) => e.seq)).toEqual([2_991, 2_992, 2_993, 2_994, 2_995, 2_996, 2_997, 2_998, 2_999, 3_000]);
    expect(log.after(a, 2_989)).toBeUndefined();
  });

  it('keeps the newest event even when it alone exceeds the byte limit', () => {
    const log = new EventLog({ events: 10, bytes: 10 });
    log.append(a, 1, 'x'.repeat(50));
    expect(log.after(a, 0)!.map((e) => e.seq)).toEqual([1]);
    log.append(a, 2, 'y'.repeat(50));
    expect(log.after(a, 1)!.map((e) => e.seq)).toEqual([2]);
    expect(log.after(a, 0)).toBeUndefined();
  });

  it('tells the stream whose event it dropped, and only that stream', () => {
    const log = new EventLog({ events: 1, bytes: 1_000_000 });
    log.append(a, 1, 'one');
    log.append(b, 1, 'other');
    expect(a.droppedUpTo).toBe(1);
    expect(b.droppedUpTo).toBe(0);
    expect(log.after(a, 0)).toBeUndefined();
    expect(log.after(b, 0)!.map((e) => e.data)).toEqual(['other']);
  });

  it('counts the byte limit in UTF-8 bytes, as the replayBytes setting says', () => {
    // Each event is 10 characters but 30 bytes of UTF-8; a 64-byte limit holds two of them.
    const data = '€'.repeat(10);
    const log = new EventLog({ events: 100, bytes: 64 });
    for (let seq = 1; seq <= 4; seq++) log.append(a, seq, data);
    expect(log.after(a, 1)).toBeUndefined();
    expect(log.after(a, 2)!.map((e) => e.seq)).toEqual([3, 4]);
  });
});

describe('ReplayBudget', () => {
  it('keeps every log together under the limit, taking first from logs over their fair share', () => {
    const budget = new ReplayBudget(10_000);
    const quiet: LoggedStream = { key: 'aaaaaaaaaaaa', droppedUpTo: 0 };
    const loud: LoggedStream = { key: 'bbbbbbbbbbbb', droppedUpTo: 0 };
    const idle = new EventLog({ events: 1_000, bytes: 1_000_000, budget });
    const busy = new EventLog({ events: 1_000, bytes: 1_000_000, budget });
    for (let i = 1; i <= 8; i++) idle.append(quiet, i, 'x'.repeat(1_000));
    expect(budget.used).toBe(8_000);
    for (let i = 1; i <= 8; i++) busy.append(loud, i, 'y'.repeat(1_000));
    expect(budget.used).toBeLessThanOrEqual(10_000);
    // The idle log held more than half: it gave back its oldest events; the busy one kept its newest.
    expect(idle.bytes).toBeLessThanOrEqual(5_000);
    expect(busy.after(loud, 7, true)?.map((e) => e.seq)).toEqual([8]);
    // A resumption that would skip what was given back is refused, not silently incomplete.
    expect(idle.after(quiet, 0)).toBeUndefined();
    idle.release();
    busy.release();
    expect(budget.used).toBe(0);
    expect(budget.logs).toBe(0);
  });
});
