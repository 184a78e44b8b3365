// The heap a test's own isolate uses after a full collection, for tests that a structure holds
// what it should and no more (a span or record keeping a client's whole string alive).
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

setFlagsFromString('--expose-gc');
// A context made after the flag is set has `gc` (the test's own context was made before).
const gc = runInNewContext('gc') as () => void;

/** Megabytes of this isolate's heap in use, after a full garbage collection. */
export function heapInUseMb(): number {
  gc();
  return getHeapStatistics().used_heap_size / 1e6;
}
