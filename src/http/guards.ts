// Request validators for the MCP endpoint. Each returns a Response when the request must be
// refused, else undefined, so a handler reads as a flat list of guards (after the MCP SDK).
import { isIPv6 } from 'node:net';
import { LRUCache } from 'lru-cache';
import { isLoopback, type ListenConfig } from '../config/schema.js';
import { isSupportedVersion } from '../mcp/versions.js';
import type { HttpInput } from './input.js';
import { refuse, refusals } from './refusals.js';

/** Who may call besides the configured Origins: the gateway's own origin, and loopback pages when it listens on loopback. */
export interface OriginRules {
  /** `listen.allowedOrigins`, exactly as configured. */
  readonly allowed: ReadonlySet<string>;
  /** Host names the gateway answers to (allowedHostsOf). */
  readonly hosts: ReadonlySet<string>;
  /** The gateway listens on a loopback address. */
  readonly loopback: boolean;
}

/**
 * Origin validation against DNS rebinding (transports.mdx "Security Warning"): 403 when not
 * allowed. Allowed besides `listen.allowedOrigins`: an Origin equal to the gateway's own (an
 * http(s) origin naming the Host the request was sent to, when that Host is one the gateway
 * answers to), and, when the gateway listens on loopback, any http(s) origin on a loopback host.
 * A rebinding page's Origin names its own domain, which is neither. The opaque "null" never is.
 */
export function checkOrigin(input: HttpInput, rules: OriginRules): Response | undefined {
  const origin = input.header('origin');
  if (origin === undefined || rules.allowed.has(origin) || ownOrLoopback(origin, input, rules)) return undefined;
  return refuse(refusals.originForbidden);
}

function ownOrLoopback(origin: string, input: HttpInput, rules: OriginRules): boolean {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.origin !== origin.toLowerCase()) return false;
  const name = url.hostname.replace(/^\[|\]$/g, '');
  if (rules.loopback && isLoopback(name)) return true;
  const host = input.header('host')?.toLowerCase();
  return host !== undefined && host === url.host && (rules.hosts.has(name) || isLoopback(name));
}

/** A concrete bind address (not a wildcard) is a name clients may use: added to `hosts`. */
function addBindAddress(hosts: Set<string>, bind: string): void {
  if (!['0.0.0.0', '::', '[::]'].includes(bind)) hosts.add(bind.replace(/^\[|\]$/g, '').toLowerCase());
}

/** Host names (lowercase, without port) a request may name: never derived from the request itself. */
export function allowedHostsOf(listen: ListenConfig): ReadonlySet<string> {
  const hosts = new Set(['localhost', '127.0.0.1', '::1']);
  if (listen.publicUrl) hosts.add(new URL(listen.publicUrl).hostname.replace(/^\[|\]$/g, '').toLowerCase());
  for (const host of listen.allowedHosts) hosts.add(host.toLowerCase());
  addBindAddress(hosts, listen.host);
  return hosts;
}

/** Host names the separate metrics listener (metrics.port) answers to: loopback names, listen.allowedHosts, its own concrete address. */
export function metricsHostsOf(listen: ListenConfig, metricsHost: string): ReadonlySet<string> {
  const hosts = new Set(['localhost', '127.0.0.1', '::1']);
  for (const host of listen.allowedHosts) hosts.add(host.toLowerCase());
  addBindAddress(hosts, metricsHost);
  return hosts;
}

/** Host validation against DNS rebinding: 403 unless the Host names this gateway. */
export function checkHost(input: HttpInput, allowed: ReadonlySet<string>): Response | undefined {
  const name = input.hostname();
  if (allowed.has(name) || isLoopback(name)) return undefined;
  return refuse(refusals.hostForbidden);
}

const IPV4_HOST = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})(?::\d*)?$/;
const IPV6_HOST = /^\[([0-9A-Fa-f:.]+)\](?::\d*)?$/;

/**
 * Whether a Host header value is an IP literal, with or without port: an IPv4 address in dotted
 * decimal (each part at most 255) or a bracketed IPv6 address. Never a DNS name.
 */
export function isIpLiteralHost(host: string): boolean {
  const v6 = IPV6_HOST.exec(host);
  if (v6) return isIPv6(v6[1]!);
  const v4 = IPV4_HOST.exec(host);
  return v4 !== null && v4.slice(1, 5).every((part) => Number(part) <= 255);
}

/**
 * The Host check of the paths probes and scrapers reach (/healthz, /readyz, metrics): a Host
 * checkHost accepts, or an IP literal (a kubelet's or Prometheus's `<podIP>:<port>`). A page on a
 * rebinding domain always sends its own DNS name as Host, never an address. No Host (HTTP/1.0):
 * as checkHost.
 */
export function checkOperationalHost(input: HttpInput, allowed: ReadonlySet<string>): Response | undefined {
  const host = input.header('host');
  if (host !== undefined && isIpLiteralHost(host)) return undefined;
  return checkHost(input, allowed);
}

const ALLOWED_HEADERS = 'authorization, content-type, accept, mcp-session-id, mcp-protocol-version, mcp-method, mcp-name, last-event-id, x-api-key, x-request-id, traceparent, tracestate';

/**
 * CORS for an allowed Origin: what a browser client needs to call the endpoint and read its
 * headers. A preflight's `requested` headers of the form Mcp-Param-* (a tool's x-mcp-header
 * parameters, 2026-07-28) are allowed too: their names are the tools', not a fixed list.
 */
export function corsHeaders(origin: string, preflight: boolean, requested?: string): Record<string, string> {
  const headers: Record<string, string> = {
    'access-control-allow-origin': origin,
    vary: 'Origin',
    'access-control-expose-headers': 'mcp-session-id, mcp-protocol-version, www-authenticate, x-request-id, retry-after',
  };
  if (preflight) {
    headers['access-control-allow-methods'] = 'GET, POST, DELETE';
    const params = (requested ?? '').split(',').map((name) => name.trim().toLowerCase()).filter((name) => /^mcp-param-[!#$%&'*+\-.^_`|~0-9a-z]+$/.test(name));
    headers['access-control-allow-headers'] = params.length === 0 ? ALLOWED_HEADERS : `${ALLOWED_HEADERS}, ${params.join(', ')}`;
    headers['access-control-max-age'] = '600';
  }
  return headers;
}

function accepts(accept: string, type: string): boolean {
  return accept.split(',').some((part) => {
    const media = part.split(';')[0]!.trim().toLowerCase();
    return media === type || media === '*/*' || media === `${type.split('/')[0]}/*`;
  });
}

/**
 * Verdicts on the Accept values a POST carried: a client sends the same one on every POST, so
 * each is parsed once. One per endpoint; the most recent 256 values are kept.
 */
export class PostAccepts {
  readonly #verdicts = new LRUCache<string, boolean>({ max: 256 });

  /** Whether `accept` lists both JSON and SSE answers. */
  accepts(accept: string): boolean {
    let verdict = this.#verdicts.peek(accept);
    if (verdict === undefined) {
      verdict = accepts(accept, 'application/json') && accepts(accept, 'text/event-stream');
      this.#verdicts.set(accept, verdict);
    }
    return verdict;
  }
}

/** A POST must accept both JSON and SSE answers and carry JSON. */
export function checkPostHeaders(input: HttpInput, verdicts: PostAccepts): Response | undefined {
  if (!verdicts.accepts(input.header('accept') ?? '')) return refuse(refusals.postNotAcceptable);
  const type = input.header('content-type') ?? '';
  if (type !== 'application/json' && type.split(';')[0]!.trim().toLowerCase() !== 'application/json') return refuse(refusals.unsupportedMediaType);
  return undefined;
}

export function checkGetHeaders(input: HttpInput): Response | undefined {
  if (accepts(input.header('accept') ?? '', 'text/event-stream')) return undefined;
  return refuse(refusals.getNotAcceptable);
}

/** An MCP-Protocol-Version header, when present, must name a supported revision (400 otherwise). */
export function checkProtocolVersion(input: HttpInput): Response | undefined {
  const version = input.header('mcp-protocol-version');
  if (version === undefined || isSupportedVersion(version)) return undefined;
  return refuse(refusals.unsupportedVersionHeader, version);
}
