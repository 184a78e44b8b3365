// The stateless era (2026-07-28, spec/2026-07-28/basic/index.mdx "_meta", basic/versioning.mdx,
// transports/streamable-http.mdx "Request Metadata"): every request carries its protocol version
// and the client's capabilities in `_meta`, and HTTP mirrors the method and name in headers.
import { isObject, type JsonObject } from './jsonrpc.js';
import { SESSION_VERSIONS } from './versions.js';

export const STATELESS_VERSION = '2026-07-28';
/** Newest first. */
export const STATELESS_VERSIONS = [STATELESS_VERSION] as const;
export type StatelessVersion = (typeof STATELESS_VERSIONS)[number];
/** Every revision the gateway speaks, newest first (server/discover, -32022's `supported`). */
export const ALL_VERSIONS: readonly string[] = [...STATELESS_VERSIONS, ...SESSION_VERSIONS];

export const META = {
  protocolVersion: 'io.modelcontextprotocol/protocolVersion',
  clientInfo: 'io.modelcontextprotocol/clientInfo',
  clientCapabilities: 'io.modelcontextprotocol/clientCapabilities',
  logLevel: 'io.modelcontextprotocol/logLevel',
  serverInfo: 'io.modelcontextprotocol/serverInfo',
  subscriptionId: 'io.modelcontextprotocol/subscriptionId',
} as const;

/** Error codes the 2026-07-28 revision defines (basic/index.mdx "Error Codes"). */
export const StatelessErrorCode = {
  HeaderMismatch: -32020,
  MissingRequiredClientCapability: -32021,
  UnsupportedProtocolVersion: -32022,
} as const;

export function isStatelessVersion(value: unknown): value is (typeof STATELESS_VERSIONS)[number] {
  return typeof value === 'string' && (STATELESS_VERSIONS as readonly string[]).includes(value);
}

// The method facts of this era (which methods exist in it, which may ask for input, which are
// cacheable, which carry Mcp-Name) are in the table of methods.ts.

/** What a 2026-07-28 request says about itself in `_meta`. */
export interface RequestMeta {
  protocolVersion: string;
  clientCapabilities: JsonObject;
  clientInfo?: JsonObject;
  logLevel?: string;
}

/** MCP's log levels (RFC 5424's severities), least severe first. */
export const MCP_LOG_LEVELS: readonly string[] = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'];

/** The per-request protocol fields, or a description of what is missing or malformed. */
export function requestMetaOf(params: JsonObject | undefined): RequestMeta | string {
  const meta = params?._meta;
  if (!isObject(meta)) return 'params._meta is required';
  const version = meta[META.protocolVersion];
  if (typeof version !== 'string') return `_meta["${META.protocolVersion}"] is required`;
  const capabilities = meta[META.clientCapabilities];
  if (!isObject(capabilities)) return `_meta["${META.clientCapabilities}"] is required`;
  const out: RequestMeta = { protocolVersion: version, clientCapabilities: capabilities };
  const info = meta[META.clientInfo];
  if (isObject(info)) out.clientInfo = info;
  const level = meta[META.logLevel];
  // A level that is not one is refused (logging.mdx, "Error Handling"), not taken for the lowest.
  if (level !== undefined && (typeof level !== 'string' || !MCP_LOG_LEVELS.includes(level))) return `_meta["${META.logLevel}"] must be one of ${MCP_LOG_LEVELS.join(', ')}`;
  if (typeof level === 'string') out.logLevel = level;
  return out;
}

/** The version a body declares in `_meta`, if any (to tell the eras apart). */
export function declaredVersion(params: unknown): string | undefined {
  if (!isObject(params) || !isObject(params._meta)) return undefined;
  const version = params._meta[META.protocolVersion];
  return typeof version === 'string' ? version : undefined;
}

const SENTINEL = /^=\?base64\?([A-Za-z0-9+/]*={0,2})\?=$/;
const SENTINEL_SHAPE = /^=\?base64\?.*\?=$/s;
/** Visible ASCII and space, no leading or trailing whitespace (RFC 9110 field values, as the spec narrows them). */
const PLAIN = /^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$/;

/** A header value as the body value it mirrors: Base64 sentinel values decoded; undefined when malformed. */
export function decodeHeaderValue(value: string): string | undefined {
  const match = SENTINEL.exec(value);
  // Base64 of whole quanta only (RFC 4648 §4): a value cut short or padded wrongly is malformed.
  if (match) return match[1]!.length % 4 === 0 ? Buffer.from(match[1]!, 'base64').toString('utf8') : undefined;
  // The sentinel's shape with something else inside is no plain value (a plain one of that shape is always encoded).
  if (SENTINEL_SHAPE.test(value)) return undefined;
  return /[^\t\x20-\x7e]/.test(value) ? undefined : value;
}

/** A body value as a header value: plain when safe, else the Base64 sentinel form. */
export function encodeHeaderValue(value: string): string {
  if (PLAIN.test(value) && !(value.startsWith('=?base64?') && value.endsWith('?='))) return value;
  return `=?base64?${Buffer.from(value, 'utf8').toString('base64')}?=`;
}
