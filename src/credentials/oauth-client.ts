// The gateway as the OAuth 2.1 client of an upstream MCP server on a user's behalf (authorization.mdx,
// 2025-11-25): discovery, registration, PKCE, code exchange, refresh, revocation. Protocol steps only,
// each through oauth4webapi; keeping tokens and pending requests is the caller's business. Every
// request goes through oauthFetch (reach.ts): the upstream's URLs held to its own address class,
// every answer read within a bound.
import * as oauth from 'oauth4webapi';
import { AddressRefused } from '../util/address-guard.js';
import { BodyTooLarge } from '../util/bounded-read.js';
import { isLoopbackHost, oauthFetch, reachOf, urlRefusal, type Reach } from './reach.js';

export type { AuthorizationServer, ResourceServer } from 'oauth4webapi';

export interface UpstreamAuthorization {
  /** The protected resource: the RFC 8707 `resource` to ask for (the RFC 9728 metadata's `resource`). */
  resource: string;
  /** Scopes to ask for: configured, else the 401's WWW-Authenticate `scope`, else metadata scopes_supported, else none. */
  scopes: string[];
  /** The authorization server's metadata as oauth4webapi returns it. */
  server: oauth.AuthorizationServer;
  /**
   * Where the server's endpoints may be reached, from the configured upstream URL: discovery
   * always sets it. Without one (an authorization server the operator named) only the protocol
   * rule holds.
   */
  reach?: Reach;
}

export interface RegisteredClient {
  clientId: string;
  clientSecret?: string;
  method: 'configured' | 'metadata-document' | 'dynamic'; // how it came to be
  tokenEndpointAuthMethod: string; // none | client_secret_basic | client_secret_post
}

export interface TokenSet {
  accessToken: string;
  tokenType: string;
  refreshToken?: string;
  expiresAt?: number; // epoch ms
  scope?: string;
}

/** Discovery found no usable metadata, or metadata the client must not use. */
export class DiscoveryError extends Error {
  override readonly name = 'DiscoveryError';
  readonly code = 'oauth_discovery_failed';
}

/** No way to obtain a client id at this authorization server. */
export class RegistrationError extends Error {
  override readonly name = 'RegistrationError';
  readonly code = 'oauth_registration_failed';
}

/** The authorization server redirected back with an `error` (the user declined, or the request was bad). */
export class AuthorizationDeniedError extends Error {
  override readonly name = 'AuthorizationDeniedError';
  readonly code = 'oauth_authorization_denied';
  constructor(readonly error: string) {
    super(`authorization server answered the authorization request with ${error}`);
  }
}

/** The refresh token is no longer good (`invalid_grant`): the user has to consent again. */
export class RefreshRejectedError extends Error {
  override readonly name = 'RefreshRejectedError';
  readonly code = 'oauth_refresh_rejected';
}

/** Every request is bounded, whatever the caller's signal. */
const REQUEST_TIMEOUT_MS = 10_000;
const PRM_WELL_KNOWN = '/.well-known/oauth-protected-resource'; // RFC 9728 §3
const OIDC_WELL_KNOWN = '/.well-known/openid-configuration'; // OpenID Connect Discovery 1.0 §4
const AUTH_METHODS = new Set(['none', 'client_secret_basic', 'client_secret_post']);

interface Transport {
  fetch?: typeof fetch | undefined;
  signal?: AbortSignal | undefined;
  reach?: Reach | undefined;
}

/** The AS metadata's endpoints the gateway calls, or sends a browser to: held to the upstream's reach like the rest. */
const ENDPOINTS = ['authorization_endpoint', 'token_endpoint', 'registration_endpoint', 'revocation_endpoint'] as const;

/** authorization.mdx "Authorization Server Discovery": 401 challenge or well-known RFC 9728 metadata, then RFC 8414 / OIDC metadata. */
export async function discoverAuthorization(
  upstreamUrl: string,
  options: { scopes?: string[]; fetch?: typeof fetch; signal?: AbortSignal } = {},
): Promise<UpstreamAuthorization> {
  const upstream = parseUrl(upstreamUrl);
  if (!upstream || !/^https?:$/.test(upstream.protocol)) throw new DiscoveryError('upstream URL is not an http(s) URL');
  upstream.hash = '';
  const reach = await reachOf(upstream);
  const transport: Transport = { fetch: options.fetch, signal: options.signal, reach };
  const challenge = await probeChallenge(upstream, transport);
  const metadata = challenge?.resourceMetadata !== undefined
    ? await metadataFromChallenge(challenge.resourceMetadata, upstream, transport)
    : await metadataFromWellKnown(upstream, transport);
  const server = await authorizationServerOf(metadata, transport);
  // authorization.mdx "Scope Selection Strategy", with the operator's configuration above both.
  const scopes = options.scopes?.length ? [...options.scopes]
    : challenge?.scope !== undefined ? challenge.scope.split(' ').filter(Boolean)
    : [...(metadata.scopes_supported ?? [])];
  return { resource: metadata.resource, scopes, server, reach };
}

/** GET the upstream without a token; its 401 may say where its metadata is and which scopes it wants. */
async function probeChallenge(upstream: URL, transport: Transport): Promise<{ resourceMetadata?: string; scope?: string } | undefined> {
  // Only the status and the challenge matter: the body (a stream, perhaps) is not read.
  const response = await get(upstream, 'application/json, text/event-stream', transport, `upstream ${where(upstream)}`, true);
  const header = response.headers.get('www-authenticate');
  if (response.status !== 401 || header === null) return undefined;
  const challenges = await parseChallenges(header);
  const chosen = challenges.find((c) => c.scheme === 'bearer' && c.parameters.resource_metadata)
    ?? challenges.find((c) => c.parameters.resource_metadata)
    ?? challenges.find((c) => c.scheme === 'bearer');
  if (!chosen) return undefined;
  const { resource_metadata: resourceMetadata, scope } = chosen.parameters;
  return { ...(resourceMetadata !== undefined && { resourceMetadata }), ...(scope !== undefined && { scope }) };
}

/**
 * oauth4webapi 3.8.8 keeps its WWW-Authenticate parser private; its response processors run it on
 * any unexpected status and hand the parsed challenges over as WWWAuthenticateChallengeError.cause.
 * processRevocationResponse is the one that needs nothing but a Response.
 */
async function parseChallenges(header: string): Promise<oauth.WWWAuthenticateChallenge[]> {
  try {
    await oauth.processRevocationResponse(new Response(null, { status: 401, headers: { 'www-authenticate': header } }));
  } catch (err) {
    if (err instanceof oauth.WWWAuthenticateChallengeError) return err.cause;
  }
  return [];
}

/** authorization.mdx: a resource_metadata URL in the challenge MUST be used when present. */
async function metadataFromChallenge(location: string, upstream: URL, transport: Transport): Promise<oauth.ResourceServer> {
  const url = parseUrl(location, upstream);
  if (!url) throw new DiscoveryError(`upstream ${where(upstream)} points resource_metadata at something that is not a URL`);
  const refusal = urlRefusal(url, transport.reach);
  if (refusal) throw new DiscoveryError(`upstream ${where(upstream)} points resource_metadata at ${where(url)}, which is refused: ${refusal}`);
  const response = await get(url, 'application/json', transport, `protected resource metadata at ${where(url)}`);
  if (response.status !== 200) {
    await discard(response);
    throw new DiscoveryError(`protected resource metadata at ${where(url)} answered HTTP ${response.status}`);
  }
  return readResourceMetadata(response, url, upstream);
}

/** RFC 9728 §3.1 path-inserted well-known URL first, then the root one (authorization.mdx order). */
async function metadataFromWellKnown(upstream: URL, transport: Transport): Promise<oauth.ResourceServer> {
  const identifiers = upstream.pathname === '/' ? [upstream] : [upstream, new URL(upstream.origin)];
  for (const identifier of identifiers) {
    transport.signal?.throwIfAborted();
    const url = new URL(identifier.pathname === '/' ? PRM_WELL_KNOWN : `${PRM_WELL_KNOWN}${identifier.pathname}`, identifier.origin);
    let response: Response;
    try {
      response = await oauth.resourceDiscoveryRequest(identifier, requestOptions(identifier, transport));
    } catch (err) {
      throw new DiscoveryError(`protected resource metadata at ${where(url)} ${failure(err)}`);
    }
    if (response.status === 200) return readResourceMetadata(response, url, upstream);
    await discard(response);
  }
  throw new DiscoveryError(`upstream ${where(upstream)} publishes no protected resource metadata (no resource_metadata challenge, no ${PRM_WELL_KNOWN})`);
}

/** RFC 9728 §3.3: the metadata must be about this upstream (same origin, a path prefix of it), else it is refused. */
async function readResourceMetadata(response: Response, url: URL, upstream: URL): Promise<oauth.ResourceServer> {
  const body: unknown = await response.clone().json().catch(() => undefined);
  const claimed = isRecord(body) && typeof body.resource === 'string' ? parseUrl(body.resource) : undefined;
  const refusal = !claimed ? 'has no valid "resource"'
    : !covers(claimed, upstream) ? `is for ${where(claimed)}, not ${where(upstream)} (RFC 9728 §3.3)` : undefined;
  if (!claimed || refusal) {
    await discard(response);
    throw new DiscoveryError(`protected resource metadata at ${where(url)} ${refusal}`);
  }
  let metadata: oauth.ResourceServer;
  try {
    metadata = await oauth.processResourceDiscoveryResponse(claimed, response);
  } catch (err) {
    throw new DiscoveryError(`protected resource metadata at ${where(url)} is not valid: ${describe(err)}`);
  }
  if (!isStringArray(metadata.authorization_servers) || metadata.authorization_servers.length === 0) {
    throw new DiscoveryError(`protected resource metadata at ${where(url)} lists no authorization_servers`);
  }
  if (metadata.scopes_supported !== undefined && !isStringArray(metadata.scopes_supported)) {
    throw new DiscoveryError(`protected resource metadata at ${where(url)} has a malformed scopes_supported`);
  }
  return metadata;
}

/** The first listed authorization server whose metadata can be found (RFC 9728 §7.6 leaves the choice to the client). */
async function authorizationServerOf(metadata: oauth.ResourceServer, transport: Transport): Promise<oauth.AuthorizationServer> {
  const reasons: string[] = [];
  for (const issuerText of metadata.authorization_servers ?? []) {
    const issuer = parseUrl(issuerText);
    const refusal = issuer ? urlRefusal(issuer, transport.reach) : 'it is not a URL';
    if (!issuer || refusal) {
      reasons.push(`an issuer${issuer ? ` at ${where(issuer)}` : ''} that is refused: ${refusal}`);
      continue;
    }
    const found = await authorizationServerMetadata(issuer, transport, reasons);
    const endpoint = found && endpointRefusal(found, transport);
    if (endpoint) reasons.push(`${where(issuer)}: ${endpoint}`);
    else if (found) return found;
  }
  throw new DiscoveryError(`no authorization server metadata found (${reasons.join('; ')})`);
}

/** authorization.mdx: RFC 8414 path insertion, OIDC path insertion (only with a path), OIDC path appending. */
async function authorizationServerMetadata(issuer: URL, transport: Transport, reasons: string[]): Promise<oauth.AuthorizationServer | undefined> {
  const options = (): oauth.DiscoveryRequestOptions => requestOptions(issuer, transport);
  const attempts: Array<[string, () => Promise<Response>]> = [
    ['oauth-authorization-server', () => oauth.discoveryRequest(issuer, { ...options(), algorithm: 'oauth2' })],
  ];
  if (issuer.pathname !== '/') attempts.push(['openid-configuration (path inserted)', () => oidcPathInserted(issuer, transport)]);
  attempts.push(['openid-configuration', () => oauth.discoveryRequest(issuer, { ...options(), algorithm: 'oidc' })]);
  for (const [name, attempt] of attempts) {
    transport.signal?.throwIfAborted();
    try {
      const response = await attempt();
      if (response.status === 200) return await oauth.processDiscoveryResponse(issuer, response); // issuer must match (RFC 8414 §3.3)
      await discard(response);
      reasons.push(`${where(issuer)} ${name}: HTTP ${response.status}`);
    } catch (err) {
      if (transport.signal?.aborted) throw err;
      reasons.push(`${where(issuer)} ${name}: ${describe(err)}`);
    }
  }
  return undefined;
}

/** Why one of the server's endpoints may not be used for this upstream, or undefined. */
function endpointRefusal(server: oauth.AuthorizationServer, transport: Transport): string | undefined {
  for (const name of ENDPOINTS) {
    const value: unknown = server[name];
    if (value === undefined) continue;
    const url = typeof value === 'string' ? parseUrl(value) : undefined;
    const refusal = url ? urlRefusal(url, transport.reach) : 'it is not a URL';
    if (refusal) return `its ${name}${url ? ` ${where(url)}` : ''} is refused: ${refusal}`;
  }
  return undefined;
}

/** oauth4webapi's discoveryRequest knows OIDC path appending, not the path-inserted variant. */
function oidcPathInserted(issuer: URL, transport: Transport): Promise<Response> {
  const url = new URL(`${OIDC_WELL_KNOWN}${issuer.pathname.replace(/\/$/, '')}`, issuer.origin);
  return get(url, 'application/json', transport, 'openid-configuration');
}

/** A bounded GET without credentials, redirects not followed; a network failure or a refused address is a DiscoveryError. */
async function get(url: URL, accept: string, transport: Transport, what: string, headersOnly = false): Promise<Response> {
  try {
    const fetchOf = oauthFetch(transport.reach, { inner: transport.fetch, headersOnly });
    return await fetchOf(url.href, { method: 'GET', headers: { accept }, redirect: 'manual', signal: bounded(transport.signal) });
  } catch (err) {
    throw new DiscoveryError(`${what} ${failure(err)}`);
  }
}

/** authorization.mdx "Client Registration Approaches": configured, then a metadata document, then RFC 7591. */
export async function registerClient(
  server: oauth.AuthorizationServer,
  options: { configured?: { clientId: string; clientSecret?: string }; metadataUrl?: string; redirectUri: string; clientName: string; fetch?: typeof fetch; reach?: Reach | undefined },
): Promise<RegisteredClient> {
  const { configured, metadataUrl } = options;
  if (configured?.clientSecret) {
    return { clientId: configured.clientId, clientSecret: configured.clientSecret, method: 'configured', tokenEndpointAuthMethod: 'client_secret_basic' };
  }
  if (configured) return { clientId: configured.clientId, method: 'configured', tokenEndpointAuthMethod: 'none' };
  if (server.client_id_metadata_document_supported === true && metadataUrl !== undefined && isMetadataDocumentUrl(metadataUrl)) {
    return { clientId: metadataUrl, method: 'metadata-document', tokenEndpointAuthMethod: 'none' };
  }
  if (typeof server.registration_endpoint === 'string') return registerDynamically(server, options);
  throw new RegistrationError(`authorization server ${server.issuer} offers neither Client ID Metadata Documents nor dynamic registration; configure userAuth.clientId`);
}

/** The Client ID Metadata Document the gateway serves at metadataUrl. */
export function clientMetadataDocument(metadataUrl: string, redirectUri: string, clientName: string): Record<string, unknown> {
  return { client_id: metadataUrl, ...clientMetadata(redirectUri, clientName) };
}

function clientMetadata(redirectUri: string, clientName: string) {
  const grants = { grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'] };
  return { client_name: clientName, redirect_uris: [redirectUri], ...grants, token_endpoint_auth_method: 'none' };
}

/** authorization.mdx "Client ID Metadata Documents": the client_id is an https URL with a path. */
function isMetadataDocumentUrl(text: string): boolean {
  const url = parseUrl(text);
  return url !== undefined && url.protocol === 'https:' && url.pathname !== '/' && url.hash === '';
}

async function registerDynamically(server: oauth.AuthorizationServer, options: { redirectUri: string; clientName: string; fetch?: typeof fetch; reach?: Reach | undefined }): Promise<RegisteredClient> {
  let registered: oauth.OmitSymbolProperties<oauth.Client>;
  try {
    const metadata = clientMetadata(options.redirectUri, options.clientName);
    const response = await oauth.dynamicClientRegistrationRequest(server, metadata, requestOptions(server.registration_endpoint, options));
    registered = await oauth.processDynamicClientRegistrationResponse(response);
  } catch (err) {
    throw new RegistrationError(`dynamic client registration at ${server.issuer} failed: ${describe(err)}`);
  }
  const secret = typeof registered.client_secret === 'string' && registered.client_secret ? registered.client_secret : undefined;
  const method = typeof registered.token_endpoint_auth_method === 'string' ? registered.token_endpoint_auth_method : secret ? 'client_secret_basic' : 'none';
  if (!AUTH_METHODS.has(method) || (method !== 'none' && !secret)) {
    throw new RegistrationError(`dynamic client registration at ${server.issuer} gave token_endpoint_auth_method ${safeCode(method)}, which the gateway cannot use`);
  }
  const client: RegisteredClient = { clientId: registered.client_id, method: 'dynamic', tokenEndpointAuthMethod: method };
  if (method !== 'none' && secret) client.clientSecret = secret;
  return client;
}

/** The authorization request URL (PKCE S256, state, RFC 8707 resource, scope) and what the callback needs back. */
export async function startAuthorization(
  auth: UpstreamAuthorization, client: RegisteredClient, redirectUri: string,
): Promise<{ url: string; state: string; codeVerifier: string }> {
  const { server } = auth;
  // authorization.mdx "Authorization Code Protection": no advertised S256 (or no field at all) → MUST NOT proceed.
  const methods: unknown = server.code_challenge_methods_supported;
  if (!Array.isArray(methods) || !methods.includes('S256')) {
    throw new DiscoveryError(`authorization server ${server.issuer} does not advertise PKCE S256 (code_challenge_methods_supported)`);
  }
  const url = parseUrl(server.authorization_endpoint ?? '');
  const refusal = url && urlRefusal(url, auth.reach);
  if (!url || refusal) throw new DiscoveryError(`authorization server ${server.issuer} has no usable authorization_endpoint${refusal ? ` (${refusal})` : ''}`);
  const codeVerifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  const parameters: Record<string, string> = {
    response_type: 'code', client_id: client.clientId, redirect_uri: redirectUri, state, resource: auth.resource,
    code_challenge: await oauth.calculatePKCECodeChallenge(codeVerifier), code_challenge_method: 'S256',
    ...(auth.scopes.length > 0 && { scope: auth.scopes.join(' ') }),
  };
  for (const [name, value] of Object.entries(parameters)) url.searchParams.set(name, value);
  return { url: url.href, state, codeVerifier };
}

/** Validates the redirect back (iss, state, then error) and exchanges the code with PKCE and `resource`. */
export async function finishAuthorization(
  auth: UpstreamAuthorization, client: RegisteredClient, callbackUrl: URL,
  pending: { state: string; codeVerifier: string; redirectUri: string }, options: { now?: () => number } = {},
): Promise<TokenSet> {
  const asClient = oauthClient(client);
  let parameters: URLSearchParams;
  try {
    parameters = oauth.validateAuthResponse(auth.server, asClient, callbackUrl, pending.state);
  } catch (err) {
    if (err instanceof oauth.AuthorizationResponseError) throw new AuthorizationDeniedError(safeCode(err.error));
    throw new Error(`authorization callback refused: ${describe(err)}`);
  }
  const startedAt = (options.now ?? Date.now)();
  try {
    const response = await oauth.authorizationCodeGrantRequest(
      auth.server, asClient, clientAuthentication(client), parameters, pending.redirectUri, pending.codeVerifier,
      { ...requestOptions(auth.server.token_endpoint, { reach: auth.reach }), additionalParameters: { resource: auth.resource } },
    );
    return tokenSet(await oauth.processAuthorizationCodeResponse(auth.server, asClient, response), startedAt, undefined);
  } catch (err) {
    throw new Error(`code exchange at ${auth.server.issuer} failed: ${describe(err)}`);
  }
}

/** Refresh grant with `resource`; `invalid_grant` means the user has to consent again. */
export async function refreshTokens(
  auth: UpstreamAuthorization, client: RegisteredClient, refreshToken: string, options: { now?: () => number } = {},
): Promise<TokenSet> {
  const asClient = oauthClient(client);
  const startedAt = (options.now ?? Date.now)();
  try {
    const response = await oauth.refreshTokenGrantRequest(
      auth.server, asClient, clientAuthentication(client), refreshToken,
      { ...requestOptions(auth.server.token_endpoint, { reach: auth.reach }), additionalParameters: { resource: auth.resource } },
    );
    // RFC 6749 §6: a server that does not rotate leaves the old refresh token valid.
    return tokenSet(await oauth.processRefreshTokenResponse(auth.server, asClient, response), startedAt, refreshToken);
  } catch (err) {
    if (err instanceof oauth.ResponseBodyError && err.error === 'invalid_grant') {
      throw new RefreshRejectedError(`authorization server ${auth.server.issuer} no longer accepts the refresh token (invalid_grant)`);
    }
    throw new Error(`refresh at ${auth.server.issuer} failed: ${describe(err)}`);
  }
}

/** RFC 7009 revocation; false when there is no endpoint or it failed (sign-out still deletes locally). */
export async function revokeToken(auth: UpstreamAuthorization, client: RegisteredClient, token: string, hint: 'access_token' | 'refresh_token'): Promise<boolean> {
  if (typeof auth.server.revocation_endpoint !== 'string') return false;
  try {
    const response = await oauth.revocationRequest(
      auth.server, oauthClient(client), clientAuthentication(client), token,
      { ...requestOptions(auth.server.revocation_endpoint, { reach: auth.reach }), additionalParameters: { token_type_hint: hint } },
    );
    await oauth.processRevocationResponse(response);
    return true;
  } catch {
    return false;
  }
}

function tokenSet(tokens: oauth.TokenEndpointResponse, startedAt: number, previousRefreshToken: string | undefined): TokenSet {
  // oauth4webapi lowercases token_type and lets bearer and dpop through; the gateway sends Bearer only.
  if (tokens.token_type !== 'bearer') throw new Error(`token endpoint issued a ${safeCode(tokens.token_type)} token; only Bearer is supported`);
  const set: TokenSet = { accessToken: tokens.access_token, tokenType: 'Bearer' };
  const refreshToken = tokens.refresh_token ?? previousRefreshToken;
  if (refreshToken !== undefined) set.refreshToken = refreshToken;
  // Counted from before the request, so a token is never thought to live longer than it does.
  if (tokens.expires_in !== undefined) set.expiresAt = startedAt + tokens.expires_in * 1_000;
  if (tokens.scope !== undefined) set.scope = tokens.scope;
  return set;
}

function oauthClient(client: RegisteredClient): oauth.Client {
  return { client_id: client.clientId, token_endpoint_auth_method: client.tokenEndpointAuthMethod };
}

function clientAuthentication(client: RegisteredClient): oauth.ClientAuth {
  const method = client.tokenEndpointAuthMethod;
  if (method === 'none') return oauth.None();
  if (!AUTH_METHODS.has(method)) throw new Error(`token endpoint auth method ${safeCode(method)} is not supported`);
  if (!client.clientSecret) throw new Error(`client ${client.clientId} uses ${method} but has no secret`);
  return method === 'client_secret_basic' ? oauth.ClientSecretBasic(client.clientSecret) : oauth.ClientSecretPost(client.clientSecret);
}

/**
 * oauth4webapi options for a request to `endpoint`: plain http only to a loopback address (and
 * with a reach, only beside a plain http loopback upstream); every request through oauthFetch.
 */
function requestOptions(endpoint: URL | string | undefined, transport: Transport = {}) {
  const url = endpoint instanceof URL ? endpoint : parseUrl(endpoint ?? '');
  return {
    [oauth.allowInsecureRequests]: url !== undefined && url.protocol === 'http:' && isLoopbackHost(url),
    [oauth.customFetch]: oauthFetch(transport.reach, { inner: transport.fetch }),
    signal: () => bounded(transport.signal),
  };
}

function bounded(signal: AbortSignal | undefined): AbortSignal {
  const timeout = AbortSignal.timeout(REQUEST_TIMEOUT_MS);
  return signal ? AbortSignal.any([signal, timeout]) : timeout;
}

/** Whether metadata about `resource` may describe `upstream`: same origin, a path prefix at a segment boundary. */
function covers(resource: URL, upstream: URL): boolean {
  if (resource.origin !== upstream.origin || resource.hash !== '') return false;
  const base = resource.pathname.replace(/\/$/, '');
  return base === '' || upstream.pathname === base || upstream.pathname.startsWith(`${base}/`);
}

async function discard(response: Response): Promise<void> {
  await response.body?.cancel().catch(() => {});
}

function parseUrl(text: string, base?: URL): URL | undefined {
  return URL.canParse(text, base?.href) ? new URL(text, base) : undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((item) => typeof item === 'string');
}

/** A URL fit for a message: no userinfo, query or fragment, which may carry credentials. */
function where(url: URL): string {
  return `${url.origin}${url.pathname}`;
}

/** A server-given word (an RFC 6749 §5.2 error code, a token type) kept short and printable. */
function safeCode(value: unknown): string {
  return (typeof value === 'string' ? value.replace(/[^A-Za-z0-9_.:-]/g, '').slice(0, 64) : '') || 'unknown_error';
}

/** A request that failed: refused (too large, a refused address) or unanswered, and why. */
function failure(err: unknown): string {
  return `${err instanceof BodyTooLarge || err instanceof AddressRefused ? 'was refused' : 'did not answer'}: ${describe(err)}`;
}

/** One line about a failure, never request or response bodies (they carry codes and tokens). */
function describe(err: unknown): string {
  if (err instanceof oauth.ResponseBodyError) return `${safeCode(err.error)} (HTTP ${err.status})`;
  if (err instanceof oauth.WWWAuthenticateChallengeError) return `HTTP ${err.status} with an authentication challenge`;
  if (err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError')) return 'no answer in time';
  // oauth4webapi's own messages are fixed texts (the values go in `cause`), as are fetch's.
  if (err instanceof Error) return err.message.split('\n')[0]!.slice(0, 200);
  return 'unknown failure';
}
