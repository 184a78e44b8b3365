// A transport that survives its connection: when a stdio child crashes (or an HTTP upstream
// forgets the session), it makes a fresh inner transport after an exponential backoff with
// jitter, replays the initialize handshake it saw pass through, and carries on. Requests in
// flight when the connection was lost are reported lost (ondisconnect) so they fail at once;
// requests sent during the restart wait for it. A forgotten session is reported renewed
// (onrenew): its requests in flight fail or are sent again on their own, but what it asked of
// the gateway is over. A crash loop gives up and closes for good; so does a loop of forgotten
// sessions (both count alike), so no upstream answer makes a tight loop. A connection lost
// before its first handshake completed is not restarted: it closes, and the handshake fails.
// Restart is this wrapper's whole job; the client and router never see a flag for it.
import { isRequest, isResponse, type JsonObject, type JsonRpcMessage, type JsonRpcRequest } from '../mcp/jsonrpc.js';
import { isRetrySafe } from '../mcp/methods.js';
import type { Logger } from '../util/log.js';
import { sendByPost, sendThen, TransportError, type SendDone, type SendOptions, type Transport } from './types.js';
import type { CancelSignal } from '../util/cancel.js';
import { after, later } from '../util/callbacks.js';

export interface RestartPolicy {
  /** First backoff delay; doubles per consecutive failure, with jitter. */
  initialDelayMs: number;
  maxDelayMs: number;
  /** This many crashes (or sessions the upstream forgot) within windowMs is a loop: stop restarting. */
  maxCrashes: number;
  windowMs: number;
  /** A connection that lived this long resets the backoff. */
  resetAfterMs: number;
}

const REINIT_ID_PREFIX = 'switchyard-reinit-';
const REINIT_TIMEOUT_MS = 30_000;

export class ReconnectingTransport implements Transport {
  readonly #make: () => Transport;
  readonly #policy: RestartPolicy;
  readonly #logger: Logger;
  readonly #restartOnCrash: boolean;
  #inner: Transport;
  #initialize: JsonRpcRequest | undefined;
  #protocolVersion: string | undefined;
  #ready: Promise<void> | undefined;
  #closed = false;
  #attempt = 0;
  #connectedAt = Date.now();
  #reinits = 0;
  #reinit: { id: string; resolve: (result: JsonObject) => void; reject: (err: Error) => void } | undefined;
  readonly #crashes: number[] = [];
  #started: Promise<void> | undefined;
  /** The owner's handshake completed once: a connection lost before that is not restarted. */
  #established = false;
  /** What the owner asked of the upstream's stream, applied to every new connection too. */
  #hold: boolean | undefined;

  onmessage?: Transport['onmessage'];
  onerror?: Transport['onerror'];
  onclose?: Transport['onclose'];
  ondisconnect?: Transport['ondisconnect'];
  onrenew?: Transport['onrenew'];
  onreconnect?: Transport['onreconnect'];

  /**
   * `restartOnCrash`: make a new connection when the current one ends unasked (stdio).
   * Either way, a session the upstream forgot (HTTP 404) is re-initialized.
   */
  constructor(make: () => Transport, options: { policy: RestartPolicy; logger: Logger; restartOnCrash: boolean; initialize?: JsonRpcRequest }) {
    this.#make = make;
    this.#policy = options.policy;
    this.#logger = options.logger;
    this.#restartOnCrash = options.restartOnCrash;
    // A resumed session never sent its initialize through here; the owner says what it was.
    this.#initialize = options.initialize;
    this.#inner = this.#wire(make());
  }

  get sessionId(): string | undefined {
    return this.#inner.sessionId;
  }

  /** Starts the first connection; again, the same start (a child spawned ahead is started once). */
  start(): Promise<void> {
    this.#started ??= this.#start();
    return this.#started;
  }

  async #start(): Promise<void> {
    this.#connectedAt = Date.now();
    await this.#inner.start();
  }

  /** Whether the connection ended for good (closed, or given up after a crash loop). */
  get closed(): boolean {
    return this.#closed;
  }

  setProtocolVersion(protocolVersion: string | undefined): void {
    this.#protocolVersion = protocolVersion;
    this.#inner.setProtocolVersion?.(protocolVersion);
  }

  sessionEstablished(protocolVersion: string): void {
    this.#established = true;
    this.#protocolVersion = protocolVersion;
    this.#inner.sessionEstablished?.(protocolVersion);
  }

  get cancelsByClosing(): boolean {
    return this.#inner.cancelsByClosing === true;
  }

  get streamsAnswers(): boolean {
    return this.#inner.streamsAnswers === true;
  }

  send(message: JsonRpcMessage, options?: SendOptions): Promise<void> {
    return sendByPost(this, message, options);
  }

  post(message: JsonRpcMessage, options: SendOptions | undefined, done: SendDone): void {
    if (isRequest(message) && message.method === 'initialize') this.#initialize = message;
    if (this.#ready) after(waitOrAbort(this.#ready, options?.cancel?.signal), () => this.#postNow(message, options, done), done);
    else this.#postNow(message, options, done);
  }

  /** Sends on the current connection; a lost session is recovered (#recover). No promise on the call's path. */
  #postNow(message: JsonRpcMessage, options: SendOptions | undefined, done: SendDone): void {
    if (this.#closed) return later(done, new TransportError('closed', 'transport closed'));
    const inner = this.#inner;
    sendThen(inner, message, options, (err) => {
      if (err === undefined) done();
      else this.#recover(err, inner, message, options).then(() => done(), (failed: unknown) => done(failed ?? err));
    });
  }

  async #recover(err: unknown, inner: Transport, message: JsonRpcMessage, options: SendOptions | undefined): Promise<void> {
    const expired = err instanceof TransportError && err.code === 'session_expired';
    // An exchange cut because a renewal replaced its session met the same expiry.
    const replaced = inner !== this.#inner && !options?.cancel?.signal.aborted;
    if ((!expired && !replaced) || this.#closed) throw err;
    // The upstream forgot our session: start a new one (once), and send again only what is safe
    // (a request that changes nothing: mcp/methods.ts, retrySafe).
    if (inner === this.#inner) this.#lost(err as Error, false);
    if (this.#closed) throw err; // a loop of lost sessions: given up
    if (!isRequest(message) || !isRetrySafe(message.method)) {
      throw expired ? err : new TransportError('session_expired', 'upstream session expired', 404);
    }
    if (this.#ready) await waitOrAbort(this.#ready, options?.cancel?.signal);
    await this.#inner.send(message, options);
  }

  async close(): Promise<void> {
    this.#closed = true;
    await this.#inner.close();
  }

  keepSession(): void {
    this.#inner.keepSession?.();
  }

  holdStream(hold: boolean): void {
    this.#hold = hold;
    this.#inner.holdStream?.(hold);
  }

  #wire(inner: Transport): Transport {
    inner.onmessage = (message, extra) => {
      if (inner !== this.#inner) return;
      // The answer to a replayed initialize is the wrapper's own business.
      if (isResponse(message) && this.#reinit && message.id === this.#reinit.id) {
        const waiter = this.#reinit;
        this.#reinit = undefined;
        if ('result' in message) waiter.resolve(message.result);
        else waiter.reject(new TransportError('closed', `re-initialize failed: ${message.error.message}`));
        return;
      }
      this.onmessage?.(message, extra);
    };
    inner.onerror = (err) => this.onerror?.(err);
    if (this.#hold !== undefined) inner.holdStream?.(this.#hold);
    inner.onclose = (reason) => {
      if (inner !== this.#inner || this.#closed) return;
      if (this.#reinit) {
        // Lost during the handshake: the reconnection loop counts it and tries again.
        const waiter = this.#reinit;
        this.#reinit = undefined;
        waiter.reject(reason ?? new TransportError('closed', 'closed during re-initialize'));
        return;
      }
      const expired = reason instanceof TransportError && reason.code === 'session_expired';
      if (!reason || (!this.#restartOnCrash && !expired)) {
        this.#closed = true;
        this.onclose?.(reason);
        return;
      }
      if (!expired && !this.#established) {
        // Crashed before its first handshake completed: that handshake fails with it, and its
        // owner (who would close the restarted child at once) decides what comes next.
        this.#closed = true;
        this.onclose?.(new TransportError('closed', `${reason.message}, before its handshake completed`, undefined, { cause: reason }));
        return;
      }
      this.#lost(reason, !expired);
    };
    return inner;
  }

  /**
   * Reports the loss and starts (once) the backoff and reconnection. A forgotten session counts
   * towards the loop like a crash, and is renewed at once only as the first loss since a healthy
   * spell: one that follows it soon after waits the backoff, whatever made the upstream say so.
   */
  #lost(reason: Error, crashed: boolean): void {
    if (this.#ready) return;
    if (this.#crashLoop()) {
      this.#closed = true;
      void this.#inner.close();
      // Worded alike either way: "crash loop" is what health and metrics look for.
      const losses = `${this.#crashes.length} ${crashed ? 'crashes' : 'losses of the upstream session'}`;
      this.onclose?.(new TransportError('closed', `crash loop: ${losses} within ${this.#policy.windowMs} ms (last: ${reason.message})`));
      return;
    }
    // After a crash nothing in flight will be answered; an expired HTTP session fails (or
    // retries) each request on its own. Either way what the old one asked is over: a late answer
    // would reach the new one, which numbers its requests from the start again.
    if (crashed) this.ondisconnect?.(reason);
    else this.onrenew?.(reason);
    let wait = 0;
    if (crashed || this.#attempt > 0) wait = this.#backoff();
    else this.#attempt++; // the next loss before resetAfterMs waits
    const ready = this.#reconnect(reason, crashed, wait);
    this.#ready = ready;
    ready.then(
      () => {
        if (this.#ready === ready) this.#ready = undefined;
      },
      () => {},
    );
  }

  /** Counts a loss (a crash, a failed restart, a forgotten session): whether they make a loop. */
  #crashLoop(): boolean {
    const now = Date.now();
    if (now - this.#connectedAt >= this.#policy.resetAfterMs) this.#attempt = 0;
    this.#crashes.push(now);
    while (this.#crashes.length > 0 && this.#crashes[0]! < now - this.#policy.windowMs) this.#crashes.shift();
    return this.#crashes.length >= this.#policy.maxCrashes;
  }

  async #reconnect(reason: Error, crashed: boolean, wait: number): Promise<void> {
    discard(this.#inner);
    for (;;) {
      if (wait > 0) await delay(wait);
      if (this.#closed) throw new TransportError('closed', 'transport closed');
      this.#logger.warn(crashed ? 'restarting upstream' : 're-initializing upstream session', { reason, attempt: this.#attempt });
      const inner = this.#wire(this.#make());
      this.#inner = inner;
      try {
        const result = await this.#handshake(inner);
        this.#connectedAt = Date.now();
        this.onreconnect?.(result);
        return;
      } catch (err) {
        // Its close must not read as the owner's (a transport that closes without a reason).
        discard(inner);
        crashed = true;
        if (this.#crashLoop()) {
          this.#closed = true;
          this.onclose?.(new TransportError('closed', `crash loop: upstream failed to restart (${(err as Error).message})`));
          throw err;
        }
        wait = this.#backoff();
      }
    }
  }

  /** Replays the initialize handshake on a new inner transport; resolves with its result. */
  async #handshake(inner: Transport): Promise<JsonObject> {
    await inner.start();
    if (!this.#initialize) {
      // Nothing to replay (a 2026-07-28 server has no handshake): the version carries over.
      if (this.#protocolVersion) inner.sessionEstablished?.(this.#protocolVersion);
      return {};
    }
    const id = `${REINIT_ID_PREFIX}${++this.#reinits}`;
    let timer: NodeJS.Timeout | undefined;
    const answered = new Promise<JsonObject>((resolve, reject) => {
      this.#reinit = { id, resolve, reject };
      timer = setTimeout(() => reject(new TransportError('closed', 're-initialize timed out')), REINIT_TIMEOUT_MS);
    });
    // The child may die while its initialize is still being sent: the answer is then refused
    // before the send fails, and only the send's failure is awaited (and thrown) below.
    answered.catch(() => {});
    try {
      await inner.send({ ...this.#initialize, id });
      const result = await answered;
      await inner.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      if (this.#protocolVersion) inner.sessionEstablished?.(this.#protocolVersion);
      return result;
    } finally {
      clearTimeout(timer);
      this.#reinit = undefined;
    }
  }

  #backoff(): number {
    const base = Math.min(this.#policy.maxDelayMs, this.#policy.initialDelayMs * 2 ** this.#attempt);
    this.#attempt++;
    return Math.round(base * (0.5 + Math.random() * 0.5));
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function waitOrAbort(promise: Promise<void>, signal: CancelSignal | undefined): Promise<void> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(new TransportError('closed', 'request abandoned'));
  return new Promise((resolve, reject) => {
    const onAbort = (): void => reject(new TransportError('closed', 'request abandoned'));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      () => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}

/** Closes a connection given up on, deaf first: nothing it reports any more is the wrapper's. */
function discard(inner: Transport): void {
  inner.onclose = undefined;
  inner.onmessage = undefined;
  inner.onerror = undefined;
  void inner.close().catch(() => {});
}
