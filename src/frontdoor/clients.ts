// Which clients the front door knows: a URL client_id is a Client ID Metadata Document
// (cimd.ts); any other is one registered here by Dynamic Client Registration (RFC 7591), public
// clients only, its redirect URIs checked against `redirects`, registrations limited per address
// in a token bucket of the rate limiter's store (Redis: one count for every replica).
import { randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import type { CredentialStore } from '../credentials/store.js';
import type { BucketLimit } from '../ratelimit/bucket.js';
import type { BucketStore } from '../ratelimit/memory-store.js';
import { ClientDocuments, ClientRefused, type ClientInfo } from './cimd.js';
import { redirectRefusal } from './rules.js';

export interface ClientRegistryOptions {
  store: CredentialStore;
  documents: ClientDocuments;
  /** `redirects`: what a DCR client may register. */
  redirects: readonly string[];
  /** Where registrations are counted (the front door's bucket store). */
  limits: BucketStore;
  /** Registrations allowed per address per minute (default 10). */
  registrationsPerMinute?: number;
  now?: () => number;
}

/** RFC 7591 §3.2.2: why a registration is refused, with its error code. */
export class RegistrationRefused extends Error {
  override readonly name = 'RegistrationRefused';
  constructor(
    readonly error: 'invalid_redirect_uri' | 'invalid_client_metadata',
    message: string,
  ) {
    super(message);
  }
}

/** Too many registrations from one address: the next is allowed after `retryAfterMs`. */
export class RegistrationLimited extends Error {
  constructor(readonly retryAfterMs: number) {
    super('too many registrations from this address');
  }
}

const DCR_TTL_MS = 365 * 24 * 60 * 60_000;
const clientKey = (id: string): string => `frontdoor:client:${id}`;
const DCR_ID = /^dcr_[A-Za-z0-9_-]{22}$/;

export class ClientRegistry {
  readonly #options: ClientRegistryOptions;
  readonly #limit: BucketLimit;
  readonly #now: () => number;

  constructor(options: ClientRegistryOptions) {
    this.#options = options;
    const perMinute = options.registrationsPerMinute ?? 10;
    this.#limit = { rate: perMinute, perMs: 60_000, burst: perMinute };
    this.#now = options.now ?? Date.now;
  }

  /** The client `clientId` names; throws ClientRefused (shown to the user) when there is none. */
  async resolve(clientId: string): Promise<ClientInfo> {
    if (clientId.startsWith('https://')) return this.#options.documents.resolve(clientId);
    if (!DCR_ID.test(clientId)) throw new ClientRefused('unknown client_id');
    const stored = (await this.#options.store.get(clientKey(clientId))) as ClientInfo | undefined;
    if (!stored) throw new ClientRefused('unknown client_id');
    return stored;
  }

  /** How many clients registered here are stored (the clients gauge). */
  registered(): Promise<number> {
    return this.#options.store.count('frontdoor:client:');
  }

  /** RFC 7591 §3.1: registers a public client; the §3.2.1 answer. */
  async register(body: unknown, address: string): Promise<Record<string, unknown>> {
    const decision = await this.#options.limits.take(`frontdoor:register:${registrationSource(address)}`, this.#limit);
    if (!decision.allowed) throw new RegistrationLimited(decision.retryAfterMs);
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new RegistrationRefused('invalid_client_metadata', 'the registration must be a JSON object');
    const metadata = body as Record<string, unknown>;
    const uris = metadata.redirect_uris;
    if (!Array.isArray(uris) || uris.length === 0 || uris.length > 20 || !uris.every((uri): uri is string => typeof uri === 'string' && uri.length <= 2_048)) {
      throw new RegistrationRefused('invalid_redirect_uri', 'redirect_uris must be a list of 1 to 20 URIs');
    }
    for (const uri of uris) {
      const why = redirectRefusal(uri, this.#options.redirects);
      if (why) throw new RegistrationRefused('invalid_redirect_uri', why);
    }
    const method = metadata.token_endpoint_auth_method ?? 'none';
    if (method !== 'none') throw new RegistrationRefused('invalid_client_metadata', 'only public clients (token_endpoint_auth_method "none") can register');
    const grantTypes = metadata.grant_types ?? ['authorization_code', 'refresh_token'];
    if (!Array.isArray(grantTypes) || !grantTypes.every((type) => type === 'authorization_code' || type === 'refresh_token')) {
      throw new RegistrationRefused('invalid_client_metadata', 'grant_types may be authorization_code and refresh_token only');
    }
    const responseTypes = metadata.response_types ?? ['code'];
    if (!Array.isArray(responseTypes) || !responseTypes.every((type) => type === 'code')) throw new RegistrationRefused('invalid_client_metadata', 'response_types may be code only');
    const name = typeof metadata.client_name === 'string' && metadata.client_name.trim() !== '' ? metadata.client_name.trim().slice(0, 100) : 'Unnamed client';
    const clientId = `dcr_${randomBytes(16).toString('base64url')}`;
    const client: ClientInfo = { clientId, kind: 'dcr', name, redirectUris: uris };
    await this.#options.store.set(clientKey(clientId), client, DCR_TTL_MS);
    return {
      client_id: clientId,
      client_id_issued_at: Math.floor(this.#now() / 1_000),
      client_name: name,
      redirect_uris: uris,
      token_endpoint_auth_method: 'none',
      grant_types: grantTypes,
      response_types: responseTypes,
    };
  }
}

/**
 * What registrations are counted against: the address (an IPv4-mapped one as IPv4), an IPv6 one
 * by its /64, the block one host or one customer usually gets whole (else each of its 2^64
 * addresses would count on its own).
 */
export function registrationSource(address: string): string {
  const bare = address.replace(/%.*$/, '').replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/i, '');
  if (isIP(bare) !== 6) return bare;
  // The URL parser writes the address in its one normal form (lower case, embedded IPv4 as hex).
  const normal = new URL(`http://[${bare}]/`).hostname.slice(1, -1);
  const [head = '', tail] = normal.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = tail === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  return `${groups.slice(0, 4).join(':')}::/64`;
}
