// The links of each client session to its upstreams, as the router and the edge reach them: one
// interface for opening sessions (initialize, a session the edge keeps, one taken over from
// another replica), for the upstream that serves a request (opened on use, left out and retried),
// for the lists a request reads, a shared child's hub and a personal upstream's consent. Its
// parts are open.ts (opening and reload), existence.ts (what an upstream lists), shared.ts,
// personal.ts and the idle sweep.
import type { JsonRpcRequest, JsonRpcResponse } from '../mcp/jsonrpc.js';
import type { Metrics } from '../metrics/metrics.js';
import type { ListedPage, ListKind, Listing, Sources } from '../names/lists.js';
import type { Caller } from '../session/context.js';
import type { Delivery, SessionInfo } from '../session/session.js';
import type { UpstreamClient } from '../upstream/client.js';
import type { UpstreamChanges } from '../upstream/pool.js';
import { ownerOfBareName, ownerOfBareUri, type FactOf } from './existence.js';
import { SessionOpener, type OpenerDeps } from './open.js';
import type { PersonalUpstreams } from './personal.js';
import type { DownstreamSession } from './session.js';
import type { SharedHub } from './shared.js';

export interface SessionLinks {
  /** initialize: a new session with its upstreams opened. */
  initialize(request: JsonRpcRequest, caller: Caller): Promise<{ session: DownstreamSession; response: JsonRpcResponse }>;
  /** A session the edge keeps for a client that has none of its own (its id never reaches a client). */
  open(info: Omit<SessionInfo, 'principal'>, caller: Caller, delivery: Delivery): Promise<DownstreamSession>;
  /**
   * A session another replica opened, taken over from its self-describing id. It is in the store
   * (under the caps the caller just checked) before the promise is returned.
   */
  resume(id: string, caller: Caller): Promise<DownstreamSession | undefined>;
  /** The takeover of session `id` under way here (its upstreams not yet attached), if any. */
  takingOver(id: string): Promise<unknown> | undefined;
  /** A config reload applied to the open sessions. */
  reconfigure(changes: UpstreamChanges, namingChanged: boolean, policyChanged: boolean): Promise<void>;
  /**
   * A request's principal other than the one the session holds (the same id, a renewed token):
   * the session takes it, and if its teams differ, changes as a policy reload changes it; a
   * promise only then (the session's access is the new one before it settles).
   */
  renewPrincipal(session: DownstreamSession, principal: Caller['principal']): Promise<void> | undefined;
  /** Starts (and stops) closing idle upstream sessions. */
  startSweeping(): void;
  stopSweeping(): void;

  /** Opens `upstream` for the session if it was left out or not yet opened (or says why it cannot); undefined when nothing is to do. */
  ensure(session: DownstreamSession, upstream: string | undefined): Promise<void> | undefined;
  /** Tries the session's left-out upstreams again (at most every few seconds each). */
  retryLeftOut(session: DownstreamSession): Promise<void>;
  /** Where each upstream of a list kind is read for the session: its own upstream session, or the catalog's. */
  sources(session: DownstreamSession, kind: ListKind): Sources | Promise<Sources>;
  /** Where the session's check that a name exists reads an upstream's list. */
  listingOf(session: DownstreamSession, client: UpstreamClient): Listing;
  /** The one upstream of the session that lists a tool under this un-namespaced name, if exactly one does. */
  bareToolOwner(session: DownstreamSession, name: string): Promise<string | undefined>;
  /** The one upstream of the session that lists exactly this un-prefixed URI, if exactly one does. */
  bareResourceOwner(session: DownstreamSession, uri: string): Promise<string | undefined>;
  /** The hub of a session's shared upstream, if `upstream` is one. */
  hubOf(session: DownstreamSession, upstream: string): SharedHub | undefined;
  /** Records a task created at `upstream` as this session's (kept open; a shared child serves many). */
  ownTask(session: DownstreamSession, upstream: string, taskId: string): void;
  /**
   * A failed request to a personal upstream whose credential went: the consent to answer
   * instead (a -32042 URL elicitation, or an error with the connect URL); else undefined.
   */
  consent(session: DownstreamSession, upstream: string, method: string): Promise<Error | undefined>;
  /** Upstreams each principal reaches with their own credential (`userAuth`), when configured. */
  readonly personal: PersonalUpstreams | undefined;
}

export interface LinksDeps extends OpenerDeps {
  /** A listed tool's facts (schema, destructiveness), kept with the session that listed it. */
  factOf: FactOf;
  metrics: Metrics;
}

export class Links implements SessionLinks {
  readonly #deps: LinksDeps;
  readonly #opener: SessionOpener;
  readonly #learn: (page: ListedPage) => void;

  constructor(deps: LinksDeps) {
    this.#deps = deps;
    this.#opener = new SessionOpener(deps);
    this.#learn = (page) => deps.metrics.learnTools(page.upstream, page.originals);
  }

  get personal(): PersonalUpstreams | undefined {
    return this.#deps.personal;
  }

  initialize(request: JsonRpcRequest, caller: Caller): Promise<{ session: DownstreamSession; response: JsonRpcResponse }> {
    return this.#opener.initialize(request, caller);
  }

  open(info: Omit<SessionInfo, 'principal'>, caller: Caller, delivery: Delivery): Promise<DownstreamSession> {
    return this.#opener.open(info, caller, delivery);
  }

  resume(id: string, caller: Caller): Promise<DownstreamSession | undefined> {
    return this.#opener.resume(id, caller);
  }

  takingOver(id: string): Promise<unknown> | undefined {
    return this.#opener.takingOver(id);
  }

  reconfigure(changes: UpstreamChanges, namingChanged: boolean, policyChanged: boolean): Promise<void> {
    return this.#opener.reconfigure(changes, namingChanged, policyChanged);
  }

  renewPrincipal(session: DownstreamSession, principal: Caller['principal']): Promise<void> | undefined {
    return this.#opener.renewPrincipal(session, principal);
  }

  startSweeping(): void {
    this.#opener.startSweeping();
  }

  stopSweeping(): void {
    this.#opener.stopSweeping();
  }

  ensure(session: DownstreamSession, upstream: string | undefined): Promise<void> | undefined {
    return this.#opener.ensure(session, upstream);
  }

  retryLeftOut(session: DownstreamSession): Promise<void> {
    return this.#opener.retryLeftOut(session);
  }

  sources(session: DownstreamSession, kind: ListKind): Sources | Promise<Sources> {
    return this.#opener.sources(session, kind);
  }

  listingOf(session: DownstreamSession, client: UpstreamClient): Listing {
    return this.#opener.listingOf(session, client);
  }

  async bareToolOwner(session: DownstreamSession, name: string): Promise<string | undefined> {
    return ownerOfBareName(session, name, await this.sources(session, 'tools'), this.#deps.catalog, this.#learn, this.#deps.factOf);
  }

  async bareResourceOwner(session: DownstreamSession, uri: string): Promise<string | undefined> {
    return ownerOfBareUri(session, uri, await this.sources(session, 'resources'), this.#deps.catalog);
  }

  hubOf(session: DownstreamSession, upstream: string): SharedHub | undefined {
    return this.#opener.hubOf(session, upstream);
  }

  ownTask(session: DownstreamSession, upstream: string, taskId: string): void {
    // A session's own upstream session with a task is kept (never closed for idleness).
    session.links.get(upstream)?.keepForTask();
    this.hubOf(session, upstream)?.ownTask(taskId, session);
  }

  async consent(session: DownstreamSession, upstream: string, method: string): Promise<Error | undefined> {
    const { personal } = this.#deps;
    const consent = personal?.isPersonal(upstream) ? await personal.consent(session, upstream, method) : undefined;
    return consent instanceof Error ? consent : undefined;
  }
}

