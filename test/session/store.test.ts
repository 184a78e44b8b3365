// The session store's idle sweep, driven by an injected clock (no waiting).
import { describe, expect, it } from 'vitest';
import { SessionStore } from '../../src/session/store.js';
import { silentLogger } from '../../src/util/log.js';

function store(clock: { now: number }) {
  return new SessionStore({ idleTimeoutMs: 1_000, maxAgeMs: 3_600_000, replay: { events: 10, bytes: 10_000 }, logger: silentLogger, now: () => clock.now });
}

const info = { protocolVersion: '2025-11-25' as const, clientCapabilities: {}, clientInfo: { name: 't', version: '1' } };
const connection = () => ({ write: () => {}, close: () => {} });

describe('idle sessions', () => {
  it('closes a session idle for longer than the timeout', async () => {
    const clock = { now: 0 };
    const sessions = store(clock);
    const session = sessions.create(info);
    clock.now = 999;
    expect(await sessions.sweep()).toBe(0);
    clock.now = 1_000;
    expect(await sessions.sweep()).toBe(1);
    expect(session.closed).toBe(true);
    expect(sessions.get(session.id)).toBeUndefined();
  });

  it('keeps a session with an open stream or a request in flight, and counts idleness from the last activity', async () => {
    const clock = { now: 0 };
    const sessions = store(clock);
    const session = sessions.create(info);
    const open = connection();
    session.standalone.attach(open);
    clock.now = 5_000;
    expect(await sessions.sweep()).toBe(0);
    session.standalone.detach(open);
    session.touch(clock.now);
    const signal = session.begin(1);
    clock.now = 10_000;
    expect(await sessions.sweep()).toBe(0);
    session.end(1, signal);
    session.touch(clock.now);
    clock.now = 10_500;
    expect(await sessions.sweep()).toBe(0);
    clock.now = 11_000;
    expect(await sessions.sweep()).toBe(1);
  });

  it('aborts requests in flight when a session is deleted', async () => {
    const sessions = store({ now: 0 });
    const session = sessions.create(info);
    const signal = session.begin('a');
    await sessions.delete(session.id);
    expect(signal.aborted).toBe(true);
  });
});
