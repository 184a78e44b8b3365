// One stdio child serving every session of a replica (`sharing: shared`). Requests need nothing
// special (the UpstreamClient issues its own ids and progress tokens, and keeps each request's
// context); what needs a hub is what the child sends unasked and what sessions share: resource
// subscriptions are reference-counted and updates fan out to the subscribed sessions only,
// tasks stay with the session that created them (a listen's acknowledgement and task
// notifications with the listen they name by subscription id), and the child, told of no client
// capabilities, gets no sampling, elicitation or roots request relayed. Its lists, the same for
// every session, are read once and cached until it says they changed.
import { GatewayError } from '../mcp/errors.js';
import { notification, type JsonObject, type JsonRpcNotification } from '../mcp/jsonrpc.js';
import type { Metrics } from '../metrics/metrics.js';
import type { DownstreamSession } from './session.js';
import type { RequestContext } from '../session/context.js';
import type { UpstreamClient } from '../upstream/client.js';
import type { Logger } from '../util/log.js';
import type { NamespaceCodec } from '../names/namespace.js';
import { rewriteNotification } from './relay.js';
import { CatalogSession } from './catalog-sessions.js';
import { listChangeOf, listChanges } from '../mcp/methods.js';
import { SharedHolds } from '../util/shared-holds.js';
import { renewBounded } from './recovery.js';
import { hearsLogLine } from './log-lines.js';

const MAX_TASKS = 10_000;

export class SharedHub {
  readonly client: UpstreamClient;
  /**
   * The child's lists, read once for every session it serves (its lists are the same for all:
   * it was told of no client): forgotten when it says one changed, and when it restarts.
   */
  readonly listing: CatalogSession;
  readonly #sessions = new Set<DownstreamSession>();
  /** Resource subscriptions (the child's own URIs), held for the sessions interested. */
  readonly #subscriptions = new SharedHolds<string, DownstreamSession>();
  readonly #tasks = new Map<string, DownstreamSession>();
  readonly #naming: { readonly codec: NamespaceCodec };
  readonly #metrics: Metrics;
  readonly #logger: Logger;

  constructor(client: UpstreamClient, deps: { naming: { readonly codec: NamespaceCodec }; metrics: Metrics; logger: Logger }) {
    this.client = client;
    this.listing = new CatalogSession('shared', client, Date.now);
    this.#naming = deps.naming;
    this.#metrics = deps.metrics;
    this.#logger = deps.logger;
    client.onnotification = (message, context) => this.#fanOut(message, context as RequestContext | undefined);
    client.onrequest = async (request) => {
      this.#metrics.serverRequests.inc({ method: this.#metrics.serverRequest(request.method), outcome: 'refused' });
      throw new GatewayError('method_not_found', `Method not found: ${request.method} (a shared upstream has no client to ask)`);
    };
    client.onreconnect = () => void this.#renew();
  }

  get size(): number {
    return this.#sessions.size;
  }

  add(session: DownstreamSession): void {
    this.#sessions.add(session);
  }

  /** The session is gone: its subscriptions (unsubscribed upstream when it was the last) and tasks. */
  remove(session: DownstreamSession): void {
    this.#sessions.delete(session);
    this.#subscriptions.releaseAll(session, (uri) => this.client.request('resources/unsubscribe', { uri }).catch(() => {}));
    for (const [task, owner] of this.#tasks) if (owner === session) this.#tasks.delete(task);
  }

  /** Subscribes upstream only for the first session interested in `uri`. */
  async subscribe(session: DownstreamSession, uri: string, params: JsonObject): Promise<JsonObject> {
    await this.#subscriptions.hold(uri, session, () => this.client.request('resources/subscribe', { ...params, uri }));
    return {};
  }

  /** Unsubscribes upstream once no session is interested any more. */
  async unsubscribe(session: DownstreamSession, uri: string, params: JsonObject): Promise<JsonObject> {
    await this.#subscriptions.release(uri, session, () => this.client.request('resources/unsubscribe', { ...params, uri }));
    return {};
  }

  ownTask(taskId: string, session: DownstreamSession): void {
    if (this.#tasks.size >= MAX_TASKS) this.#tasks.delete(this.#tasks.keys().next().value!);
    this.#tasks.set(taskId, session);
  }

  owns(taskId: string, session: DownstreamSession): boolean {
    return this.#tasks.get(taskId) === session;
  }

  /** `listen` is the context of the listen request the notification names, when it names one. */
  #fanOut(message: JsonRpcNotification, listen: RequestContext | undefined): void {
    const stale = listChangeOf(message.method)?.methods;
    if (stale) this.listing.forget(stale);
    const upstream = this.client.name;
    const forwarded = rewriteNotification(upstream, message, this.#naming.codec);
    const kind = this.#metrics.notification(message.method);
    if (!forwarded) {
      this.#metrics.notifications.inc({ method: kind, outcome: 'dropped' });
      return;
    }
    let targets: Iterable<DownstreamSession> = this.#sessions;
    if (message.method === 'notifications/resources/updated') {
      targets = this.#subscriptions.holders(String(message.params?.uri));
    } else if (message.method === 'notifications/tasks/status') {
      // A 2025-11-25 task is its session's alone: who follows it there hears it, and the session's client.
      const owner = this.#tasks.get(String(message.params?.taskId));
      const taskId = forwarded.params?.taskId;
      if (owner && typeof taskId === 'string') for (const follower of owner.taskFollowers.get(taskId) ?? []) follower(forwarded);
      targets = owner ? [owner] : [];
    } else if (message.method === 'notifications/tasks' || message.method === 'notifications/subscriptions/acknowledged') {
      // The extension's notifications answer one session's listen (notifications/tasks carries
      // the task's result): the listen they name (by subscription id, on this one channel)
      // alone hears them; naming none, nobody does.
      if (listen) {
        listen.channel.send(forwarded);
        this.#metrics.notifications.inc({ method: kind, outcome: 'forwarded' });
      }
      targets = [];
    }
    for (const session of targets) {
      const uri = forwarded.params?.uri;
      if (typeof uri === 'string' && !this.#naming.codec.visibleUri(uri, (spelling) => session.access.canSee('resource', spelling, upstream))) continue;
      // Its log lines reach every session it serves, each at or above the session's own level.
      if (!hearsLogLine(session, upstream, forwarded)) continue;
      session.deliver(forwarded);
      this.#metrics.notifications.inc({ method: kind, outcome: 'forwarded' });
    }
  }

  /** After the child restarted: renew subscriptions, and tell every session its lists may differ. */
  async #renew(): Promise<void> {
    this.listing.forget();
    const failed = await renewBounded(this.#subscriptions.keys(), (uri) => this.client.request('resources/subscribe', { uri }));
    if (failed > 0) this.#logger.warn('shared upstream restarted; some subscriptions could not be renewed', { upstream: this.client.name, failed });
    for (const session of this.#sessions) {
      for (const change of listChanges()) session.deliver(notification(change.notification));
    }
  }
}
