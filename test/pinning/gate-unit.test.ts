// The pin gate over an in-process credential store: first sight pins, drift is held and
// reported once, onchange hears what is held change, and an operator's approval (announced on
// the store's channel) lets the tool through again.
import { afterEach, describe, expect, it } from 'vitest';
import { openCredentialStore, type CredentialStore } from '../../src/credentials/store.js';
import { PinGate, type DriftReport } from '../../src/pinning/gate.js';
import { PinOperations } from '../../src/pinning/setup.js';
import { PinStore } from '../../src/pinning/store.js';
import { pinsFrom, type PinPolicy } from '../../src/pinning/rules.js';
import { silentLogger } from '../../src/util/log.js';

const v1 = { name: 'search', description: 'Search the docs', inputSchema: { type: 'object' } };
const v2 = { ...v1, description: 'Delete the docs' };
const other = { name: 'other', description: 'Other', inputSchema: { type: 'object' } };

const opened: CredentialStore[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((store) => store.close()));
});

async function gateOf(policy: PinPolicy): Promise<{ gate: PinGate; store: PinStore; drifts: DriftReport[]; changes: string[] }> {
  const credentials = await openCredentialStore('memory', ['k'.repeat(32)]);
  opened.push(credentials);
  const store = new PinStore(credentials);
  const drifts: DriftReport[] = [];
  const changes: string[] = [];
  const gate = new PinGate({ store, policy: () => policy, upstreams: () => ['docs'], logger: silentLogger, ondrift: (r) => drifts.push(r), onchange: (u) => changes.push(u) });
  gate.start();
  return { gate, store, drifts, changes };
}

const names = (items: { name?: unknown }[]): unknown[] => items.map((item) => item.name);

describe('the pin gate', () => {
  it('pins at first sight, holds a changed tool under hide and reports it once', async () => {
    const { gate, drifts, changes } = await gateOf({ mode: 'hide', newTools: 'allow' });
    expect(names(await gate.screen('tools', 'docs', [v1, other]))).toEqual(['search', 'other']);
    expect(drifts).toEqual([]);
    expect(names(await gate.screen('tools', 'docs', [v2, other]))).toEqual(['other']);
    expect(names(await gate.screen('tools', 'docs', [v2, other]))).toEqual(['other']);
    expect(drifts.map((d) => [d.name, d.drift])).toEqual([['search', 'changed']]);
    expect(changes).toEqual(['docs']);
    expect(gate.refusal('tools', 'docs', 'search')).toMatch(/changed since it was approved \(description\)/);
    expect(gate.refusal('tools', 'docs', 'other')).toBeUndefined();
    expect(gate.pendingCounts()).toEqual({ docs: 1 });
    gate.close();
  });

  it("lets the tool through once an operator approves, telling onchange", async () => {
    const { gate, store, changes } = await gateOf({ mode: 'hide', newTools: 'allow' });
    await gate.screen('tools', 'docs', [v1]);
    await gate.screen('tools', 'docs', [v2]);
    const audits: string[] = [];
    const operations = new PinOperations(store, () => ['docs'], (entry) => audits.push(`${entry.action} ${entry.name} by ${entry.by}`));
    expect(await operations.decide('docs', { kind: 'tools', name: 'search' }, 'approve', 'alice')).not.toBeTypeOf('string');
    // The announcement reaches the gate through the store's channel (in-process here).
    await expect.poll(() => gate.refusal('tools', 'docs', 'search')).toBeUndefined();
    expect(changes).toEqual(['docs', 'docs']);
    expect(names(await gate.screen('tools', 'docs', [v2]))).toEqual(['search']);
    expect(audits).toEqual(['pin.approved search by alice']);
    expect(await operations.decide('docs', { kind: 'tools', name: 'search' }, 'approve', 'alice')).toMatch(/nothing of tools search waits/);
    expect(await operations.decide('nope', { kind: 'tools', name: 'search' }, 'approve', 'alice')).toMatch(/no upstream is named nope/);
    gate.close();
  });

  it('judges a name listed twice on the copy that is not pinned, and shows it once', async () => {
    // An upstream listing a changed definition beside a copy of the pinned one: the pinned copy
    // must not vouch for it (which copy a call reaches is the upstream's to say).
    const { gate, drifts } = await gateOf({ mode: 'hide', newTools: 'allow' });
    await gate.screen('tools', 'docs', [v1, other]);
    for (const listed of [[v2, v1, other], [v1, v2, other]]) {
      expect(names(await gate.screen('tools', 'docs', listed))).toEqual(['other']);
      expect(gate.refusal('tools', 'docs', 'search')).toMatch(/changed since it was approved \(description\)/);
    }
    expect(drifts.map((d) => [d.name, d.drift])).toEqual([['search', 'changed']]);
    expect(gate.pendingCounts()).toEqual({ docs: 1 });
    // Two identical copies are one tool, shown once.
    const { gate: warned } = await gateOf({ mode: 'warn', newTools: 'allow' });
    expect(await warned.screen('tools', 'docs', [v1, v1, other])).toEqual([v1, other]);
    gate.close();
    warned.close();
  });

  it("pins a first listing's every page at first sight; a tool that comes after it is new", async () => {
    const { gate, drifts } = await gateOf({ mode: 'hide', newTools: 'allow' });
    // A paginated upstream's first listing: the second page's tools are first sight too.
    expect(names(await gate.screen('tools', 'docs', [v1], false))).toEqual(['search']);
    expect(names(await gate.screen('tools', 'docs', [other], true))).toEqual(['other']);
    expect(drifts).toEqual([]);
    const later = { ...other, name: 'later' };
    expect(names(await gate.screen('tools', 'docs', [v1, other, later]))).toEqual(['search', 'other', 'later']);
    expect(drifts.map((d) => [d.name, d.drift])).toEqual([['later', 'new']]);
    gate.close();
  });

  it('reads pins stored before listings were recorded as listed where they hold entries', () => {
    const stored = { tools: { search: { pinned: { digest: 'd', definition: {}, at: 't', by: 'first sight' } } }, prompts: {} };
    expect(pinsFrom(stored).listed).toEqual({ tools: true });
    expect(pinsFrom({ ...stored, listed: {} }).listed).toEqual({});
  });

  it('passes everything untouched when off, storing nothing', async () => {
    const { gate, store } = await gateOf({ mode: 'off', newTools: 'pending' });
    expect(names(await gate.screen('tools', 'docs', [v1]))).toEqual(['search']);
    expect(await store.read('docs')).toEqual({ tools: {}, prompts: {}, listed: {} });
    gate.close();
  });
});
