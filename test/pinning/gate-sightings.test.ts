// The pin gate when an upstream serves more than one definition of a name at once: one whose
// list depends on who asks (a session shown the approved copy, another a changed one), or one
// listing a name on two pages. What waits stays until an operator decides, each drift is
// reported once, and onchange (list_changed to every session) is heard only when what a client
// may be shown changed, not on every listing.
import { afterEach, describe, expect, it } from 'vitest';
import { openCredentialStore, type CredentialStore } from '../../src/credentials/store.js';
import { PinGate, SERVED_MS, type DriftReport } from '../../src/pinning/gate.js';
import { PinOperations } from '../../src/pinning/setup.js';
import { PinStore } from '../../src/pinning/store.js';
import type { PinPolicy } from '../../src/pinning/rules.js';
import { silentLogger } from '../../src/util/log.js';

const v1 = { name: 'act', description: 'does something to `x`', inputSchema: { type: 'object', properties: { x: { type: 'number' } } } };
const v2 = { ...v1, inputSchema: { type: 'object', properties: { x: { type: 'string' } } }, annotations: { destructiveHint: true } };
const other = { name: 'other', description: 'Other', inputSchema: { type: 'object' } };
/** Another definition of `act` each time (an upstream sending endless variants). */
const variant = (i: number): typeof v1 => ({ ...v1, description: `variant ${i}` });

const opened: CredentialStore[] = [];
const gates: PinGate[] = [];
afterEach(async () => {
  for (const gate of gates.splice(0)) gate.close();
  await Promise.all(opened.splice(0).map((store) => store.close()));
});

interface Harness {
  gate: PinGate;
  store: PinStore;
  operations: PinOperations;
  drifts: DriftReport[];
  changes: string[];
  clock: { now: number };
}

async function gateOf(policy: PinPolicy): Promise<Harness> {
  const credentials = await openCredentialStore('memory', ['k'.repeat(32)]);
  opened.push(credentials);
  const store = new PinStore(credentials);
  const drifts: DriftReport[] = [];
  const changes: string[] = [];
  const clock = { now: 1_000_000 };
  const gate = new PinGate({ store, policy: () => policy, upstreams: () => ['tf'], logger: silentLogger, ondrift: (r) => drifts.push(r), onchange: (u) => changes.push(u), now: () => clock.now });
  gates.push(gate);
  return { gate, store, operations: new PinOperations(store, () => ['tf']), drifts, changes, clock };
}

const names = (items: { name?: unknown }[]): unknown[] => items.map((item) => item.name);
const hide: PinPolicy = { mode: 'hide', newTools: 'allow' };
const quarantine: PinPolicy = { mode: 'quarantine', newTools: 'allow' };

/** Bob is listed v1 (the approved one), alice v2, in turn, `rounds` times; returns what each was shown. */
async function alternate(gate: PinGate, rounds: number): Promise<{ bob: Set<string>; alice: Set<string> }> {
  const bob = new Set<string>();
  const alice = new Set<string>();
  for (let i = 0; i < rounds; i++) {
    bob.add(JSON.stringify(names(await gate.screen('tools', 'tf', [v1, other]))));
    alice.add(JSON.stringify(names(await gate.screen('tools', 'tf', [v2, other]))));
  }
  return { bob, alice };
}

describe('an upstream whose list depends on who asks', () => {
  it('hide: the approved copy shown to one session neither drops what waits nor tells anyone; the drift is reported once', async () => {
    const { gate, store, drifts, changes } = await gateOf(hide);
    expect(names(await gate.screen('tools', 'tf', [v1, other]))).toEqual(['act', 'other']);
    expect(names(await gate.screen('tools', 'tf', [v2, other]))).toEqual(['other']);
    const waiting = (await store.read('tf')).tools.act?.pending;
    expect(waiting).toMatchObject({ drift: 'changed' });
    expect(changes).toEqual(['tf']);

    const shown = await alternate(gate, 20);
    expect([...shown.bob]).toEqual(['["act","other"]']);
    expect([...shown.alice]).toEqual(['["other"]']);
    expect(drifts.map((d) => [d.name, d.drift])).toEqual([['act', 'changed']]);
    expect(changes).toEqual(['tf']);
    // Still waiting, as first seen (not dropped and found again).
    expect((await store.read('tf')).tools.act?.pending).toEqual(waiting);
    expect(gate.pendingCounts()).toEqual({ tf: 1 });
  });

  it('quarantine: the upstream stays out for every session until an operator decides', async () => {
    const { gate, operations, drifts, changes } = await gateOf(quarantine);
    await gate.screen('tools', 'tf', [v1, other]);
    expect(await gate.screen('tools', 'tf', [v2, other])).toEqual([]);
    const shown = await alternate(gate, 20);
    expect([...shown.bob]).toEqual(['[]']);
    expect([...shown.alice]).toEqual(['[]']);
    expect(gate.refusal('tools', 'tf', 'other')).toMatch(/quarantined/);
    expect(drifts).toHaveLength(1);
    expect(changes).toEqual(['tf']);
    expect((await operations.list('tf')).find((row) => row.name === 'act')).toMatchObject({ state: 'pending', drift: 'changed' });
  });

  it("keeps an operator's rejection: no new drift, no new `since`, nothing told", async () => {
    const { gate, store, operations, drifts, changes } = await gateOf(hide);
    await gate.screen('tools', 'tf', [v1, other]);
    await gate.screen('tools', 'tf', [v2, other]);
    expect(await operations.decide('tf', { kind: 'tools', name: 'act' }, 'reject', 'ops')).not.toBeTypeOf('string');
    await gate.refresh('tf');
    const rejected = (await store.read('tf')).tools.act?.pending;
    expect(rejected?.rejected).toMatchObject({ by: 'ops' });
    const shown = await alternate(gate, 10);
    expect([...shown.bob]).toEqual(['["act","other"]']);
    expect([...shown.alice]).toEqual(['["other"]']);
    expect((await store.read('tf')).tools.act?.pending).toEqual(rejected);
    expect(drifts).toHaveLength(1);
    expect(changes).toEqual(['tf']);
    expect(gate.pendingCounts()).toEqual({ tf: 0 });
  });

  it('an approval is told once; the copy that is now different is reported once', async () => {
    const { gate, operations, drifts, changes } = await gateOf(hide);
    await gate.screen('tools', 'tf', [v1, other]);
    await alternate(gate, 3);
    expect(await operations.decide('tf', { kind: 'tools', name: 'act' }, 'approve', 'ops')).not.toBeTypeOf('string');
    await gate.refresh('tf');
    expect(changes).toEqual(['tf', 'tf']);
    const shown = await alternate(gate, 10);
    expect([...shown.bob]).toEqual(['["other"]']);
    expect([...shown.alice]).toEqual(['["act","other"]']);
    expect(drifts.map((d) => d.drift)).toEqual(['changed', 'changed']);
    expect(changes).toEqual(['tf', 'tf']);
  });

  it('endless new definitions of one name: each reported once, the hold told once', async () => {
    const { gate, drifts, changes } = await gateOf(hide);
    await gate.screen('tools', 'tf', [v1, other]);
    for (let i = 0; i < 30; i++) {
      expect(names(await gate.screen('tools', 'tf', [variant(i), other]))).toEqual(['other']);
      expect(names(await gate.screen('tools', 'tf', [v1, other]))).toEqual(['act', 'other']);
    }
    expect(drifts).toHaveLength(30);
    expect(changes).toEqual(['tf']);
  });

  it('quarantine: a rejected definition keeps the upstream out while it is listed, not once it has not been for a while', async () => {
    const { gate, operations, changes, clock } = await gateOf(quarantine);
    await gate.screen('tools', 'tf', [v1, other]);
    await gate.screen('tools', 'tf', [v2, other]);
    expect(await operations.decide('tf', { kind: 'tools', name: 'act' }, 'reject', 'ops')).not.toBeTypeOf('string');
    await gate.refresh('tf');
    clock.now += SERVED_MS / 2;
    expect(await gate.screen('tools', 'tf', [v2, other])).toEqual([]);
    clock.now += SERVED_MS / 2;
    expect(await gate.screen('tools', 'tf', [v1, other])).toEqual([]);
    expect(changes).toEqual(['tf']);
    expect(await gate.isQuarantined('tf')).toBe(true);
    // The upstream went back: the rejected definition was not listed for SERVED_MS (what screens
    // the upstream's instructions asks the gate as well).
    clock.now += SERVED_MS;
    expect(await gate.isQuarantined('tf')).toBe(false);
    expect(names(await gate.screen('tools', 'tf', [v1, other]))).toEqual(['act', 'other']);
    expect(changes).toEqual(['tf', 'tf']);
    expect(gate.refusal('tools', 'tf', 'other')).toBeUndefined();
    // Listed again: held, and quarantined again (told), with no new drift.
    expect(await gate.screen('tools', 'tf', [v2, other])).toEqual([]);
    expect(changes).toEqual(['tf', 'tf', 'tf']);
  });
});

describe('a name listed on two pages of one listing', () => {
  it('is reported once, and listing again tells nobody', async () => {
    const { gate, drifts, changes } = await gateOf(hide);
    for (let i = 0; i < 20; i++) {
      expect(names(await gate.screen('tools', 'tf', [v1], false))).toEqual(['act']);
      expect(names(await gate.screen('tools', 'tf', [v2, other], true))).toEqual(['other']);
    }
    expect(drifts.map((d) => [d.name, d.drift])).toEqual([['act', 'changed']]);
    expect(changes).toEqual(['tf']);
    // A call may reach either copy: it is refused.
    expect(gate.refusal('tools', 'tf', 'act')).toMatch(/changed since it was approved/);
  });
});
