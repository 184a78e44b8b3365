// node:fs as the conformance suite sees it on Node 20: everything node:fs has, plus a `globSync`
// that refuses clearly. The suite calls globSync only in `tier-check`, to find checks.json files
// in a results directory; the `server` runs the tests use never reach it.
import fs from 'node:fs';

export * from 'node:fs';
export default fs;

export function globSync(pattern) {
  throw new Error(`fs.globSync(${JSON.stringify(pattern)}) needs Node 22; this Node ${process.version} shim only supports the suite's \`server\` command`);
}
