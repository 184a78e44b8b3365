// Hosts meeting the front door, for tests: an OAuthClientProvider for the SDK client's auth()
// (CIMD or DCR), the host's loopback redirect listener, an https server for Client ID Metadata
// Documents, the browser's walk through the IdP login and the consent page, the token endpoint's
// requests, and a gateway config with an Entra-like IdP behind it.
import { createHash, randomBytes } from 'node:crypto';
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { Page } from 'playwright-core';
import { configFromObject } from '../../src/config/load.js';
import { createGateway } from '../../src/gateway.js';
import { createLogger } from '../../src/util/log.js';
import { Redactor } from '../../src/util/redact.js';
import { followSignIn, type TestBrowser } from './browser.js';
import type { TestGateway } from './gateway.js';
import type { TestIdp } from './oidc.js';
import { ROOT } from './paths.js';
import type { Certificate } from './tls.js';

export const LOGIN_SECRET = 'switchyard-login-secret-at-the-test-idp';
export const CREDENTIALS_KEY = 'front-door-test-credentials-key-of-forty-chars';

/** The IdP's record of Switchyard's own login client (pre-registered, as at Entra). */
export function loginClient(gatewayOrigin: string): Record<string, unknown> {
  return {
    client_id: 'switchyard',
    client_secret: LOGIN_SECRET,
    redirect_uris: [`${gatewayOrigin}/oauth/callback`],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
  };
}

/** Teams read from the IdP's `groups` claim: eng may echo and add, sales may only add. */
export const TEAMS = [
  { name: 'eng', match: { claim: 'groups', value: 'eng' }, allow: ['everything__echo', 'everything__get-sum'] },
  { name: 'sales', match: { claim: 'groups', value: 'sales' }, allow: ['everything__get-sum'] },
];

export const ACCOUNTS = { alice: { groups: ['eng'] }, bob: { groups: ['sales'] } };

/**
 * A gateway whose front door trusts `ca` when it fetches metadata documents (startGateway's, with
 * that one option more); listening on `port`, logs captured.
 */
export async function startFrontDoorGateway(raw: Record<string, unknown>, port: number, ca?: string): Promise<TestGateway> {
  const config = configFromObject({ health: { probeInterval: 0 }, ...raw, listen: { ...(raw.listen as object), port } }, { file: `${ROOT}/gateway.test.yaml`, env: {} });
  const logs: string[] = [];
  const redactor = new Redactor();
  const logger = createLogger({ level: 'debug', write: (line) => logs.push(line), redact: (line) => redactor.redact(line) });
  const gateway = createGateway(config, { logger, redactor, baseEnv: { PATH: process.env.PATH, HOME: process.env.HOME }, ...(ca ? { frontDoorCa: ca } : {}) });
  const url = await gateway.start();
  return { url, gateway, config, logs, close: () => gateway.close() };
}

/** The gateway config of these tests: an Entra-like IdP behind the front door, teams by group. */
export function frontDoorConfig(idpIssuer: string, publicUrl: string, frontDoor: Record<string, unknown>, more: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    listen: { publicUrl },
    auth: {
      oauth: {
        issuer: idpIssuer,
        jwksUri: `${idpIssuer}/jwks`,
        login: { clientId: 'switchyard', clientSecret: LOGIN_SECRET, scopes: ['openid', 'profile', 'email', 'groups'] },
        frontDoor,
      },
    },
    credentials: { key: CREDENTIALS_KEY },
    teams: TEAMS,
    metrics: { enabled: true },
    ...more,
  };
}

/** What a front-door test starts: the IdP, the gateway at `origin`, Chromium and the host's listener. */
export interface FrontDoorParts {
  idp: TestIdp;
  gateway: TestGateway;
  browser: TestBrowser;
  callback: CallbackListener;
  origin: string;
}

/** The host's loopback listener for the authorization response (RFC 8252 §7.3). */
export interface CallbackListener {
  url: string;
  /** The next authorization response that reaches the listener. */
  next(timeoutMs?: number): Promise<URL>;
  close(): Promise<void>;
}

export async function startCallbackListener(path = '/callback'): Promise<CallbackListener> {
  const waiting: Array<(url: URL) => void> = [];
  const arrived: URL[] = [];
  const server = createHttpServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><p id="done">You can close this window.</p>');
    if (url.pathname !== path) return;
    const waiter = waiting.shift();
    if (waiter) waiter(url);
    else arrived.push(url);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}${path}`,
    next: (timeoutMs = 20_000) => {
      const ready = arrived.shift();
      if (ready) return Promise.resolve(ready);
      return new Promise<URL>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no authorization response reached the host')), timeoutMs);
        waiting.push((url) => {
          clearTimeout(timer);
          resolve(url);
        });
      });
    },
    close: () => closeServer(server),
  };
}

/** An https server for Client ID Metadata Documents (served at the paths given, with its headers). */
export async function startDocumentServer(cert: Certificate, documents: Map<string, { body: string; headers?: Record<string, string>; status?: number }>): Promise<{ origin: string; fetched: string[]; close(): Promise<void> }> {
  const fetched: string[] = [];
  const server = createHttpsServer({ cert: cert.certPem, key: cert.keyPem }, (req: IncomingMessage, res: ServerResponse) => {
    const path = new URL(req.url ?? '/', 'https://localhost').pathname;
    fetched.push(path);
    const doc = documents.get(path);
    if (!doc) return void res.writeHead(404).end();
    res.writeHead(doc.status ?? 200, { 'content-type': 'application/json', ...doc.headers }).end(doc.body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { origin: `https://localhost:${(server.address() as AddressInfo).port}`, fetched, close: () => closeServer(server) };
}

/** A host as the SDK sees it: everything it keeps, in memory; the authorization URL it was sent to. */
export class TestHost implements OAuthClientProvider {
  authorizationUrl: URL | undefined;
  #client: OAuthClientInformationMixed | undefined;
  #tokens: OAuthTokens | undefined;
  #verifier = '';

  constructor(
    readonly redirectUrl: string,
    readonly clientName: string,
    readonly clientMetadataUrl?: string,
  ) {}

  get clientMetadata(): OAuthClientMetadata {
    return { client_name: this.clientName, redirect_uris: [this.redirectUrl], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none' };
  }

  clientInformation(): OAuthClientInformationMixed | undefined {
    return this.#client;
  }

  saveClientInformation(info: OAuthClientInformationMixed): void {
    this.#client = info;
  }

  tokens(): OAuthTokens | undefined {
    return this.#tokens;
  }

  saveTokens(tokens: OAuthTokens): void {
    this.#tokens = tokens;
  }

  redirectToAuthorization(url: URL): void {
    this.authorizationUrl = url;
  }

  saveCodeVerifier(verifier: string): void {
    this.#verifier = verifier;
  }

  codeVerifier(): string {
    return this.#verifier;
  }
}

/** The browser's walk: the IdP login as `user`, then the consent page; returns the page at the consent. */
export async function reachConsent(browser: TestBrowser, url: string, user: string): Promise<{ page: Page; text: string }> {
  const context = await browser.context();
  const page = await context.newPage();
  const end = await followSignIn(page, url, user, { until: (current) => new URL(current).pathname === '/oauth/callback' || !current.includes('/interaction/') });
  await page.waitForSelector('#approve, #message', { timeout: 10_000 });
  return { page, text: end.text === '' ? await page.locator('body').innerText() : await page.locator('body').innerText() };
}

/** Clicks Allow (or Deny) on the consent page; the host's listener gets the answer. */
export async function answerConsent(page: Page, decision: 'approve' | 'deny'): Promise<void> {
  await page.click(decision === 'approve' ? '#approve' : '#deny', { timeout: 10_000 });
}

/** A form POST to the front door's token endpoint (RFC 6749 §4.1.3, §6): its status and JSON body. */
export async function tokenRequest(origin: string, params: Record<string, string>): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${origin}/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(params).toString() });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/**
 * Signs `user` in with the browser through a registered client (PKCE, the consent approved) and
 * trades the code for tokens: the token response's body (its status must be 200).
 */
export async function signInForTokens(parts: FrontDoorParts & { clientId: string }, user: string): Promise<Record<string, unknown>> {
  const { verifier, challenge } = pkce();
  const url = new URL(`${parts.origin}/oauth/authorize`);
  url.search = new URLSearchParams({ response_type: 'code', client_id: parts.clientId, redirect_uri: parts.callback.url, code_challenge_method: 'S256', code_challenge: challenge, state: 'st' }).toString();
  const { page } = await reachConsent(parts.browser, url.href, user);
  let answer: URL;
  try {
    const answered = parts.callback.next();
    await answerConsent(page, 'approve');
    answer = await answered;
  } finally {
    await page.context().close();
  }
  const issued = await tokenRequest(parts.origin, { grant_type: 'authorization_code', code: answer.searchParams.get('code')!, code_verifier: verifier, client_id: parts.clientId, redirect_uri: parts.callback.url });
  if (issued.status !== 200) throw new Error(`the token request answered ${issued.status}: ${JSON.stringify(issued.body)}`);
  return issued.body;
}

/** A PKCE code verifier and its S256 challenge (RFC 7636 §4.1, §4.2). */
export function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

function closeServer(server: { close(callback: () => void): unknown; closeAllConnections(): void; listening: boolean }): Promise<void> {
  if (!server.listening) return Promise.resolve();
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
