// Which upstream's result carried which bare URI, per session: a tool's text or
// structuredContent (or a prompt's, or a resource's text) may name a URI of its own server as
// that server writes it (`fmcp://docs/readme`), and a client reads it as given. Such a read or
// subscribe goes to the upstream whose result carried it, even when other upstreams list the
// same URI; the latest result to carry a URI tells. Bounded per session (LRU), kept with the
// session (a WeakMap: nothing outlives it), and read only for a URI no prefix claims.
import { LRUCache } from 'lru-cache';
import type { JsonObject } from '../mcp/jsonrpc.js';
import type { DownstreamSession } from './session.js';

/** URIs remembered per session; the least recently carried go first. */
const MAX_URIS_PER_SESSION = 512;
/** How deep into structuredContent URIs are looked for, and how many strings at most. */
const MAX_DEPTH = 8;
const MAX_STRINGS = 2_000;
/** A URI as text carries it: a scheme, `://`, and what follows up to a space, quote or bracket. */
const URI_IN_TEXT = /\b[a-z][a-z0-9+.-]*:\/\/[^\s"'`<>()[\]{}]+/gi;
/** Punctuation that ends a sentence rather than the URI. */
const TRAILING = /[.,;:!?]+$/;

/** The methods whose results are a server's words to the client. */
const CARRIERS = new Set(['tools/call', 'prompts/get', 'resources/read', 'tasks/result']);

export class UriProvenance {
  readonly #bySession = new WeakMap<DownstreamSession, LRUCache<string, string>>();

  /** Remembers the bare URIs in `result`, an answer of `upstream` to `method` (cheap when it carries none). */
  learn(session: DownstreamSession, upstream: string, method: string, result: JsonObject): void {
    if (!CARRIERS.has(method)) return;
    const found = new Set<string>();
    if (!collect(result, found, 0, { strings: 0 })) return;
    let uris = this.#bySession.get(session);
    if (!uris) {
      uris = new LRUCache<string, string>({ max: MAX_URIS_PER_SESSION });
      this.#bySession.set(session, uris);
    }
    for (const uri of found) uris.set(uri, upstream);
  }

  /** The upstream whose result last carried `uri` in this session, if `may` lets the session reach it there. */
  ownerOf(session: DownstreamSession, uri: string, may: (upstream: string) => boolean): string | undefined {
    const upstream = this.#bySession.get(session)?.get(uri);
    return upstream !== undefined && may(upstream) ? upstream : undefined;
  }
}

/**
 * Adds the URIs in the strings of `value` (text, structured data) to `found`, bounded; true when
 * it found any. No array per object: a result without a URI costs a walk.
 */
function collect(value: unknown, found: Set<string>, depth: number, budget: { strings: number }): boolean {
  if (typeof value === 'string') {
    if (++budget.strings > MAX_STRINGS || !value.includes('://')) return false;
    let any = false;
    for (const match of value.matchAll(URI_IN_TEXT)) {
      found.add(match[0].replace(TRAILING, ''));
      any = true;
    }
    return any;
  }
  if (depth >= MAX_DEPTH || budget.strings > MAX_STRINGS || typeof value !== 'object' || value === null) return false;
  let any = false;
  if (Array.isArray(value)) {
    for (const item of value) if (collect(item, found, depth + 1, budget)) any = true;
  } else {
    const object = value as JsonObject;
    for (const key in object) if (key !== '_meta' && Object.hasOwn(object, key) && collect(object[key], found, depth + 1, budget)) any = true;
  }
  return any;
}
