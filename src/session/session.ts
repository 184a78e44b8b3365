// A downstream (client) session: what was negotiated, one record per upstream it reaches (its
// upstream session and what the session learned there), the client's requests in flight (so a
// cancellation finds them), the gateway's own requests to the client (server-initiated ones it
// relays), and the session's SSE streams. It knows upstream sessions only as things it closes:
// the router gives it the client type (`C`).
import type { JsonObject, JsonRpcId, JsonRpcMessage, JsonRpcNotification, ProgressToken } from '../mcp/jsonrpc.js';
import { PendingRequests, type Deadlines } from '../mcp/pending.js';
import type { SessionVersion } from '../mcp/versions.js';
import type { StatelessVersion } from '../mcp/era.js';
import type { Principal } from '../auth/principal.js';
import type { Access } from '../policy/policy.js';
import { EventLog, SessionStream, type LogLimits } from './streams.js';
import type { SharedStreamLog, StreamMirror } from './shared-log.js';
import { Cancellation, type CancelSignal } from '../util/cancel.js';
import { UpstreamRecords, type UpstreamLink } from './upstreams.js';
import { listChangedOf } from '../mcp/methods.js';

export type { KnownNames, ListView, SessionUpstream, ToolFact, UpstreamLink } from './upstreams.js';

export interface SessionInfo {
  /** The client's version; 2026-07-28 for a session the gateway keeps for clients of that era. */
  protocolVersion: SessionVersion | StatelessVersion;
  clientCapabilities: JsonObject;
  clientInfo: JsonObject;
  /** The principal that opened the session; only it may use the session. */
  principal?: string;
  /** The endpoint beside the main one it was opened on (its path); only there is it known. */
  endpoint?: string;
}

/**
 * Where the session's messages that belong to no request go (list changes, resource updates,
 * log lines, server requests with no related request), as the edge that opened it decides.
 */
export interface Delivery {
  deliver(message: JsonRpcMessage): void;
  /** Whether a server-initiated request may go this way (a client can answer it there). */
  readonly canAsk: boolean;
  /** Whether the client holds the session's id and its streams (false: a session the gateway keeps for it). */
  readonly addressable: boolean;
}

/** A request the gateway sent to the client on an upstream's behalf (or its own, `upstream` ''). */
export interface ClientRequest {
  upstream: string;
  /** The upstream a request of the gateway's own waits to call (a destructive tool's confirmation): kept open meanwhile. */
  holds?: string;
  /** The id the upstream gave it. */
  upstreamId: JsonRpcId;
  method: string;
  /** The upstream's progress token for it; the client sees the gateway's request id instead. */
  progressToken: ProgressToken | undefined;
  /** The upstream task it relates to, as the client sees it and as the upstream knows it. */
  relatedTask: { exposed: string; local: string } | undefined;
}

/** How a session takes part in a fleet whose replicas all open its self-describing id. */
export interface FleetOptions {
  /** The replay log every replica reads (sessions.store: redis). */
  log?: SharedStreamLog;
}

/** What a session asks of its upstream sessions when other replicas carry them too (UpstreamClient has both). */
interface PortableLink {
  keepSession?(): void;
  holdStream?(hold: boolean): void;
}

function portableOf(link: UpstreamLink): PortableLink {
  return link as UpstreamLink & PortableLink;
}

/** Request streams kept for resumption after their response; older ones are forgotten. */
const MAX_DONE_STREAMS = 100;
/** Client-side task ids remembered, to route the client's notifications/tasks/status. */
const MAX_CLIENT_TASKS = 1_000;

export class DownstreamSession<C extends UpstreamLink = UpstreamLink> {
  /** The Mcp-Session-Id (a self-describing token when session keys are configured). */
  id: string;
  readonly info: SessionInfo;
  /** One record per upstream the session reaches or tried to (see upstreams.ts). */
  readonly links = new UpstreamRecords<C>();
  /** What the gateway advertised to this client. */
  capabilities: JsonObject = {};
  /** The upstreams' instructions, merged. */
  instructions: string | undefined;
  /** Where messages that belong to no request go: the GET stream unless the edge gave another way. */
  readonly delivery: Delivery;
  /**
   * Whether other replicas carry this session on too (its id is self-describing and the client
   * holds it): its upstream sessions are then ended only by the client's DELETE, and each
   * upstream's own stream is held only by the replica that holds the client's GET stream.
   */
  readonly portable: boolean;
  /** Who opened the session (with auth configured). */
  principal: Principal | undefined;
  /** What its teams may see and call; set at initialize and on a policy reload. */
  access!: Access;
  /** Requests the gateway relayed to the client, by the id the gateway gave them. */
  readonly clientRequests = new PendingRequests<ClientRequest>();
  /** Tasks the client created for an upstream's requests: client task id → upstream name. */
  readonly clientTasks = new Map<string, string>();
  /**
   * Followers of an upstream's task (a subscriptions/listen that named its handle), by the
   * task's gateway-wide id (`<upstream>:<its id>`): each hears the task's status notifications
   * from this session's own upstream session.
   */
  readonly taskFollowers = new Map<string, Set<(message: JsonRpcNotification) => void>>();
  /** The level the client set with logging/setLevel: renewed after a restart. */
  logLevel: string | undefined;
  readonly #inflight = new Map<JsonRpcId, Cancellation>();
  readonly #limits: LogLimits;
  /** The request streams, oldest first: those still running or attached, and the newest done ones for replay. */
  readonly #streams: SessionStream[] = [];
  #log: EventLog | undefined;
  #standalone: SessionStream | undefined;
  readonly #shared: SharedStreamLog | undefined;
  #mirror: StreamMirror | undefined;
  #nextClientRequestId = 0;
  #lastActive: number;
  #closed = false;
  #toolsEpoch = 0;

  constructor(id: string, info: SessionInfo, now: number, limits: LogLimits, delivery?: Delivery, fleet?: FleetOptions) {
    this.id = id;
    this.info = info;
    this.#lastActive = now;
    this.#limits = limits;
    this.delivery = delivery ?? { deliver: (message) => this.standalone.send(message), canAsk: true, addressable: true };
    this.portable = fleet !== undefined && this.delivery.addressable;
    this.#shared = this.portable ? fleet?.log : undefined;
  }

  /** Whether the client's GET stream is connected to this replica (its upstream streams are then held here). */
  get holdsStream(): boolean {
    return this.#standalone?.attached === true;
  }

  /** The upstream sessions opened for this session, by upstream name. */
  get upstreams(): ReadonlyMap<string, C> {
    return this.links.clients;
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
    for (const stream of this.#streams) if (stream.attached) request++;
    return { request, standalone: this.#standalone?.attached ? 1 : 0 };
  }

  /** Client requests being processed. */
  get inflight(): number {
    return this.#inflight.size;
  }

  /** Closes every open connection after a retry hint; the streams stay resumable (drain). */
  hangUp(retryMs: number): void {
    this.#standalone?.hangUp(retryMs);
    for (const stream of this.#streams) stream.hangUp(retryMs);
  }

  /** When the session became idle, or undefined while a request or stream keeps it busy. */
  idleSince(): number | undefined {
    if (this.#inflight.size > 0 || this.clientRequests.size > 0) return undefined;
    for (const stream of this.#streams) if (stream.attached) return undefined;
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
    if (this.#standalone) return this.#standalone;
    const stream = new SessionStream('standalone', this.#eventLog(), this.#sharedMirror());
    // Server-initiated messages of a portable session's upstreams reach the replica holding
    // the client's GET stream: that replica holds the upstreams' own streams, no other does.
    if (this.portable) stream.onattached = (attached) => this.#holdUpstreamStreams(attached);
    this.#standalone = stream;
    return stream;
  }

  #holdUpstreamStreams(hold: boolean): void {
    for (const client of this.links.clients.values()) portableOf(client).holdStream?.(hold);
  }

  /** A new stream for one POST's answer to `requests`. */
  openRequestStream(requests: readonly JsonRpcId[] = []): SessionStream {
    const stream = new SessionStream('request', this.#eventLog(), this.#sharedMirror(), requests);
    const streams = this.#streams;
    streams.push(stream);
    // The oldest done one goes (almost always the very oldest); running or attached streams stay.
    if (streams.length > MAX_DONE_STREAMS) {
      const oldest = streams.findIndex((old) => old.done && !old.attached);
      if (oldest === 0) streams.shift();
      else if (oldest > 0) streams.splice(oldest, 1);
    }
    return stream;
  }

  /** A stream of this session by key (for Last-Event-ID). */
  stream(key: string): SessionStream | undefined {
    if (this.#standalone?.key === key) return this.#standalone;
    return this.#streams.find((stream) => stream.key === key);
  }

  /** Sends a message that belongs to no request (on the standalone stream, unless the edge said otherwise). */
  deliver(message: JsonRpcMessage): void {
    if (this.#closed) return;
    if ('method' in message && message.method === listChangedOf('tools')) this.toolsChanged();
    this.delivery.deliver(message);
  }

  /** How many times the session heard that its tools changed (what was built from its tools is stale). */
  get toolsEpoch(): number {
    return this.#toolsEpoch;
  }

  toolsChanged(): void {
    this.#toolsEpoch++;
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

  /**
   * Ends everything the session holds. Idempotent. `keepUpstreams`: the upstreams' own sessions
   * are left alive (the session ends here only; other replicas carry it on).
   */
  async close(reason: Error, options: { keepUpstreams?: boolean } = {}): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (options.keepUpstreams) for (const client of this.links.clients.values()) portableOf(client).keepSession?.();
    for (const controller of this.#inflight.values()) controller.abort('session ended');
    this.#inflight.clear();
    this.clientRequests.rejectAll(reason);
    for (const stream of this.#streams) stream.finish();
    this.#standalone?.finish();
    this.#log?.release();
    await this.links.closeAll();
  }

  /** The shared log bound to this session (its id read at each write: initialize seals it after the streams' log is made). */
  #sharedMirror(): StreamMirror | undefined {
    const log = this.#shared;
    if (!log) return undefined;
    this.#mirror ??= {
      begin: (stream, kind, requests) => log.begin(this.id, stream, kind, requests),
      append: (stream, seq, data) => log.append(this.id, stream, seq, data),
      end: (stream) => log.end(this.id, stream),
      hold: (stream, held) => log.hold(this.id, stream, held),
    };
    return this.#mirror;
  }

  #eventLog(): EventLog {
    this.#log ??= new EventLog(this.#limits);
    return this.#log;
  }
}
