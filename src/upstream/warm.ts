// Children spawned ahead for an upstream's sessions (`upstreams.<name>.warm`), so a session's
// first request does not wait for a spawn. A server's initialize must carry the client's own
// capabilities and info, and a server is initialized once: so a child is spawned ahead, and
// initialized ahead only with the very parameters the upstream's latest session used (what its
// next session most likely sends); a session whose parameters are those gets it ready, any
// other session gets a spawned child and initializes it itself. Children primed for parameters
// no longer the latest are replaced.
//
// They follow the upstream's restart policy like every child: one that cannot be spawned, ends
// while it waits, or fails its handshake counts as a crash; the next is spawned after the
// restart backoff (on a timer: a spawn that fails at once must never become a loop of
// microtasks, which would starve the gateway's I/O), and `maxCrashes` within `window` is a crash
// loop that gives them up (the upstream is shown down) until a session of the upstream starts.
import type { JsonObject } from '../mcp/jsonrpc.js';
import { stableJson } from '../util/stable-json.js';
import type { Logger } from '../util/log.js';
import type { RestartPolicy } from '../transport/reconnecting.js';
import type { Transport } from '../transport/types.js';
import type { UpstreamClient } from './client.js';

export interface WarmDeps {
  /** A new (not yet started) transport to the upstream. */
  spawn(): Transport;
  /** A client on `transport`, initialized with `params`; it counts as a live upstream session. */
  prime(transport: Transport, params: JsonObject): { client: UpstreamClient; ready: Promise<void> };
  /** Whether one more child fits (maxProcesses), counting the primed ones as live already. */
  room(spawnedAhead: number): boolean;
  /** The upstream's `restart` policy: the backoff between failed children and the crash loop. */
  policy: RestartPolicy;
  /** A child failed (`crashLoop`: the last of a loop, and they are given up): the upstream is down for `reason`. */
  failed(reason: string, crashLoop: boolean): void;
  logger: Logger;
}

interface WarmChild {
  transport: Transport;
  started: boolean;
  /** Initialized ahead for these parameters (their key); `ready` once its handshake is done. */
  primed?: { key: string; client: UpstreamClient; ready: Promise<void> };
}

/**
 * A handed-over child is replaced this long after, not at once: spawning is synchronous work of
 * several milliseconds that would otherwise sit on the path of the very call it was handed to.
 */
const REFILL_DELAY_MS = 100;

/** A client initialized ahead (`ready` when its handshake is done), or a spawned child to initialize. */
export type Handed = { client: UpstreamClient; ready: Promise<void> } | { transport: Transport };

export class WarmChildren {
  readonly #want: number;
  readonly #deps: WarmDeps;
  readonly #children: WarmChild[] = [];
  /** The parameters of the upstream's latest session, to initialize children ahead with. */
  #latest: { key: string; params: JsonObject } | undefined;
  #closed = false;
  /** When children failed, within the policy's window (the crash loop's count). */
  readonly #failures: number[] = [];
  /** Consecutive failures: the backoff's exponent. */
  #attempt = 0;
  /** A crash loop gave them up: nothing is spawned until a session of the upstream starts. */
  #givenUp = false;
  /** The next fill, and when it is due: a refill or the backoff after a failure (never sooner). */
  #timer: NodeJS.Timeout | undefined;
  #due = 0;

  constructor(want: number, deps: WarmDeps) {
    this.#want = want;
    this.#deps = deps;
  }

  /** Children spawned ahead and not initialized (the primed ones are live sessions already). */
  get unprimed(): number {
    return this.#children.filter((child) => !child.primed).length;
  }

  /** Whether a crash loop gave them up. */
  get givenUp(): boolean {
    return this.#givenUp;
  }

  /** Spawns (and primes, when the latest parameters are known) up to `warm` children; not while a backoff runs. */
  fill(): void {
    if (this.#timer !== undefined || this.#givenUp) return;
    while (!this.#closed && this.#children.length < this.#want && this.#deps.room(this.unprimed)) {
      const transport = this.#deps.spawn();
      const child: WarmChild = { transport, started: false };
      this.#children.push(child);
      // Until a client takes the transport over (and this handler with it): a child that ends
      // while it waits (a crash before any handshake is not restarted) failed.
      transport.onclose = (reason) => this.#drop(child, 'a child spawned ahead ended', reason ?? new Error('it exited'));
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
   * A session of the upstream started (its handshake done): the backoff starts afresh, as after a
   * child's healthy spell, and children given up by a crash loop are spawned again.
   */
  started(): void {
    this.#attempt = 0;
    if (!this.#givenUp || this.#closed) return;
    this.#givenUp = false;
    this.#failures.length = 0;
    this.#schedule(REFILL_DELAY_MS);
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
    // One that ended since (its client closed it) is replaced.
    for (const child of this.#children.filter((c) => c.primed?.client.closed)) this.#drop(child);
    // One initialized ahead for these parameters (its handshake may still be finishing: waiting
    // for it beats a spawn), else one spawned ahead.
    const ready = this.#children.find((c) => c.primed?.key === key);
    if (ready) this.#children.splice(this.#children.indexOf(ready), 1);
    const handed: Handed | undefined = ready ? { client: ready.primed!.client, ready: ready.primed!.ready } : this.#spawned();
    // The others are initialized ahead for these parameters now.
    for (const child of this.#children) if (child.started && !child.primed) this.#prime(child);
    this.#schedule(REFILL_DELAY_MS);
    return handed;
  }

  close(): Promise<void>[] {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
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

  /**
   * Lets a child go: one replaced (no `why`), or one that failed (`why`), counted as a crash. A
   * child no longer held (handed over, replaced, closed) is none of this any more.
   */
  #drop(child: WarmChild, why?: string, err?: unknown): void {
    const at = this.#children.indexOf(child);
    if (at < 0 || this.#closed) return;
    this.#children.splice(at, 1);
    void (child.primed ? child.primed.client.close() : child.transport.close()).catch(() => {});
    if (why) this.#failed(why, err);
  }

  /** A child failed: the next waits the restart backoff, unless failures this close make a crash loop. */
  #failed(why: string, err: unknown): void {
    const { policy, logger } = this.#deps;
    const now = Date.now();
    const last = this.#failures.at(-1);
    if (last !== undefined && now - last >= policy.resetAfterMs) this.#attempt = 0;
    this.#failures.push(now);
    while (this.#failures.length > 0 && this.#failures[0]! < now - policy.windowMs) this.#failures.shift();
    const message = err instanceof Error ? err.message : String(err);
    if (this.#failures.length >= policy.maxCrashes) {
      this.#givenUp = true;
      clearTimeout(this.#timer);
      this.#timer = undefined;
      const reason = `crash loop: ${this.#failures.length} failed starts of children spawned ahead within ${policy.windowMs} ms (last: ${message})`;
      logger.error('children spawned ahead given up', { reason, err });
      this.#deps.failed(reason, true);
      return;
    }
    const base = Math.min(policy.maxDelayMs, policy.initialDelayMs * 2 ** this.#attempt);
    this.#attempt++;
    const delayMs = Math.round(base * (0.5 + Math.random() * 0.5));
    logger.warn(why, { err, retryInMs: delayMs });
    this.#deps.failed(message, false);
    this.#schedule(delayMs);
  }

  /** The next fill in `ms`, or later if one is due later already (a backoff is never cut short). */
  #schedule(ms: number): void {
    if (this.#closed || this.#givenUp) return;
    const due = Date.now() + ms;
    if (this.#timer !== undefined) {
      if (this.#due >= due) return;
      clearTimeout(this.#timer);
    }
    this.#due = due;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.fill();
    }, ms);
    this.#timer.unref();
  }
}
