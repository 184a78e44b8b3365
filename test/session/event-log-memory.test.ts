// A replay log lets go of the events it drops at once: the array that holds them is compacted
// only now and then (after a thousand drops), and until this held every dropped event's data, so
// a log bounded to a few events could keep a thousand answers alive.
import { runInNewContext } from 'node:vm';
import { setFlagsFromString } from 'node:v8';
import { describe, expect, it } from 'vitest';
import { EventLog } from '../../src/session/streams.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

describe('EventLog memory', () => {
  it('holds no more than its bound of events’ data after dropping the rest', () => {
    const log = new EventLog({ events: 2, bytes: 100_000_000 });
    gc();
    const before = process.memoryUsage().heapUsed;
    // 1,000 events of 100 KB each: 100 MB had the dropped ones been kept.
    for (let i = 0; i < 1_000; i++) log.append('k', i + 1, `${i}`.padEnd(100_000, 'x'));
    gc();
    const held = process.memoryUsage().heapUsed - before;
    expect(log.after('k', 998)?.map((e) => e.seq)).toEqual([999, 1000]);
    expect(held).toBeLessThan(10_000_000);
  });
});
