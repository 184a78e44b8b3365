#!/usr/bin/env node
// The `switchyard` command: runs src/main.ts through tsx (or dist/main.js once built).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const built = fileURLToPath(new URL('../dist/main.js', import.meta.url));
if (existsSync(built)) {
  await import(built);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/main.ts');
}
