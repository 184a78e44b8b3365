// An operator's decision is audited with the definition it decided on: the one waiting under the
// store's lock when the decision is made, not one read before it (a listing recorded meanwhile
// replaces what waits, and without --digest the decision applies to the newer one).
import { afterEach, describe, expect, it } from 'vitest';
import { openCredentialStore, type CredentialStore } from '../../src/credentials/store.js';
import type { PinAuditEntry } from '../../src/pinning/audit.js';
import { PinOperations } from '../../src/pinning/setup.js';
import { PinStore } from '../../src/pinning/store.js';
import type { UpstreamPins } from '../../src/pinning/rules.js';

const opened: CredentialStore[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((store) => store.close()));
});

const def = (description: string) => ({ name: 'search', description });
const since = '2026-01-01T00:00:00.000Z';

/**
 * `docs search` pinned at D1 with D2 waiting; the operations over it, auditing into `audits`.
 * With `race`, the first time the operations take the store's lock a newer listing (D3) is
 * recorded just before: after whatever the decision read first, before it decides.
 */
async function setup(race = false): Promise<{ store: PinStore; operations: PinOperations; audits: PinAuditEntry[] }> {
  const credentials = await openCredentialStore('memory', ['k'.repeat(32)]);
  opened.push(credentials);
  const store = new PinStore(credentials);
  let armed = false;
  const racing = new Proxy(credentials, {
    get(target, key) {
      if (key !== 'withLock') {
        const value: unknown = Reflect.get(target, key, target);
        return typeof value === 'function' ? value.bind(target) : value;
      }
      return async (...args: Parameters<CredentialStore['withLock']>) => {
        if (armed) {
          armed = false;
          await listedAgain(store);
        }
        return target.withLock(...args);
      };
    },
  });
  await store.update('docs', () => ({
    tools: { search: { pinned: { digest: 'sha256:D1', definition: def('v1'), at: since, by: 'first sight' }, pending: { digest: 'sha256:D2', definition: def('v2 seen by the operator'), drift: 'changed', hidden: [], since } } },
    prompts: {},
    listed: { tools: true },
  }));
  armed = race;
  const audits: PinAuditEntry[] = [];
  return { store, operations: new PinOperations(new PinStore(racing), () => ['docs'], (entry) => audits.push(entry)), audits };
}

/** What the gate does when a newer listing arrives: under the lock, D3 replaces what waits. */
function listedAgain(store: PinStore): Promise<UpstreamPins> {
  return store.update('docs', (pins) => ({
    ...pins,
    tools: { search: { ...pins.tools.search!, pending: { digest: 'sha256:D3', definition: def('v3 nobody looked at'), drift: 'changed', hidden: ['U+E0041'], since } } },
  }));
}

describe('an operator decision racing a new listing', () => {
  it('approve without a digest: the audit names the digest that became pinned', async () => {
    const { store, operations, audits } = await setup(true);
    const outcome = await operations.decide('docs', { kind: 'tools', name: 'search' }, 'approve', 'cli:alice');
    expect(outcome).not.toBeTypeOf('string');
    const pinned = (await store.read('docs')).tools.search!.pinned!;
    expect(pinned.digest).toBe('sha256:D3');
    expect(audits).toEqual([{ action: 'pin.approved', upstream: 'docs', kind: 'tools', name: 'search', by: 'cli:alice', digest: 'sha256:D3', pinnedDigest: 'sha256:D1', drift: 'changed', hidden: ['U+E0041'] }]);
  });

  it('reject without a digest: the audit names the digest that was rejected', async () => {
    const { store, operations, audits } = await setup(true);
    await operations.decide('docs', { kind: 'tools', name: 'search' }, 'reject', 'cli:bob');
    expect((await store.read('docs')).tools.search!.pending).toMatchObject({ digest: 'sha256:D3', rejected: { by: 'cli:bob' } });
    expect(audits).toEqual([expect.objectContaining({ action: 'pin.rejected', digest: 'sha256:D3', pinnedDigest: 'sha256:D1' })]);
  });

  it('approve with the digest the operator saw: refused once another waits, nothing audited', async () => {
    const { store, operations, audits } = await setup(true);
    const outcome = await operations.decide('docs', { kind: 'tools', name: 'search', digest: 'sha256:D2' }, 'approve', 'cli:alice');
    expect(outcome).toMatch(/changed again \(sha256:D3 now waits, not sha256:D2\)/);
    expect((await store.read('docs')).tools.search!.pinned!.digest).toBe('sha256:D1');
    expect(audits).toEqual([]);
  });

  it('without a race: the audit names the waiting definition it decided', async () => {
    const { operations, audits } = await setup();
    expect(await operations.decide('docs', { kind: 'tools', name: 'search' }, 'approve', 'ops')).not.toBeTypeOf('string');
    expect(audits).toEqual([{ action: 'pin.approved', upstream: 'docs', kind: 'tools', name: 'search', by: 'ops', digest: 'sha256:D2', pinnedDigest: 'sha256:D1', drift: 'changed' }]);
  });
});
