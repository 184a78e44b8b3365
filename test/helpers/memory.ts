// What the test process holds, measured after a full garbage collection, so that a bound on
// growth speaks of what is retained, not of garbage not yet collected.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** The JS heap and the buffers outside it (encoded chunks, sockets' data), after a full GC. */
export function retainedBytes(): number {
  gc();
  const { heapUsed, external, arrayBuffers } = process.memoryUsage();
  return heapUsed + external + arrayBuffers;
}
