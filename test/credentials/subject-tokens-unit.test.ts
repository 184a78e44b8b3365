// Where token exchange's subject comes from: the last IdP token a principal's client sent while
// it is valid, else the front door's; nothing kept while no upstream exchanges.
import { describe, expect, it } from 'vitest';
import { ClientSubjectTokens } from '../../src/credentials/subject-tokens.js';

describe('ClientSubjectTokens', () => {
  it('offers the latest valid token a client sent, then the front door, and forgets at the end of a session', async () => {
    const clock = { now: 1_000_000 };
    const ended: string[] = [];
    const subjects = new ClientSubjectTokens({ now: () => clock.now, frontDoor: { idpAccessToken: async (p) => `front-door-${p}`, endGrants: async (p) => void ended.push(p) } });
    subjects.remember('alice', 'first', 2_000);
    subjects.remember('alice', 'second', 3_000);
    // The last one sent is the subject, though one sent before expires later (the IdP may have revoked that one).
    subjects.remember('alice', 'shorter', 1_500);
    expect(await subjects.subjectToken('alice')).toBe('shorter');
    // An expired token is never kept.
    subjects.remember('alice', 'expired', 999);
    expect(await subjects.subjectToken('alice')).toBe('shorter');
    clock.now = 1_496_000;
    expect(await subjects.subjectToken('alice')).toBe('front-door-alice');
    expect(await subjects.subjectToken('bob')).toBe('front-door-bob');
    subjects.remember('bob', 'bobs', 5_000);
    await subjects.ended('bob');
    expect(ended).toEqual(['bob']);
    expect(await subjects.subjectToken('bob')).toBe('front-door-bob');
  });

  it('keeps nothing while no upstream exchanges tokens', async () => {
    let wanted = false;
    const subjects = new ClientSubjectTokens({ wanted: () => wanted, now: () => 0 });
    subjects.remember('alice', 'token', 100);
    expect(await subjects.subjectToken('alice')).toBeUndefined();
    wanted = true;
    subjects.remember('alice', 'token', 100);
    expect(await subjects.subjectToken('alice')).toBe('token');
  });
});
