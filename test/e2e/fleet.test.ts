// A fleet behind a real load balancer: Debian's nginx, round-robin with no affinity, in front of
// three gateway processes sharing session keys and one redis-server (sessions.store), with
// server-everything's own HTTP server upstream. The official SDK client's whole flow works
// through it; a replica killed under load costs only the calls in flight on it; a rolling
// restart under load (SIGTERM, drain, a new replica in its place, one at a time: what the Helm
// chart's rolling update and PodDisruptionBudget do) costs none.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { poll } from '../helpers/cli.js';
import { startReplica, type ReplicaProcess as Replica } from '../helpers/replica.js';
import { connectClient, terminateSession, textOf } from '../helpers/gateway.js';
import { startOwnEverything, type OwnEverything } from '../helpers/everything-own.js';
import { startNginx, type Nginx } from '../helpers/nginx.js';
import { alive } from '../helpers/processes.js';
import { LATEST, POST_HEADERS } from '../helpers/raw-http.js';
import { freePort, startRedis, type TestRedis } from '../helpers/redis.js';
import { SseTextParser } from '../helpers/sse-reader.js';

const WAIT_MS = 20_000;
/** What the machine carries: calls per second offered, across the load's sessions. */
const CALLS_PER_SECOND = 100;
const LOAD_SESSIONS = 5;


interface CallOutcome {
  startedAt: number;
  endedAt: number;
  error?: string;
}

/** Sessions calling remote__echo at a steady pace, each call awaited, until stopped. */
class Load {
  readonly outcomes: CallOutcome[] = [];
  #running = true;
  #ended = 0;
  #waiters: { count: number; wake: () => void }[] = [];
  readonly #loops: Promise<void>[];

  constructor(clients: Client[], perSecond: number) {
    const gapMs = (1_000 * clients.length) / perSecond;
    this.#loops = clients.map((client, i) => this.#loop(client, gapMs, i));
  }

  /** Resolves once `more` calls than now have ended (bounded by the caller's test timeout). */
  ended(more: number): Promise<void> {
    const count = this.#ended + more;
    return new Promise((wake) => this.#waiters.push({ count, wake }));
  }

  /** Calls started before `until` and not ended before `from`: those in flight at some point between the two. */
  inFlightBetween(from: number, until: number): number {
    return this.outcomes.filter((o) => o.startedAt <= until && o.endedAt > from).length;
  }

  async stop(): Promise<CallOutcome[]> {
    this.#running = false;
    await Promise.all(this.#loops);
    return this.outcomes;
  }

  async #loop(client: Client, gapMs: number, index: number): Promise<void> {
    let n = 0;
    await new Promise((resolve) => setTimeout(resolve, (gapMs * index) / LOAD_SESSIONS));
    while (this.#running) {
      const startedAt = Date.now();
      const message = `s${index}-${n++}`;
      const outcome: CallOutcome = { startedAt, endedAt: Infinity };
      this.outcomes.push(outcome);
      try {
        const result = await client.callTool({ name: 'remote__echo', arguments: { message } }, undefined, { timeout: WAIT_MS });
        if (textOf(result) !== `Echo: ${message}`) outcome.error = `unexpected answer ${JSON.stringify(result)}`;
      } catch (err) {
        outcome.error = (err as Error).message;
      }
      outcome.endedAt = Date.now();
      this.#ended++;
      for (const waiter of this.#waiters.filter((w) => w.count <= this.#ended)) waiter.wake();
      this.#waiters = this.#waiters.filter((w) => w.count > this.#ended);
      const wait = startedAt + gapMs - Date.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }
}

describe('three replicas behind nginx on one redis-server', () => {
  let dir: string;
  let redis: TestRedis;
  let remote: OwnEverything;
  let nginx: Nginx;
  let configFile: string;
  /** The replica in each slot; a restarted one takes its slot's port. */
  const replicas: Replica[] = [];
  const ports: number[] = [];
  const clients: Client[] = [];

  const startSlot = async (slot: number): Promise<void> => {
    replicas[slot] = await startReplica(configFile, ports[slot]);
  };
  const connect = async (): Promise<Client> => {
    const client = await connectClient(nginx.url);
    clients.push(client);
    return client;
  };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'switchyard-fleet-'));
    [redis, remote] = await Promise.all([startRedis(), startOwnEverything()]);
    configFile = join(dir, 'gateway.yaml');
    const config = {
      health: { probeInterval: 0 },
      shutdown: { gracePeriod: '5s' },
      sessions: { keys: [randomBytes(36).toString('base64url')], retry: '300ms', store: { redis: { url: redis.url, prefix: `${redis.prefix}sess:` } } },
      upstreams: { remote: { http: { url: remote.url } } },
    };
    // JSON is YAML.
    await writeFile(configFile, `${JSON.stringify(config, null, 2)}\n`);
    for (let slot = 0; slot < 3; slot++) ports.push(await freePort());
    // One after another: three compiling at once on a busy machine take longer than in turn.
    for (let slot = 0; slot < 3; slot++) await startSlot(slot);
    nginx = await startNginx(join(dir, 'nginx'), ports.map((port) => `127.0.0.1:${port}`));
  }, 240_000);

  afterAll(async () => {
    await Promise.allSettled(clients.splice(0).map((c) => c.close()));
    await Promise.allSettled(replicas.map((r) => r.kill()));
    await nginx?.close();
    await remote?.close();
    await redis?.close();
    await rm(dir, { recursive: true, force: true });
  }, 60_000);

  it('the SDK client works through it: list, call with progress, notifications on its GET stream, DELETE', async () => {
    const client = await connect();
    const logged: unknown[] = [];
    let heard: () => void = () => {};
    client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => {
      logged.push(notification.params);
      heard();
    });
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['remote__echo', 'remote__trigger-long-running-operation', 'remote__toggle-simulated-logging']));

    const progress: number[] = [];
    const slow = await client.callTool({ name: 'remote__trigger-long-running-operation', arguments: { duration: 0.6, steps: 3 } }, undefined, {
      onprogress: (p) => progress.push(p.progress),
      timeout: WAIT_MS,
    });
    expect(textOf(slow)).toMatch(/Steps: 3/);
    expect(progress).toEqual([1, 2, 3]);

    // Server-initiated log lines of the upstream (every 5 s) reach the client's GET stream,
    // whichever replica holds it; its calls land on every replica meanwhile.
    await client.setLoggingLevel('debug');
    const first = new Promise<void>((resolve) => (heard = resolve));
    await client.callTool({ name: 'remote__toggle-simulated-logging', arguments: {} });
    for (let i = 0; i < 6; i++) expect(textOf(await client.callTool({ name: 'remote__echo', arguments: { message: `m${i}` } }))).toBe(`Echo: m${i}`);
    await withTimeout(first, WAIT_MS, 'a log notification on the GET stream');
    await client.callTool({ name: 'remote__toggle-simulated-logging', arguments: {} });
    expect(logged.length).toBeGreaterThan(0);

    await terminateSession(client);
    await client.close();
    expect(await nginx.answered('DELETE', 200)).toBeGreaterThanOrEqual(1);
  }, 60_000);

  it('a request stream resumed with Last-Event-ID on any replica, not only the one that wrote it, replays the rest', async () => {
    const client = await connect();
    const session = (client.transport as StreamableHTTPClientTransport).sessionId!;
    const headers = { ...POST_HEADERS, 'mcp-session-id': session, 'mcp-protocol-version': LATEST };
    const res = await fetch(nginx.url, {
      method: 'POST',
      headers,
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'remote__trigger-long-running-operation', arguments: { duration: 0.6, steps: 3 }, _meta: { progressToken: 'p' } } }),
      signal: AbortSignal.timeout(WAIT_MS),
    });
    expect(res.headers.get('content-type')).toMatch(/text\/event-stream/);
    const events = new SseTextParser().push(await res.text());
    const withData = events.filter((e) => e.data !== undefined && e.data !== '');
    expect(withData.at(-1)?.data).toMatch(/Steps: 3/);
    const firstProgress = withData.find((e) => e.data!.includes('notifications/progress'))!;

    // Straight to each replica, past the balancer: every one replays what followed that event.
    for (const replica of replicas) {
      const resumed = await fetch(replica.url, { headers: { accept: 'text/event-stream', 'mcp-session-id': session, 'mcp-protocol-version': LATEST, 'last-event-id': firstProgress.id! }, signal: AbortSignal.timeout(WAIT_MS) });
      expect(resumed.status, replica.backend).toBe(200);
      const replayed = new SseTextParser().push(await resumed.text()).filter((e) => e.data !== undefined && e.data !== '');
      expect(replayed.map((e) => e.id), replica.backend).toEqual(withData.slice(withData.indexOf(firstProgress) + 1).map((e) => e.id));
    }
    await terminateSession(client);
    await client.close();
  }, 60_000);

  it('a replica killed under load costs only the calls in flight on it; every session goes on, its GET streams resume elsewhere', async () => {
    const sessions = await Promise.all(Array.from({ length: LOAD_SESSIONS }, () => connect()));
    const refusedResumptions = await nginx.answered('GET', 400, true);
    const load = new Load(sessions, CALLS_PER_SECOND);
    await load.ended(CALLS_PER_SECOND);
    const victim = replicas[0]!;
    const killSentAt = Date.now();
    process.kill(victim.pid, 'SIGKILL');
    // Until it is gone, connections it had accepted (its listen backlog too) carry calls to it.
    const killedAt = await poll(() => (alive(victim.pid) ? undefined : Date.now()), 'the killed replica to be gone', WAIT_MS, 5);
    await load.ended(2 * CALLS_PER_SECOND);
    const outcomes = await load.stop();
    await victim.kill();

    const failed = outcomes.filter((o) => o.error !== undefined);
    // Only calls that had started before it was gone failed, and no more than were in flight
    // between the signal and its end.
    expect(failed.filter((o) => o.startedAt > killedAt)).toEqual([]);
    expect(failed.length).toBeLessThanOrEqual(load.inFlightBetween(killSentAt, killedAt));
    expect(outcomes.filter((o) => o.startedAt > killedAt && o.error === undefined).length).toBeGreaterThan(CALLS_PER_SECOND);
    for (const [i, client] of sessions.entries()) expect(textOf(await client.callTool({ name: 'remote__echo', arguments: { message: `after ${i}` } }))).toBe(`Echo: after ${i}`);
    // GET streams of the dead replica were resumed with Last-Event-ID elsewhere, never refused.
    expect(await nginx.answered('GET', 400, true)).toBe(refusedResumptions);

    await startSlot(0);
    await Promise.allSettled(sessions.map(async (c) => (await terminateSession(c), await c.close())));
  }, 180_000);

  it('a rolling restart under load (SIGTERM, drain, a new replica in its place, one at a time) fails no call', async () => {
    const sessions = await Promise.all(Array.from({ length: LOAD_SESSIONS }, () => connect()));
    const load = new Load(sessions, CALLS_PER_SECOND);
    for (let slot = 0; slot < 3; slot++) {
      // A draining replica refuses new connections at once (nginx tries the next one) and
      // finishes what it holds; the new one starts on its port once it has exited.
      const leaving = replicas[slot]!;
      const code = await leaving.stop(30_000);
      expect(code, `exit of a draining replica; its last log lines: ${leaving.logs().slice(-5).map((l) => l.msg).join(' | ')}`).toBe(0);
      await startSlot(slot);
      await load.ended(CALLS_PER_SECOND / 2);
    }
    const outcomes = await load.stop();
    const failed = outcomes.filter((o) => o.error !== undefined);
    expect(failed.map((o) => o.error)).toEqual([]);
    expect(outcomes.length).toBeGreaterThan(CALLS_PER_SECOND);
    for (const [i, client] of sessions.entries()) expect(textOf(await client.callTool({ name: 'remote__echo', arguments: { message: `after ${i}` } }))).toBe(`Echo: after ${i}`);
    await Promise.allSettled(sessions.map(async (c) => (await terminateSession(c), await c.close())));
  }, 240_000);
});

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
    }),
  ]);
}
