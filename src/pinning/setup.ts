// Builds pinning from the config: each upstream's mode (its own block over the global one), the
// store (the gateway's credential store; without one, memory), the gate, and what an operator
// does (list, diff, approve, reject), the same for the CLI and /admin/pins.
import { randomBytes } from 'node:crypto';
import type { Config } from '../config/schema.js';
import { openCredentialStore, type CredentialStore } from '../credentials/store.js';
import { waitingStore } from '../credentials/opener.js';
import { GatewayError } from '../mcp/errors.js';
import type { JsonObject } from '../mcp/jsonrpc.js';
import type { Logger } from '../util/log.js';
import { diffDefinitions, rowsOf, type Decision, type DecisionTarget, type PinRow } from './approval.js';
import type { PinAudit } from './audit.js';
import type { PinKind } from './definition.js';
import { PinGate, type DriftReport } from './gate.js';
import type { PinPolicy, UpstreamPins } from './rules.js';
import { PinStore } from './store.js';

/** An upstream's pinning: its own `pinning` keys over the global block. */
export function policyOf(config: Config, upstream: string): PinPolicy {
  const own = config.upstreams[upstream]?.pinning;
  return { mode: own?.mode ?? config.pinning.mode, newTools: own?.newTools ?? config.pinning.newTools };
}

/** Whether any upstream is pinned. */
export function pinningOn(config: Config): boolean {
  return Object.keys(config.upstreams).some((upstream) => policyOf(config, upstream).mode !== 'off');
}

/** An operator's view of one waiting (or pinned) definition. */
export interface PinDiff {
  upstream: string;
  kind: PinKind;
  name: string;
  pinned?: JsonObject;
  pending?: JsonObject;
  lines: string[];
}

/** What an operator does with pins, over the store alone (the CLI has no gate). */
export class PinOperations {
  readonly store: PinStore;
  readonly #upstreams: () => readonly string[];
  readonly #audit: PinAudit | undefined;

  constructor(store: PinStore, upstreams: () => readonly string[], audit?: PinAudit) {
    this.store = store;
    this.#upstreams = upstreams;
    this.#audit = audit;
  }

  /** Every pinned and waiting definition of the configured upstreams (or of one). */
  async list(upstream?: string): Promise<PinRow[]> {
    const names = upstream === undefined ? this.#upstreams() : [upstream];
    const all = await Promise.all(names.map(async (name) => rowsOf(name, await this.store.read(name))));
    return all.flat();
  }

  /** The diff of each waiting definition (of one upstream, or one item). */
  async diffs(upstream?: string, name?: string): Promise<PinDiff[]> {
    const out: PinDiff[] = [];
    for (const row of await this.list(upstream)) {
      if (row.state === 'pinned' || (name !== undefined && row.name !== name)) continue;
      const entry = (await this.store.read(row.upstream))[row.kind][row.name]!;
      const pinned = entry.pinned?.definition;
      const pending = entry.pending?.definition;
      out.push({ upstream: row.upstream, kind: row.kind, name: row.name, ...(pinned ? { pinned } : {}), ...(pending ? { pending } : {}), lines: diffDefinitions(pinned, pending) });
    }
    return out;
  }

  /** Approves or rejects what waits; a string says why it was not done. */
  async decide(upstream: string, target: DecisionTarget, decision: Decision, by: string): Promise<UpstreamPins | string> {
    if (!this.#upstreams().includes(upstream)) return `no upstream is named ${upstream}`;
    const outcome = await this.store.decide(upstream, target, decision, by);
    if (typeof outcome === 'string') return outcome;
    // What was decided, as the store held it under its lock (not a read made before it).
    const { pinned, pending } = outcome.decided;
    this.#audit?.({
      action: decision === 'approve' ? 'pin.approved' : 'pin.rejected',
      upstream,
      kind: target.kind,
      name: target.name,
      by,
      ...(pending ? { digest: pending.digest, drift: pending.drift } : {}),
      ...(pinned ? { pinnedDigest: pinned.digest } : {}),
      ...(pending && pending.hidden.length > 0 ? { hidden: pending.hidden } : {}),
    });
    return outcome.pins;
  }
}

export interface PinningDeps {
  logger: Logger;
  /** The gateway's credential store, when `credentials` is configured. */
  open?: () => Promise<CredentialStore>;
  audit: PinAudit;
  ondrift?: (report: DriftReport) => void;
  onchange?: (upstream: string) => void;
}

export interface Pinning {
  gate: PinGate;
  operations: PinOperations;
  /** What of a page of tools or prompts a client may see (Catalog's `screen`). */
  screen(kind: PinKind, upstream: string, items: JsonObject[], last: boolean): Promise<JsonObject[]>;
  /** The error a call of a held tool gets, or undefined. */
  refusal(upstream: string, name: string): GatewayError | undefined;
  close(): Promise<void>;
}

/** Pinning for a gateway; `config` is read at each use (a reload may change modes). */
export function createPinning(config: () => Config, deps: PinningDeps): Pinning {
  const { logger, audit } = deps;
  let memory: Promise<CredentialStore> | undefined;
  // Without a credential store pins are this process's alone (a random key: nothing outlives it).
  const open = deps.open ?? (() => (memory ??= openCredentialStore('memory', [randomBytes(32).toString('base64url')], logger)));
  const store = new PinStore(waitingStore(open));
  const upstreams = (): string[] => Object.keys(config().upstreams);
  const gate = new PinGate({
    store,
    policy: (upstream) => policyOf(config(), upstream),
    upstreams,
    logger,
    ondrift: (report) => {
      audit({ action: 'pin.drift', upstream: report.upstream, kind: report.kind, name: report.name, drift: report.drift, digest: report.digest, mode: report.mode, ...(report.pinnedDigest ? { pinnedDigest: report.pinnedDigest } : {}), ...(report.hidden.length > 0 ? { hidden: report.hidden } : {}) });
      deps.ondrift?.(report);
    },
    ...(deps.onchange ? { onchange: deps.onchange } : {}),
  });
  return {
    gate,
    operations: new PinOperations(store, upstreams, audit),
    screen: (kind, upstream, items, last) => gate.screen(kind, upstream, items, last),
    refusal(upstream, name) {
      const why = gate.refusal('tools', upstream, name);
      if (why === undefined) return undefined;
      return new GatewayError('invalid_params', `Tool ${name} of upstream ${upstream} is withheld by pinning: ${why}. An operator can review it with \`switchyard pins diff\` and approve it with \`switchyard pins approve ${upstream} ${name}\` (or POST /admin/pins).`, {
        data: { upstream, tool: name, pinning: why },
      });
    },
    close: async () => {
      gate.close();
      if (memory) await (await memory).close();
    },
  };
}
