// The connect flow, independent of the HTTP framework: connect URLs (sealed, single-use,
// short-lived, bound to one principal and one upstream), the proof that the browser belongs to
// that principal (an IdP login, or loopback without auth), then the upstream's authorization
// request or the secret form, and the callback that stores what was obtained. Every step is
// bound to the browser that started it by an HttpOnly cookie; state lives in the credential
// store, so any replica can serve any step.
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { Logger } from '../util/log.js';
import type { IdpLogin, PendingLogin } from './login.js';
import { finishAuthorization, startAuthorization } from './oauth-client.js';
import type { Sealer } from './sealed.js';
import type { CredentialStore } from './store.js';
import type { UserCredentials } from './user-credentials.js';
import { page } from './pages.js';

/** What an HTTP step answers: a redirect or a page, with cookies to set. */
export type Step = ({ redirect: string } | { status: number; html: string }) & { cookies?: string[] };

/** What a step knows of the browser's request. */
export interface BrowserRequest {
  cookies: Readonly<Record<string, string>>;
  /** The request came from a loopback address. */
  loopback: boolean;
}

/** A connect URL and how its sign-in ends (see upstream/sign-in-stub.ts ConnectLink). */
export interface Link {
  url: string;
  elicitationId: string;
  completed: Promise<boolean>;
  abandon(): void;
}

export interface ConnectFlowDeps {
  store: CredentialStore;
  sealer: Sealer;
  credentials: UserCredentials;
  /** The IdP login; undefined for a loopback gateway without auth. */
  login: IdpLogin | undefined;
  /** Origin the connect URLs are made under, without a trailing slash (known once listening). */
  base: () => string;
  ttlMs: number;
  logger: Logger;
  /** Sign-ins by outcome, for metrics. */
  onSignIn?: (upstream: string, outcome: string) => void;
  now?: () => number;
}

interface Ticket {
  id: string;
  p: string;
  u: string;
  exp: number;
}

interface Flow {
  principal: string;
  upstream: string;
  exp: number;
  /** Set once the browser proved to be the principal. */
  verified: boolean;
  login?: PendingLogin;
  authorize?: { state: string; codeVerifier: string };
  /** The secret form's anti-forgery token. */
  csrf?: string;
}

export const FLOW_COOKIE = 'switchyard_connect';
export const USER_COOKIE = 'switchyard_user';
/** The principal a loopback gateway without auth serves. */
export const LOCAL_PRINCIPAL = 'local';
const USER_COOKIE_MS = 12 * 60 * 60_000;
const MAX_SECRET_BYTES = 8 * 1024;

export class ConnectFlows {
  readonly #deps: ConnectFlowDeps;
  readonly #now: () => number;

  constructor(deps: ConnectFlowDeps) {
    this.#deps = deps;
    this.#now = deps.now ?? Date.now;
  }

  get #secure(): boolean {
    return this.#deps.base().startsWith('https:');
  }

  get redirectUri(): string {
    return `${this.#deps.base()}/connect/callback`;
  }

  /** A new connect URL for the principal, and a promise of the sign-in's outcome. */
  link(principal: string, upstream: string): Link {
    const { sealer, ttlMs, base, credentials } = this.#deps;
    const ticket: Ticket = { id: randomBytes(12).toString('base64url'), p: principal, u: upstream, exp: this.#now() + ttlMs };
    const url = `${base()}/connect/${sealer.sealJson(ticket, 'connect-ticket')}`;
    let settle: (done: boolean) => void = () => {};
    const completed = new Promise<boolean>((resolve) => {
      settle = resolve;
    });
    const stop = credentials.onChange((change) => {
      if (change.signedIn && change.principal === principal && change.upstream === upstream) finish(true);
    });
    const timer = setTimeout(() => finish(false), ttlMs);
    timer.unref();
    const finish = (done: boolean): void => {
      clearTimeout(timer);
      stop();
      settle(done);
    };
    return { url, elicitationId: ticket.id, completed, abandon: () => finish(false) };
  }

  /** GET /connect/<ticket>: checks the URL and who opens it. */
  async open(sealed: string, browser: BrowserRequest): Promise<Step> {
    const { sealer, store } = this.#deps;
    const ticket = sealer.openJson<Ticket>(sealed, 'connect-ticket');
    if (!isTicket(ticket) || ticket.exp <= this.#now()) return refusal(400, 'This sign-in link is not valid or has expired. Ask the assistant for a new one.');
    if (!this.#deps.login && !browser.loopback) return refusal(403, 'This gateway serves sign-in pages to this computer only.');
    if (!(await store.setIfAbsent(`used:${ticket.id}`, true, ticket.exp - this.#now() + 1_000))) return refusal(410, 'This sign-in link was already used. Ask the assistant for a new one.');
    const flowId = randomBytes(18).toString('base64url');
    const flow: Flow = { principal: ticket.p, upstream: ticket.u, exp: ticket.exp, verified: false };
    const cookies = [cookie(FLOW_COOKIE, flowId, this.#deps.ttlMs, this.#secure)];
    const known = this.#browserPrincipal(browser);
    if (this.#deps.login && known !== ticket.p) {
      const { url, pending } = await this.#deps.login.start();
      flow.login = pending;
      await this.#save(flowId, flow);
      return { redirect: url, cookies };
    }
    if (known !== ticket.p && !browser.loopback) return refusal(403, 'This gateway serves sign-in pages to this computer only.');
    flow.verified = true;
    return { ...(await this.#proceed(flowId, flow)), cookies };
  }

  /** GET /connect/login: the IdP login came back; continue only for the principal the URL was made for. */
  async loggedIn(callback: URL, browser: BrowserRequest): Promise<Step> {
    const found = await this.#flowOf(browser);
    if (!found?.flow.login) return refusal(400, 'This sign-in is unknown or has expired in this browser. Ask the assistant for a new link.');
    const { id, flow } = found;
    let principal: string;
    try {
      principal = await this.#deps.login!.finish(callback, flow.login!);
    } catch (err) {
      await this.#drop(id);
      this.#deps.logger.warn('connect page: IdP login failed', { upstream: flow.upstream, err: err instanceof Error ? err.message : String(err) });
      this.#deps.onSignIn?.(flow.upstream, 'login_failed');
      return refusal(400, 'Signing in at your identity provider failed. Ask the assistant for a new link.');
    }
    if (principal !== flow.principal) {
      await this.#drop(id);
      this.#deps.logger.warn('audit: connect link opened by another principal; nothing stored', { audit: 'sign_in_refused', upstream: flow.upstream, principal: flow.principal, browser: principal });
      this.#deps.onSignIn?.(flow.upstream, 'wrong_user');
      return refusal(403, 'This link was made for another user than the one signed in here, so nothing was stored. Ask the assistant for a link of your own.');
    }
    flow.verified = true;
    flow.login = undefined;
    return { ...(await this.#proceed(id, flow)), cookies: [cookie(USER_COOKIE, this.#deps.sealer.sealJson({ p: principal, exp: this.#now() + USER_COOKIE_MS }, 'connect-user'), USER_COOKIE_MS, this.#secure)] };
  }

  /** GET /connect/callback: the upstream's authorization server came back with a code. */
  async authorized(callback: URL, browser: BrowserRequest): Promise<Step> {
    const found = await this.#flowOf(browser);
    if (!found?.flow.verified || !found.flow.authorize) return refusal(400, 'This sign-in is unknown or has expired in this browser. Ask the assistant for a new link.');
    const { id, flow } = found;
    await this.#drop(id);
    const { credentials } = this.#deps;
    try {
      const { auth, client } = await credentials.authorization(flow.upstream);
      const tokens = await finishAuthorization(auth, client, callback, { ...flow.authorize!, redirectUri: this.redirectUri });
      await credentials.save(flow.principal, flow.upstream, { kind: 'oauth', issuer: auth.server.issuer, obtainedAt: this.#now(), ...tokens });
    } catch (err) {
      this.#deps.logger.warn('audit: sign-in to upstream failed', { audit: 'sign_in_failed', upstream: flow.upstream, principal: flow.principal, err: err instanceof Error ? err.message : String(err) });
      this.#deps.onSignIn?.(flow.upstream, 'failed');
      return refusal(400, `Signing in to ${flow.upstream} did not complete. Ask the assistant for a new link.`);
    }
    return this.#signedIn(flow);
  }

  /** POST /connect/secret: the form of a `secret` upstream. */
  async secret(form: URLSearchParams, browser: BrowserRequest): Promise<Step> {
    const found = await this.#flowOf(browser);
    const csrf = form.get('csrf') ?? '';
    if (!found?.flow.verified || !found.flow.csrf || !equal(csrf, found.flow.csrf)) return refusal(400, 'This form is unknown or has expired in this browser. Ask the assistant for a new link.');
    const { id, flow } = found;
    const secret = (form.get('secret') ?? '').trim();
    // Refused with the form again (the flow kept): a secret every request would fail with is never stored.
    const problem = secret === '' || Buffer.byteLength(secret) > MAX_SECRET_BYTES ? `That secret cannot be used: paste one of at most ${MAX_SECRET_BYTES / 1024} KiB.`
      : !this.#deps.credentials.sendable(flow.upstream, secret) ? 'That secret holds a line break, a control character or another character a request header cannot carry: paste it on one line, as it was given to you.'
      : undefined;
    if (problem) return page(400, problem, { action: '/connect/secret', csrf: flow.csrf! });
    await this.#drop(id);
    await this.#deps.credentials.save(flow.principal, flow.upstream, { kind: 'secret', secret, obtainedAt: this.#now() });
    return this.#signedIn(flow);
  }

  /** DELETE /connect/<upstream>: the principal this browser signed in as signs out of it. */
  async signOut(upstream: string, browser: BrowserRequest): Promise<Step> {
    const principal = this.#browserPrincipal(browser) ?? (!this.#deps.login && browser.loopback ? LOCAL_PRINCIPAL : undefined);
    if (!principal) return refusal(401, 'Sign in through a connect link in this browser first.');
    if (!this.#deps.credentials.isPersonal(upstream)) return refusal(404, 'No such upstream.');
    const had = await this.#deps.credentials.signOut(principal, upstream);
    this.#deps.logger.info('audit: signed out of upstream', { audit: 'sign_out', upstream, principal, had });
    return page(200, had ? `Signed out of ${upstream}.` : `You were not signed in to ${upstream}.`);
  }

  /** The principal proven: on to the upstream's authorization server, or the secret form. */
  async #proceed(id: string, flow: Flow): Promise<Step> {
    const { credentials } = this.#deps;
    let auth;
    try {
      auth = await credentials.authorization(flow.upstream).catch((err: unknown) => {
        if (err instanceof Error && err.message.endsWith('has no OAuth sign-in')) return undefined;
        throw err;
      });
    } catch (err) {
      await this.#drop(id);
      this.#deps.logger.warn('connect page: the upstream\'s authorization server could not be used', { upstream: flow.upstream, err: err instanceof Error ? err.message : String(err) });
      this.#deps.onSignIn?.(flow.upstream, 'discovery_failed');
      return refusal(502, `${flow.upstream}'s sign-in service could not be reached. Try again later.`);
    }
    if (!auth) {
      flow.csrf = randomBytes(18).toString('base64url');
      await this.#save(id, flow);
      return secretForm(flow.upstream, flow.csrf);
    }
    const started = await startAuthorization(auth.auth, auth.client, this.redirectUri);
    flow.authorize = { state: started.state, codeVerifier: started.codeVerifier };
    await this.#save(id, flow);
    return { redirect: started.url };
  }

  #signedIn(flow: Flow): Step {
    this.#deps.logger.info('audit: signed in to upstream', { audit: 'sign_in', upstream: flow.upstream, principal: flow.principal });
    this.#deps.onSignIn?.(flow.upstream, 'ok');
    return page(200, `Signed in to ${flow.upstream}. You may close this page and go back to the assistant.`);
  }

  #browserPrincipal(browser: BrowserRequest): string | undefined {
    const raw = browser.cookies[USER_COOKIE];
    if (!raw) return undefined;
    const value = this.#deps.sealer.openJson<{ p?: unknown; exp?: unknown }>(raw, 'connect-user');
    return value && typeof value.p === 'string' && typeof value.exp === 'number' && value.exp > this.#now() ? value.p : undefined;
  }

  async #flowOf(browser: BrowserRequest): Promise<{ id: string; flow: Flow } | undefined> {
    const id = browser.cookies[FLOW_COOKIE];
    if (!id || !/^[A-Za-z0-9_-]{16,64}$/.test(id)) return undefined;
    const flow = await this.#deps.store.get(`flow:${id}`);
    if (!isFlow(flow) || flow.exp <= this.#now()) return undefined;
    return { id, flow };
  }

  #save(id: string, flow: Flow): Promise<void> {
    return this.#deps.store.set(`flow:${id}`, flow, Math.max(1_000, flow.exp - this.#now()));
  }

  async #drop(id: string): Promise<void> {
    await this.#deps.store.delete(`flow:${id}`);
  }
}

function refusal(status: number, text: string): Step {
  return page(status, text);
}

function secretForm(upstream: string, csrf: string): Step {
  return page(200, `Paste your secret for ${upstream}. It is stored encrypted and sent only to ${upstream}.`, { action: '/connect/secret', csrf });
}

function cookie(name: string, value: string, maxAgeMs: number, secure: boolean): string {
  return `${name}=${value}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${Math.floor(maxAgeMs / 1_000)}${secure ? '; Secure' : ''}`;
}

function equal(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

function isTicket(value: unknown): value is Ticket {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return typeof v.id === 'string' && typeof v.p === 'string' && typeof v.u === 'string' && typeof v.exp === 'number';
}

function isFlow(value: unknown): value is Flow {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return typeof v.principal === 'string' && typeof v.upstream === 'string' && typeof v.exp === 'number' && typeof v.verified === 'boolean';
}
