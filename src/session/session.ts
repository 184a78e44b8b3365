// A downstream (client) session: what was negotiated, the upstream sessions opened for it, the
// client's requests in flight (so a cancellation finds them), and its GET stream, if open.
import type { JsonObject, JsonRpcId, JsonRpcMessage } from '../mcp/jsonrpc.js';
import type { SessionVersion } from '../mcp/versions.js';
import type { UpstreamClient } from '../upstream/client.js';

/** Somewhere to write messages for the client: an open SSE stream. */
export interface MessageSink {
  send(message: JsonRpcMessage): void;
  close(): void;
}

export interface SessionInfo {
  protocolVersion: SessionVersion;
  clientCapabilities: JsonObject;
  clientInfo: JsonObject;
}

export class DownstreamSession {
  readonly id: string;
  readonly info: SessionInfo;
  /** Upstream sessions that completed their handshake, by upstream name. */
  readonly upstreams = new Map<string, UpstreamClient>();
  /** What the gateway advertised to this client. */
  capabilities: JsonObject = {};
  readonly #inflight = new Map<JsonRpcId, AbortController>();
  #stream: MessageSink | undefined;
  #lastActive: number;
  #closed = false;

  constructor(id: string, info: SessionInfo, now: number) {
    this.id = id;
    this.info = info;
    this.#lastActive = now;
  }

  get closed(): boolean {
    return this.#closed;
  }

  touch(now: number): void {
    this.#lastActive = now;
  }

  /** When the session became idle, or undefined while a request or stream keeps it busy. */
  idleSince(): number | undefined {
    return this.#inflight.size > 0 || this.#stream ? undefined : this.#lastActive;
  }

  /** Registers a client request; the signal aborts when the client cancels it or the session ends. */
  begin(id: JsonRpcId): AbortSignal {
    const controller = new AbortController();
    this.#inflight.get(id)?.abort();
    this.#inflight.set(id, controller);
    return controller.signal;
  }

  end(id: JsonRpcId, signal: AbortSignal): void {
    // A later request may have reused the id; only remove our own entry.
    if (this.#inflight.get(id)?.signal === signal) this.#inflight.delete(id);
  }

  /** Cancels a client request in flight; false when there is none by that id. */
  cancel(id: JsonRpcId): boolean {
    const controller = this.#inflight.get(id);
    if (!controller) return false;
    this.#inflight.delete(id);
    controller.abort();
    return true;
  }

  /** Attaches the GET stream; false when one is already open (one per session). */
  attachStream(sink: MessageSink): boolean {
    if (this.#closed || this.#stream) return false;
    this.#stream = sink;
    return true;
  }

  detachStream(sink: MessageSink): void {
    if (this.#stream === sink) this.#stream = undefined;
  }

  /** Sends on the GET stream; false when none is open and the message was not delivered. */
  deliver(message: JsonRpcMessage): boolean {
    if (!this.#stream) return false;
    this.#stream.send(message);
    return true;
  }

  /** Ends everything the session holds. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const controller of this.#inflight.values()) controller.abort();
    this.#inflight.clear();
    this.#stream?.close();
    this.#stream = undefined;
    await Promise.allSettled([...this.upstreams.values()].map((client) => client.close()));
  }
}
