// Self-describing session ids (docs/deploy.md): the Mcp-Session-Id is an AES-256-GCM token under
// a key every replica shares, carrying what a replica needs to take the session over: the
// principal, the negotiated version, the client's capabilities and info, and each upstream's
// HTTP session id, protocol version and capabilities. Key rotation: the first key encrypts,
// every key decrypts. A token that fails to decrypt is an unknown session.
import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';
import { isObject, type JsonObject } from '../mcp/jsonrpc.js';
import { isSupportedVersion, type SessionVersion } from '../mcp/versions.js';
import type { UpstreamSessionState } from '../mcp/upstream-session.js';

export type UpstreamState = UpstreamSessionState;

export interface SessionClaims {
  /** Random per session, so two sessions never share an id. */
  nonce: string;
  principal?: string;
  /** The endpoint (path) beside the main one it was opened on. */
  endpoint?: string;
  protocolVersion: SessionVersion;
  clientCapabilities: JsonObject;
  clientInfo: JsonObject;
  upstreams: Record<string, UpstreamState>;
  /** Issued at (ms since epoch). */
  iat: number;
}

const VERSION = 1;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_HINT_BYTES = 2;

interface SessionKey {
  key: Buffer;
  /** Lets decryption try the right key first; not secret. */
  hint: Buffer;
}

/** A configured key (any string with enough entropy) turned into an AES-256 key. */
function deriveKey(secret: string): SessionKey {
  const key = Buffer.from(hkdfSync('sha256', Buffer.from(secret, 'utf8'), Buffer.alloc(0), 'switchyard session token v1', 32));
  return { key, hint: createHash('sha256').update(key).digest().subarray(0, KEY_HINT_BYTES) };
}

export class SessionTokens {
  readonly #keys: SessionKey[];

  constructor(secrets: readonly string[]) {
    if (secrets.length === 0) throw new Error('session tokens need at least one key');
    this.#keys = secrets.map(deriveKey);
  }

  /** A visible-ASCII session id (base64url). */
  seal(claims: SessionClaims): string {
    const { key, hint } = this.#keys[0]!;
    const iv = randomBytes(IV_BYTES);
    const header = Buffer.concat([Buffer.from([VERSION]), hint]);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    cipher.setAAD(header);
    const body = Buffer.concat([cipher.update(JSON.stringify(compact(claims)), 'utf8'), cipher.final()]);
    return Buffer.concat([header, iv, body, cipher.getAuthTag()]).toString('base64url');
  }

  /** The claims of a token sealed under any configured key; undefined for anything else. */
  open(token: string): SessionClaims | undefined {
    if (token.length > 16_384 || !/^[A-Za-z0-9_-]+$/.test(token)) return undefined;
    const raw = Buffer.from(token, 'base64url');
    const headerLength = 1 + KEY_HINT_BYTES;
    if (raw.length < headerLength + IV_BYTES + TAG_BYTES + 2 || raw[0] !== VERSION) return undefined;
    const header = raw.subarray(0, headerLength);
    const hint = header.subarray(1);
    const iv = raw.subarray(headerLength, headerLength + IV_BYTES);
    const body = raw.subarray(headerLength + IV_BYTES, raw.length - TAG_BYTES);
    const tag = raw.subarray(raw.length - TAG_BYTES);
    const keys = [...this.#keys].sort((a, b) => Number(b.hint.equals(hint)) - Number(a.hint.equals(hint)));
    for (const { key } of keys) {
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, iv);
        decipher.setAAD(header);
        decipher.setAuthTag(tag);
        const text = Buffer.concat([decipher.update(body), decipher.final()]).toString('utf8');
        return expand(JSON.parse(text));
      } catch {
        // not this key (or tampered): try the next
      }
    }
    return undefined;
  }
}

/** An upstream session as a new session's id carries it (an HTTP one with an id of its own). */
export interface CarriedUpstream {
  readonly upstreamSessionId: string | undefined;
  readonly initialized: { protocolVersion: string; capabilities: JsonObject } | undefined;
}

/** The claims sealed into a sessions-era session's id: who opened it where, what it negotiated, the upstream sessions a replica continues. */
export function claimsOf(info: Pick<SessionClaims, 'principal' | 'endpoint' | 'clientCapabilities' | 'clientInfo'>, protocolVersion: SessionVersion, upstreams: Iterable<[string, CarriedUpstream]>, iat: number): SessionClaims {
  const carried: Record<string, UpstreamState> = {};
  for (const [name, client] of upstreams) {
    const session = client.upstreamSessionId;
    const init = client.initialized;
    if (session && init) carried[name] = { session, protocolVersion: init.protocolVersion, capabilities: init.capabilities };
  }
  return {
    nonce: randomBytes(8).toString('base64url'),
    ...(info.principal !== undefined ? { principal: info.principal } : {}),
    ...(info.endpoint !== undefined ? { endpoint: info.endpoint } : {}),
    protocolVersion,
    clientCapabilities: info.clientCapabilities,
    clientInfo: info.clientInfo,
    upstreams: carried,
    iat,
  };
}

/** Short keys on the wire: the id travels on every request. */
function compact(claims: SessionClaims): JsonObject {
  const out: JsonObject = { n: claims.nonce, v: claims.protocolVersion, c: claims.clientCapabilities, i: claims.clientInfo, u: {}, t: claims.iat };
  if (claims.principal !== undefined) out.p = claims.principal;
  if (claims.endpoint !== undefined) out.e = claims.endpoint;
  for (const [name, state] of Object.entries(claims.upstreams)) {
    const entry: JsonObject = { v: state.protocolVersion, c: state.capabilities };
    if (state.session !== undefined) entry.s = state.session;
    (out.u as JsonObject)[name] = entry;
  }
  return out;
}

function expand(value: unknown): SessionClaims | undefined {
  if (!isObject(value) || typeof value.n !== 'string' || !isSupportedVersion(value.v) || !isObject(value.c) || !isObject(value.i) || !isObject(value.u) || typeof value.t !== 'number') return undefined;
  const upstreams: Record<string, UpstreamState> = {};
  for (const [name, entry] of Object.entries(value.u)) {
    if (!isObject(entry) || typeof entry.v !== 'string' || !isObject(entry.c)) return undefined;
    upstreams[name] = { protocolVersion: entry.v, capabilities: entry.c, ...(typeof entry.s === 'string' ? { session: entry.s } : {}) };
  }
  const claims: SessionClaims = { nonce: value.n, protocolVersion: value.v, clientCapabilities: value.c, clientInfo: value.i, upstreams, iat: value.t };
  if (typeof value.p === 'string') claims.principal = value.p;
  if (typeof value.e === 'string') claims.endpoint = value.e;
  return claims;
}
