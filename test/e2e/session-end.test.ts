// Ending a session (DELETE or idle timeout) ends its upstream sessions: requests still pending
// are cancelled upstream and no child process keeps running.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { alive } from '../helpers/processes.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectClient, journal, startGateway, terminateSession, textOf, upstream } from '../helpers/gateway.js';

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'switchyard-end-'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});


async function recorded(file: string): Promise<{ method?: string; params?: Record<string, unknown>; id?: unknown }[]> {
  const text = await readFile(file, 'utf8').catch(() => '');
  return text.split('\n').filter(Boolean).map((line) => JSON.parse(line) as { method?: string });
}

async function pidOf(client: Awaited<ReturnType<typeof connectClient>>): Promise<number> {
  return Number(textOf(await client.callTool({ name: 'paged__pid', arguments: {} })));
}

describe('ending a session', () => {
  it('cancels requests still pending upstream when the client DELETEs the session', async () => {
    const record = join(dir, 'delete.jsonl');
    const gw = await startGateway({ upstreams: { rogue: upstream.rogue({ RECORD_FILE: record }), paged: upstream.paged() } });
    const client = await connectClient(gw.url);
    try {
      const pid = await pidOf(client);
      const pending = client.callTool({ name: 'rogue__slow', arguments: { ms: 5_000 } }, CallToolResultSchema, { timeout: 20_000 });
      pending.catch(() => {});
      const deadline = Date.now() + 5_000;
      while (!(await journal(client, 'rogue__journal')).some((m) => m.method === 'tools/call' && (m.params as { name: string }).name === 'slow')) {
        if (Date.now() > deadline) throw new Error('the slow call never reached the upstream');
      }
      await terminateSession(client);
      const seen = await recorded(record);
      const call = seen.find((m) => m.method === 'tools/call' && (m.params as { name: string }).name === 'slow')!;
      expect(seen).toContainEqual({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: call.id, reason: 'session ended' } });
      expect(alive(pid)).toBe(false);
    } finally {
      await client.close();
      await gw.close();
    }
  });

  it('closes an idle session after sessions.idleTimeout and stops its children', async () => {
    const gw = await startGateway({ upstreams: { paged: upstream.paged() }, sessions: { idleTimeout: '1s' } });
    const client = await connectClient(gw.url);
    try {
      const pid = await pidOf(client);
      // The SDK client keeps a GET stream open, which counts as activity; close it.
      await client.close();
      const deadline = Date.now() + 10_000;
      while (alive(pid) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
      expect(alive(pid)).toBe(false);
      const health = (await (await fetch(new URL('/healthz', gw.url))).json()) as { sessions: number };
      expect(health.sessions).toBe(0);
    } finally {
      await gw.close();
    }
  });
});
