// The connect page's OpenID Connect login at the company IdP (auth.oauth.issuer): code + PKCE
// with a nonce, the ID token validated by oauth4webapi, the principal formed exactly as a
// client token's (`<issuer>|<claim>`), so the page can tell whether whoever opened a connect URL
// is the principal it was made for (elicitation.mdx "Phishing").
import * as oauth from 'oauth4webapi';
import type { LoginConfig } from '../config/schema.js';
import { registerClient, type RegisteredClient } from './oauth-client.js';
import type { CredentialStore } from './store.js';

export interface LoginOptions {
  issuer: string;
  /** The claim that names the principal within the issuer (auth.oauth.principalClaim). */
  principalClaim: string;
  config: LoginConfig | undefined;
  redirectUri: () => string;
  store: CredentialStore;
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
    const { server, client } = await this.#setup();
    const oclient: oauth.Client = { client_id: client.clientId, token_endpoint_auth_method: client.tokenEndpointAuthMethod };
    const params = oauth.validateAuthResponse(server, oclient, callback, pending.state);
    const auth = client.clientSecret ? oauth.ClientSecretBasic(client.clientSecret) : oauth.None();
    const response = await oauth.authorizationCodeGrantRequest(server, oclient, auth, params, this.#options.redirectUri(), pending.codeVerifier, requestOptions(server.token_endpoint));
    const result = await oauth.processAuthorizationCodeResponse(server, oclient, response, { expectedNonce: pending.nonce, requireIdToken: true });
    const claims = oauth.getValidatedIdTokenClaims(result);
    const name = claims?.[this.#options.principalClaim] ?? claims?.sub;
    if (typeof name !== 'string' || name === '') throw new Error(`the ID token has no ${this.#options.principalClaim} claim`);
    return `${claims!.iss}|${name}`;
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
    const response = await oauth.discoveryRequest(issuerUrl, { algorithm: 'oidc', ...requestOptions(issuerUrl) });
    const server = await oauth.processDiscoveryResponse(issuerUrl, response);
    const key = 'client:login';
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

function requestOptions(endpoint: string | URL | undefined) {
  const url = endpoint === undefined ? undefined : new URL(endpoint);
  const loopback = url !== undefined && url.protocol === 'http:' && (url.hostname === 'localhost' || url.hostname === '[::1]' || /^127(?:\.\d{1,3}){3}$/.test(url.hostname));
  return { [oauth.allowInsecureRequests]: loopback, signal: () => AbortSignal.timeout(TIMEOUT_MS) };
}
