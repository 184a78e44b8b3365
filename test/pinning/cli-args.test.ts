// `switchyard pins approve|reject` arguments (src/pinning/cli.ts): --all of an unknown upstream is
// refused as a name of it is (exit 1), and --all with names is a usage error (exit 2), not a
// decision on every waiting definition that ignores the names given.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configFromObject } from '../../src/config/load.js';
import { runPinsCommand } from '../../src/pinning/cli.js';

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'switchyard-pins-args-'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function pins(args: string[]): Promise<{ code: number; out: string[]; err: string[] }> {
  const file = join(dir, 'gateway.yaml');
  const config = configFromObject(
    { upstreams: { docs: { stdio: { command: 'node', args: ['server.mjs'] } } }, pinning: { mode: 'warn' }, credentials: { store: { file: { path: 'store.json' } }, key: 'a'.repeat(32) } },
    { file, env: {} },
  );
  const out: string[] = [];
  const err: string[] = [];
  const code = await runPinsCommand([...args, '--config', file], { load: async () => config, print: (line) => out.push(line), warn: (line) => err.push(line), user: 'tester' });
  return { code, out, err };
}

/** Stderr without the note every decision on a file store carries. */
const refusals = (err: string[]): string[] => err.filter((line) => !line.startsWith('switchyard: note:'));

describe('switchyard pins approve|reject', () => {
  for (const command of ['approve', 'reject']) {
    it(`${command} UPSTREAM --all of an unknown upstream: "no upstream is named", exit 1`, async () => {
      const named = await pins([command, 'nope', 'search']);
      expect(named).toMatchObject({ code: 1, out: [] });
      expect(refusals(named.err)).toEqual(['switchyard: no upstream is named nope']);
      const all = await pins([command, 'nope', '--all']);
      expect(all).toMatchObject({ code: 1, out: [] });
      expect(refusals(all.err)).toEqual(['switchyard: no upstream is named nope']);
    });

    it(`${command} UPSTREAM NAME --all: a usage error, exit 2`, async () => {
      const both = await pins([command, 'docs', 'search', '--all']);
      expect(both).toMatchObject({ code: 2, out: [] });
      expect(both.err).toEqual([expect.stringMatching(/^switchyard: give either names or --all, not both\nusage: switchyard pins/)]);
    });
  }

  it('approve UPSTREAM --all of a known upstream with nothing waiting: exit 0', async () => {
    const result = await pins(['approve', 'docs', '--all']);
    expect(result).toMatchObject({ code: 0, out: ['nothing of docs waits for approval'] });
  });
});
