// Children spawned ahead for an upstream's sessions (`upstreams.<name>.warm`), so a session's
// first request does not wait for a spawn. A server's initialize must carry the client's own
// capabilities and info, and a server is initialized once: so a child is spawned ahead, and
// initialized ahead only with the very parameters the upstream's latest session used (what its
// next session most likely sends); a session whose parameters are those gets it ready, any
// other session gets a spawned child and initializes it itself. Children primed for parameters
// no longer the latest are replaced.
import type { JsonObject } from '../mcp/jsonrpc.js';
import { stableJson } from '../util/stable-json.js';
import type { Logger } from '../util/log.js';
import type { Transport } from '../transport/types.js';
import type { UpstreamClient } from './client.js';

export interface WarmDeps {
  /** A new (not yet started) transport to the upstream. */
  spawn(): Transport;
  /** A client on `transport`, initialized with `params`; it counts as a live upstream session. */
  prime(transport: Transport, params: JsonObject): { client: UpstreamClient; ready: Promise<void> };
  /** Whether one more child fits (maxProcesses), counting the primed ones as live already. */
  room(spawnedAhead: number): boolean;
  logger: Logger;
}

interface WarmChild {
  transport: Transport;
  started: boolean;
  /** Initialized ahead for these parameters (their key); `ready` once its handshake is done. */
  primed?: { key: string; client: UpstreamClient; ready: Promise<void> };
}

/** A client initialized ahead (`ready` when its handshake is done), or a spawned child to initialize. */
/**
 * A handed-over child is replaced this long after, not at once: spawning is synchronous work of
 * several milliseconds that would otherwise sit on the path of the very call it was handed to.
 */
const REFILL_DELAY_MS = 100;

export type Handed = { client: UpstreamClient; ready: Promise<void> } | { transport: Transport };

export class WarmChildren {
  readonly #want: number;
  readonly #deps: WarmDeps;
  readonly #children: WarmChild[] = [];
  /** The parameters of the upstream's latest session, to initialize children ahead with. */
  #latest: { key: string; params: JsonObject } | undefined;
  #closed = false;

  constructor(want: number, deps: WarmDeps) {
    this.#want = want;
    this.#deps = deps;
  }

  /** Children spawned ahead and not initialized (the primed ones are live sessions already). */
  get unprimed(): number {
    return this.#children.filter((child) => !child.primed).length;
  }

  /** Spawns (and primes, when the latest parameters are known) up to `warm` children. */
  fill(): void {
    while (!this.#closed && this.#children.length < this.#want && this.#deps.room(this.unprimed)) {
      const transport = this.#deps.spawn();
      const child: WarmChild = { transport, started: false };
      this.#children.push(child);
      transport.start().then(
        () => {
          child.started = true;
          this.#prime(child);
        },
        (err: unknown) => this.#drop(child, 'a child spawned ahead did not start', err),
      );
    }
  }

  /**
   * The child for a session opening with `params`: one initialized ahead with exactly these, or
   * one spawned ahead to initialize, or none. These become the latest parameters.
   */
  take(params: JsonObject): Handed | undefined {
    const key = stableJson(params);
    if (this.#latest?.key !== key) {
      this.#latest = { key, params };
      // Primed for parameters no longer the latest: replaced by ones primed anew.
      for (const child of this.#children.filter((c) => c.primed && c.primed.key !== key)) this.#drop(child);
    }
    // One initialized ahead for these parameters (its handshake may still be finishing: waiting
    // for it beats a spawn), else one spawned ahead.
    const ready = this.#children.find((c) => c.primed?.key === key && !c.primed.client.closed);
    if (ready) this.#children.splice(this.#children.indexOf(ready), 1);
    const handed: Handed | undefined = ready ? { client: ready.primed!.client, ready: ready.primed!.ready } : this.#spawned();
    // The others are initialized ahead for these parameters now.
    for (const child of this.#children) if (child.started && !child.primed) this.#prime(child);
    setTimeout(() => this.fill(), REFILL_DELAY_MS).unref();
    return handed;
  }

  close(): Promise<void>[] {
    this.#closed = true;
    return this.#children.splice(0).map((child) => (child.primed ? child.primed.client.close() : child.transport.close()));
  }

  /** A started child not initialized yet (dead ones are dropped). */
  #spawned(): Handed | undefined {
    for (const child of [...this.#children]) {
      if (child.primed) continue;
      this.#children.splice(this.#children.indexOf(child), 1);
      if (child.transport.closed !== true) return { transport: child.transport };
    }
    return undefined;
  }

  #prime(child: WarmChild): void {
    const latest = this.#latest;
    if (!latest || this.#closed || !this.#children.includes(child) || child.primed) return;
    const { client, ready } = this.#deps.prime(child.transport, latest.params);
    child.primed = { key: latest.key, client, ready };
    ready.catch((err: unknown) => this.#drop(child, 'a child initialized ahead failed its handshake', err));
  }

  #drop(child: WarmChild, why?: string, err?: unknown): void {
    const at = this.#children.indexOf(child);
    if (at >= 0) this.#children.splice(at, 1);
    void (child.primed ? child.primed.client.close() : child.transport.close());
    if (why) this.#deps.logger.warn(why, { err });
    queueMicrotask(() => this.fill());
  }
}
