// The browser's part of the front door: /oauth/authorize checks the client and its redirect URI
// (a bad one gets a page, never a redirect), PKCE S256 and the resource, then sends the browser to
// the company IdP with Switchyard's own login client (never a `resource`: Entra refuses it);
// /oauth/callback finishes that login and shows the consent page; /oauth/consent answers the
// client with a code (RFC 9207 `iss` beside it) or access_denied. The flow lives in the credential
// store under the IdP login's state, bound to the browser by an HttpOnly cookie.
// Never an open redirector (RFC 9700 §4.11.2): before the user has answered the consent page, an
// error goes back to the client only once the user has signed in, and only to a redirect URI
// this user approved for this client before; otherwise the user gets a page.
// A flow is stored before anyone has signed in, so what one may cost is bounded: each parameter
// has a length limit, and new flows are counted per client address (authorizationsPerMinute)
// and in all (at most MAX_PENDING_FLOWS pending), in the front door's bucket store.
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { SecurityEvents } from '../audit/events.js';
import type { IdpLogin, PendingLogin } from '../credentials/login.js';
import type { CredentialStore } from '../credentials/store.js';
import type { BucketLimit } from '../ratelimit/bucket.js';
import type { BucketStore } from '../ratelimit/memory-store.js';
import type { Logger } from '../util/log.js';
import { audit } from './audit.js';
import { ClientRefused, type ClientInfo } from './cimd.js';
import { registrationSource, type ClientRegistry } from './clients.js';
import type { Grants, Identity } from './grants.js';
import { consentPage, refusalPage } from './pages.js';
import { digest, isS256Challenge, oversizedParameter, redirectMatches } from './rules.js';

export interface AuthorizeDeps {
  issuer: string;
  /** Every resource (RFC 8707) a token may be for: the main endpoint's first (the default). */
  resources: readonly string[];
  scopes: readonly string[];
  /** The ID token claims copied into tokens. */
  claims: readonly string[];
  clients: ClientRegistry;
  grants: Grants;
  login: IdpLogin;
  store: CredentialStore;
  logger: Logger;
  /** The gateway's audit records and spans (sign_in). */
  events?: SecurityEvents | undefined;
  onAuthorization: (outcome: string) => void;
  /** Where new flows are counted (the front door's bucket store); absent: they are not. */
  limits?: BucketStore | undefined;
  /** Flows one client address may start a minute (default 60). */
  authorizationsPerMinute?: number | undefined;
  /** Flows pending at once, from every address (default MAX_PENDING_FLOWS). */
  pendingFlows?: number | undefined;
}

/** The browser's side of a request, as the HTTP layer reads it. */
export interface BrowserRequest {
  url: URL;
  cookies: Readonly<Record<string, string>>;
  /** The connection's address: the flows it starts are counted (authorizationsPerMinute). */
  address?: string | undefined;
}

interface Flow {
  browser: string;
  /** The client as the consent page names it (not its registered redirect URIs: a flow stays small). */
  client: Pick<ClientInfo, 'clientId' | 'kind' | 'name'>;
  redirectUri: string;
  /** The request named redirect_uri (not the client's one registered URI by default): the token request must repeat it. */
  redirectUriSent: boolean;
  state: string | undefined;
  challenge: string;
  resource: string;
  login?: PendingLogin;
  identity?: Identity;
  idpRefresh?: string;
  csrf?: string;
  /** What is wrong with the request: answered once the user has signed in, never by a consent page. */
  refused?: RequestError;
}

interface RequestError {
  error: string;
  description: string;
}

/** The redirect URIs a user approved a client at (on the consent page), most recent last. */
interface Approved {
  uris: string[];
}

export const BROWSER_COOKIE = 'switchyard_frontdoor';
const FLOW_TTL_MS = 10 * 60_000;
/** Flows pending at once from every address: a bucket of half as many, refilled by as many again over a flow's 10 minutes. */
export const MAX_PENDING_FLOWS = 5_000;
/** As long as a consent is remembered (grants.ts). */
const APPROVED_TTL_MS = 365 * 24 * 60 * 60_000;
/** Approved redirect URIs kept per user and client; one approved earlier than these is forgotten. */
const MAX_APPROVED = 20;
const flowKey = (id: string): string => `frontdoor:flow:${id}`;
const approvedKey = (principal: string, clientId: string): string => `frontdoor:approved:${digest(`${principal}\n${clientId}`)}`;

export class Authorization {
  readonly #deps: AuthorizeDeps;
  readonly #perAddress: BucketLimit;
  readonly #pending: BucketLimit;

  constructor(deps: AuthorizeDeps) {
    this.#deps = deps;
    const perMinute = deps.authorizationsPerMinute ?? 60;
    this.#perAddress = { rate: perMinute, perMs: 60_000, burst: perMinute };
    // Flows live FLOW_TTL_MS: a burst of half and half again over that time keeps at most the whole pending.
    const half = Math.max(1, Math.floor((deps.pendingFlows ?? MAX_PENDING_FLOWS) / 2));
    this.#pending = { rate: half, perMs: FLOW_TTL_MS, burst: half };
  }

  async authorize(request: BrowserRequest): Promise<Response> {
    const deps = this.#deps;
    const params = request.url.searchParams;
    // RFC 6749 §3.1: a parameter sent twice is an invalid request.
    const repeated = [...new Set(params.keys())].find((name) => params.getAll(name).length > 1);
    if (repeated) return this.#refuse('invalid_request', `the parameter ${repeated} is sent more than once`);
    // Before anything is resolved or stored: a page, never a redirect (nobody has signed in).
    const oversized = oversizedParameter(params);
    if (oversized) return this.#refuse('invalid_request', `The parameter ${oversized.name} is longer than ${oversized.limit} characters.`);
    const clientId = params.get('client_id');
    if (!clientId) return this.#refuse('bad_client', 'The request names no client (client_id).');
    let client: ClientInfo;
    try {
      client = await deps.clients.resolve(clientId);
    } catch (err) {
      if (!(err instanceof ClientRefused)) throw err;
      return this.#refuse('bad_client', `This client cannot sign in here: ${err.message}.`);
    }
    const redirectUri = params.get('redirect_uri') ?? (client.redirectUris.length === 1 ? client.redirectUris[0]! : undefined);
    if (redirectUri === undefined || !redirectMatches(redirectUri, client.redirectUris)) {
      return this.#refuse('bad_redirect', `The redirect URI is not one that ${client.name} registered, so the answer cannot be sent there.`);
    }
    const state = params.get('state') ?? undefined;
    const challenge = params.get('code_challenge') ?? '';
    const resource = params.get('resource') ?? deps.resources[0]!;
    // Whatever is wrong, the user signs in first: only then is it known whether the error may go
    // back to this redirect URI (callback()), so a request made to fail never redirects anyone.
    const refused = requestError(params, challenge, resource, deps.resources);
    const limited = await this.#admit(request.address);
    if (limited) return limited;
    let login: Awaited<ReturnType<IdpLogin['start']>>;
    try {
      login = await deps.login.start();
    } catch (err) {
      deps.logger.warn('front door: the IdP login could not start', { err });
      deps.onAuthorization('login_failed');
      audit(deps, 'login_failed', { clientId: client.clientId, reason: 'idp_unavailable', resource });
      return refusalPage(502, 'The company sign-in service cannot be reached; try again later.');
    }
    const browser = request.cookies[BROWSER_COOKIE] ?? randomBytes(24).toString('base64url');
    const flow: Flow = { browser, client: { clientId: client.clientId, kind: client.kind, name: client.name }, redirectUri, redirectUriSent: params.has('redirect_uri'), state, challenge, resource, login: login.pending, ...(refused ? { refused } : {}) };
    await deps.store.set(flowKey(login.pending.state), flow, FLOW_TTL_MS);
    const secure = deps.issuer.startsWith('https:') ? '; Secure' : '';
    return new Response(null, {
      status: 302,
      headers: { location: login.url, 'cache-control': 'no-store', 'set-cookie': `${BROWSER_COOKIE}=${browser}; Path=/oauth; HttpOnly; SameSite=Lax; Max-Age=${FLOW_TTL_MS / 1_000}${secure}` },
    });
  }

  /** The IdP's answer: the login is finished and the consent page shown. */
  async callback(request: BrowserRequest): Promise<Response> {
    const deps = this.#deps;
    const id = request.url.searchParams.get('state');
    const flow = id ? await this.#flow(id, request) : undefined;
    if (!id || !flow?.login) return refusalPage(400, 'This sign-in has expired or was already used; start again from your client.');
    if (request.url.searchParams.has('error')) {
      await deps.store.delete(flowKey(id));
      deps.onAuthorization('login_failed');
      audit(deps, 'login_failed', { clientId: flow.client.clientId, reason: 'idp_denied', resource: flow.resource });
      // Nobody signed in: nothing says the redirect URI may be trusted, so no redirect.
      return refusalPage(400, 'The sign-in at the company IdP did not finish; start again from your client.');
    }
    let result: Awaited<ReturnType<IdpLogin['finishWithTokens']>>;
    try {
      result = await deps.login.finishWithTokens(request.url, flow.login);
    } catch (err) {
      deps.logger.warn('front door: the IdP login failed', { err: (err as Error).message });
      deps.onAuthorization('login_failed');
      audit(deps, 'login_failed', { clientId: flow.client.clientId, reason: 'idp_error', resource: flow.resource });
      await deps.store.delete(flowKey(id));
      return refusalPage(400, 'The sign-in at the company IdP failed; start again from your client.');
    }
    const claims: Record<string, unknown> = {};
    for (const name of deps.claims) if (result.claims[name] !== undefined) claims[name] = result.claims[name];
    const identity: Identity = { principal: result.principal, subject: result.subject, claims };
    if (flow.refused) return this.#answerRefused(id, flow, flow.refused, identity);
    const csrf = randomBytes(24).toString('base64url');
    const { login: _done, ...rest } = flow;
    await deps.store.set(flowKey(id), { ...rest, identity, csrf, ...(result.refreshToken ? { idpRefresh: result.refreshToken } : {}) }, FLOW_TTL_MS);
    const user = typeof result.claims.email === 'string' ? result.claims.email : typeof result.claims.name === 'string' ? result.claims.name : result.subject;
    return consentPage({
      flow: id,
      csrf,
      clientName: flow.client.name,
      clientId: flow.client.clientId,
      kind: flow.client.kind,
      redirectUri: flow.redirectUri,
      firstTime: !(await deps.grants.consented(identity.principal, flow.client.clientId)),
      user,
      resource: flow.resource,
    });
  }

  /** The consent form's answer: a code, or access_denied, sent to the client (303: the browser GETs it). */
  async consent(form: URLSearchParams, request: BrowserRequest): Promise<Response> {
    const deps = this.#deps;
    const id = form.get('flow') ?? '';
    const flow = id ? await this.#flow(id, request) : undefined;
    if (!flow?.identity || !flow.csrf || !sameSecret(form.get('csrf') ?? '', flow.csrf) || !(await deps.store.delete(flowKey(id)))) {
      return refusalPage(400, 'This consent has expired or was already answered; start again from your client.');
    }
    const { identity, client } = flow;
    const back = { ...(flow.state !== undefined ? { state: flow.state } : {}), iss: deps.issuer };
    if (form.get('decision') !== 'approve') {
      deps.onAuthorization('denied');
      audit(deps, 'consent_denied', { principal: identity.principal, clientId: client.clientId, resource: flow.resource });
      return redirectTo(flow.redirectUri, { error: 'access_denied', error_description: 'the user denied access', ...back }, 303);
    }
    await deps.grants.recordConsent(identity.principal, client.clientId);
    await this.#approve(identity.principal, client.clientId, flow.redirectUri);
    const code = await deps.grants.issueCode({
      clientId: client.clientId,
      redirectUri: flow.redirectUri,
      redirectUriSent: flow.redirectUriSent,
      challenge: flow.challenge,
      resource: flow.resource,
      scope: deps.scopes.join(' '),
      identity,
      ...(flow.idpRefresh ? { idpRefresh: flow.idpRefresh } : {}),
    });
    deps.onAuthorization('approved');
    audit(deps, 'consent_given', { principal: identity.principal, clientId: client.clientId, resource: flow.resource });
    return redirectTo(flow.redirectUri, { code, ...back }, 303);
  }

  /**
   * A request found wrong, its user now signed in: the error goes back to the client only when
   * this user approved this client at this redirect URI before (RFC 9700 §4.11.2: redirect only
   * to a trusted URI); otherwise a page says what is wrong.
   */
  async #answerRefused(id: string, flow: Flow, refused: RequestError, identity: Identity): Promise<Response> {
    const deps = this.#deps;
    await deps.store.delete(flowKey(id));
    deps.onAuthorization('invalid_request');
    if (await this.#approved(identity.principal, flow.client.clientId, flow.redirectUri)) {
      return redirectTo(flow.redirectUri, { error: refused.error, error_description: refused.description, ...(flow.state !== undefined ? { state: flow.state } : {}), iss: deps.issuer }, 302);
    }
    return refusalPage(400, `The sign-in request of ${flow.client.name} cannot be answered: ${refused.description}.`);
  }

  async #approved(principal: string, clientId: string, redirectUri: string): Promise<boolean> {
    const approved = await this.#deps.store.get(approvedKey(principal, clientId));
    return isApproved(approved) && redirectMatches(redirectUri, approved.uris);
  }

  /** Remembers the redirect URI the user approved the client at (a loopback one matches any port later, RFC 8252 §7.3). */
  async #approve(principal: string, clientId: string, redirectUri: string): Promise<void> {
    const key = approvedKey(principal, clientId);
    const approved = await this.#deps.store.get(key);
    const uris = [...(isApproved(approved) ? approved.uris : []).filter((uri) => uri !== redirectUri), redirectUri].slice(-MAX_APPROVED);
    await this.#deps.store.set(key, { uris } satisfies Approved, APPROVED_TTL_MS);
  }

  /** The flow, when this browser started it. */
  async #flow(id: string, request: BrowserRequest): Promise<Flow | undefined> {
    const flow = (await this.#deps.store.get(flowKey(id))) as Flow | undefined;
    const cookie = request.cookies[BROWSER_COOKIE];
    if (!flow || cookie === undefined || !sameSecret(cookie, flow.browser)) return undefined;
    return flow;
  }

  #refuse(outcome: string, message: string): Response {
    this.#deps.onAuthorization(outcome);
    return refusalPage(400, message);
  }

  /** Whether a new flow may be stored: a page (429 for this address, 503 for everyone) when not. */
  async #admit(address: string | undefined): Promise<Response | undefined> {
    const { limits } = this.#deps;
    if (!limits) return undefined;
    const refuse = (status: number, retryAfterMs: number, why: string): Response => {
      const seconds = Math.max(1, Math.ceil(retryAfterMs / 1_000));
      this.#deps.onAuthorization('limited');
      return refusalPage(status, `${why}; try again in ${seconds} s.`, { 'retry-after': String(seconds) });
    };
    if (address !== undefined) {
      const own = await limits.take(`frontdoor:authorize:${registrationSource(address)}`, this.#perAddress);
      if (!own.allowed) return refuse(429, own.retryAfterMs, 'Too many sign-ins were started from this address');
    }
    const all = await limits.take('frontdoor:authorize-all', this.#pending);
    if (!all.allowed) return refuse(503, all.retryAfterMs, 'Too many sign-ins are under way here');
    return undefined;
  }
}

/** What is wrong with an authorization request whose client and redirect URI are good, if anything. */
function requestError(params: URLSearchParams, challenge: string, resource: string, resources: readonly string[]): RequestError | undefined {
  if (params.get('response_type') !== 'code') return { error: 'unsupported_response_type', description: 'response_type must be code' };
  if (!challenge) return { error: 'invalid_request', description: 'code_challenge is required (PKCE with S256)' };
  if (params.get('code_challenge_method') !== 'S256') return { error: 'invalid_request', description: 'code_challenge_method must be S256' };
  if (!isS256Challenge(challenge)) return { error: 'invalid_request', description: 'code_challenge is not an S256 challenge' };
  if (!resources.includes(resource)) return { error: 'invalid_target', description: 'resource is not an endpoint of this gateway' };
  return undefined;
}

function isApproved(value: unknown): value is Approved {
  const uris = typeof value === 'object' && value !== null ? (value as Record<string, unknown>).uris : undefined;
  return Array.isArray(uris) && uris.every((uri) => typeof uri === 'string');
}

function sameSecret(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

/** The redirect URI with `params` added to its query (RFC 6749 §4.1.2: kept query components stay). */
function redirectTo(uri: string, params: Record<string, string>, status: 302 | 303): Response {
  const url = new URL(uri);
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
  return new Response(null, { status, headers: { location: url.href, 'cache-control': 'no-store' } });
}
