// The shared replay log (session/redis-log.ts) through a Redis outage, on a redis-server of this
// file's own (SIGKILLed, SIGSTOPped, restarted on its port): a DELETE taken while Redis is down
// reaches every replica once it is back (the tombstone written then, and a replica that was not
// subscribed when it was published reads it on subscribing); a replica remembers the ends it
// heard, so Redis restarted empty does not reopen them; a hung Redis holds no more than a
// bounded amount of unanswered writes; events not written are never replayed with a hole.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { RedisStreamLog } from '../../src/session/redis-log.js';
import { fingerprint } from '../../src/session/shared-log.js';
import { createLogger, type Logger } from '../../src/util/log.js';
import { startGateway, upstream, type TestGateway } from '../helpers/gateway.js';
import { exchange, initializeRaw, postRpc } from '../helpers/raw-http.js';
import { waitForExit, waitForLine } from '../helpers/processes.js';
import { freePort } from '../helpers/redis.js';

/** A redis-server this file starts, stops and restarts on one port (its data in `dir` when persistent). */
class OwnRedis {
  #child: ChildProcessWithoutNullStreams | undefined;
  private constructor(
    readonly port: number,
    readonly dir: string | undefined,
  ) {}

  static async start(persistent = false): Promise<OwnRedis> {
    const redis = new OwnRedis(await freePort(), persistent ? await mkdtemp(join(tmpdir(), 'switchyard-redis-')) : undefined);
    await redis.start();
    return redis;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Starts it again on its port: empty, or with what it saved to `dir`. */
  async start(): Promise<void> {
    const persistence = this.dir ? ['--appendonly', 'yes', '--dir', this.dir] : ['--appendonly', 'no'];
    const child = spawn('redis-server', ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', ...persistence], { stdio: 'pipe' });
    child.on('error', () => {});
    this.#child = child;
    await waitForLine(child, /Ready to accept connections/, 10_000);
    child.stdout.resume();
  }

  /** SIGKILL (nothing saved), or SIGTERM (a persistent one saves its data first); resolves once it exited. */
  async stop(signal: 'SIGKILL' | 'SIGTERM' = 'SIGKILL'): Promise<void> {
    const child = this.#child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGCONT');
    child.kill(signal);
    await waitForExit(child, 10_000);
  }

  pause(): void {
    this.#child?.kill('SIGSTOP');
  }

  resume(): void {
    this.#child?.kill('SIGCONT');
  }

  async close(): Promise<void> {
    await this.stop().catch(() => undefined);
    if (this.dir) await rm(this.dir, { recursive: true, force: true });
  }
}

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

async function ownRedis(persistent = false): Promise<OwnRedis> {
  const redis = await OwnRedis.start(persistent);
  cleanups.push(() => redis.close());
  return redis;
}

async function replica(keys: string[], redis: OwnRedis): Promise<TestGateway> {
  const gw = await startGateway({ sessions: { keys, store: { redis: { url: redis.url, prefix: 'outage:' } } }, upstreams: { paged: upstream.paged() } });
  cleanups.push(() => gw.close());
  return gw;
}

type Session = Awaited<ReturnType<typeof initializeRaw>>;
const ping = async (gw: TestGateway, session: Session): Promise<number> => (await postRpc(gw.url, { jsonrpc: '2.0', id: 1, method: 'ping' }, { headers: session.headers })).status;
const end = async (gw: TestGateway, session: Session): Promise<number> => (await exchange(gw.url, { method: 'DELETE', headers: session.headers })).status;
const held = async (gw: TestGateway): Promise<number> => ((await (await fetch(new URL('/healthz', gw.url))).json()) as { sessions: number }).sessions;

/** A log on `redis` whose lines are kept, and a wait (bounded) for one of them. */
function logOn(redis: OwnRedis, prefix: string, limits: { maxInFlightBytes?: number } = {}) {
  const lines: string[] = [];
  const logger: Logger = createLogger({ level: 'warn', write: (line) => lines.push(line) });
  const log = new RedisStreamLog({ url: redis.url, prefix, events: 100_000, bytes: 1_000_000_000, ttlMs: 60_000, logger, ...limits });
  cleanups.push(() => log.close());
  const logged = (pattern: RegExp, from = 0) => expect.poll(() => lines.slice(from).some((line) => pattern.test(line)), { timeout: 15_000, interval: 50 }).toBe(true);
  return { log, lines, logged };
}

async function ready(log: RedisStreamLog): Promise<void> {
  await expect.poll(() => log.read('s', 'none', 0).then(() => true, () => false), { timeout: 10_000, interval: 50 }).toBe(true);
}

describe('the shared log through a Redis outage', () => {
  it('enforces a DELETE made while Redis was down on every replica once it is back', async () => {
    const redis = await ownRedis();
    const keys = [randomBytes(32).toString('hex')];
    const [a, b] = [await replica(keys, redis), await replica(keys, redis)];
    const heldByBoth = await initializeRaw(a.url);
    const onlyOnA = await initializeRaw(a.url);
    const deletedOnB = await initializeRaw(b.url);
    expect(await ping(b, heldByBoth)).toBe(200);
    expect(await ping(a, deletedOnB)).toBe(200);

    await redis.stop();
    expect(await end(a, heldByBoth)).toBe(200);
    expect(await end(a, onlyOnA)).toBe(200);
    expect(await end(b, deletedOnB)).toBe(200);
    expect(await ping(a, heldByBoth)).toBe(404);
    // While Redis is down a takeover is not refused (availability): b opens what it cannot check.
    expect(await ping(b, onlyOnA)).toBe(200);

    await redis.start(); // empty: nothing of before the outage
    // Once back, the ends taken during the outage reach the replicas holding those sessions.
    await expect.poll(() => ping(b, heldByBoth), { timeout: 15_000, interval: 100 }).toBe(404);
    await expect.poll(() => ping(b, onlyOnA), { timeout: 15_000, interval: 100 }).toBe(404);
    await expect.poll(() => held(a), { timeout: 15_000, interval: 100 }).toBe(0);
    expect(await held(b)).toBe(0);
    expect(await ping(a, deletedOnB)).toBe(404);
  }, 60_000);

  it('keeps an end a replica heard, so Redis restarted empty does not reopen the id there', async () => {
    const redis = await ownRedis();
    const keys = [randomBytes(32).toString('hex')];
    const [a, b] = [await replica(keys, redis), await replica(keys, redis)];
    const ended = await initializeRaw(a.url);
    const marker = await initializeRaw(a.url);
    expect(await ping(b, marker)).toBe(200);
    expect(await end(a, ended)).toBe(200);
    expect(await end(a, marker)).toBe(200);
    // b let the marker go: it heard the end published before it (b never held `ended`).
    await expect.poll(() => held(b), { timeout: 10_000, interval: 50 }).toBe(0);

    await redis.stop();
    await redis.start();
    expect(await ping(b, ended)).toBe(404);
  }, 60_000);

  it('gives a replica subscribing after an end was written that end, read from Redis', async () => {
    const redis = await ownRedis();
    const writer = logOn(redis, 'late:');
    await ready(writer.log);
    await redis.stop();
    writer.log.endSession('ended-in-outage', 60_000);
    await redis.start();
    // The tombstone is written once Redis is back...
    await expect.poll(() => writer.log.sessionEnded('ended-in-outage'), { timeout: 15_000, interval: 100 }).toBe(true);
    // ...and a replica that was not listening when it was published still hears of it.
    const heard: string[] = [];
    const late = logOn(redis, 'late:');
    late.log.onSessionEnded = (ended) => heard.push(ended);
    await expect.poll(() => heard, { timeout: 10_000, interval: 50 }).toContain(fingerprint('ended-in-outage'));
  }, 60_000);

  it('stops writing once a hung Redis is noticed, and replays nothing across what it dropped', async () => {
    const redis = await ownRedis();
    const { log, logged, lines } = logOn(redis, 'hang:');
    await ready(log);
    log.begin('s', 'k', 'standalone', []);
    log.append('s', 'k', 1, 'first');
    await expect.poll(async () => (await log.read('s', 'k', 0))?.events.length, { timeout: 10_000 }).toBe(1);

    redis.pause();
    let seq = 1;
    while (seq < 51) log.append('s', 'k', ++seq, 'small');
    // Nothing answers (the connection stays open): noticed when writes time out.
    await logged(/Redis unreachable/);
    const data = 'x'.repeat(100_000);
    // 20 MB more: sent, it would wait in memory until Redis answers.
    while (seq < 251) log.append('s', 'k', ++seq, data);
    const from = lines.length;
    redis.resume();
    await logged(/Redis reachable again/, from);
    const after = await log.read('s', 'k', 1);
    expect(after?.events.length).toBeLessThanOrEqual(50);
    // The events dropped are not replayed around: a resumption from before them is refused.
    expect(after?.dropped).toBe(true);
  }, 60_000);

  it('holds at most its cap of unanswered writes before the hang is noticed', async () => {
    const redis = await ownRedis();
    const { log, logged, lines } = logOn(redis, 'cap:', { maxInFlightBytes: 1_000_000 });
    await ready(log);
    log.begin('s', 'k', 'standalone', []);
    log.append('s', 'k', 1, 'first');
    await expect.poll(async () => (await log.read('s', 'k', 0))?.events.length, { timeout: 10_000 }).toBe(1);

    redis.pause();
    const data = 'x'.repeat(100_000);
    // 10 MB at once, before any write could time out.
    for (let seq = 2; seq <= 101; seq++) log.append('s', 'k', seq, data);
    await logged(/Redis unreachable/);
    const from = lines.length;
    redis.resume();
    await logged(/Redis reachable again/, from);
    const after = await log.read('s', 'k', 1);
    // What was sent before the cap stopped it: a megabyte, not the ten appended.
    expect(after?.events.length).toBeLessThanOrEqual(10);
    expect(after?.dropped).toBe(true);
  }, 60_000);

  it('replays nothing across events dropped while Redis refused connections', async () => {
    const redis = await ownRedis(true);
    const { log, logged, lines } = logOn(redis, 'refused:');
    await ready(log);
    log.begin('s', 'k', 'standalone', []);
    log.append('s', 'k', 1, 'one');
    log.append('s', 'k', 2, 'two');
    await expect.poll(async () => (await log.read('s', 'k', 0))?.events.length, { timeout: 10_000 }).toBe(2);
    await redis.stop('SIGTERM'); // saves what it holds
    log.append('s', 'k', 3, 'three');
    log.append('s', 'k', 4, 'four');
    const from = lines.length;
    await redis.start();
    await logged(/Redis reachable again/, from);
    log.append('s', 'k', 5, 'five');
    await expect.poll(async () => (await log.read('s', 'k', 4))?.events.map((e) => e.seq), { timeout: 10_000 }).toEqual([5]);
    // 3 and 4 never reached Redis: from 2 the stream is not resumable elsewhere (its own replica still has them).
    expect((await log.read('s', 'k', 2))?.dropped).toBe(true);
    expect((await log.read('s', 'k', 4))?.dropped).toBe(false);
  }, 60_000);
});
