// Taking a session over from its self-describing id (SessionOpener.resume), with no upstream and
// an injected clock: an id is refused once it is sessions.maxAge old or ended, and the session
// takes its slot under the caps before anything is awaited (released if the takeover fails).
import { describe, expect, it } from 'vitest';
import { SessionOpener, type OpenerDeps } from '../../src/links/open.js';
import { SessionStore } from '../../src/session/store.js';
import { SessionTokens, type SessionClaims } from '../../src/session/token.js';
import type { SharedStreamLog } from '../../src/session/shared-log.js';
import type { UpstreamClient } from '../../src/upstream/client.js';
import type { Caller } from '../../src/session/context.js';
import { silentLogger } from '../../src/util/log.js';

const HOUR = 3_600_000;
const tokens = new SessionTokens(['k'.repeat(32)]);
const alice: Caller = { requestId: 'r', principal: { id: 'alice', kind: 'apikey', scopes: [], claims: {} } };

function sealed(iat: number, nonce = 'n'): string {
  const claims: SessionClaims = { nonce, principal: 'alice', protocolVersion: '2025-11-25', clientCapabilities: {}, clientInfo: { name: 't', version: '1' }, upstreams: {}, iat };
  return tokens.seal(claims);
}

/** A shared log whose "was it ended elsewhere?" answers when the test says. */
function slowLog() {
  const pending: ((ended: boolean) => void)[] = [];
  const log: SharedStreamLog = {
    begin: () => {},
    append: () => {},
    end: () => {},
    hold: () => {},
    read: async () => undefined,
    endSession: () => {},
    sessionEnded: () => new Promise<boolean>((resolve) => pending.push(resolve)),
    close: async () => {},
  };
  return { log, answer: (ended: boolean) => pending.splice(0).forEach((resolve) => resolve(ended)) };
}

function setup(clock: { now: number }, log?: SharedStreamLog) {
  const sessions = new SessionStore<UpstreamClient>({
    idleTimeoutMs: 60_000,
    maxAgeMs: 24 * HOUR,
    replay: { events: 10, bytes: 10_000 },
    logger: silentLogger,
    now: () => clock.now,
    fleet: log ? { log } : {},
  });
  const deps = {
    pool: { names: [], isShared: () => false, config: () => undefined },
    sessions,
    catalog: {},
    logger: silentLogger,
    metrics: {},
    policy: () => ({ access: () => ({ canSeeUpstream: () => false }) }),
    tokens,
  } as unknown as OpenerDeps;
  return { sessions, opener: new SessionOpener(deps) };
}

describe('taking a session over from its id', () => {
  it('refuses an id sessions.maxAge old (an unknown session), by the iat it carries', async () => {
    const clock = { now: 24 * HOUR - 1 };
    const { opener } = setup(clock);
    expect(await opener.resume(sealed(0, 'young'), alice)).toBeDefined();
    clock.now = 24 * HOUR;
    expect(await opener.resume(sealed(0, 'old'), alice)).toBeUndefined();
  });

  it('never brings back a session its client DELETEd, however long after (until its id is too old anyway)', async () => {
    const clock = { now: 0 };
    const { sessions, opener } = setup(clock);
    const id = sealed(0);
    expect(await opener.resume(id, alice)).toBeDefined();
    await sessions.endByClient(id);
    // Past what an ended id was remembered for (twice the idle timeout, two minutes at least).
    for (const now of [3 * 60_000, HOUR, 24 * HOUR - 1, 24 * HOUR, 48 * HOUR]) {
      clock.now = now;
      expect(await opener.resume(id, alice), `at ${now} ms`).toBeUndefined();
    }
  });

  it('gives the session its slot under the caps before it awaits anything, and the slot back when the id was ended elsewhere', async () => {
    const clock = { now: 0 };
    const { log, answer } = slowLog();
    const { sessions, opener } = setup(clock, log);
    const [one, two] = [sealed(0, 'one'), sealed(0, 'two')];
    // What the edge does: the caps checked, then the takeover started, in one step.
    const first = opener.resume(one, alice);
    expect(sessions.countFor('alice')).toBe(1);
    // A second takeover racing the first (the shared log not answered yet) sees the slot taken.
    expect(sessions.size).toBe(1);
    const second = opener.resume(two, alice);
    expect(sessions.countFor('alice')).toBe(2);
    expect(opener.takingOver(one)).toBeDefined();
    answer(true);
    expect(await first).toBeUndefined();
    expect(await second).toBeUndefined();
    expect(sessions.countFor('alice')).toBe(0);
    expect(sessions.size).toBe(0);
    expect(sessions.ended(one)).toBe(true);
  });

  it('gives the slot back when the takeover fails', async () => {
    const clock = { now: 0 };
    const { sessions } = setup(clock);
    const failing = new SessionOpener({
      pool: { names: [], isShared: () => false, config: () => undefined },
      sessions,
      catalog: {},
      logger: silentLogger,
      metrics: {},
      policy: () => {
        throw new Error('policy unavailable');
      },
      tokens,
    } as unknown as OpenerDeps);
    await expect(failing.resume(sealed(0), alice)).rejects.toThrow('policy unavailable');
    expect(sessions.countFor('alice')).toBe(0);
    expect(sessions.size).toBe(0);
  });
});
