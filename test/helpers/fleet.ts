// A fleet behind a real load balancer for the fleet tests: Debian's nginx, round-robin with no
// affinity, in front of three gateway processes sharing session keys and one redis-server
// (sessions.store), with server-everything's own HTTP server upstream; and a steady load of
// remote__echo calls across a few sessions.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { startReplica, type ReplicaProcess as Replica } from './replica.js';
import { connectClient, textOf } from './gateway.js';
import { startOwnEverything, type OwnEverything } from './everything-own.js';
import { startNginx, type Nginx } from './nginx.js';
import { freePort, startRedis, type TestRedis } from './redis.js';

export const WAIT_MS = 20_000;
/** What the machine carries: calls per second offered, across the load's sessions. */
export const CALLS_PER_SECOND = 100;
export const LOAD_SESSIONS = 5;

export interface CallOutcome {
  startedAt: number;
  endedAt: number;
  error?: string;
}

/** Sessions calling remote__echo at a steady pace, each call awaited, until stopped. */
export class Load {
  readonly outcomes: CallOutcome[] = [];
  #running = true;
  #ended = 0;
  #waiters: { count: number; wake: () => void }[] = [];
  #settling: { at: number; wake: () => void }[] = [];
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

  /** Resolves once every call started before `at` has ended. */
  settled(at: number): Promise<void> {
    return new Promise((wake) => {
      this.#settling.push({ at, wake });
      this.#wakeSettled();
    });
  }

  #wakeSettled(): void {
    for (const waiter of this.#settling.filter((w) => !this.outcomes.some((o) => o.startedAt < w.at && o.endedAt === Infinity))) {
      this.#settling.splice(this.#settling.indexOf(waiter), 1);
      waiter.wake();
    }
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
      this.#wakeSettled();
      const wait = startedAt + gapMs - Date.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }
}

export interface Fleet {
  readonly nginx: Nginx;
  readonly redis: TestRedis;
  /** The replica in each slot; a restarted one takes its slot's port. */
  readonly replicas: Replica[];
  /** Starts a replica in `slot` (on the slot's port, its last one gone). */
  startSlot(slot: number): Promise<void>;
  /**
   * Replaces the replica in `slot` as a Kubernetes rolling update does (maxSurge 1): starts a new
   * one on a port of its own and adds it to nginx's servers (in effect once a request reached
   * it), then takes the old one out (the endpoints update), awaits `settled` (what nginx may
   * still have sent it before), and returns it, still running, for its SIGTERM.
   */
  replace(slot: number, settled: (since: number) => Promise<void>): Promise<Replica>;
  /** An SDK client through nginx, closed with the fleet. */
  connect(): Promise<Client>;
  close(): Promise<void>;
}

/** Three replicas, nginx in front, one redis-server, server-everything's HTTP server behind. */
export async function startFleet(): Promise<Fleet> {
  const dir = await mkdtemp(join(tmpdir(), 'switchyard-fleet-'));
  const [redis, remote]: [TestRedis, OwnEverything] = await Promise.all([startRedis(), startOwnEverything()]);
  const configFile = join(dir, 'gateway.yaml');
  const config = {
    health: { probeInterval: 0 },
    shutdown: { gracePeriod: '5s' },
    sessions: { keys: [randomBytes(36).toString('base64url')], retry: '300ms', store: { redis: { url: redis.url, prefix: `${redis.prefix}sess:` } } },
    upstreams: { remote: { http: { url: remote.url } } },
  };
  // JSON is YAML.
  await writeFile(configFile, `${JSON.stringify(config, null, 2)}\n`);
  const replicas: Replica[] = [];
  const ports: number[] = [];
  const clients: Client[] = [];
  const startSlot = async (slot: number): Promise<void> => {
    replicas[slot] = await startReplica(configFile, ports[slot]);
  };
  const leaving: Replica[] = [];
  for (let slot = 0; slot < 3; slot++) ports.push(await freePort());
  // One after another: three compiling at once on a busy machine take longer than in turn.
  for (let slot = 0; slot < 3; slot++) await startSlot(slot);
  const nginx = await startNginx(join(dir, 'nginx'), ports.map((port) => `127.0.0.1:${port}`));
  return {
    nginx,
    redis,
    replicas,
    startSlot,
    async replace(slot, settled) {
      const old = replicas[slot]!;
      leaving.push(old);
      const next = await startReplica(configFile, 0);
      replicas[slot] = next;
      await nginx.setBackends([...replicas, old].map((r) => r.backend));
      await nginx.reached(next.backend);
      await nginx.setBackends(replicas.map((r) => r.backend));
      // From here no worker of nginx sends it anything new; calls begun before may still be on
      // their way to it.
      await settled(Date.now());
      ports[slot] = Number(next.url.port);
      return old;
    },
    connect: async () => {
      const client = await connectClient(nginx.url);
      clients.push(client);
      return client;
    },
    close: async () => {
      await Promise.allSettled(clients.splice(0).map((c) => c.close()));
      await Promise.allSettled([...replicas, ...leaving].map((r) => r.kill()));
      await nginx.close();
      await remote.close();
      await redis.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
