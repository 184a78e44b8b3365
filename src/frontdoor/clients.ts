// Which clients the front door knows: a URL client_id is a Client ID Metadata Document
// (cimd.ts); any other is one registered here by Dynamic Client Registration (RFC 7591), public
// clients only, its redirect URIs checked against `redirects`, registrations limited per address.
import { randomBytes } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { CredentialStore } from '../credentials/store.js';
import { ClientDocuments, ClientRefused, type ClientInfo } from './cimd.js';
import { redirectRefusal } from './rules.js';

export interface ClientRegistryOptions {
  store: CredentialStore;
  documents: ClientDocuments;
  /** `redirects`: what a DCR client may register. */
  redirects: readonly string[];
  /** Registrations allowed per address per minute. */
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

/** Too many registrations from one address. */
export class RegistrationLimited extends Error {}

const DCR_TTL_MS = 365 * 24 * 60 * 60_000;
const clientKey = (id: string): string => `frontdoor:client:${id}`;
const DCR_ID = /^dcr_[A-Za-z0-9_-]{22}$/;

export class ClientRegistry {
  readonly #options: ClientRegistryOptions;
  /** Per address: registrations in the current minute (bounded: the oldest addresses go first). */
  readonly #recent = new LRUCache<string, { minute: number; count: number }>({ max: 10_000 });
  readonly #now: () => number;

  constructor(options: ClientRegistryOptions) {
    this.#options = options;
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
    this.#limit(address);
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

  #limit(address: string): void {
    const minute = Math.floor(this.#now() / 60_000);
    const entry = this.#recent.get(address);
    const count = entry?.minute === minute ? entry.count + 1 : 1;
    if (count > (this.#options.registrationsPerMinute ?? 10)) throw new RegistrationLimited(`too many registrations from ${address}`);
    this.#recent.set(address, { minute, count });
  }
}
