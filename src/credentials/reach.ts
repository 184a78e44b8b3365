// Where the gateway's OAuth client may go for an upstream, and how it reads what it finds there.
// The URLs of per-user sign-in are the upstream's to choose (its 401's resource_metadata, the
// authorization servers its metadata lists, their endpoints), so a hostile upstream could steer
// the gateway at internal services: each is held to the address class of the upstream the operator
// configured (a public upstream reaches public addresses only; a local one, its own kind too),
// checked on the URL before connecting and on the resolved address at connect time; plain http only
// beside an upstream that is itself plain http on loopback. Every answer is read within a bound.
import { lookup } from 'node:dns/promises';
import { Agent, fetch as undiciFetch } from 'undici';
import { AddressGuard, AddressRefused, literalHost, type AddressClass } from '../util/address-guard.js';
import { bufferedResponse } from '../util/bounded-read.js';

/** What an upstream's OAuth URLs may name, judged from the upstream URL the operator configured. */
export interface Reach {
  /** The upstream's own origin, always reachable: the operator chose it. */
  origin: string;
  /** Non-public address classes reachable besides public addresses: the upstream's own (loopback, private, link-local). */
  also: AddressClass[];
  /** Whether plain http to a loopback host is allowed: only when the upstream is itself plain http on loopback. */
  http: boolean;
}

/** Any answer of an upstream's metadata, authorization server or endpoints: a real one is a few KiB. */
export const MAX_OAUTH_BYTES = 64 * 1024;
/** How long the upstream's own name may take to resolve before it counts as public. */
const RESOLVE_TIMEOUT_MS = 5_000;

type Resolve = (hostname: string) => Promise<string[]>;

/** The reach of the upstream at `upstream`: the classes of its own addresses (an IP literal's, or what its name resolves to). */
export async function reachOf(upstream: URL, resolve: Resolve = resolveAll): Promise<Reach> {
  const guard = new AddressGuard(false);
  const literal = literalHost(upstream);
  const addresses = literal !== undefined ? [literal] : await resolve(upstream.hostname).catch(() => []);
  const also = new Set<AddressClass>();
  for (const address of addresses) {
    const found = guard.classOf(address);
    if (found === 'loopback' || found === 'private' || found === 'link-local') also.add(found);
  }
  return { origin: upstream.origin, also: [...also], http: upstream.protocol === 'http:' && isLoopbackHost(upstream) };
}

async function resolveAll(hostname: string): Promise<string[]> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${hostname} did not resolve in time`)), RESOLVE_TIMEOUT_MS);
  });
  try {
    return (await Promise.race([lookup(hostname, { all: true }), late])).map((entry) => entry.address);
  } finally {
    clearTimeout(timer);
  }
}

/** A host that is loopback by its name alone: localhost, 127.0.0.0/8, [::1]. */
export function isLoopbackHost(url: URL): boolean {
  return url.hostname === 'localhost' || url.hostname === '[::1]' || /^127(?:\.\d{1,3}){3}$/.test(url.hostname);
}

/**
 * Why the OAuth client may not fetch (or send a browser to) `url` for this upstream; undefined when
 * it may. Without a reach (a server the operator named) only the protocol rule holds: https, or
 * plain http to a loopback host.
 */
export function urlRefusal(url: URL, reach: Reach | undefined): string | undefined {
  if (!reach) return url.protocol === 'https:' || (url.protocol === 'http:' && isLoopbackHost(url)) ? undefined : 'it is not https';
  if (url.origin === reach.origin) return undefined;
  if (url.protocol === 'http:') {
    if (!reach.http) return 'it is not https';
    if (!isLoopbackHost(url)) return 'it is plain http to a host that is not loopback';
  } else if (url.protocol !== 'https:') return 'it is not https';
  const refusal = new AddressGuard(false, reach.also).literalRefusal(url);
  return refusal === undefined ? undefined : `${refusal}, which this upstream may not send the gateway to`;
}

/** What oauth4webapi (its customFetch) and the client's own GETs call. */
export type OAuthFetch = (url: string, init: RequestInit) => Promise<Response>;

/**
 * A fetch for the OAuth client: redirects never followed; with a reach, a URL it refuses is not
 * fetched, and a name is connected to only at an address the reach allows; every answer read into
 * memory within MAX_OAUTH_BYTES (`headersOnly`: the body dropped unread). `inner` replaces the
 * network (tests); the URL rule and the bound still hold.
 */
export function oauthFetch(reach: Reach | undefined, options: { inner?: typeof fetch | undefined; headersOnly?: boolean } = {}): OAuthFetch {
  return async (url, init) => {
    const target = new URL(url);
    const refusal = reach && urlRefusal(target, reach);
    if (refusal) throw new AddressRefused(`${target.origin} is refused: ${refusal}`);
    const guarded = reach !== undefined && options.inner === undefined && target.origin !== reach.origin;
    const agent = guarded ? new Agent({ connect: { lookup: new AddressGuard(false, reach.also).lookup } }) : undefined;
    try {
      const response = agent
        ? await (undiciFetch(url, { ...init, redirect: 'manual', dispatcher: agent } as Parameters<typeof undiciFetch>[1]) as unknown as Promise<Response>)
        : await (options.inner ?? fetch)(url, { ...init, redirect: 'manual' });
      if (!options.headersOnly) return await bufferedResponse(response, MAX_OAUTH_BYTES);
      await response.body?.cancel().catch(() => {});
      return new Response(null, { status: response.status, headers: response.headers });
    } catch (err) {
      // undici reports a refused lookup as "fetch failed" with the refusal as its cause.
      const cause = (err as { cause?: unknown } | undefined)?.cause;
      throw cause instanceof AddressRefused ? cause : err;
    } finally {
      void agent?.destroy().catch(() => {});
    }
  };
}
