// An operator's decisions on waiting definitions (approve pins the new one, reject keeps it held),
// and the readable diff of a pinned definition and the one waiting, for the CLI and /admin/pins.
import type { PinKind } from './definition.js';
import { sorted, type PinEntry, type UpstreamPins } from './rules.js';

export type Decision = 'approve' | 'reject';

/** Which waiting definition an operator decides on; `digest` makes sure it is the one they saw. */
export interface DecisionTarget {
  kind: PinKind;
  name: string;
  digest?: string;
}

/** The pins after the decision, or why it cannot be made (nothing waits, or it changed again). */
export function decide(pins: UpstreamPins, target: DecisionTarget, decision: Decision, by: string, now: string): UpstreamPins | string {
  const entry = pins[target.kind][target.name];
  const pending = entry?.pending;
  if (!pending) return `nothing of ${target.kind} ${target.name} waits for approval`;
  if (target.digest !== undefined && target.digest !== pending.digest) return `${target.name} changed again (${pending.digest} now waits, not ${target.digest}); look at it first`;
  const next: PinEntry =
    decision === 'approve'
      ? { pinned: { digest: pending.digest, definition: pending.definition, at: now, by } }
      : { ...(entry.pinned ? { pinned: entry.pinned } : {}), pending: { ...pending, rejected: { at: now, by } } };
  return { ...pins, [target.kind]: { ...pins[target.kind], [target.name]: next } };
}

/** Lines of a diff kept at most (a huge schema's diff is cut, with a note). */
const MAX_DIFF_LINES = 400;
/** Beyond this many lines on a side, the diff is not computed (quadratic): both sides are printed whole. */
const MAX_LCS_LINES = 2_000;

/** A line diff (`-` pinned, `+` waiting, two spaces: both) of two definitions, as sorted, indented JSON. */
export function diffDefinitions(before: unknown, after: unknown): string[] {
  const a = before === undefined ? [] : JSON.stringify(sorted(before), null, 2).split('\n');
  const b = after === undefined ? [] : JSON.stringify(sorted(after), null, 2).split('\n');
  const lines = a.length > MAX_LCS_LINES || b.length > MAX_LCS_LINES ? [...a.map((l) => `- ${l}`), ...b.map((l) => `+ ${l}`)] : lineDiff(a, b);
  if (lines.length <= MAX_DIFF_LINES) return lines;
  return [...lines.slice(0, MAX_DIFF_LINES), `… ${lines.length - MAX_DIFF_LINES} more lines`];
}

/** Longest common subsequence of lines, walked forward. */
function lineDiff(a: string[], b: string[]): string[] {
  const rows = a.length + 1;
  const cols = b.length + 1;
  const table = new Uint32Array(rows * cols);
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      table[i * cols + j] = a[i] === b[j] ? table[(i + 1) * cols + j + 1]! + 1 : Math.max(table[(i + 1) * cols + j]!, table[i * cols + j + 1]!);
    }
  }
  const out: string[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) {
      out.push(`  ${a[i++]}`);
      j++;
    } else if (table[(i + 1) * cols + j]! >= table[i * cols + j + 1]!) out.push(`- ${a[i++]}`);
    else out.push(`+ ${b[j++]}`);
  }
  while (i < a.length) out.push(`- ${a[i++]}`);
  while (j < b.length) out.push(`+ ${b[j++]}`);
  return out;
}

/** One row of a listing of an upstream's pins. */
export interface PinRow {
  upstream: string;
  kind: PinKind;
  name: string;
  /** pinned, pending (changed | new | hidden_text), or rejected. */
  state: 'pinned' | 'pending' | 'rejected';
  drift?: string;
  pinnedDigest?: string;
  pendingDigest?: string;
  hidden?: string[];
  since?: string;
  by?: string;
}

export function rowsOf(upstream: string, pins: UpstreamPins): PinRow[] {
  const rows: PinRow[] = [];
  for (const kind of ['tools', 'prompts'] as const) {
    for (const name of Object.keys(pins[kind]).sort()) {
      const { pinned, pending } = pins[kind][name]!;
      const row: PinRow = { upstream, kind, name, state: pending ? (pending.rejected ? 'rejected' : 'pending') : 'pinned' };
      if (pinned) Object.assign(row, { pinnedDigest: pinned.digest, by: pinned.by });
      if (pending) Object.assign(row, { drift: pending.drift, pendingDigest: pending.digest, since: pending.since, ...(pending.hidden.length > 0 ? { hidden: pending.hidden } : {}) });
      rows.push(row);
    }
  }
  return rows;
}
