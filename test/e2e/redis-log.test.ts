// The shared replay log in Redis (session/redis-log.ts): a stream a client's connection holds on
// a replica stays readable however long it is quiet (a GET stream idle past sessions.idleTimeout
// was then unknown to the replica a client resumed on: 400), and one nobody holds expires.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisStreamLog } from '../../src/session/redis-log.js';
import { silentLogger } from '../../src/util/log.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';

/** Longer than the log's heartbeat (1 s), which renews what is held. */
const TTL_MS = 2_000;
let redis: TestRedis;
let log: RedisStreamLog;

beforeAll(async () => {
  redis = await startRedis();
  log = new RedisStreamLog({ url: redis.url, prefix: redis.prefix, events: 100, bytes: 1_000_000, ttlMs: TTL_MS, logger: silentLogger });
  // Ready once a read is answered (offline, it is refused at once); bounded.
  for (let tries = 0; !(await log.read('s', 'none', 0).then(() => true, () => false)); tries++) {
    if (tries > 100) throw new Error('Redis never became ready');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
});

afterAll(async () => {
  await log?.close();
  await redis?.close();
});

describe('the replay log in Redis', () => {
  it('keeps a held stream past its TTL, and lets one nobody holds expire', async () => {
    log.begin('session-1', 'held', 'standalone', []);
    log.append('session-1', 'held', 1, '{"jsonrpc":"2.0","method":"notifications/message"}');
    log.hold('session-1', 'held', true);
    log.begin('session-1', 'loose', 'standalone', []);
    const started = Date.now();
    await expect.poll(() => log.read('session-1', 'held', 0), { timeout: 5_000 }).toBeDefined();
    // TTLs run on Redis's clock: the loose stream's expiry is the event waited for, bounded.
    await expect.poll(() => log.read('session-1', 'loose', 0), { timeout: 10_000, interval: 100 }).toBeUndefined();
    await expect.poll(() => Date.now() - started, { timeout: 10_000, interval: 100 }).toBeGreaterThan(2 * TTL_MS);
    expect(await log.read('session-1', 'held', 0)).toMatchObject({ kind: 'standalone', events: [{ seq: 1 }] });
    // Let go: it expires as any other.
    log.hold('session-1', 'held', false);
    await expect.poll(() => log.read('session-1', 'held', 0), { timeout: 10_000, interval: 100 }).toBeUndefined();
  });
});
