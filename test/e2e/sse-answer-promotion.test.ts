// What the gateway keeps of a call answered as an SSE stream of the session: nothing the
// young-generation collector must copy to the old generation but the stream's own record and
// its event in the replay log. When the POST's connection told its session stream of its end
// through a closure, every answered call's objects (the request, the response, the exchange
// upstream) stayed reachable for that collector until a full collection: 7 KB per call promoted
// here, 5.6 KB in the bench (bench/HISTORY.md, "Eighteenth pass"). The fixture runs in a process
// of its own, and V8's trace of each young-generation collection says what it promoted.
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { NODE, ROOT } from '../helpers/paths.js';
import { waitForExit } from '../helpers/processes.js';

const CALLS = 8000;

describe('SSE answers: an answered call leaves only its stream record for the old generation', () => {
  it('promotes well under two kilobytes per call answered as a stream', async () => {
    const child = spawn(NODE, ['--import', 'tsx', '--trace-gc-nvp', '--max-semi-space-size=4', 'test/fixtures/sse-answer-promotion.ts'], {
      cwd: ROOT,
      stdio: 'pipe',
      env: { ...process.env, CALLS: String(CALLS) },
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
    // Enough collections ran for the figure to mean something (about 280 here).
    expect(scavenges.length).toBeGreaterThan(50);
    const perCall = scavenges.reduce((a, b) => a + b, 0) / CALLS;
    // About 550 bytes now (the stream kept for resumption, its event in the log); 7,000 with the closure.
    expect(perCall).toBeLessThan(2_000);
  });
});
