// The front door (issue 37; docs/front-door.md): Switchyard as the OAuth authorization server
// hosts see. Built once by gateway.ts from the config and the credential store: the metadata
// (RFC 8414, and OpenID discovery for hosts that read only that), the clients (CIMD and DCR),
// the browser flow, the token endpoint, the signing keys, and what the authenticator needs to
// accept its tokens (the issuer, the keys, the check that a token's grant still stands).
import { AuthError } from '../auth/principal.js';
import type { OwnIssuer } from '../auth/authenticator.js';
import type { SecurityEvents } from '../audit/events.js';
import type { Config } from '../config/schema.js';
import { IdpLogin } from '../credentials/login.js';
import type { CredentialStore } from '../credentials/store.js';
import { MemoryBucketStore, type BucketStore } from '../ratelimit/memory-store.js';
import type { Logger } from '../util/log.js';
import { Authorization } from './authorize.js';
import { ClientDocuments } from './cimd.js';
import { ClientRegistry } from './clients.js';
import { Grants } from './grants.js';
import { IdpSessions } from './idp-sessions.js';
import { SigningKeys } from './keys.js';
import { TokenEndpoint } from './token.js';

export interface FrontDoorOptions {
  config: Config;
  store: CredentialStore;
  logger: Logger;
  /** The gateway's audit records and spans: sign-ins, tokens issued and refused. */
  events?: SecurityEvents;
  onAuthorization?: (outcome: string) => void;
  onToken?: (grantType: string, outcome: string) => void;
  /** Extra CA certificates (PEM) for fetching client metadata documents (tests). */
  ca?: string;
  /** Where registrations and new sign-ins are counted (setup.ts: the rate limiter's kind of store); the front door closes it. Default: this process's. */
  limits?: BucketStore;
  now?: () => number;
}

/** Addresses whose registrations (and, apart, sign-ins) are counted in this process at once (a full store makes newcomers wait, never resets a count). */
export const REGISTRATION_BUCKETS = 100_000;

const REVOKED_CHANNEL = 'frontdoor:revoked';

/** The routes the front door serves, under the issuer's origin. */
export const FRONT_DOOR_PATHS = {
  authorize: '/oauth/authorize',
  callback: '/oauth/callback',
  consent: '/oauth/consent',
  token: '/oauth/token',
  register: '/oauth/register',
  revoke: '/oauth/revoke',
  jwks: '/oauth/jwks',
} as const;

export class FrontDoor {
  /** The issuer: listen.publicUrl's origin. */
  readonly issuer: string;
  readonly authorization: Authorization;
  readonly tokens: TokenEndpoint;
  readonly keys: SigningKeys;
  readonly grants: Grants;
  readonly clients: ClientRegistry;
  /** The users' IdP sessions, as token exchange's subjects (FrontDoorSubjects). */
  readonly idpSessions: IdpSessions;
  readonly #principalIssuer: string;
  readonly #documents: ClientDocuments;
  readonly #config: Config;
  readonly #limits: BucketStore;
  readonly #unsubscribe: () => void;

  constructor(options: FrontDoorOptions) {
    const { config, store, logger } = options;
    const oauth = config.auth!.oauth!;
    const settings = oauth.frontDoor!;
    this.#config = config;
    const main = oauth.resource ?? config.listen.publicUrl!;
    this.issuer = new URL(config.listen.publicUrl!).origin;
    const resources = [main, ...config.endpoints.map((endpoint) => new URL(endpoint.path, new URL(main).origin).href)];
    const login = new IdpLogin({ issuer: oauth.issuer, principalClaim: oauth.principalClaim, config: oauth.login, redirectUri: () => `${this.issuer}${FRONT_DOOR_PATHS.callback}`, store, storeKey: 'client:frontdoor-login' });
    this.keys = new SigningKeys({ store, ...(options.now ? { now: options.now } : {}) });
    this.grants = new Grants({
      store,
      refreshTtlMs: settings.refreshTtl,
      grantMaxAgeMs: settings.grantMaxAge,
      ...(options.now ? { now: options.now } : {}),
      // Each caller writes its own audit line (reuse detected, revocation, the IdP's refusal).
      onRevoked: async () => {
        await store.publish(REVOKED_CHANNEL, 'revoked');
      },
    });
    this.#documents = new ClientDocuments({ allow: settings.cimd.allow, allowPrivateAddresses: settings.cimd.allowPrivateAddresses, ...(options.ca ? { ca: options.ca } : {}) });
    this.#limits = options.limits ?? new MemoryBucketStore(REGISTRATION_BUCKETS);
    this.clients = new ClientRegistry({ store, documents: this.#documents, redirects: settings.redirects, limits: this.#limits, registrationsPerMinute: settings.registrationsPerMinute, ...(options.now ? { now: options.now } : {}) });
    this.authorization = new Authorization({
      issuer: this.issuer,
      resources,
      scopes: oauth.scopes,
      claims: settings.claims ?? claimsTeamsRead(config),
      clients: this.clients,
      grants: this.grants,
      login,
      store,
      logger,
      events: options.events,
      onAuthorization: options.onAuthorization ?? (() => {}),
      limits: this.#limits,
      authorizationsPerMinute: settings.authorizationsPerMinute,
    });
    this.#principalIssuer = oauth.issuer;
    this.idpSessions = new IdpSessions({ grants: this.grants, login, logger, events: options.events, ...(options.now ? { now: options.now } : {}) });
    this.tokens = new TokenEndpoint({ issuer: this.issuer, tokenTtlMs: settings.tokenTtl, grants: this.grants, keys: this.keys, clients: this.clients, login, logger, events: options.events, onToken: options.onToken ?? (() => {}), ...(options.now ? { now: options.now } : {}) });
    // A revocation on any replica makes every replica verify its remembered tokens again.
    this.#unsubscribe = store.subscribe(REVOKED_CHANNEL, () => this.keys.invalidate());
  }

  /** RFC 8414 §2 (with the MCP authorization spec's CIMD flag, when cimd.allow names a host, and RFC 9207's iss flag). */
  metadata(openid = false): Record<string, unknown> {
    const oauth = this.#config.auth!.oauth!;
    const at = (path: string): string => `${this.issuer}${path}`;
    return {
      issuer: this.issuer,
      authorization_endpoint: at(FRONT_DOOR_PATHS.authorize),
      token_endpoint: at(FRONT_DOOR_PATHS.token),
      ...(oauth.frontDoor!.dcr ? { registration_endpoint: at(FRONT_DOOR_PATHS.register) } : {}),
      revocation_endpoint: at(FRONT_DOOR_PATHS.revoke),
      jwks_uri: at(FRONT_DOOR_PATHS.jwks),
      ...(oauth.scopes.length > 0 ? { scopes_supported: oauth.scopes } : {}),
      response_types_supported: ['code'],
      response_modes_supported: ['query'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      token_endpoint_auth_methods_supported: ['none'],
      revocation_endpoint_auth_methods_supported: ['none'],
      code_challenge_methods_supported: ['S256'],
      // Only when a CIMD client can be accepted: hosts that prefer CIMD over DCR read this flag
      // and would never fall back to registering, were every document refused (cimd.allow empty).
      ...(oauth.frontDoor!.cimd.allow.length > 0 ? { client_id_metadata_document_supported: true } : {}),
      authorization_response_iss_parameter_supported: true,
      // OpenID discovery's required fields, for hosts that read only that document (no ID tokens are issued).
      ...(openid ? { subject_types_supported: ['public'], id_token_signing_alg_values_supported: ['ES256'] } : {}),
    };
  }

  /** Where the metadata is served: the root forms, and each endpoint's path-suffixed and path-prefixed forms. */
  metadataPaths(): Array<{ path: string; openid: boolean }> {
    const paths = [this.#config.listen.path, ...this.#config.endpoints.map((endpoint) => endpoint.path)].map((path) => path.replace(/\/$/, ''));
    const forms: Array<{ path: string; openid: boolean }> = [];
    for (const [name, openid] of [['oauth-authorization-server', false], ['openid-configuration', true]] as const) {
      forms.push({ path: `/.well-known/${name}`, openid });
      for (const path of paths) if (path !== '') forms.push({ path: `/.well-known/${name}${path}`, openid }, { path: `${path}/.well-known/${name}`, openid });
    }
    return forms;
  }

  /** Paths any browser origin may call (no cookie is read there): the metadata, the JWKS and the back channel. */
  openPaths(): string[] {
    const { token, register, revoke, jwks } = FRONT_DOOR_PATHS;
    return [...this.metadataPaths().map((form) => form.path), token, register, revoke, jwks];
  }

  /** What the authenticator needs to accept the front door's tokens. */
  ownIssuer(): OwnIssuer {
    return {
      issuer: this.issuer,
      keys: this.keys,
      accept: async (payload) => {
        if (typeof payload.sid !== 'string' || !(await this.grants.alive(payload.sid))) throw new AuthError('claims', "the token's grant was revoked");
        // The principal as the verifier forms it (principalIssuer, principalClaim sub).
        if (typeof payload.sub === 'string') this.idpSessions.seen(`${this.#principalIssuer}|${payload.sub}`, payload.sid);
      },
    };
  }

  /** Clients by kind, for the clients gauge. */
  async clientCounts(): Promise<{ cimd: number; dcr: number }> {
    return { cimd: this.#documents.size, dcr: await this.clients.registered() };
  }

  async close(): Promise<void> {
    this.#unsubscribe();
    await Promise.all([this.#documents.close(), this.#limits.close()]);
  }
}

/** The claims teams[].match names (their first dotted segment): what policy reads from a principal. */
function claimsTeamsRead(config: Config): string[] {
  const names = new Set<string>();
  for (const team of config.teams ?? []) {
    const matches = team.match === undefined ? [] : Array.isArray(team.match) ? team.match : [team.match];
    for (const match of matches) if ('claim' in match) names.add(match.claim.split('.')[0]!);
  }
  return [...names];
}
