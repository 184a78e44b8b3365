// The namespace codec, pure: how an upstream's tool and prompt names and its resource URIs
// appear to clients, and how a client-facing name splits back into upstream and
// local part. Names that are too long or use characters outside [A-Za-z0-9_-] get a shortened
// form ending in "_" and 8 hex digits of a hash of the original; the catalog maps those back.
import { createHash } from 'node:crypto';
import { canonicalUri, canonicalUriTemplate } from './uri.js';

export interface NamespaceOptions {
  separator: string;
  maxNameLength: number;
}

export interface UpstreamPrefix {
  upstream: string;
  /** "" exposes names unchanged where they collide with nothing. */
  prefix: string;
}

/** A client-facing URI with its upstream's part in canonical form (uri.ts), and how clients see that. */
export interface CanonicalUri {
  upstream: string;
  /** What the upstream is sent. */
  uri: string;
  /** What team rules decide on: exposeUri of `uri`. */
  exposed: string;
}

export interface SplitName {
  upstream: string;
  /** The original name, or its shortened form (see `isShortened`). */
  local: string;
}

const LEGAL = /^[A-Za-z0-9_-]+$/;
const HASH_LENGTH = 8;
const SHORTENED = /_[0-9a-f]{8}$/;
const URI_PREFIX = /^([a-z0-9][a-z0-9-]*)\+/;
/**
 * MCP Apps UI resources (the `io.modelcontextprotocol/ui` extension) must keep their scheme:
 * the Apps SDK refuses anything but `ui://`, so their prefix goes in the authority instead.
 */
const UI_SCHEME = 'ui://';

export class NamespaceCodec {
  readonly #separator: string;
  readonly #max: number;
  /** routing prefix → upstream; an unprefixed upstream routes by its name when it cannot go bare. */
  readonly #byPrefix = new Map<string, string>();
  readonly #routing = new Map<string, string>();
  readonly #unprefixed: string | undefined;

  constructor(options: NamespaceOptions, prefixes: readonly UpstreamPrefix[]) {
    this.#separator = options.separator;
    this.#max = options.maxNameLength;
    let unprefixed: string | undefined;
    for (const { upstream, prefix } of prefixes) {
      const routing = prefix === '' ? upstream : prefix;
      if (prefix === '') unprefixed = upstream;
      this.#byPrefix.set(routing, upstream);
      this.#routing.set(upstream, routing);
    }
    this.#unprefixed = unprefixed;
  }

  get separator(): string {
    return this.#separator;
  }

  /** The prefix an upstream's names carry ("" for the unprefixed upstream). */
  prefixOf(upstream: string): string {
    return upstream === this.#unprefixed ? '' : (this.#routing.get(upstream) ?? upstream);
  }

  /** The client-facing name of an upstream's tool or prompt. */
  exposeName(upstream: string, name: string): string {
    if (upstream === this.#unprefixed && this.#fitsBare(name)) return name;
    const head = `${this.#routing.get(upstream) ?? upstream}${this.#separator}`;
    const full = head + name;
    if (full.length <= this.#max && LEGAL.test(name) && !SHORTENED.test(name)) return full;
    return head + this.#shorten(name, this.#max - head.length);
  }

  /**
   * Splits a client-facing name; undefined when no upstream can own it, or when `exposed` is not
   * the spelling exposeName gives (the prefixed form of an unprefixed upstream's name, the raw
   * original of a shortened one): policy, views and limits are keyed by the one spelling clients
   * are shown, so another spelling of the same item is not a name.
   */
  splitName(exposed: string): SplitName | undefined {
    const split = this.#splitName(exposed);
    if (split === undefined || this.isShortened(split.local)) return split; // a shortened form is the catalog's to map back
    return this.exposeName(split.upstream, split.local) === exposed ? split : undefined;
  }

  #splitName(exposed: string): SplitName | undefined {
    const at = exposed.indexOf(this.#separator);
    if (at > 0) {
      const upstream = this.#byPrefix.get(exposed.slice(0, at));
      if (upstream !== undefined) return { upstream, local: exposed.slice(at + this.#separator.length) };
    }
    return this.#unprefixed === undefined ? undefined : { upstream: this.#unprefixed, local: exposed };
  }

  /** True when `local` may be a shortened form rather than an original name. */
  isShortened(local: string): boolean {
    return SHORTENED.test(local);
  }

  /**
   * The client-facing URI (or URI template) of an upstream's resource: `<prefix>+<uri>`, and
   * `ui://<prefix>/<rest>` for an MCP Apps UI resource `ui://<rest>`.
   */
  exposeUri(upstream: string, uri: string): string {
    if (uri.startsWith(UI_SCHEME)) {
      const rest = uri.slice(UI_SCHEME.length);
      if (upstream === this.#unprefixed && this.#uiOwner(rest) === undefined) return uri;
      return `${UI_SCHEME}${this.#routing.get(upstream) ?? upstream}/${rest}`;
    }
    if (upstream === this.#unprefixed && !this.#startsWithUriPrefix(uri)) return uri;
    return `${this.#routing.get(upstream) ?? upstream}+${uri}`;
  }

  /** Splits a client-facing URI; undefined as for splitName, for a spelling exposeUri does not give. */
  splitUri(exposed: string): { upstream: string; uri: string } | undefined {
    const split = this.#splitUri(exposed);
    return split === undefined || this.exposeUri(split.upstream, split.uri) === exposed ? split : undefined;
  }

  /**
   * A client-facing URI (or, with `template`, a URI template) with its upstream's part in
   * canonical form: split as splitUri splits it, that part canonicalised, and exposed again.
   * Undefined as for splitUri, or when the part is refused (uri.ts).
   */
  canonicalUri(exposed: string, template = false): CanonicalUri | undefined {
    const split = this.splitUri(exposed);
    const uri = split && (template ? canonicalUriTemplate(split.uri) : canonicalUri(split.uri));
    if (split === undefined || uri === undefined) return undefined;
    const canonical = { upstream: split.upstream, uri, exposed: this.exposeUri(split.upstream, uri) };
    const back = this.splitUri(canonical.exposed);
    return back?.upstream === split.upstream && back.uri === uri ? canonical : undefined;
  }

  /**
   * The canonical form of a client-facing URI when `canSee` lets through both it as spelled and
   * that form (a rule written in canonical form holds for every spelling, one in another spelling
   * for that spelling); else undefined.
   */
  visibleUri(exposed: string, canSee: (spelling: string) => boolean, template = false): CanonicalUri | undefined {
    const canonical = this.canonicalUri(exposed, template);
    return canonical && canSee(exposed) && (canonical.exposed === exposed || canSee(canonical.exposed)) ? canonical : undefined;
  }

  #splitUri(exposed: string): { upstream: string; uri: string } | undefined {
    if (exposed.startsWith(UI_SCHEME)) {
      const rest = exposed.slice(UI_SCHEME.length);
      const upstream = this.#uiOwner(rest);
      if (upstream !== undefined) return { upstream, uri: UI_SCHEME + rest.slice(rest.indexOf('/') + 1) };
      return this.#unprefixed === undefined ? undefined : { upstream: this.#unprefixed, uri: exposed };
    }
    const match = URI_PREFIX.exec(exposed);
    const upstream = match ? this.#byPrefix.get(match[1]!) : undefined;
    if (match && upstream !== undefined) return { upstream, uri: exposed.slice(match[0].length) };
    return this.#unprefixed === undefined ? undefined : { upstream: this.#unprefixed, uri: exposed };
  }

  /**
   * The client-facing id of an upstream's task: `<prefix>:<taskId>`, for every upstream (task
   * ids are opaque to clients, so even an unprefixed upstream's are mapped).
   */
  exposeTaskId(upstream: string, taskId: string): string {
    return `${this.#routing.get(upstream) ?? upstream}:${taskId}`;
  }

  splitTaskId(exposed: string): { upstream: string; taskId: string } | undefined {
    const at = exposed.indexOf(':');
    const upstream = at > 0 ? this.#byPrefix.get(exposed.slice(0, at)) : undefined;
    return upstream === undefined ? undefined : { upstream, taskId: exposed.slice(at + 1) };
  }

  #fitsBare(name: string): boolean {
    if (name.length > this.#max || !LEGAL.test(name) || SHORTENED.test(name)) return false;
    const at = name.indexOf(this.#separator);
    return at <= 0 || !this.#byPrefix.has(name.slice(0, at));
  }

  /** The upstream whose routing prefix is the first segment of a UI URI's rest, if any. */
  #uiOwner(rest: string): string | undefined {
    const slash = rest.indexOf('/');
    return slash > 0 ? this.#byPrefix.get(rest.slice(0, slash)) : undefined;
  }

  #startsWithUriPrefix(uri: string): boolean {
    const match = URI_PREFIX.exec(uri);
    return match !== null && this.#byPrefix.has(match[1]!);
  }

  #shorten(name: string, room: number): string {
    const hash = createHash('sha256').update(name).digest('hex').slice(0, HASH_LENGTH);
    const keep = Math.max(0, room - HASH_LENGTH - 1);
    return `${name.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, keep)}_${hash}`;
  }
}
