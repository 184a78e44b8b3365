// A fleet behind a real load balancer: Debian's nginx, round-robin with no affinity, in front of
// three gateway processes sharing session keys and one redis-server (sessions.store), with
// server-everything's own HTTP server upstream. The official SDK client's whole flow works
// through it; a replica killed under load costs only the calls in flight on it (nginx sends no
// POST a second time); a rolling restart under load fails no call: one at a time, a new replica
// joins nginx's servers, the old one leaves them, then gets SIGTERM and drains (what the Helm
// chart's rolling update, Service endpoints and preStop sleep do).
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { poll } from '../helpers/cli.js';
import { CALLS_PER_SECOND, LOAD_SESSIONS, Load, startFleet, WAIT_MS, type Fleet } from '../helpers/fleet.js';
import type { ReplicaProcess as Replica } from '../helpers/replica.js';
import { terminateSession, textOf } from '../helpers/gateway.js';
import { alive } from '../helpers/processes.js';
import { LATEST, POST_HEADERS } from '../helpers/raw-http.js';
import { SseTextParser } from '../helpers/sse-reader.js';

describe('three replicas behind nginx on one redis-server', () => {
  let fleet: Fleet;

  beforeAll(async () => {
    fleet = await startFleet();
  }, 240_000);

  afterAll(async () => {
    await fleet?.close();
  }, 60_000);

  it('the SDK client works through it: list, call with progress, notifications on its GET stream, DELETE', async () => {
    const client = await fleet.connect();
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
    expect(await fleet.nginx.answeredAtLeast('DELETE', 200, 1)).toBeGreaterThanOrEqual(1);
  }, 60_000);

  it('a request stream resumed with Last-Event-ID on any replica, not only the one that wrote it, replays the rest', async () => {
    const client = await fleet.connect();
    const session = (client.transport as StreamableHTTPClientTransport).sessionId!;
    const headers = { ...POST_HEADERS, 'mcp-session-id': session, 'mcp-protocol-version': LATEST };
    const res = await fetch(fleet.nginx.url, {
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
    for (const replica of fleet.replicas) {
      const resumed = await fetch(replica.url, { headers: { accept: 'text/event-stream', 'mcp-session-id': session, 'mcp-protocol-version': LATEST, 'last-event-id': firstProgress.id! }, signal: AbortSignal.timeout(WAIT_MS) });
      expect(resumed.status, replica.backend).toBe(200);
      const replayed = new SseTextParser().push(await resumed.text()).filter((e) => e.data !== undefined && e.data !== '');
      expect(replayed.map((e) => e.id), replica.backend).toEqual(withData.slice(withData.indexOf(firstProgress) + 1).map((e) => e.id));
    }
    await terminateSession(client);
    await client.close();
  }, 60_000);

  it('a replica killed under load costs only the calls in flight on it; every session goes on, its GET streams resume elsewhere', async () => {
    const sessions = await Promise.all(Array.from({ length: LOAD_SESSIONS }, () => fleet.connect()));
    const refusedResumptions = await fleet.nginx.answered('GET', 400, true);
    const load = new Load(sessions, CALLS_PER_SECOND);
    await load.ended(CALLS_PER_SECOND);
    const victim = fleet.replicas[0]!;
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
    expect(await fleet.nginx.answered('GET', 400, true)).toBe(refusedResumptions);

    await fleet.startSlot(0);
    await Promise.allSettled(sessions.map(async (c) => (await terminateSession(c), await c.close())));
  }, 180_000);

  it('a POST a replica took and never answered (it crashed) is not sent to another one: the client gets an error it may retry', async () => {
    const client = await fleet.connect();
    const session = (client.transport as StreamableHTTPClientTransport).sessionId!;
    const [victim, ...others] = fleet.replicas as [Replica, ...Replica[]];
    const resentBefore = await fleet.nginx.resent();
    // The victim first, the others only when it failed; stopped, it takes the request (its
    // kernel accepts the connection) and answers nothing until it is killed.
    await fleet.nginx.setBackends([victim.backend], others.map((r) => r.backend));
    try {
      process.kill(victim.pid, 'SIGSTOP');
      const answer = fetch(fleet.nginx.url, {
        method: 'POST',
        headers: { ...POST_HEADERS, 'mcp-session-id': session, 'mcp-protocol-version': LATEST },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'remote__echo', arguments: { message: 'once' } } }),
        signal: AbortSignal.timeout(WAIT_MS),
      });
      // Sent: it waits unread in a socket of the victim's.
      await poll(async () => ((await unreadBytes(Number(victim.url.port))) > 0 ? true : undefined), 'the request to wait unread at the stopped replica', WAIT_MS, 10);
      process.kill(victim.pid, 'SIGKILL');
      const res = await answer;
      expect(res.status).toBe(502);
      await res.body?.cancel();
      expect(await fleet.nginx.resent()).toEqual(resentBefore);
    } finally {
      await victim.kill();
      await fleet.startSlot(0);
      await fleet.nginx.setBackends(fleet.replicas.map((r) => r.backend));
    }
    expect(textOf(await client.callTool({ name: 'remote__echo', arguments: { message: 'after' } }))).toBe('Echo: after');
    await terminateSession(client);
    await client.close();
  }, 60_000);

  it('a rolling restart under load (a new replica in, the old one out of nginx, then SIGTERM and drain, one at a time) fails no call', async () => {
    const sessions = await Promise.all(Array.from({ length: LOAD_SESSIONS }, () => fleet.connect()));
    const load = new Load(sessions, CALLS_PER_SECOND);
    const gone: string[] = [];
    for (let slot = 0; slot < 3; slot++) {
      // As the chart's rolling update does: the new replica serves before the old one leaves
      // nginx's servers; once nothing nginx sent it before can still be on its way, SIGTERM: it
      // finishes what it holds (a straggler would be answered 503 unread) and exits.
      const leaving = await fleet.replace(slot, (since) => load.settled(since));
      const code = await leaving.stop(30_000);
      gone.push(...leaving.logs().filter((l) => l.level === 'warn' || l.level === 'error').map((l) => `${leaving.backend}: ${l.msg}`));
      expect(code, `exit of a draining replica; its last log lines: ${leaving.logs().slice(-5).map((l) => l.msg).join(' | ')}`).toBe(0);
      await load.ended(CALLS_PER_SECOND / 2);
    }
    const outcomes = await load.stop();
    const failed = outcomes.filter((o) => o.error !== undefined);
    const seen = `nginx resent ${JSON.stringify(await fleet.nginx.resent())}; its errors: ${(await fleet.nginx.problems()).filter((l) => !l.includes('(111: Connection refused)')).join('\n')}\nthe replicas' warnings: ${gone.join('\n')}`;
    expect(failed.map((o) => o.error), seen).toEqual([]);
    expect(outcomes.length).toBeGreaterThan(CALLS_PER_SECOND);
    for (const [i, client] of sessions.entries()) expect(textOf(await client.callTool({ name: 'remote__echo', arguments: { message: `after ${i}` } }))).toBe(`Echo: after ${i}`);
    await Promise.allSettled(sessions.map(async (c) => (await terminateSession(c), await c.close())));
  }, 240_000);
});

/** Bytes received and not yet read on the connections of local port `port` (from /proc/net/tcp). */
async function unreadBytes(port: number): Promise<number> {
  const table = await readFile('/proc/net/tcp', 'utf8');
  let unread = 0;
  for (const line of table.split('\n').slice(1)) {
    const [, local, , state, queues] = line.trim().split(/\s+/);
    if (local?.endsWith(`:${port.toString(16).toUpperCase().padStart(4, '0')}`) && state === '01') unread += parseInt(queues!.split(':')[1]!, 16);
  }
  return unread;
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
    }),
  ]);
}
