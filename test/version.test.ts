// serverInfo.version comes from src/version.ts; it must not drift from package.json.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { GATEWAY_VERSION } from '../src/version.js';
import { ROOT } from './helpers/paths.js';

describe('version', () => {
  it('GATEWAY_VERSION equals package.json\'s version', async () => {
    const pkg = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    expect(GATEWAY_VERSION).toBe(pkg.version);
  });
});
