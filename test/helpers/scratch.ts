// A temporary directory for the tests of one file: made before them, removed after them.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';

/**
 * Registers the directory's beforeAll and afterAll (call it at a file's top level) and returns
 * its path's getter: the path exists from the file's first test on.
 */
export function useScratch(prefix: string): () => string {
  let dir: string | undefined;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), prefix));
  });
  afterAll(async () => {
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });
  return () => {
    if (dir === undefined) throw new Error(`the ${prefix} scratch directory is used before its beforeAll`);
    return dir;
  };
}
