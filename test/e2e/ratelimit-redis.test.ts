// Rate limits through a real Redis: one limit shared by two gateway processes, the local
// fallback while Redis is unreachable (logged once) and the return to shared buckets, a command
// that timed out, and no "connected" before Redis has answered.
import { writeFile } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { poll, startCli } from '../helpers/cli.js';
import { upstream } from '../helpers/gateway.js';
import { FIXTURES, NODE } from '../helpers/paths.js';
import { callPid, FALLBACK_LOG, health, logged, ok, openSession, RATE_LIMITED, RECOVERED_LOG, refused, storeState, useRateLimitRig } from '../helpers/ratelimit.js';
import { freePort, startRedis } from '../helpers/redis.js';

const { cleanup, scratch, start, connect, redisOn, redisClient } = useRateLimitRig();

describe('the Redis store', () => {
  it('holds one limit across two gateway processes sharing a Redis', async () => {
    const redis = await startRedis();
    cleanup.push(() => redis.close());
    const file = join(scratch(), 'shared.yaml');
    const config = {
      upstreams: { rogue: { stdio: { command: NODE, args: [join(FIXTURES, 'rogue-server.mjs')] } } },
      rateLimits: { perClient: { rate: 3, per: '1m', burst: 3 }, store: { redis: { url: redis.url, prefix: redis.prefix } } },
    };
    // JSON is YAML.
    await writeFile(file, `${JSON.stringify(config, null, 2)}\n`);
    const gateways = await Promise.all([startCli(file), startCli(file)]);
    for (const cli of gateways) cleanup.push(() => cli.stop());
    const [one, two] = gateways as [(typeof gateways)[0], (typeof gateways)[0]];
    expect(one.url.port).not.toBe(two.url.port);

    // "listening" comes before the Redis connection is up (a gateway never waits for Redis to serve).
    for (const cli of gateways) await storeState(cli.url, 'connected');
    for (const cli of gateways) expect((await health(cli.url)).rateLimits).toEqual({ store: 'redis', state: 'connected', since: expect.any(String) });
    const onOne = await openSession(one.url);
    const onTwo = await openSession(two.url);

    await ok(onOne, callPid(1, 1));
    await ok(onTwo, callPid(2, 2));
    await ok(onOne, callPid(3, 3));
    const res = await refused(onTwo, callPid(4, 4));
    expect(res.headers.get('ratelimit-policy')).toBe('"per-client";q=3;w=60');
    expect(res.headers.get('retry-after')).toBe('20');
    expect(await res.json()).toMatchObject({ id: 4, error: { code: RATE_LIMITED } });
    await (await refused(onOne, callPid(5, 5))).body?.cancel();

    // The bucket is the one in Redis, under the configured prefix.
    const inspect = redisClient(redis.url);
    expect(Number(await inspect.hget(`${redis.prefix}client:anonymous`, 'tokens'))).toBeLessThan(1);
    for (const cli of gateways) expect((await health(cli.url)).rateLimits.state).toBe('connected');
  });

  it('falls back to local buckets while Redis is unreachable, logs it once, and returns when Redis is back', async () => {
    const port = await freePort();
    const prefix = `fallback-${process.pid}:`;
    const gw = await start({
      upstreams: { rogue: upstream.rogue() },
      rateLimits: { perClient: { rate: 2, per: '1m', burst: 2 }, store: { redis: { url: `redis://127.0.0.1:${port}`, prefix } } },
    });
    await storeState(gw.url, 'fallback');

    // Limited all the same, by this process alone.
    const session = await openSession(gw.url);
    await ok(session, callPid(1, 1));
    await ok(session, callPid(2, 2));
    const res = await refused(session, callPid(3, 3));
    expect(res.headers.get('retry-after')).toBe('30');
    expect(res.headers.get('ratelimit')).toBe('"per-client";r=0;t=30');
    await res.body?.cancel();
    expect(logged(gw, FALLBACK_LOG)).toHaveLength(1);
    expect(logged(gw, FALLBACK_LOG)[0]!.level).toBe('error');

    const redis = await redisOn(port);
    await storeState(gw.url, 'connected');
    expect(logged(gw, RECOVERED_LOG)).toHaveLength(1);
    expect(logged(gw, FALLBACK_LOG)).toHaveLength(1);
    // Requests use Redis again: the bucket there is new (local buckets are not carried over).
    await ok(session, callPid(4, 4));
    const inspect = redisClient(redis.url);
    expect(await inspect.hget(`${prefix}client:anonymous`, 'tokens')).toBe('1');

    // A second outage is a second transition, logged once more.
    await redis.stop();
    await storeState(gw.url, 'fallback');
    expect(logged(gw, FALLBACK_LOG)).toHaveLength(2);
  });

  it('logs the fallback once however many reconnection attempts fail', async () => {
    // A "Redis" that accepts each connection and hangs up at once, so attempts can be counted.
    let attempts = 0;
    const sockets = new Set<Socket>();
    const hangUp: Server = createServer((socket) => {
      attempts++;
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.destroy();
    });
    await new Promise<void>((resolve) => hangUp.listen(0, '127.0.0.1', resolve));
    cleanup.push(async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => hangUp.close(() => resolve()));
    });
    const { port } = hangUp.address() as { port: number };
    const gw = await start({
      upstreams: { rogue: upstream.rogue() },
      rateLimits: { perClient: { rate: 2, per: '1m', burst: 2 }, store: { redis: { url: `redis://127.0.0.1:${port}`, prefix: 'hangup:' } } },
    });

    await poll(() => (attempts >= 4 ? true : undefined), 'four connection attempts', 10_000, 25);
    expect((await health(gw.url)).rateLimits.state).toBe('fallback');
    expect(logged(gw, FALLBACK_LOG)).toHaveLength(1);
    expect(logged(gw, RECOVERED_LOG)).toHaveLength(0);
  });

  // BUG (src/ratelimit/redis-store.ts take/#set): a failed command (here a timeout while Redis
  // is paused for 1.5 s) switches to local buckets, and only the connection's 'ready' event
  // switches back. The connection never dropped, so 'ready' never comes: the gateway limits
  // alone, for good, while /healthz says fallback. (The paused script also ran once Redis
  // resumed, so that request took a token in Redis as well as a local one.)
  it('returns to Redis after a command that timed out once the server answers again', async () => {
    const redis = await redisOn(await freePort());
    const prefix = `pause-${process.pid}:`;
    const gw = await start({
      upstreams: { rogue: upstream.rogue() },
      rateLimits: { perClient: { rate: 100, per: '1m', burst: 100 }, store: { redis: { url: redis.url, prefix } } },
    });
    await storeState(gw.url, 'connected');
    const session = await openSession(gw.url);
    await ok(session, callPid(1, 1));

    const admin = redisClient(redis.url);
    expect(await admin.call('CLIENT', 'PAUSE', '1500', 'WRITE')).toBe('OK');
    await ok(session, callPid(2, 2));
    expect((await health(gw.url)).rateLimits.state).toBe('fallback');

    // The pause ends 1.5 s after it began; Redis then answers at once on the same connection.
    // Requests keep coming: whether they or a background probe bring the store back.
    let id = 10;
    await poll(
      async () => {
        await ok(session, callPid(++id, id));
        return (await health(gw.url)).rateLimits.state === 'connected' ? true : undefined;
      },
      'the rate-limit store to be connected again',
      5_000,
      100,
    );
  });

  // BUG (src/ratelimit/redis-store.ts constructor): the state starts as 'connected' before Redis
  // has answered anything. Until the connection attempt fails (connectTimeout, 2 s, for a server
  // that never answers) /healthz says connected while take() quietly uses local buckets.
  it('does not report connected before Redis has answered', async () => {
    const sockets = new Set<Socket>();
    const silent: Server = createServer((socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    cleanup.push(async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    });
    const { port } = silent.address() as { port: number };
    const gw = await start({
      upstreams: { rogue: upstream.rogue() },
      rateLimits: { perClient: { rate: 2, per: '1m', burst: 2 }, store: { redis: { url: `redis://127.0.0.1:${port}`, prefix: 'silent:' } } },
    });
    await poll(() => (sockets.size > 0 ? true : undefined), 'the gateway to connect to the silent server', 5_000, 10);
    expect((await health(gw.url)).rateLimits.state).not.toBe('connected');
  });
});
