// The per-item decision, pure: what a definition seen now does to an upstream's pins (first sight
// pins it or holds it for approval; a different one is drift) and whether an item is held back
// from lists and calls under the upstream's mode. No I/O: the gate (gate.ts) keeps the records.
import type { JsonObject } from '../mcp/jsonrpc.js';
import type { PinKind } from './definition.js';

export type PinMode = 'off' | 'warn' | 'hide' | 'quarantine';
export type NewTools = 'allow' | 'pending';
export type DriftKind = 'changed' | 'new' | 'hidden_text';

export interface PinPolicy {
  mode: PinMode;
  newTools: NewTools;
}

/** An approved definition. */
export interface Pin {
  digest: string;
  definition: JsonObject;
  /** ISO time, and who approved it (`first sight` for trust on first use). */
  at: string;
  by: string;
}

/** A definition seen that is not the pinned one, waiting for an operator. */
export interface Pending {
  digest: string;
  definition: JsonObject;
  drift: DriftKind;
  /** Hidden-text code points found in it (U+XXXX). */
  hidden: string[];
  since: string;
  /** An operator refused it: it stays held (never pinned) while the upstream serves it. */
  rejected?: { at: string; by: string };
}

export interface PinEntry {
  pinned?: Pin;
  pending?: Pending;
}

/** One upstream's pins, as stored (one value per upstream). */
export interface UpstreamPins {
  tools: Record<string, PinEntry>;
  prompts: Record<string, PinEntry>;
  /**
   * The kinds the upstream has listed in full: a name seen after that is `new` drift; until
   * then (the later pages of a first listing) it is first sight.
   */
  listed: Partial<Record<PinKind, true>>;
}

/** A definition as the gate saw it now. */
export interface Seen {
  digest: string;
  definition: JsonObject;
  hidden: string[];
}

export function emptyPins(): UpstreamPins {
  return { tools: {}, prompts: {}, listed: {} };
}

/**
 * What seeing `seen` does to `entry`: the entry to store (undefined: unchanged) and the drift
 * to report (only when it is new: a pending definition seen again is not reported again).
 * `known` says the upstream had listed items of this kind in full before (a tool added later is `new`).
 */
export function observe(entry: PinEntry | undefined, seen: Seen, policy: PinPolicy, known: boolean, now: string): { entry?: PinEntry; drift?: DriftKind } {
  if (policy.mode === 'off') return {};
  // The approved definition is no drift, and says nothing of what waits: it stays, as first seen,
  // until an operator decides (an upstream that went back and one that shows each client another
  // definition look the same here).
  if (entry?.pinned?.digest === seen.digest || entry?.pending?.digest === seen.digest) return {};
  const hidden = seen.hidden.length > 0;
  const pending = (drift: DriftKind): Pending => ({ digest: seen.digest, definition: seen.definition, drift, hidden: seen.hidden, since: now });
  if (entry?.pinned) {
    return { entry: { pinned: entry.pinned, pending: pending(hidden ? 'hidden_text' : 'changed') }, drift: hidden ? 'hidden_text' : 'changed' };
  }
  // First sight (or a new definition of a tool never approved).
  if (hidden && policy.mode !== 'warn') return { entry: { pending: pending('hidden_text') }, drift: 'hidden_text' };
  if (policy.newTools === 'pending') return { entry: { pending: pending(hidden ? 'hidden_text' : 'new') }, drift: hidden ? 'hidden_text' : 'new' };
  // Trust on first use; hidden text under warn is pinned, and reported.
  const pin: Pin = { digest: seen.digest, definition: seen.definition, at: now, by: 'first sight' };
  const drift: DriftKind | undefined = hidden ? 'hidden_text' : known ? 'new' : undefined;
  return drift ? { entry: { pinned: pin }, drift } : { entry: { pinned: pin } };
}

/** Whether the upstream still lists a definition (`served`: the gate's answer from what it saw). */
export type Served = (kind: PinKind, name: string, digest: string) => boolean;

/**
 * Whether drift held for approval takes a whole upstream out (quarantine): a changed or
 * hidden-text definition is waiting, or was refused and is still listed (`served`; without it,
 * a refused one counts).
 */
export function quarantined(pins: UpstreamPins, policy: PinPolicy, served?: Served): boolean {
  if (policy.mode !== 'quarantine') return false;
  return (['tools', 'prompts'] as const).some((kind) =>
    Object.entries(pins[kind]).some(([name, { pending }]) => pending !== undefined && pending.drift !== 'new' && (!pending.rejected || (served?.(kind, name, pending.digest) ?? true))),
  );
}

/**
 * Why an item whose current definition has digest `digest` is held back, or undefined when it
 * is shown. `warn` holds only a new tool waiting under `newTools: pending`.
 */
export function holdOf(pins: UpstreamPins, kind: PinKind, name: string, digest: string, policy: PinPolicy, isQuarantined?: boolean): string | undefined {
  if (policy.mode === 'off') return undefined;
  const entry = pins[kind][name];
  // The upstream's quarantine is the same for all its items: a caller screening many passes it in.
  if (entry?.pinned?.digest === digest) return (isQuarantined ?? quarantined(pins, policy)) ? 'its upstream is quarantined until a changed definition is approved' : undefined;
  const pending = entry?.pending?.digest === digest ? entry.pending : undefined;
  if (policy.mode === 'warn') return entry?.pinned || policy.newTools === 'allow' ? undefined : 'it is new and waits for approval';
  if (pending?.rejected) return 'its current definition was rejected by an operator';
  if (!entry?.pinned) return pending?.drift === 'hidden_text' ? `its definition contains hidden text (${pending.hidden.join(' ')}) and waits for approval` : 'it is new and waits for approval';
  return `its definition changed since it was approved (${changedFields(entry.pinned.definition, pending?.definition)}) and waits for approval`;
}

/** The pinned fields that differ between two definitions (comma-separated), for messages. */
export function changedFields(before: JsonObject, after: JsonObject | undefined): string {
  if (!after) return 'definition';
  const fields = [...new Set([...Object.keys(before), ...Object.keys(after)])].filter((field) => JSON.stringify(sorted(before[field])) !== JSON.stringify(sorted(after[field])));
  return fields.length > 0 ? fields.join(', ') : 'definition';
}

/** A value with object keys in sorted order (for comparing and printing). */
export function sorted(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sorted);
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.keys(value).sort().map((key) => [key, sorted((value as Record<string, unknown>)[key])]));
  }
  return value;
}

/** How many definitions of an upstream wait for an operator (rejected ones do not). */
export function pendingCount(pins: UpstreamPins): number {
  let count = 0;
  for (const kind of ['tools', 'prompts'] as const) for (const entry of Object.values(pins[kind])) if (entry.pending && !entry.pending.rejected) count++;
  return count;
}

/** Validates a stored value as an upstream's pins (anything else reads as none). */
export function pinsFrom(value: unknown): UpstreamPins {
  const pins = emptyPins();
  if (typeof value !== 'object' || value === null) return pins;
  for (const kind of ['tools', 'prompts'] as const) {
    const entries = (value as Record<string, unknown>)[kind];
    if (typeof entries !== 'object' || entries === null) continue;
    for (const [name, entry] of Object.entries(entries)) if (typeof entry === 'object' && entry !== null) pins[kind][name] = entry as PinEntry;
  }
  // Pins stored before listings were recorded: a kind with entries had been listed.
  const listed = (value as Record<string, unknown>).listed;
  for (const kind of ['tools', 'prompts'] as const) {
    if (typeof listed === 'object' && listed !== null ? (listed as Record<string, unknown>)[kind] === true : Object.keys(pins[kind]).length > 0) pins.listed[kind] = true;
  }
  return pins;
}
