// sessions.maxAge in the session store, driven by an injected clock (no waiting): a session's
// life is bounded from its start, and an ended self-describing id is remembered (here and in the
// shared log) exactly until it is that old.
import { describe, expect, it } from 'vitest';
import { SessionStore } from '../../src/session/store.js';
import type { SharedStreamLog } from '../../src/session/shared-log.js';
import { silentLogger } from '../../src/util/log.js';

const HOUR = 3_600_000;
const info = { protocolVersion: '2025-11-25' as const, clientCapabilities: {}, clientInfo: { name: 't', version: '1' } };

/** A shared log that records the tombstones written to it. */
function sharedLog(): SharedStreamLog & { ended: { session: string; forMs: number }[] } {
  const ended: { session: string; forMs: number }[] = [];
  return {
    ended,
    begin: () => {},
    append: () => {},
    end: () => {},
    hold: () => {},
    read: async () => undefined,
    endSession: (session, forMs) => void ended.push({ session, forMs }),
    sessionEnded: async () => false,
    close: async () => {},
  };
}

function store(clock: { now: number }, fleet?: { log?: SharedStreamLog }) {
  return new SessionStore({ idleTimeoutMs: 60_000, maxAgeMs: 24 * HOUR, replay: { events: 10, bytes: 10_000 }, logger: silentLogger, now: () => clock.now, ...(fleet ? { fleet } : {}) });
}

describe('sessions.maxAge', () => {
  it('ends a session at its maximum age even while it is busy (a stream open, a request in flight)', async () => {
    const clock = { now: 0 };
    const sessions = store(clock);
    const session = sessions.create(info);
    session.standalone.attach({ write: () => {}, close: () => {} });
    const signal = session.begin(1);
    clock.now = 24 * HOUR - 1;
    expect(await sessions.sweep()).toBe(0);
    clock.now = 24 * HOUR;
    expect(await sessions.sweep()).toBe(1);
    expect(session.closed).toBe(true);
    expect(signal.aborted).toBe(true);
    expect(sessions.get(session.id)).toBeUndefined();
  });

  it('counts the age of a session taken over from when it began on the replica that opened it (its iat)', async () => {
    const clock = { now: 10 * HOUR };
    const sessions = store(clock, {});
    const session = sessions.create(info, 'taken-over', undefined, 0);
    expect(sessions.startedAt('taken-over')).toBe(0);
    expect(sessions.outlived(0)).toBe(false);
    clock.now = 24 * HOUR;
    expect(sessions.outlived(0)).toBe(true);
    expect(await sessions.sweep()).toBe(1);
    expect(session.closed).toBe(true);
  });

  it('leaves a session the gateway keeps for a client holding no id of it (2026-07-28) to the idle sweep', async () => {
    const clock = { now: 0 };
    const sessions = store(clock);
    const session = sessions.create(info, undefined, { deliver: () => {}, canAsk: false, addressable: false });
    session.begin(1);
    clock.now = 48 * HOUR;
    expect(await sessions.sweep()).toBe(0);
    expect(session.closed).toBe(false);
  });

  it("remembers a DELETEd self-describing id until it is maxAge old, here and in the shared log's tombstone", async () => {
    const clock = { now: 0 };
    const log = sharedLog();
    const sessions = store(clock, { log });
    sessions.create(info, 'sealed-id');
    clock.now = 2 * HOUR;
    await sessions.endByClient('sealed-id');
    expect(log.ended).toEqual([{ session: 'sealed-id', forMs: 22 * HOUR }]);
    // Long after twice the idle timeout, still ended: its id must not bring it back.
    clock.now = 24 * HOUR - 1;
    expect(sessions.ended('sealed-id')).toBe(true);
    // From then on no replica opens it for its age; nothing more to remember.
    clock.now = 24 * HOUR;
    expect(sessions.ended('sealed-id')).toBe(false);
    expect(sessions.outlived(0)).toBe(true);
  });

  it('remembers nothing of random ids (no sessions.keys): no replica can open one again', async () => {
    const clock = { now: 0 };
    const sessions = store(clock);
    const session = sessions.create(info);
    await sessions.endByClient(session.id);
    expect(sessions.ended(session.id)).toBe(false);
    expect(sessions.get(session.id)).toBeUndefined();
  });
});
