// What the listener keeps of answered requests: nothing the young-generation collector must
// copy to the old generation. Counting unanswered responses in a Set did: 5.4 KB per request
// (and all a request reaches with it) promoted, which in the gateway cost 10 µs of GC pauses
// per call (bench/HISTORY.md, "Fifteenth pass"). The fixture runs in a process of its own with
// a small young generation, and V8's trace of each young-generation collection says what it
// promoted while the requests ran.
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { NODE, ROOT } from '../helpers/paths.js';
import { waitForExit } from '../helpers/processes.js';

const REQUESTS = 4000;

describe('listener: answered requests leave nothing for the old generation', () => {
  it('promotes well under a kilobyte per request while requests come and go', async () => {
    const child = spawn(NODE, ['--import', 'tsx', '--trace-gc-nvp', '--max-semi-space-size=1', 'test/fixtures/listener-promotion.ts'], {
      cwd: ROOT,
      stdio: 'pipe',
      env: { ...process.env, REQUESTS: String(REQUESTS) },
    });
    let output = '';
    let errors = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (errors += chunk.toString('utf8')));
    try {
      expect(await waitForExit(child, 120_000), errors).toBe(0);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
    const measured = output.slice(output.indexOf('MEASURE\n'), output.indexOf('DONE'));
    const scavenges = [...measured.matchAll(/gc=s .*?promoted=(\d+)/g)].map((m) => Number(m[1]));
    // Enough collections ran for the figure to mean something (about a hundred here).
    expect(scavenges.length).toBeGreaterThan(20);
    const perRequest = scavenges.reduce((a, b) => a + b, 0) / REQUESTS;
    // About 300 bytes now (undici's and Node's own); 5,400 with the Set.
    expect(perRequest).toBeLessThan(1_500);
  });
});
