// The connect page's OpenID Connect login at the company IdP (auth.oauth.issuer): code + PKCE
// with a nonce, the ID token validated by oauth4webapi, the principal formed exactly as a
// client token's (`<issuer>|<claim>`), so the page can tell whether whoever opened a connect URL
// is the principal it was made for (elicitation.mdx "Phishing").
import * as oauth from 'oauth4webapi';
import type { LoginConfig } from '../config/schema.js';
import { idpFetch, MAX_IDP_METADATA_BYTES, MAX_IDP_TOKEN_BYTES } from './idp-fetch.js';
import { registerClient, type RegisteredClient } from './oauth-client.js';
import type { CredentialStore } from './store.js';

export interface LoginOptions {
  issuer: string;
  /** The claim that names the principal within the issuer (auth.oauth.principalClaim). */
  principalClaim: string;
  config: LoginConfig | undefined;
  redirectUri: () => string;
  store: CredentialStore;
  /** Where a client registered at the IdP is kept (default `client:login`); one per redirect URI. */
  storeKey?: string;
}

/** What a finished login yields to the front door: who signed in, the ID token's claims, the IdP's refresh token. */
export interface LoginResult {
  principal: string;
  /** The principal claim's value (the part of `principal` after the issuer). */
  subject: string;
  claims: Readonly<Record<string, unknown>>;
  refreshToken: string | undefined;
}

/** The IdP refused a refresh (user disabled, password reset, grant revoked): a new sign-in is needed. */
export class LoginRefused extends Error {
  override readonly name = 'LoginRefused';
}

export interface PendingLogin {
  state: string;
  nonce: string;
  codeVerifier: string;
}

const TIMEOUT_MS = 10_000;

export class IdpLogin {
  readonly #options: LoginOptions;
  #ready: Promise<{ server: oauth.AuthorizationServer; client: RegisteredClient }> | undefined;

  constructor(options: LoginOptions) {
    this.#options = options;
  }

  /** Where the browser goes to sign in, and what the callback must match. */
  async start(): Promise<{ url: string; pending: PendingLogin }> {
    const { server, client } = await this.#setup();
    if (!server.authorization_endpoint) throw new Error(`issuer ${server.issuer} has no authorization endpoint`);
    const pending = { state: oauth.generateRandomState(), nonce: oauth.generateRandomNonce(), codeVerifier: oauth.generateRandomCodeVerifier() };
    const url = new URL(server.authorization_endpoint);
    const scopes = new Set(['openid', ...(this.#options.config?.scopes ?? [])]);
    url.search = new URLSearchParams({
      client_id: client.clientId,
      redirect_uri: this.#options.redirectUri(),
      response_type: 'code',
      scope: [...scopes].join(' '),
      state: pending.state,
      nonce: pending.nonce,
      code_challenge: await oauth.calculatePKCECodeChallenge(pending.codeVerifier),
      code_challenge_method: 'S256',
    }).toString();
    return { url: url.href, pending };
  }

  /** Checks the callback and the ID token; the principal id of whoever signed in. */
  async finish(callback: URL, pending: PendingLogin): Promise<string> {
    return (await this.finishWithTokens(callback, pending)).principal;
  }

  /** `finish`, keeping the ID token's claims and the IdP's refresh token (the front door). */
  async finishWithTokens(callback: URL, pending: PendingLogin): Promise<LoginResult> {
    const { server, client } = await this.#setup();
    const oclient: oauth.Client = { client_id: client.clientId, token_endpoint_auth_method: client.tokenEndpointAuthMethod };
    const params = oauth.validateAuthResponse(server, oclient, callback, pending.state);
    const auth = client.clientSecret ? oauth.ClientSecretBasic(client.clientSecret) : oauth.None();
    const response = await oauth.authorizationCodeGrantRequest(server, oclient, auth, params, this.#options.redirectUri(), pending.codeVerifier, requestOptions(server.token_endpoint, MAX_IDP_TOKEN_BYTES));
    const result = await oauth.processAuthorizationCodeResponse(server, oclient, response, { expectedNonce: pending.nonce, requireIdToken: true });
    const claims = oauth.getValidatedIdTokenClaims(result);
    const name = claims?.[this.#options.principalClaim] ?? claims?.sub;
    if (typeof name !== 'string' || name === '') throw new Error(`the ID token has no ${this.#options.principalClaim} claim`);
    return { principal: `${claims!.iss}|${name}`, subject: name, claims: { ...claims }, refreshToken: result.refresh_token };
  }

  /** Refreshes at the IdP; the refresh token to keep (a rotated one, or undefined: keep the old). Throws LoginRefused when the IdP says no. */
  async refresh(refreshToken: string): Promise<string | undefined> {
    return (await this.refreshSession(refreshToken)).refreshToken;
  }

  /** `refresh`, keeping the IdP's access token and its lifetime too (the front door's subject for token exchange). */
  async refreshSession(refreshToken: string): Promise<{ accessToken: string; expiresIn: number | undefined; refreshToken: string | undefined }> {
    const { server, client } = await this.#setup();
    const oclient: oauth.Client = { client_id: client.clientId, token_endpoint_auth_method: client.tokenEndpointAuthMethod };
    const auth = client.clientSecret ? oauth.ClientSecretBasic(client.clientSecret) : oauth.None();
    const response = await oauth.refreshTokenGrantRequest(server, oclient, auth, refreshToken, requestOptions(server.token_endpoint, MAX_IDP_TOKEN_BYTES));
    try {
      const result = await oauth.processRefreshTokenResponse(server, oclient, response);
      return { accessToken: result.access_token, expiresIn: result.expires_in, refreshToken: result.refresh_token };
    } catch (err) {
      if (err instanceof oauth.ResponseBodyError && err.status >= 400 && err.status < 500) throw new LoginRefused(`the IdP refused the refresh (${err.error})`);
      throw err;
    }
  }

  #setup(): Promise<{ server: oauth.AuthorizationServer; client: RegisteredClient }> {
    this.#ready ??= this.#discover().catch((err: unknown) => {
      this.#ready = undefined;
      throw err;
    });
    return this.#ready;
  }

  async #discover(): Promise<{ server: oauth.AuthorizationServer; client: RegisteredClient }> {
    const { issuer, config, store, redirectUri } = this.#options;
    const issuerUrl = new URL(issuer);
    const response = await oauth.discoveryRequest(issuerUrl, { algorithm: 'oidc', ...requestOptions(issuerUrl, MAX_IDP_METADATA_BYTES) });
    const server = await oauth.processDiscoveryResponse(issuerUrl, response);
    const key = this.#options.storeKey ?? 'client:login';
    const kept = await store.get(key);
    if (!config?.clientId && typeof kept === 'object' && kept !== null && typeof (kept as RegisteredClient).clientId === 'string') return { server, client: kept as RegisteredClient };
    try {
      const client = await registerClient(server, {
        ...(config?.clientId ? { configured: { clientId: config.clientId, ...(config.clientSecret ? { clientSecret: config.clientSecret } : {}) } } : {}),
        redirectUri: redirectUri(),
        clientName: 'Switchyard connect page',
      });
      if (client.method !== 'configured') await store.set(key, client);
      return { server, client };
    } catch {
      throw new Error(`auth.oauth.login.clientId is needed: ${issuer} offers neither Client ID Metadata Documents nor dynamic registration`);
    }
  }
}

/** oauth4webapi options for a request to `endpoint`: plain http only to a loopback address; the answer read within `maxBytes`. */
function requestOptions(endpoint: string | URL | undefined, maxBytes: number) {
  const url = endpoint === undefined ? undefined : new URL(endpoint);
  const loopback = url !== undefined && url.protocol === 'http:' && (url.hostname === 'localhost' || url.hostname === '[::1]' || /^127(?:\.\d{1,3}){3}$/.test(url.hostname));
  return { [oauth.allowInsecureRequests]: loopback, [oauth.customFetch]: idpFetch(maxBytes), signal: () => AbortSignal.timeout(TIMEOUT_MS) };
}
