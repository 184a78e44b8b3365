// Issue 35 item 3: state is not lost behind the user's back. A stdio server that keeps what its
// session wrote in memory, behind the defaults, keeps its child for the session's life however
// long it idles; only an upstream the config says is stateless (`stateful: false`, or one that
// sets `idleTimeout`) is reaped, and its replacement is logged at info with the session and
// upstream. The gateway's clocks (Date and its sweep's interval) are faked to pass the 5 minutes
// of the stdio default; the children, sockets and every other timer are real.
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { gone } from '../helpers/children.js';
import { connectClient, startGateway, terminateSession, textOf, type TestGateway } from '../helpers/gateway.js';
import { FIXTURES, NODE } from '../helpers/paths.js';

const NOTEBOOK = { stdio: { command: NODE, args: [join(FIXTURES, 'notebook-server.mjs')] } };

let gw: TestGateway | undefined;
let client: Client | undefined;

afterEach(async () => {
  try {
    if (client) await terminateSession(client).catch(() => {});
    await client?.close();
    await gw?.close();
  } finally {
    client = undefined;
    gw = undefined;
    vi.useRealTimers();
  }
});

async function read(c: Client, upstream: string): Promise<{ pid: number; lines: string[] }> {
  return JSON.parse(textOf(await c.callTool({ name: `${upstream}__read`, arguments: {} }))) as { pid: number; lines: string[] };
}

interface LogLine {
  level: string;
  msg: string;
  upstream?: string;
  session?: string;
}

const logLines = (g: TestGateway, msg: string): LogLine[] => g.logs.map((line) => JSON.parse(line) as LogLine).filter((line) => line.msg === msg);

describe('an idle upstream child', () => {
  it('is kept for the session\'s life by default; only `stateful: false` or an `idleTimeout` lets it go, and its replacement is logged', async () => {
    // Only the sweep's interval and Date: the gateway's other timers, and the test's, stay real.
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'Date'], shouldAdvanceTime: true });
    gw = await startGateway({ upstreams: { kept: NOTEBOOK, loose: { ...NOTEBOOK, stateful: false }, timed: { ...NOTEBOOK, idleTimeout: '1m' } } }, { logLevel: 'info' });
    client = await connectClient(gw.url);
    const c = client;
    for (const upstream of ['kept', 'loose', 'timed']) await c.callTool({ name: `${upstream}__write`, arguments: { line: `open page of ${upstream}` } });
    const before = { kept: await read(c, 'kept'), loose: await read(c, 'loose'), timed: await read(c, 'timed') };

    // Ten idle minutes, swept as the gateway sweeps (twice the stdio default).
    await vi.advanceTimersByTimeAsync(10 * 60_000);
    await gone([before.loose.pid, before.timed.pid], 'the children of the upstreams said to be stateless');

    const kept = await read(c, 'kept');
    expect(kept).toEqual({ pid: before.kept.pid, lines: ['open page of kept'] });
    for (const upstream of ['loose', 'timed'] as const) {
      const after = await read(c, upstream);
      expect(after.pid).not.toBe(before[upstream].pid);
      expect(after.lines).toEqual([]);
    }
    expect(logLines(gw, 'idle upstream session closed').map((l) => l.upstream).sort()).toEqual(['loose', 'timed']);
    const replaced = logLines(gw, 'idle upstream session replaced');
    expect(replaced.map((l) => ({ level: l.level, upstream: l.upstream })).sort((a, b) => a.upstream!.localeCompare(b.upstream!))).toEqual([
      { level: 'info', upstream: 'loose' },
      { level: 'info', upstream: 'timed' },
    ]);
    expect(replaced.every((l) => typeof l.session === 'string' && l.session.length > 0)).toBe(true);
  });
});
