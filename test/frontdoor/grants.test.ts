// Codes and grants in a real (memory) credential store: codes are single-use and short-lived, a
// reused code revokes its grant, refresh tokens rotate, a spent one revokes the grant (also when
// two replicas race with it), and a refresh is bound to its client, its resource and the IdP.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openCredentialStore, type CredentialStore } from '../../src/credentials/store.js';
import { Grants, type CodeRecord, type Grant, type RedeemedCode } from '../../src/frontdoor/grants.js';

const KEY = 'grants-unit-test-credentials-key-of-forty-chars';
const RECORD: CodeRecord = {
  clientId: 'dcr_client',
  redirectUri: 'http://127.0.0.1/cb',
  challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
  resource: 'https://mcp.example/mcp',
  scope: '',
  identity: { principal: 'https://idp.example|alice', subject: 'alice', claims: { groups: ['eng'] } },
  idpRefresh: 'idp-refresh-1',
};

let now = 1_000_000;
let store: CredentialStore;
let grants: Grants;
let revoked: string[];

beforeEach(async () => {
  now = 1_000_000;
  store = await openCredentialStore('memory', [KEY], undefined, { now: () => now });
  revoked = [];
  grants = new Grants({ store, refreshTtlMs: 30 * 24 * 3_600_000, onRevoked: async (id) => void revoked.push(id) });
});

afterEach(async () => {
  await store.close();
});

const keep = async (): Promise<undefined> => undefined;

/** The grant of a code just redeemed (neither refused nor reused). */
async function created(code: string, redeemed: RedeemedCode | 'reused' | undefined): Promise<{ grant: Grant; refreshToken: string }> {
  if (typeof redeemed !== 'object') throw new Error(`expected a redemption, got ${redeemed}`);
  const made = await grants.createGrant(code, redeemed);
  if (made === 'reused') throw new Error('expected a grant');
  return made;
}

describe('authorization codes', () => {
  it('are redeemed once; a second redemption revokes what the first gave', async () => {
    const code = await grants.issueCode(RECORD);
    const redeemed = await grants.redeemCode(code);
    expect((redeemed as RedeemedCode).record).toEqual(RECORD);
    const { grant } = await created(code, redeemed);
    expect(await grants.alive(grant.id)).toBe(true);
    expect(await grants.redeemCode(code)).toBe('reused');
    expect(await grants.alive(grant.id)).toBe(false);
    expect(revoked).toEqual([grant.id]);
  });

  it('redeemed twice at once: one redemption, the other a reuse, and the grant of the first revoked', async () => {
    const code = await grants.issueCode(RECORD);
    const outcomes = await Promise.all([grants.redeemCode(code), grants.redeemCode(code)]);
    expect(outcomes.filter((outcome) => outcome === 'reused')).toHaveLength(1);
    const won = outcomes.find((outcome): outcome is RedeemedCode => typeof outcome === 'object');
    expect(won?.record).toEqual(RECORD);
    // The reuse was seen before the grant was written: it is revoked as it is created.
    expect(await grants.createGrant(code, won!)).toBe('reused');
    expect(await grants.alive(won!.grantId)).toBe(false);
    expect(await store.count('frontdoor:grant:')).toBe(0);
  });

  it('expire after 60 seconds', async () => {
    const code = await grants.issueCode(RECORD);
    now += 60_001;
    expect(await grants.redeemCode(code)).toBeUndefined();
  });

  it('are stored under a digest, never as they are', async () => {
    const code = await grants.issueCode(RECORD);
    expect(await store.get(`frontdoor:code:${code}`)).toBeUndefined();
  });
});

describe('refresh tokens', () => {
  async function grant(): Promise<{ id: string; refreshToken: string }> {
    const code = await grants.issueCode(RECORD);
    const { grant: made, refreshToken } = await created(code, await grants.redeemCode(code));
    return { id: made.id, refreshToken };
  }

  it('rotate at every use; the spent one revokes the grant and the newer one with it', async () => {
    const { id, refreshToken: first } = await grant();
    const rotated = await grants.rotate(first, 'dcr_client', null, keep);
    if (!('grant' in rotated)) throw new Error('expected a rotation');
    expect(rotated.refreshToken).not.toBe(first);
    expect(await grants.rotate(first, 'dcr_client', null, keep)).toEqual({ refused: 'reused' });
    expect(await grants.alive(id)).toBe(false);
    expect(await grants.rotate(rotated.refreshToken, 'dcr_client', null, keep)).toEqual({ refused: 'unknown' });
  });

  it('two replicas presenting the same one at once: one rotates, the other is a reuse', async () => {
    const { id, refreshToken } = await grant();
    const outcomes = await Promise.all([grants.rotate(refreshToken, 'dcr_client', null, keep), grants.rotate(refreshToken, 'dcr_client', null, keep)]);
    expect(outcomes.filter((outcome) => 'grant' in outcome)).toHaveLength(1);
    expect(outcomes.filter((outcome) => 'refused' in outcome && outcome.refused === 'reused')).toHaveLength(1);
    expect(await grants.alive(id)).toBe(false);
  });

  it('are bound to their client and their resource', async () => {
    const { refreshToken } = await grant();
    expect(await grants.rotate(refreshToken, 'dcr_other', null, keep)).toEqual({ refused: 'client' });
    expect(await grants.rotate(refreshToken, 'dcr_client', 'https://mcp.example/other', keep)).toEqual({ refused: 'target' });
    expect('grant' in (await grants.rotate(refreshToken, 'dcr_client', RECORD.resource, keep))).toBe(true);
  });

  it("keep the IdP's rotated refresh token, and end the grant when the IdP refuses", async () => {
    const { id, refreshToken } = await grant();
    const seen: Array<string | undefined> = [];
    const rotated = await grants.rotate(refreshToken, 'dcr_client', null, async (g) => {
      seen.push(g.idpRefresh);
      return 'idp-refresh-2';
    });
    if (!('grant' in rotated)) throw new Error('expected a rotation');
    expect(rotated.grant.idpRefresh).toBe('idp-refresh-2');
    expect(seen).toEqual(['idp-refresh-1']);
    expect(await grants.rotate(rotated.refreshToken, 'dcr_client', null, async () => false)).toEqual({ refused: 'idp' });
    expect(await grants.alive(id)).toBe(false);
  });

  it('end grantMaxAge after the sign-in however often they rotate, also without an IdP refresh token', async () => {
    const day = 24 * 3_600_000;
    const limited = new Grants({ store, refreshTtlMs: day, grantMaxAgeMs: 3 * day, now: () => now, onRevoked: async (id) => void revoked.push(id) });
    const { idpRefresh: _none, ...withoutIdp } = RECORD;
    const code = await limited.issueCode(withoutIdp);
    const redeemed = await limited.redeemCode(code);
    const made = await limited.createGrant(code, redeemed as RedeemedCode);
    if (made === 'reused') throw new Error('expected a grant');
    let refreshToken = made.refreshToken;
    for (let elapsed = 0; elapsed < 3 * day - day / 2; elapsed += day / 2) {
      now += day / 2;
      const rotated = await limited.rotate(refreshToken, 'dcr_client', null, keep);
      if (!('grant' in rotated)) throw new Error(`expected a rotation ${elapsed + day / 2} ms after the sign-in, got ${rotated.refused}`);
      refreshToken = rotated.refreshToken;
    }
    now += day / 2;
    expect(await limited.rotate(refreshToken, 'dcr_client', null, keep)).toMatchObject({ refused: expect.stringMatching(/^(expired|unknown)$/) });
    expect(await limited.alive(made.grant.id)).toBe(false);
  });

  it('are refused as expired past grantMaxAge by a replica whose clock runs ahead of the store', async () => {
    const day = 24 * 3_600_000;
    let ahead = 0;
    const limited = new Grants({ store, refreshTtlMs: day, grantMaxAgeMs: 2 * day, now: () => now + ahead, onRevoked: async (id) => void revoked.push(id) });
    const code = await limited.issueCode(RECORD);
    const made = await limited.createGrant(code, (await limited.redeemCode(code)) as RedeemedCode);
    if (made === 'reused') throw new Error('expected a grant');
    ahead = 2 * day;
    expect(await limited.rotate(made.refreshToken, 'dcr_client', null, keep)).toEqual({ refused: 'expired' });
    expect(revoked).toEqual([made.grant.id]);
  });

  it('expire after refreshTtl without use', async () => {
    const { refreshToken } = await grant();
    now += 30 * 24 * 3_600_000 + 1;
    expect(await grants.rotate(refreshToken, 'dcr_client', null, keep)).toEqual({ refused: 'unknown' });
  });

  it('are refused when malformed, and revoked by RFC 7009 revocation (current or spent)', async () => {
    expect(await grants.rotate('not-a-token', 'dcr_client', null, keep)).toEqual({ refused: 'unknown' });
    const { id, refreshToken } = await grant();
    expect(await grants.revokeRefreshToken(refreshToken, 'dcr_other')).toBe('client');
    expect(await grants.alive(id)).toBe(true);
    const revokedGrant = await grants.revokeRefreshToken(refreshToken, 'dcr_client');
    expect(typeof revokedGrant === 'object' && revokedGrant.id).toBe(id);
    expect(await grants.alive(id)).toBe(false);
  });
});
