#!/usr/bin/env node
// The `switchyard` command: runs src/main.ts through tsx, or dist/main.js once built. A build
// older than any file of src/ is not used (it would run code the checkout no longer has).
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const built = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const sources = fileURLToPath(new URL('../src', import.meta.url));

/** The newest modification time of a file under `dir` (0 when there is none). */
function newest(dir) {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    latest = Math.max(latest, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
  }
  return latest;
}

const stale = existsSync(built) && existsSync(sources) && newest(sources) > statSync(built).mtimeMs;
if (stale) process.stderr.write('switchyard: dist/ is older than src/; running src/ (npm run build refreshes dist/)\n');
if (existsSync(built) && !stale) {
  await import(built);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/main.ts');
}
