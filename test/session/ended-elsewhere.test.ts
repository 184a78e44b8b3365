// Another replica's client DELETE, as the shared log reports it (by fingerprint): the session goes
// here if held, and either way its id is remembered as ended, so no later takeover here opens it
// (not while Redis is down, nor after it restarted empty).
import { describe, expect, it } from 'vitest';
import { SessionStore } from '../../src/session/store.js';
import { fingerprint, type SharedStreamLog } from '../../src/session/shared-log.js';
import { silentLogger } from '../../src/util/log.js';

const HOUR = 3_600_000;
const info = { protocolVersion: '2025-11-25' as const, clientCapabilities: {}, clientInfo: { name: 't', version: '1' } };

function sharedLog(): SharedStreamLog {
  return {
    begin: () => {},
    append: () => {},
    end: () => {},
    hold: () => {},
    read: async () => undefined,
    endSession: () => {},
    sessionEnded: async () => false,
    close: async () => {},
  };
}

function store(clock: { now: number }, log: SharedStreamLog) {
  return new SessionStore({ idleTimeoutMs: 60_000, maxAgeMs: 24 * HOUR, replay: { events: 10, bytes: 10_000 }, logger: silentLogger, now: () => clock.now, fleet: { log } });
}

describe("another replica's end of a session", () => {
  it('is remembered here though this replica never held the session, until the id is maxAge old', () => {
    const clock = { now: 0 };
    const log = sharedLog();
    const sessions = store(clock, log);
    log.onSessionEnded?.(fingerprint('sealed-elsewhere'));
    expect(sessions.ended('sealed-elsewhere')).toBe(true);
    expect(sessions.ended('another-id')).toBe(false);
    clock.now = 24 * HOUR;
    expect(sessions.ended('sealed-elsewhere')).toBe(false);
  });

  it('ends the session held here and remembers its id', async () => {
    const clock = { now: 0 };
    const log = sharedLog();
    const sessions = store(clock, log);
    const session = sessions.create(info, 'held-here');
    const other = sessions.create(info, 'kept');
    log.onSessionEnded?.(fingerprint('held-here'));
    await expect.poll(() => session.closed).toBe(true);
    expect(sessions.get('held-here')).toBeUndefined();
    expect(sessions.ended('held-here')).toBe(true);
    expect(other.closed).toBe(false);
    expect(sessions.countFor(undefined)).toBe(1);
  });

  it('finds a session by the id it was given last', async () => {
    const clock = { now: 0 };
    const log = sharedLog();
    const sessions = store(clock, log);
    const session = sessions.create(info, 'provisional');
    sessions.assignId(session, 'final-id');
    log.onSessionEnded?.(fingerprint('final-id'));
    await expect.poll(() => session.closed).toBe(true);
    expect(sessions.size).toBe(0);
  });
});
