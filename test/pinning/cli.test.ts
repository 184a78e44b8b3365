// `switchyard pins` (src/pinning/cli.ts) on a file store: a credentials.key that opens nothing
// stored is one line and exit 1, as the gateway's start says it, never a stack trace.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configFromObject } from '../../src/config/load.js';
import { runPinsCommand } from '../../src/pinning/cli.js';

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'switchyard-pins-cli-'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Runs `switchyard pins ARGS --config FILE` with `key` as credentials.key; its exit code and output. */
async function pins(args: string[], key: string): Promise<{ code: number; out: string[]; err: string[] }> {
  const file = join(dir, 'gateway.yaml');
  const config = configFromObject({ upstreams: {}, pinning: { mode: 'warn' }, credentials: { store: { file: { path: 'store.json' } }, key } }, { file, env: {} });
  const out: string[] = [];
  const err: string[] = [];
  const code = await runPinsCommand([...args, '--config', file], { load: async () => config, print: (line) => out.push(line), warn: (line) => err.push(line), user: 'tester' });
  return { code, out, err };
}

describe('switchyard pins', () => {
  it('with a credentials.key that opens nothing stored: one line naming the key and the store, exit 1', async () => {
    expect(await pins(['list'], 'a'.repeat(32))).toEqual({ code: 0, out: ['nothing is pinned yet'], err: [] });
    const wrong = await pins(['list'], 'b'.repeat(32));
    expect(wrong).toMatchObject({ code: 1, out: [] });
    expect(wrong.err).toEqual([expect.stringMatching(new RegExp(`^switchyard: credentials\\.key does not open the stored credentials in ${join(dir, 'store.json')} `))]);
  });
});
