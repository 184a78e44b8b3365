// The pin gate: every page of tools and prompts an upstream lists passes here before any client
// sees it (names/lists.ts), in every session and either era. It keeps each upstream's pins as
// stored and the definitions of each item seen listed on this replica (a few: an upstream may
// show each client another one), records first sight and drift in the store, reports drift
// (metric, log, audit), drops what the mode holds back, says why a held tool's call is refused,
// and tells the gateway when what a client may be shown of an upstream changed (sessions then
// get list_changed). Approvals reach it through the store's channel, and a poll every POLL_MS
// catches one a lost message missed. Pins are never deleted: an upstream's value gone from the
// store while this replica holds pins for it went with the store (Redis restarted empty,
// flushed), and the replica writes back what it holds rather than trusting every definition anew.
import type { JsonObject } from '../mcp/jsonrpc.js';
import type { Logger } from '../util/log.js';
import { definitionOf, digestOf, hiddenText, type PinKind } from './definition.js';
import { emptyPins, holdOf, observe, pendingCount, quarantined, type DriftKind, type PinPolicy, type Seen, type UpstreamPins } from './rules.js';
import type { PinStore } from './store.js';

/** Each upstream's pins are read again this often (an announcement lost while Redis was away). */
const POLL_MS = 30_000;
/**
 * A definition an operator rejected keeps its upstream quarantined while this replica saw it
 * listed within this long (after that the upstream is taken to have gone back).
 */
export const SERVED_MS = 5 * 60_000;
/** Definitions remembered per name: the pinned one and the latest other (an upstream may send endless ones). */
const DIGESTS_PER_NAME = 2;

/** Of one name: digest → when this replica last saw it listed (ms), the latest last. */
type Sightings = Map<string, number>;

/** What a client could be shown of an upstream when last looked at. */
interface Held {
  quarantined: boolean;
  /** `${kind}:${name}` of the items with a definition held back. */
  names: Set<string>;
  /** `${kind}:${name} ${digest}` → whether that definition is shown. */
  shown: Map<string, boolean>;
}

export interface DriftReport {
  upstream: string;
  kind: PinKind;
  name: string;
  drift: DriftKind;
  digest: string;
  pinnedDigest?: string;
  hidden: string[];
  mode: PinPolicy['mode'];
}

export interface PinGateDeps {
  store: PinStore;
  /** The upstream's mode and newTools (read at each use: a reload may change them). */
  policy: (upstream: string) => PinPolicy;
  /** Upstreams the gate watches (read at each poll). */
  upstreams: () => readonly string[];
  logger: Logger;
  ondrift?: (report: DriftReport) => void;
  /** What the gate holds back of `upstream` changed (a drift held, an approval released it). */
  onchange?: (upstream: string) => void;
  /** The clock (ms), for tests. */
  now?: () => number;
}

export class PinGate {
  readonly #deps: PinGateDeps;
  readonly #pins = new Map<string, UpstreamPins>();
  /** Per upstream: `${kind}:${name}` → the definitions seen listed on this replica (bounded). */
  readonly #seen = new Map<string, Map<string, Sightings>>();
  /** Per upstream: what was held when last looked at (to tell when it changes). */
  readonly #held = new Map<string, Held>();
  readonly #loading = new Map<string, Promise<UpstreamPins>>();
  /** Per upstream: how many times this replica wrote its pins (a read begun before a write is older than it). */
  readonly #writes = new Map<string, number>();
  /** Upstreams whose pins this replica read from the store or wrote there (a missing value was lost). */
  readonly #stored = new Set<string>();
  /** The pins #pinsOf answers when the store could not be read (none held yet). */
  readonly #unread = new WeakSet<UpstreamPins>();
  #unsubscribe: (() => void) | undefined;
  #timer: NodeJS.Timeout | undefined;

  constructor(deps: PinGateDeps) {
    this.#deps = deps;
  }

  /** Listens for operators' changes and starts the poll (once). */
  start(): void {
    if (this.#timer) return;
    this.#unsubscribe = this.#deps.store.subscribe((upstream) => void this.refresh(upstream));
    const readAll = (): void => {
      for (const upstream of this.#deps.upstreams()) if (this.#deps.policy(upstream).mode !== 'off') void this.refresh(upstream);
    };
    // Read at once too: what waits is counted (switchyard_pins_pending) before anything is listed here.
    readAll();
    this.#timer = setInterval(readAll, POLL_MS);
    this.#timer.unref();
  }

  close(): void {
    this.#unsubscribe?.();
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /**
   * The items of one page the client may be shown; first sight and drift are recorded on the
   * way. `last`: the page ends a listing (no next cursor), so the upstream has listed in full.
   */
  async screen(kind: PinKind, upstream: string, items: readonly JsonObject[], last = true): Promise<JsonObject[]> {
    const policy = this.#deps.policy(upstream);
    if (policy.mode === 'off') return [...items];
    let pins = await this.#pinsOf(upstream);
    // The store could not be read just now: writing to it would only wait for it again.
    const offline = this.#unread.has(pins);
    const seen = new Map<string, Seen>();
    const digests: string[] = [];
    for (const item of items) {
      const name = item.name as string;
      const definition = definitionOf(kind, item);
      const digest = digestOf(definition);
      digests.push(digest);
      // A name listed twice is judged on a copy that is not the pinned one, if there is one: a
      // pinned copy beside a changed one does not vouch for it (which one a call reaches is the upstream's).
      const earlier = seen.get(name);
      if (!earlier || (earlier.digest !== digest && earlier.digest === pins[kind][name]?.pinned?.digest)) seen.set(name, { digest, definition, hidden: hiddenText(definition) });
    }
    // Every copy listed is served; the one judged is seen last (a call is judged on it).
    let seenHere = this.#seen.get(upstream);
    if (!seenHere) this.#seen.set(upstream, (seenHere = new Map()));
    const at = this.#now();
    items.forEach((item, i) => sight(seenHere, `${kind}:${item.name as string}`, digests[i]!, pins[kind][item.name as string]?.pinned?.digest, at));
    for (const [name, { digest }] of seen) sight(seenHere, `${kind}:${name}`, digest, pins[kind][name]?.pinned?.digest, at);
    const now = new Date(at).toISOString();
    const known = pins.listed[kind] === true;
    if ((last && !known) || [...seen].some(([name, s]) => observe(pins[kind][name], s, policy, known, now).entry)) pins = await this.#record(upstream, kind, seen, policy, now, last, offline);
    const isQuarantined = this.#quarantined(upstream, pins, policy);
    // Each name is shown once, as the copy it was judged on.
    const shown = new Set<string>();
    const kept = items.filter((item, i) => {
      const name = item.name as string;
      const judged = seen.get(name)!.digest;
      if (digests[i] !== judged || shown.has(name)) return false;
      shown.add(name);
      return holdOf(pins, kind, name, judged, policy, isQuarantined) === undefined;
    });
    this.#compareHeld(upstream);
    return kept;
  }

  /** Why a call of `name` (as the upstream names it) is refused, or undefined. */
  refusal(kind: PinKind, upstream: string, name: string): string | undefined {
    const policy = this.#deps.policy(upstream);
    const pins = this.#pins.get(upstream);
    const sightings = this.#seen.get(upstream)?.get(`${kind}:${name}`);
    if (policy.mode === 'off' || !pins || !sightings) return undefined;
    // Judged on the definition seen last (which one a call reaches is the upstream's to say).
    return holdOf(pins, kind, name, [...sightings.keys()].at(-1)!, policy, this.#quarantined(upstream, pins, policy));
  }

  /** Whether `upstream` is quarantined as this gate judges it (its listings, and the pins it read). */
  async isQuarantined(upstream: string): Promise<boolean> {
    return this.#quarantined(upstream, await this.#pinsOf(upstream), this.#deps.policy(upstream));
  }

  /** Definitions waiting for an operator, per upstream this replica has read. */
  pendingCounts(): Record<string, number> {
    return Object.fromEntries([...this.#pins].map(([upstream, pins]) => [upstream, pendingCount(pins)]));
  }

  /**
   * Reads an upstream's pins again (an operator changed them); a change of what is held is told.
   * None stored while this replica holds some: they are written back (the store lost them).
   */
  async refresh(upstream: string): Promise<void> {
    const writes = this.#writes.get(upstream);
    try {
      const stored = await this.#deps.store.readStored(upstream);
      const held = this.#pins.get(upstream);
      if (this.#writes.get(upstream) !== writes) {
        // This replica wrote meanwhile: what it holds is newer than what was read.
      } else if (stored === undefined && held && holdsAny(held)) await this.#writeBack(upstream);
      else {
        if (stored) this.#stored.add(upstream);
        this.#pins.set(upstream, stored ?? emptyPins());
      }
    } catch (err) {
      this.#deps.logger.warn('could not read the pins of an upstream', { upstream, err });
      return;
    }
    this.#compareHeld(upstream);
  }

  /** Writes the pins this replica holds for `upstream` to a store that has none (unless another replica did first). */
  async #writeBack(upstream: string): Promise<void> {
    let restored: UpstreamPins | undefined;
    let pins: UpstreamPins;
    try {
      pins = await this.#deps.store.update(upstream, (_current, stored) => {
        restored = stored ? undefined : this.#pins.get(upstream);
        return restored;
      });
    } catch (err) {
      // Kept as held: the next poll tries again.
      this.#deps.logger.warn('the store had no pins for an upstream this replica holds pins for, and they could not be written back', { upstream, err });
      return;
    }
    this.#wrote(upstream, pins, restored !== undefined);
  }

  /** The store now holds `pins` for `upstream`; `restored`: they were written back into a store that had none. */
  #wrote(upstream: string, pins: UpstreamPins, restored: boolean): void {
    const lost = this.#stored.has(upstream);
    this.#pins.set(upstream, pins);
    this.#stored.add(upstream);
    this.#writes.set(upstream, (this.#writes.get(upstream) ?? 0) + 1);
    if (!restored) return;
    const counts = { tools: Object.keys(pins.tools).length, prompts: Object.keys(pins.prompts).length, pending: pendingCount(pins) };
    if (lost) {
      // Adopting the empty store would pin every definition listed now, a changed one included, at first sight.
      this.#deps.logger.error('the pins of an upstream were gone from the store (was it restarted empty or flushed?); the pins this replica holds were written back', {
        event: 'audit',
        action: 'pin.restored',
        upstream,
        ...counts,
      });
    } else {
      this.#deps.logger.warn('pins this replica decided while the store could not be reached were written to it', { upstream, ...counts });
    }
  }

  #pinsOf(upstream: string): UpstreamPins | Promise<UpstreamPins> {
    const known = this.#pins.get(upstream);
    if (known) return known;
    let loading = this.#loading.get(upstream);
    if (!loading) {
      const writes = this.#writes.get(upstream);
      loading = this.#deps.store.readStored(upstream).then(
        (stored) => {
          const pins = stored ?? emptyPins();
          if (this.#writes.get(upstream) !== writes) return this.#pins.get(upstream) ?? pins;
          if (stored) this.#stored.add(upstream);
          this.#pins.set(upstream, pins);
          return pins;
        },
        (err: unknown) => {
          // Without the store, decisions are made on what this replica records (nothing is lost: it is written on the next change).
          this.#deps.logger.warn('could not read the pins of an upstream; deciding from this replica alone', { upstream, err });
          const held = this.#pins.get(upstream);
          if (held) return held;
          const none = emptyPins();
          this.#unread.add(none);
          return none;
        },
      );
      this.#loading.set(upstream, loading);
      void loading.finally(() => this.#loading.delete(upstream));
    }
    return loading;
  }

  /** Writes what was seen into the stored pins (decided again on what is stored now) and reports new drift. */
  async #record(upstream: string, kind: PinKind, seen: ReadonlyMap<string, Seen>, policy: PinPolicy, now: string, last: boolean, offline: boolean): Promise<UpstreamPins> {
    const drifts: DriftReport[] = [];
    /** Whether the store had no pins while this replica holds some (they are written back, with what was seen). */
    let restoring = false;
    const apply = (stored: UpstreamPins, present = true): UpstreamPins | undefined => {
      drifts.length = 0;
      const held = this.#pins.get(upstream);
      restoring = !present && held !== undefined && holdsAny(held);
      const current = restoring ? held! : stored;
      const known = current.listed[kind] === true;
      const entries = { ...current[kind] };
      let changed = false;
      for (const [name, s] of seen) {
        const outcome = observe(entries[name], s, policy, known, now);
        if (!outcome.entry) continue;
        const pinnedDigest = entries[name]?.pinned?.digest;
        entries[name] = outcome.entry;
        changed = true;
        if (outcome.drift) drifts.push({ upstream, kind, name, drift: outcome.drift, digest: s.digest, hidden: s.hidden, mode: policy.mode, ...(pinnedDigest ? { pinnedDigest } : {}) });
      }
      const listedNow = last && !known;
      if (!changed && !listedNow) return restoring ? current : undefined;
      return { ...current, [kind]: entries, ...(listedNow ? { listed: { ...current.listed, [kind]: true } } : {}) };
    };
    let pins: UpstreamPins | undefined;
    if (!offline) {
      try {
        pins = await this.#deps.store.update(upstream, apply);
        this.#wrote(upstream, pins, restoring);
      } catch (err) {
        this.#deps.logger.warn('could not write the pins of an upstream; deciding from this replica alone', { upstream, err });
      }
    }
    const written = pins !== undefined;
    if (pins === undefined) {
      pins = apply(this.#pins.get(upstream) ?? emptyPins()) ?? this.#pins.get(upstream) ?? emptyPins();
      this.#pins.set(upstream, pins);
      this.#writes.set(upstream, (this.#writes.get(upstream) ?? 0) + 1);
    }
    for (const report of drifts) this.#deps.ondrift?.(report);
    // Other replicas count what waits, and quarantine, from the store: tell them (not written: nothing to read).
    if (written && drifts.length > 0) await this.#deps.store.announce(upstream).catch(() => {});
    return pins;
  }

  #now(): number {
    return this.#deps.now?.() ?? Date.now();
  }

  /** Quarantine, a rejected definition counting while this replica saw it listed within SERVED_MS. */
  #quarantined(upstream: string, pins: UpstreamPins, policy: PinPolicy): boolean {
    const seenHere = this.#seen.get(upstream);
    const at = this.#now();
    return quarantined(pins, policy, (kind, name, digest) => {
      const when = seenHere?.get(`${kind}:${name}`)?.get(digest);
      return when !== undefined && at - when < SERVED_MS;
    });
  }

  /**
   * Tells onchange when what a client may be shown of `upstream` changed: the quarantine began or
   * ended, a name came to have a definition held or no longer has one, or a definition seen
   * before is shown now and was not (or the other way: an approval). A listing that only shows
   * again what was seen (the approved copy to one session, a changed one to another) or replaces
   * one held definition with another changes none of it.
   */
  #compareHeld(upstream: string): void {
    const pins = this.#pins.get(upstream);
    if (!pins) return;
    const policy = this.#deps.policy(upstream);
    const isQuarantined = this.#quarantined(upstream, pins, policy);
    const now: Held = { quarantined: isQuarantined, names: new Set(), shown: new Map() };
    for (const [key, sightings] of this.#seen.get(upstream) ?? []) {
      const split = key.indexOf(':');
      for (const digest of sightings.keys()) {
        const shown = holdOf(pins, key.slice(0, split) as PinKind, key.slice(split + 1), digest, policy, isQuarantined) === undefined;
        now.shown.set(`${key} ${digest}`, shown);
        if (!shown) now.names.add(key);
      }
    }
    const before = this.#held.get(upstream);
    this.#held.set(upstream, now);
    if (heldChanged(before, now)) this.#deps.onchange?.(upstream);
  }
}

/** Whether an upstream's pins hold anything (an item, or a listing recorded). */
function holdsAny(pins: UpstreamPins): boolean {
  return Object.keys(pins.tools).length > 0 || Object.keys(pins.prompts).length > 0 || Object.keys(pins.listed).length > 0;
}

/** Records that `digest` of `key` was listed at `at`, keeping the pinned one and the latest others (DIGESTS_PER_NAME in all). */
function sight(seen: Map<string, Sightings>, key: string, digest: string, pinned: string | undefined, at: number): void {
  let sightings = seen.get(key);
  if (!sightings) seen.set(key, (sightings = new Map()));
  sightings.delete(digest);
  sightings.set(digest, at);
  if (sightings.size <= DIGESTS_PER_NAME) return;
  // The oldest that is neither pinned nor this one.
  for (const old of sightings.keys()) {
    if (old === pinned || old === digest) continue;
    sightings.delete(old);
    return;
  }
}

function heldChanged(before: Held | undefined, now: Held): boolean {
  if (now.quarantined !== (before?.quarantined ?? false)) return true;
  if (now.names.size !== (before?.names.size ?? 0) || [...now.names].some((key) => !before!.names.has(key))) return true;
  for (const [definition, shown] of now.shown) {
    const was = before?.shown.get(definition);
    if (was !== undefined && was !== shown) return true;
  }
  return false;
}
