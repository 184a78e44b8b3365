// The connected section's wait before its idle window (bench/connected.mjs): V8's memory reducer
// collects the heap about half a minute after 10,000 sessions open, and a window that took it in
// measured that clean-up, not idling (3.56 % of a core where idling is about 1 %).
import { PassThrough } from 'node:stream';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ROOT as repoRoot } from '../helpers/paths.js';

interface Reducer {
  times: number[];
  next(ms: number): Promise<void>;
}
interface Connected {
  memoryReducer(output: NodeJS.ReadableStream): Reducer;
  settle(reducer: Reducer, since: number, minMs: number, maxMs: number, quietMs?: number): Promise<void>;
  idleWhy(figures: { idleCpuShare: number; floorIdleCpuShare: number; reducedWhileIdle: number }): string;
}

const connected = (): Promise<Connected> => import(pathToFileURL(join(repoRoot, 'bench', 'connected.mjs')).href) as Promise<Connected>;

const REDUCE = '[1:0x1]    40641 ms: Mark-Compact (reduce) 146.2 (170.5) -> 125.0 (138.6) MB, 14.53 / 0.30 ms  (+ 78.1 ms in 447 steps since start of marking) finalize incremental marking via task; GC in old space requested\n';
const OTHER = '[1:0x1]     5820 ms: Mark-Compact 127.7 (152.6) -> 106.4 (161.7) MB, 5.48 / 0.22 ms  finalize incremental marking via task; GC in old space requested\n';

/** A --trace-gc output to write to, the reducer hearing it, and settle(); the output ends after `run`. */
async function withTrace(run: (output: PassThrough, reducer: Reducer, settle: Connected['settle']) => Promise<void>): Promise<void> {
  const { memoryReducer, settle } = await connected();
  const output = new PassThrough();
  try {
    await run(output, memoryReducer(output), settle);
  } finally {
    output.end();
  }
}

describe('the connected section waits for the memory reducer', () => {
  it('hears only the reducing collections in --trace-gc output', () =>
    withTrace(async (output, reducer) => {
      const heard = reducer.next(5_000);
      output.write(OTHER);
      output.write(REDUCE);
      await heard;
      expect(reducer.times).toHaveLength(1);
    }));

  it('settles only once the reducer has collected and been quiet, not at the minimum wait', () =>
    withTrace(async (output, reducer, settle) => {
      const since = performance.now();
      // A reducing collection comes after the minimum wait (50 ms), a second one 100 ms later.
      setTimeout(() => output.write(REDUCE), 80);
      setTimeout(() => output.write(REDUCE), 180);
      await settle(reducer, since, 50, 10_000, 300);
      const waited = performance.now() - since;
      expect(reducer.times).toHaveLength(2);
      // Not before the last collection's quiet period ended, and not at the bound.
      expect(reducer.times[1]! - since + 300).toBeLessThanOrEqual(waited + 1);
      expect(waited).toBeLessThan(10_000);
    }));

  it('does not take a reducing collection from before its start for one after it', () =>
    withTrace(async (output, reducer, settle) => {
      // The clean-up after the first half of the sessions opened…
      const heard = reducer.next(5_000);
      output.write(REDUCE);
      await heard;
      // …is not the one after the second half: with none after it, the wait runs to its bound.
      const since = performance.now() + 1;
      await new Promise((resolve) => setTimeout(resolve, 2));
      await settle(reducer, since, 20, 300, 50);
      expect(performance.now() - since).toBeGreaterThanOrEqual(299);
    }));

  it('waits no longer than its bound when the reducer never runs', () =>
    withTrace(async (_output, reducer, settle) => {
      const since = performance.now();
      await settle(reducer, since, 20, 200, 50);
      expect(reducer.times).toHaveLength(0);
      expect(performance.now() - since).toBeGreaterThanOrEqual(199);
    }));

  it('says why the idle target was missed from the floor measured beside it', async () => {
    const { idleWhy } = await connected();
    expect(idleWhy({ idleCpuShare: 0.0107, floorIdleCpuShare: 0.0083, reducedWhileIdle: 0 })).toMatch(/^the keep-alive writes alone cost 0\.83 % of a core here \(keepalive-floor\.mjs; the gateway idles at 1\.29× that\)/);
    expect(idleWhy({ idleCpuShare: 0.02, floorIdleCpuShare: 0.004, reducedWhileIdle: 0 })).toMatch(/^the gateway idles at 5\.00× what its keep-alive writes alone cost/);
    expect(idleWhy({ idleCpuShare: 0.03, floorIdleCpuShare: 0.008, reducedWhileIdle: 2 })).toMatch(/memory reducer collected the heap during the window/);
    // A floor that read 0 (10 ms ticks in a short window) gives no ratio, not Infinity.
    expect(idleWhy({ idleCpuShare: 0.02, floorIdleCpuShare: 0, reducedWhileIdle: 0 })).toMatch(/^the gateway idles at –× what its keep-alive writes alone cost/);
  });
});
