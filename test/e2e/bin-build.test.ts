// The `switchyard` command (bin/switchyard.mjs) runs dist/main.js only while it is at least as
// new as src/: a build left behind by an older checkout is not run in place of the code.
import { execFile } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, rm, symlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/paths.js';

const run = promisify(execFile);
let dir: string | undefined;

afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

/** A checkout of its own: the real bin, a src/main.ts and a dist/main.js that say which ran. */
async function checkout(): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'sy-bin-'));
  await Promise.all([mkdir(join(root, 'bin')), mkdir(join(root, 'src')), mkdir(join(root, 'dist'))]);
  await copyFile(join(ROOT, 'bin/switchyard.mjs'), join(root, 'bin/switchyard.mjs'));
  await symlink(join(ROOT, 'node_modules'), join(root, 'node_modules'));
  await writeFile(join(root, 'src/main.ts'), "const ran: string = 'src';\nconsole.log(ran);\n");
  await writeFile(join(root, 'dist/main.js'), "console.log('dist');\n");
  await writeFile(join(root, 'package.json'), '{ "type": "module" }\n');
  return root;
}

describe('bin/switchyard.mjs', () => {
  it('runs dist/ when it is as new as src/', async () => {
    dir = await checkout();
    const old = new Date(Date.now() - 60_000);
    await utimes(join(dir, 'src/main.ts'), old, old);
    const { stdout, stderr } = await run(process.execPath, [join(dir, 'bin/switchyard.mjs')], { timeout: 30_000 });
    expect(stdout.trim()).toBe('dist');
    expect(stderr).toBe('');
  }, 40_000);

  it('runs src/ and says why when dist/ is older than a file of src/', async () => {
    dir = await checkout();
    const old = new Date(Date.now() - 60_000);
    await utimes(join(dir, 'dist/main.js'), old, old);
    const { stdout, stderr } = await run(process.execPath, [join(dir, 'bin/switchyard.mjs')], { timeout: 30_000 });
    expect(stdout.trim()).toBe('src');
    expect(stderr).toContain('dist/ is older than src/');
  }, 40_000);
});
