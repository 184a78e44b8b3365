// stdio upstreams on bad days: crashes mid-call (fail fast, restart with backoff, list_changed
// only when lists differ), crash loops, garbage and oversized output, stderr floods, unknown
// response ids, and launchers that leave grandchildren. Other upstreams keep working throughout
// and nothing leaks: no orphan process, no request left pending.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { alive } from '../helpers/processes.js';
import { poll } from '../helpers/cli.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectClient, recordNotifications, startGateway, textOf, upstream, type NotificationLog, type TestGateway } from '../helpers/gateway.js';
import { FIXTURES, NODE } from '../helpers/paths.js';

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'switchyard-stdio-'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const fastRestart = { backoff: 20, maxBackoff: 200, maxCrashes: 3, window: '10s', resetAfter: '10s' };


async function health(gw: TestGateway): Promise<Record<string, { state: string; restarts: number; pending: number; lastError?: string; sessions: number }>> {
  return ((await (await fetch(new URL('/healthz', gw.url))).json()) as { upstreams: Record<string, never> }).upstreams;
}

async function pid(client: Client, name = 'rogue'): Promise<number> {
  return Number(textOf(await client.callTool({ name: `${name}__pid`, arguments: {} })));
}

/** Retries `call` until it succeeds (the upstream is restarting), bounded. */
async function eventually<T>(call: () => Promise<T>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await call();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
}

async function waitDead(pids: number[], timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (pids.some(alive) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  expect(pids.filter(alive)).toEqual([]);
}

function logLines(gw: TestGateway): Record<string, unknown>[] {
  return gw.logs.map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe('a stdio upstream that crashes', () => {
  it('fails the call in flight within a second, restarts, and keeps the other upstreams working', async () => {
    const gw = await startGateway({ upstreams: { rogue: { ...upstream.rogue(), restart: fastRestart }, paged: upstream.paged() } });
    const client = await connectClient(gw.url);
    try {
      const before = await pid(client);
      const slow = client.callTool({ name: 'rogue__slow', arguments: { ms: 10_000 } });
      slow.catch(() => {});
      const started = Date.now();
      const crash = client.callTool({ name: 'rogue__crash', arguments: {} });
      const [slowError, crashError] = await Promise.all([slow.catch((e: unknown) => e), crash.catch((e: unknown) => e)]);
      expect(Date.now() - started).toBeLessThan(1_000);
      for (const error of [slowError, crashError]) {
        expect(error).toMatchObject({ code: -32000 });
        expect(String((error as Error).message)).toMatch(/rogue crashed/);
      }
      expect(textOf(await client.callTool({ name: 'paged__echo', arguments: {} }))).toBe('echo {}');

      const after = await eventually(() => pid(client));
      expect(after).not.toBe(before);
      expect(alive(before)).toBe(false);
      const state = (await health(gw)).rogue!;
      expect(state).toMatchObject({ state: 'up', restarts: 1, pending: 0 });
    } finally {
      await client.close();
      await gw.close();
    }
  });

  it('sends list_changed after a restart only when the upstream now lists something else', async () => {
    const gw = await startGateway({
      upstreams: {
        same: { ...upstream.rogue(), restart: fastRestart },
        differs: { ...upstream.rogue({ BOOT_TOOL: '1' }), restart: fastRestart },
      },
    });
    let log!: NotificationLog;
    const client = await connectClient(gw.url, {}, (c) => (log = recordNotifications(c)));
    try {
      await client.listTools();
      const sameBefore = await pid(client, 'same');
      await client.callTool({ name: 'same__crash', arguments: {} }).catch(() => {});
      await eventually(async () => expect(await pid(client, 'same')).not.toBe(sameBefore));
      const differsBefore = await pid(client, 'differs');
      await client.callTool({ name: 'differs__crash', arguments: {} }).catch(() => {});
      await log.waitFor((n) => n.method === 'notifications/tools/list_changed', 'list_changed after the restart that changed the list');
      expect(log.all.filter((n) => n.method === 'notifications/tools/list_changed')).toHaveLength(1);
      const names = (await client.listTools()).tools.map((t) => t.name);
      const differsAfter = await pid(client, 'differs');
      expect(names).toContain(`differs__boot-${differsAfter}`);
      expect(names).not.toContain(`differs__boot-${differsBefore}`);
    } finally {
      await client.close();
      await gw.close();
    }
  });

  it('gives up after a crash loop, marks the upstream down and names it in errors', async () => {
    const marker = join(dir, 'crash-loop');
    const gw = await startGateway({
      upstreams: { loop: { ...upstream.rogue({ CRASH_IF_EXISTS: marker }), restart: fastRestart }, paged: upstream.paged() },
      health: { probeInterval: 0 },
    });
    const client = await connectClient(gw.url);
    try {
      const first = await pid(client, 'loop');
      await writeFile(marker, String(first));
      await client.callTool({ name: 'loop__crash', arguments: {} }).catch(() => {});
      // Every restart now exits at once: after maxCrashes the upstream is given up.
      const deadline = Date.now() + 10_000;
      while ((await health(gw)).loop!.state !== 'down' && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      const state = (await health(gw)).loop!;
      expect(state.state).toBe('down');
      expect(state.lastError).toMatch(/crash loop/);
      await expect(client.callTool({ name: 'loop__pid', arguments: {} })).rejects.toThrow(/loop/);
      expect(textOf(await client.callTool({ name: 'paged__echo', arguments: {} }))).toBe('echo {}');
      expect(alive(first)).toBe(false);
    } finally {
      await client.close();
      await gw.close();
    }
  });
});

describe('bad output from a stdio upstream', () => {
  it('skips a non-JSON line (logged, truncated) and answers the call', async () => {
    const gw = await startGateway({ upstreams: { rogue: upstream.rogue() } });
    const client = await connectClient(gw.url);
    try {
      expect(textOf(await client.callTool({ name: 'rogue__garbage', arguments: {} }))).toBe('after garbage');
      expect(logLines(gw)).toContainEqual(expect.objectContaining({ level: 'warn', upstream: 'rogue', line: 'this line is not JSON' }));
    } finally {
      await client.close();
      await gw.close();
    }
  });

  it('treats a message over maxMessageBytes like a crash', async () => {
    const gw = await startGateway({ upstreams: { rogue: { ...upstream.rogue(), maxMessageBytes: 4_096, restart: fastRestart } } });
    const client = await connectClient(gw.url);
    try {
      const before = await pid(client);
      await expect(client.callTool({ name: 'rogue__huge', arguments: { bytes: 100_000 } })).rejects.toMatchObject({ code: -32000 });
      const after = await eventually(() => pid(client));
      expect(after).not.toBe(before);
      expect(logLines(gw)).toContainEqual(expect.objectContaining({ level: 'error', msg: 'upstream message exceeds the size limit; stopping the process' }));
    } finally {
      await client.close();
      await gw.close();
    }
  });

  it('drains a stderr flood into the log under the upstream\'s name, never as an error', async () => {
    const gw = await startGateway({ upstreams: { rogue: upstream.rogue() } });
    const client = await connectClient(gw.url);
    try {
      const text = Array.from({ length: 2_000 }, (_, i) => `noise line ${i} ${'x'.repeat(200)}`).join('\n');
      expect(textOf(await client.callTool({ name: 'rogue__stderr', arguments: { text } }))).toBe('after stderr');
      // stderr is its own pipe: the answer on stdout may overtake the last of it.
      const stderr = await poll(() => {
        const lines = logLines(gw).filter((l) => l.msg === 'upstream stderr');
        return lines.length >= 2_000 ? lines : undefined;
      }, '2,000 stderr lines in the log');
      expect(stderr.every((l) => l.level === 'info' && l.upstream === 'rogue')).toBe(true);
      expect(textOf(await client.callTool({ name: 'rogue__pid', arguments: {} }))).toMatch(/^\d+$/);
    } finally {
      await client.close();
      await gw.close();
    }
  });

  it('drops and counts a response with an unknown id', async () => {
    const gw = await startGateway({ upstreams: { rogue: upstream.rogue() } });
    const client = await connectClient(gw.url);
    try {
      expect(textOf(await client.callTool({ name: 'rogue__unknown-id', arguments: {} }))).toBe('after unknown id');
      expect(logLines(gw)).toContainEqual(expect.objectContaining({ msg: 'dropped a response with an unknown id', id: 987654, upstream: 'rogue' }));
      expect((await health(gw)).rogue!.pending).toBe(0);
    } finally {
      await client.close();
      await gw.close();
    }
  });
});

describe('process groups', () => {
  it('stops a launcher, its server and the grandchild it left behind', async () => {
    const pidFile = join(dir, 'npx-like.json');
    const gw = await startGateway({ upstreams: { launched: { stdio: { command: NODE, args: [join(FIXTURES, 'npx-like.mjs')], env: { PID_FILE: pidFile } } } } });
    const client = await connectClient(gw.url);
    let pids: { launcher: number; server: number; lingering: number };
    try {
      expect(textOf(await client.callTool({ name: 'launched__pid', arguments: {} }))).toMatch(/^\d+$/);
      pids = JSON.parse(await readFile(pidFile, 'utf8')) as typeof pids;
      expect([pids.launcher, pids.server, pids.lingering].every(alive)).toBe(true);
    } finally {
      await client.close();
      await gw.close();
    }
    await waitDead([pids.launcher, pids.server, pids.lingering]);
  });
});
