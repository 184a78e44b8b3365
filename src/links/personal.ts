// Upstreams each principal reaches as themselves (`userAuth`): a session's link to one is its own
// upstream session carrying the principal's credential, or, while the principal has none, the
// sign-in stub (upstream/sign-in-stub.ts). When a credential appears or goes (on any replica),
// every open session of that principal switches and hears list_changed. Also the synthetic
// `sign_out` tool, and the consent answer to a call whose credential turned out unusable.
import { isObject, notification, type JsonObject } from '../mcp/jsonrpc.js';
import { GatewayError, RpcError } from '../mcp/errors.js';
import { isStatelessVersion } from '../mcp/era.js';
import type { ConnectFlows } from '../credentials/connect-flow.js';
import { LOCAL_PRINCIPAL } from '../credentials/connect-flow.js';
import type { CredentialChange, UserCredentials } from '../credentials/user-credentials.js';
import { UpstreamClient } from '../upstream/client.js';
import type { UpstreamPool } from '../upstream/pool.js';
import { SIGN_OUT_TOOL, signInSentence, SignInStubTransport } from '../upstream/sign-in-stub.js';
import type { UpstreamState } from '../session/token.js';
import type { Logger } from '../util/log.js';
import type { DownstreamSession } from './session.js';
import { forgetNames } from './existence.js';
import { SESSIONS_ONLY } from '../upstream/stateless-protocol.js';

export interface PersonalDeps {
  credentials: UserCredentials;
  flows: ConnectFlows;
  pool: UpstreamPool;
  logger: Logger;
  connectTtlMs: number;
}

/** -32042 URLElicitationRequiredError (2025-11-25 client/elicitation.mdx). */
const URL_ELICITATION_REQUIRED = -32042;

/** The principal a session acts for at personal upstreams. */
export function principalOf(session: DownstreamSession): string {
  return session.principal?.id ?? LOCAL_PRINCIPAL;
}

/** Whether the client declared URL-mode elicitation (2025-11-25 and later). */
function urlElicitation(session: DownstreamSession): boolean {
  const elicitation = session.info.clientCapabilities.elicitation;
  return isObject(elicitation) && isObject(elicitation.url);
}

export class PersonalUpstreams {
  readonly #deps: PersonalDeps;
  /** The stubs standing in for upstreams of principals not signed in. */
  readonly #stubs = new WeakMap<UpstreamClient, SignInStubTransport>();
  /** Switches in progress, per session and upstream. */
  readonly #switching = new WeakMap<DownstreamSession, Map<string, Promise<boolean>>>();

  constructor(deps: PersonalDeps) {
    this.#deps = deps;
  }

  isPersonal(upstream: string): boolean {
    return this.#deps.credentials.isPersonal(upstream);
  }

  /** Hears every credential change (this replica's and the others'). */
  onChange(listener: (change: CredentialChange) => void): () => void {
    return this.#deps.credentials.onChange(listener);
  }

  isStub(client: UpstreamClient | undefined): boolean {
    return client !== undefined && this.#stubs.has(client);
  }

  /**
   * The session's link to a personal upstream: its own upstream session with the principal's
   * credential, or the sign-in stub when there is none (or the upstream refused it).
   */
  async open(session: DownstreamSession, name: string, params: JsonObject, wire: (client: UpstreamClient) => void, state?: UpstreamState): Promise<UpstreamClient> {
    const { credentials, pool, logger } = this.#deps;
    const principal = principalOf(session);
    if (await credentials.has(principal, name)) {
      const credential = credentials.credential(principal, name);
      try {
        return state?.session !== undefined ? await pool.resume(name, state, params, wire, { credential }) : await pool.open(name, params, wire, { credential });
      } catch (err) {
        // Refused with the user's credential (it was deleted on the way): sign in again.
        if (await credentials.has(principal, name)) throw err;
        logger.info('user credential refused at open; offering sign-in', { upstream: name });
      }
    }
    return this.#stub(session, name, params, wire);
  }

  async #stub(session: DownstreamSession, name: string, params: JsonObject, wire: (client: UpstreamClient) => void): Promise<UpstreamClient> {
    const principal = principalOf(session);
    const transport = new SignInStubTransport({
      upstream: name,
      clientVersion: session.info.protocolVersion,
      urlElicitation: urlElicitation(session),
      connect: async () => {
        const link = this.#deps.flows.link(principal, name);
        return { ...link, completed: this.#afterSwitch(session, name, link.completed) };
      },
    });
    const ttl = this.#deps.connectTtlMs;
    const client = new UpstreamClient(name, transport, { timeoutMs: ttl, maxTotalTimeoutMs: ttl, logger: this.#deps.logger.child({ upstream: name, stub: 'sign-in' }) });
    this.#stubs.set(client, transport);
    wire(client);
    await client.connect(params, 5_000, SESSIONS_ONLY);
    return client;
  }

  /**
   * A sign-in's outcome, settled once this session lists the real upstream: the switch started by
   * the same credential change (its listener was added before any link's) has finished, so a
   * client retrying on the completion meets the upstream, not the stand-in.
   */
  #afterSwitch(session: DownstreamSession, upstream: string, completed: Promise<boolean>): Promise<boolean> {
    return completed.then(async (done) => {
      if (done) await this.#switching.get(session)?.get(upstream)?.catch(() => false);
      return done;
    });
  }

  /** Switches every session of the principal; each that switched forgets the names it knew and hears `announce`. */
  async switchAll(change: CredentialChange, sessions: Iterable<DownstreamSession>, wire: (session: DownstreamSession, client: UpstreamClient) => void, announce: (session: DownstreamSession) => void): Promise<void> {
    await Promise.allSettled(
      [...sessions].map(async (session) => {
        if (!(await this.switchSession(session, change, (client) => wire(session, client)))) return;
        forgetNames(session, change.upstream, 'tools');
        forgetNames(session, change.upstream, 'prompts');
        session.toolsChanged();
        announce(session);
      }),
    );
  }

  /** Switches the session's link between the stub and its own upstream session; true when it did. */
  switchSession(session: DownstreamSession, change: CredentialChange, wire: (client: UpstreamClient) => void): Promise<boolean> {
    const { upstream } = change;
    if (session.closed || principalOf(session) !== change.principal || !session.links.get(upstream)) return Promise.resolve(false);
    let pending = this.#switching.get(session);
    if (!pending) this.#switching.set(session, (pending = new Map()));
    const own = pending;
    // One switch at a time per session and upstream, each to the state the store holds then
    // (a sign-out right after a sign-in must not be overtaken by the sign-in's switch).
    const previous = own.get(upstream) ?? Promise.resolve(false);
    const switching = previous.catch(() => false).then(() => this.#switch(session, upstream, wire));
    own.set(upstream, switching);
    void switching
      .finally(() => {
        if (own.get(upstream) === switching) own.delete(upstream);
      })
      .catch(() => {});
    return switching;
  }

  async #switch(session: DownstreamSession, upstream: string, wire: (client: UpstreamClient) => void): Promise<boolean> {
    const record = session.links.get(upstream);
    const current = record?.client;
    if (session.closed || !record) return false;
    const signedIn = await this.#deps.credentials.has(principalOf(session), upstream);
    if (this.isStub(current) !== signedIn || record.client !== current) return false;
    const { info } = session;
    const params = { protocolVersion: info.protocolVersion, capabilities: info.clientCapabilities, clientInfo: info.clientInfo };
    const next = await this.open(session, upstream, params, wire);
    // Ended, dropped or switched meanwhile: this one is nobody's.
    if (session.closed || session.links.get(upstream) !== record || record.client !== current) {
      this.retire(next);
      return false;
    }
    session.links.attach(upstream, next);
    if (current) this.retire(current);
    return true;
  }

  /** Gives a replaced link back: a stub answers the calls it is in (its sign-in finished) first. */
  retire(client: UpstreamClient): void {
    const stub = this.#stubs.get(client);
    if (stub) stub.retire(() => void client.close());
    else void client.close();
  }

  /** The tools a signed-in session lists beside the upstream's own: `sign_out`. */
  extraTools(session: DownstreamSession, upstream: string, expose: (name: string) => string): JsonObject[] | undefined {
    if (!this.isPersonal(upstream)) return undefined;
    const client = session.upstreams.get(upstream);
    if (!client || this.isStub(client)) return undefined;
    return [
      {
        name: expose(SIGN_OUT_TOOL),
        title: `Sign out of ${upstream}`,
        description: `Sign the user out of ${upstream}: their tokens there are revoked and deleted, and ${upstream}'s tools are no longer listed until they sign in again.`,
        inputSchema: { type: 'object', properties: {} },
        annotations: { destructiveHint: false, idempotentHint: true, openWorldHint: true },
      },
    ];
  }

  /** A call of the synthetic `sign_out` (undefined for any other tool). */
  intercept(session: DownstreamSession, upstream: string, name: string): Promise<JsonObject> | undefined {
    if (name !== SIGN_OUT_TOOL || !this.isPersonal(upstream) || this.isStub(session.upstreams.get(upstream))) return undefined;
    return this.#signOut(session, upstream);
  }

  async #signOut(session: DownstreamSession, upstream: string): Promise<JsonObject> {
    const principal = principalOf(session);
    await this.#deps.credentials.signOut(principal, upstream);
    // Answered once this session lists the sign-in again (the switch started with the change).
    await this.#switching.get(session)?.get(upstream)?.catch(() => false);
    this.#deps.logger.info('audit: signed out of upstream', { audit: 'sign_out', upstream, principal, via: 'tool' });
    return { content: [{ type: 'text', text: `Signed out of ${upstream}.` }], isError: false };
  }

  /**
   * A request to a personal upstream failed: when the principal has no usable credential any
   * more, the answer is the consent (a URL elicitation the client can show, or a sentence with
   * the connect URL); undefined when the failure is of another kind.
   */
  async consent(session: DownstreamSession, upstream: string, method: string): Promise<JsonObject | Error | undefined> {
    if (!this.isPersonal(upstream) || this.isStub(session.upstreams.get(upstream))) return undefined;
    const principal = principalOf(session);
    if (await this.#deps.credentials.has(principal, upstream)) return undefined;
    const link = this.#deps.flows.link(principal, upstream);
    const sentence = signInSentence(upstream, link.url);
    if (urlElicitation(session) && !isStatelessVersion(session.info.protocolVersion)) {
      void this.#afterSwitch(session, upstream, link.completed).then((done) => {
        if (done && !session.closed) session.deliver(notification('notifications/elicitation/complete', { elicitationId: link.elicitationId }));
      });
      return new RpcError({
        code: URL_ELICITATION_REQUIRED,
        message: `Sign-in to ${upstream} is needed.`,
        data: { elicitations: [{ mode: 'url', elicitationId: link.elicitationId, url: link.url, message: `Sign in to ${upstream} as yourself to let this assistant use it.` }] },
      });
    }
    link.abandon();
    if (method === 'tools/call') return { content: [{ type: 'text', text: sentence }], isError: true };
    return new GatewayError('upstream_unavailable', sentence);
  }
}
