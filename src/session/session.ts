// A downstream (client) session: what was negotiated, the upstream sessions opened for it, the
// client's requests in flight (so a cancellation finds them), the gateway's own requests to the
// client (server-initiated ones it relays), and the session's SSE streams.
import type { JsonObject, JsonRpcId, JsonRpcMessage, ProgressToken } from '../mcp/jsonrpc.js';
import { PendingRequests, type Deadlines } from '../mcp/pending.js';
import type { SessionVersion } from '../mcp/versions.js';
import type { Principal } from '../auth/principal.js';
import type { Access } from '../policy/policy.js';
import type { UpstreamClient } from '../upstream/client.js';
import { EventLog, SessionStream, type LogLimits } from './streams.js';
import { Cancellation, type CancelSignal } from '../util/cancel.js';

export interface SessionInfo {
  protocolVersion: SessionVersion;
  clientCapabilities: JsonObject;
  clientInfo: JsonObject;
  /** The principal that opened the session; only it may use the session. */
  principal?: string;
}

/** A request the gateway sent to the client on an upstream's behalf. */
export interface ClientRequest {
  upstream: string;
  /** The id the upstream gave it. */
  upstreamId: JsonRpcId;
  method: string;
  /** The upstream's progress token for it; the client sees the gateway's request id instead. */
  progressToken: ProgressToken | undefined;
  /** The upstream task it relates to, as the client sees it and as the upstream knows it. */
  relatedTask: { exposed: string; local: string } | undefined;
}

/** What a session learned of one tool from its upstream session's list (see router/tool-facts.ts). */
export interface ToolFact {
  /** The fact's content (destructiveness and schema text): equal keys, equal facts. */
  readonly key: string;
  /** The inputSchema, when small enough to be checked. */
  readonly schema: JsonObject | undefined;
  readonly destructive: boolean;
}

/** The names an upstream session lists, with what is known of each (tools: their facts). */
export interface KnownNames {
  /** Undefined while the list could not be read (calls then go on; the upstream answers). */
  names: Map<string, ToolFact | undefined> | undefined;
  readAt: number;
}

export interface ListView {
  /** A hash over the pages seen so far, in order. */
  fingerprint: string;
  /** The client followed nextCursor to the end. */
  complete: boolean;
}

/** Request streams kept for resumption after their response; older ones are forgotten. */
const MAX_DONE_STREAMS = 100;
/** Client-side task ids remembered, to route the client's notifications/tasks/status. */
const MAX_CLIENT_TASKS = 1_000;

export class DownstreamSession {
  /** The Mcp-Session-Id (a self-describing token when session keys are configured). */
  id: string;
  readonly info: SessionInfo;
  /** Upstream sessions that completed their handshake, by upstream name. */
  readonly upstreams = new Map<string, UpstreamClient>();
  /** Upstreams that could not be opened for this session, and why (tried again on use). */
  readonly leftOut = new Map<string, { reason: string; at: number }>();
  /** Upstreams served by a shared child: released, never closed, when the session ends. */
  readonly shared = new Map<string, () => void>();
  /** What the gateway advertised to this client. */
  capabilities: JsonObject = {};
  /** The upstreams' instructions, merged. */
  instructions: string | undefined;
  /**
   * The gateway's own session for a 2026-07-28 client: it has no id the client knows and no GET
   * stream; what would go there reaches `ondeliver` (its subscriptions/listen streams).
   */
  stateless = false;
  ondeliver: ((message: JsonRpcMessage) => void) | undefined;
  /** Who opened the session (with auth configured). */
  principal: Principal | undefined;
  /** What its teams may see and call; set at initialize and on a policy reload. */
  access!: Access;
  /** Requests the gateway relayed to the client, by the id the gateway gave them. */
  readonly clientRequests = new PendingRequests<ClientRequest>();
  /** Tasks the client created for an upstream's requests: client task id → upstream name. */
  readonly clientTasks = new Map<string, string>();
  /**
   * What the client has seen of each upstream's lists (upstream → list kind → fingerprint), so
   * that after an upstream restarts the client hears list_changed only if something differs.
   */
  readonly listViews = new Map<string, Map<string, ListView>>();
  /**
   * The tools and prompts each upstream session lists (its own names), learned from the lists
   * this session read: a name not among them is unknown, exactly like a hidden one. Lists
   * differ between sessions (servers offer capability-gated tools), so this is per session, and
   * so are the facts of each tool (its schema, its destructiveness): what one session learned
   * never decides for another.
   */
  readonly known: Record<'tools' | 'prompts', Map<string, KnownNames>> = { tools: new Map(), prompts: new Map() };
  /** Resource URIs (the upstream's own) the client subscribed to, per upstream: renewed after a restart. */
  readonly subscriptions = new Map<string, Set<string>>();
  /** The level the client set with logging/setLevel: renewed after a restart. */
  logLevel: string | undefined;
  readonly #inflight = new Map<JsonRpcId, Cancellation>();
  readonly #limits: LogLimits;
  readonly #streams = new Map<string, SessionStream>();
  #log: EventLog | undefined;
  #standalone: SessionStream | undefined;
  #nextClientRequestId = 0;
  #lastActive: number;
  #closed = false;

  constructor(id: string, info: SessionInfo, now: number, limits: LogLimits) {
    this.id = id;
    this.info = info;
    this.#lastActive = now;
    this.#limits = limits;
  }

  get closed(): boolean {
    return this.#closed;
  }

  touch(now: number): void {
    this.#lastActive = now;
  }

  /** SSE connections open to this client, by kind. */
  openStreams(): { request: number; standalone: number } {
    let request = 0;
    for (const stream of this.#streams.values()) if (stream.attached) request++;
    return { request, standalone: this.#standalone?.attached ? 1 : 0 };
  }

  /** Client requests being processed. */
  get inflight(): number {
    return this.#inflight.size;
  }

  /** Closes every open connection after a retry hint; the streams stay resumable (drain). */
  hangUp(retryMs: number): void {
    this.#standalone?.hangUp(retryMs);
    for (const stream of this.#streams.values()) stream.hangUp(retryMs);
  }

  /** When the session became idle, or undefined while a request or stream keeps it busy. */
  idleSince(): number | undefined {
    if (this.#inflight.size > 0 || this.clientRequests.size > 0) return undefined;
    for (const stream of this.#streams.values()) if (stream.attached) return undefined;
    return this.#standalone?.attached ? undefined : this.#lastActive;
  }

  /** Whether a client request of this id is in flight (a second one of it is refused: ids MUST NOT be reused, basic/index.mdx). */
  isInFlight(id: JsonRpcId): boolean {
    return this.#inflight.has(id);
  }

  /** Registers a client request; the signal aborts when the client cancels it or the session ends. */
  begin(id: JsonRpcId): CancelSignal {
    const controller = new Cancellation();
    this.#inflight.get(id)?.abort();
    this.#inflight.set(id, controller);
    return controller.signal;
  }

  end(id: JsonRpcId, signal: CancelSignal): void {
    // A later request may have reused the id; only remove our own entry.
    if (this.#inflight.get(id)?.signal === signal) this.#inflight.delete(id);
  }

  /** Cancels a client request in flight; false when there is none by that id. */
  cancel(id: JsonRpcId): boolean {
    const controller = this.#inflight.get(id);
    if (!controller) return false;
    this.#inflight.delete(id);
    controller.abort('cancelled by client');
    return true;
  }

  /**
   * Gives up every request in flight for a reason of the gateway's own (a drain running out of
   * time): they are cancelled upstream and, unlike a client's cancellation, answered with it.
   */
  abandon(reason: Error): void {
    for (const controller of this.#inflight.values()) controller.abort(reason);
  }

  /** The stream for server-initiated messages (the GET stream), created on first use. */
  get standalone(): SessionStream {
    this.#standalone ??= new SessionStream('standalone', this.#eventLog());
    return this.#standalone;
  }

  /** A new stream for one POST's answer. */
  openRequestStream(): SessionStream {
    const stream = new SessionStream('request', this.#eventLog());
    this.#streams.set(stream.key, stream);
    if (this.#streams.size > MAX_DONE_STREAMS) {
      for (const [key, old] of this.#streams) {
        if (this.#streams.size <= MAX_DONE_STREAMS) break;
        if (old.done && !old.attached) {
          this.#streams.delete(key);
          this.#log?.forget(key);
        }
      }
    }
    return stream;
  }

  /** A stream of this session by key (for Last-Event-ID). */
  stream(key: string): SessionStream | undefined {
    if (this.#standalone?.key === key) return this.#standalone;
    return this.#streams.get(key);
  }

  /** Sends a message on the standalone stream (delivered now, or when the client attaches). */
  deliver(message: JsonRpcMessage): void {
    if (this.#closed) return;
    if (this.stateless) this.ondeliver?.(message);
    else this.standalone.send(message);
  }

  /** Registers a request to the client and returns the id to send it with. */
  sendRequestToClient(request: ClientRequest, deadlines: Deadlines): { id: number; result: Promise<JsonObject> } {
    const id = ++this.#nextClientRequestId;
    return { id, result: this.clientRequests.add(id, request, deadlines) };
  }

  rememberClientTask(taskId: string, upstream: string): void {
    if (this.clientTasks.size >= MAX_CLIENT_TASKS) this.clientTasks.delete(this.clientTasks.keys().next().value!);
    this.clientTasks.set(taskId, upstream);
  }

  /** Ends everything the session holds. Idempotent. */
  async close(reason: Error): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const controller of this.#inflight.values()) controller.abort('session ended');
    this.#inflight.clear();
    this.clientRequests.rejectAll(reason);
    for (const stream of this.#streams.values()) stream.finish();
    this.#standalone?.finish();
    this.#log?.release();
    for (const release of this.shared.values()) release();
    await Promise.allSettled([...this.upstreams].filter(([name]) => !this.shared.has(name)).map(([, client]) => client.close()));
  }

  #eventLog(): EventLog {
    this.#log ??= new EventLog(this.#limits);
    return this.#log;
  }
}
