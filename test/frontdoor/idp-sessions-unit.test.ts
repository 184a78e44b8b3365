// The front door's IdP sessions as token exchange's subjects, on a real (memory) credential store
// and a fake IdP login: one refresh per grant for concurrent callers, the access token used until
// shortly before it ends, the rotated IdP refresh token kept sealed with the grant (and read by
// another replica), a refusal or an ended session revokes the grants, an outage is "unavailable".
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LoginRefused } from '../../src/credentials/login.js';
import { openCredentialStore, type CredentialStore } from '../../src/credentials/store.js';
import { TokenExchangeError } from '../../src/credentials/token-exchange.js';
import { Grants, type CodeRecord, type Grant } from '../../src/frontdoor/grants.js';
import { IdpSessions } from '../../src/frontdoor/idp-sessions.js';
import { silentLogger } from '../../src/util/log.js';

const KEY = 'idp-sessions-unit-test-credentials-key-of-forty';
const ALICE = 'https://idp.example|alice';
const BOB = 'https://idp.example|bob';

function record(principal: string, idpRefresh: string): CodeRecord {
  const subject = principal.split('|')[1]!;
  return { clientId: 'dcr_client', redirectUri: 'http://127.0.0.1/cb', challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', resource: 'https://mcp.example/mcp', scope: '', identity: { principal, subject, claims: {} }, idpRefresh };
}

/** A fake IdP login: each refresh answers the next access and refresh tokens, once `release` is called when `hold` is set. */
class FakeLogin {
  readonly spent: string[] = [];
  answer: 'ok' | 'refused' | 'down' = 'ok';
  hold: Promise<void> | undefined;

  async refreshSession(refreshToken: string): Promise<{ accessToken: string; expiresIn: number | undefined; refreshToken: string | undefined }> {
    this.spent.push(refreshToken);
    await this.hold;
    if (this.answer === 'refused') throw new LoginRefused('the IdP refused the refresh (invalid_grant)');
    if (this.answer === 'down') throw new TypeError('fetch failed', { cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }) });
    const n = this.spent.length;
    return { accessToken: `idp-access-${n}`, expiresIn: 600, refreshToken: `idp-refresh-${n + 1}` };
  }
}

let clock: { now: number };
let store: CredentialStore;
let grants: Grants;
let revoked: string[];
let login: FakeLogin;

beforeEach(async () => {
  clock = { now: 1_000_000 };
  store = await openCredentialStore('memory', [KEY]);
  revoked = [];
  grants = new Grants({ store, refreshTtlMs: 30 * 24 * 3_600_000, onRevoked: async (id) => void revoked.push(id) });
  login = new FakeLogin();
});

afterEach(async () => {
  await store.close();
});

function sessions(): IdpSessions {
  return new IdpSessions({ grants, login, logger: silentLogger, now: () => clock.now });
}

async function grantOf(principal: string, idpRefresh = 'idp-refresh-1'): Promise<Grant> {
  const code = await grants.issueCode(record(principal, idpRefresh));
  const redeemed = await grants.redeemCode(code);
  const created = typeof redeemed === 'object' ? await grants.createGrant(code, redeemed) : redeemed;
  if (typeof created !== 'object') throw new Error(`expected a grant, got ${created}`);
  return created.grant;
}

describe('IdpSessions (the front door subjects of token exchange)', () => {
  it('refreshes once for concurrent callers, uses the token until shortly before it ends, and keeps the rotated IdP refresh token', async () => {
    const grant = await grantOf(ALICE);
    const subjects = sessions();
    subjects.seen(ALICE, grant.id);
    let release!: () => void;
    login.hold = new Promise((resolve) => (release = resolve));
    const pending = Promise.all([subjects.idpAccessToken(ALICE), subjects.idpAccessToken(ALICE), subjects.idpAccessToken(ALICE)]);
    release();
    expect(await pending).toEqual(['idp-access-1', 'idp-access-1', 'idp-access-1']);
    expect(login.spent).toEqual(['idp-refresh-1']);
    // 600 s tokens are renewed 60 s before their end.
    clock.now += 539_000;
    expect(await subjects.idpAccessToken(ALICE)).toBe('idp-access-1');
    clock.now += 2_000;
    expect(await subjects.idpAccessToken(ALICE)).toBe('idp-access-2');
    expect(login.spent).toEqual(['idp-refresh-1', 'idp-refresh-2']);
    // Another replica takes the token kept with the grant, without spending the refresh token again.
    const replica = sessions();
    replica.seen(ALICE, grant.id);
    expect(await replica.idpAccessToken(ALICE)).toBe('idp-access-2');
    expect(login.spent).toHaveLength(2);
    const kept = (await store.get(`frontdoor:grant:${grant.id}`)) as Grant;
    expect(kept).toMatchObject({ idpRefresh: 'idp-refresh-3', current: grant.current });
    // Revoked elsewhere (RFC 7009, a reused refresh token): its kept token is offered no more.
    await grants.revoke(grant.id);
    expect(await subjects.idpAccessToken(ALICE)).toBeUndefined();
    expect(login.spent).toHaveLength(2);
  });

  it('offers nothing for a principal without a grant, or for a grant that is not theirs', async () => {
    const grant = await grantOf(ALICE);
    const subjects = sessions();
    expect(await subjects.idpAccessToken(ALICE)).toBeUndefined();
    subjects.seen(BOB, grant.id);
    expect(await subjects.idpAccessToken(BOB)).toBeUndefined();
    expect(login.spent).toEqual([]);
    expect(revoked).toEqual([]);
  });

  it('the IdP refusing the refresh revokes that grant; an ended session revokes every grant of the principal seen here', async () => {
    const alices = await grantOf(ALICE);
    const subjects = sessions();
    subjects.seen(ALICE, alices.id);
    login.answer = 'refused';
    expect(await subjects.idpAccessToken(ALICE)).toBeUndefined();
    expect(revoked).toEqual([alices.id]);
    expect(await grants.alive(alices.id)).toBe(false);

    login.answer = 'ok';
    const [first, second] = [await grantOf(BOB), await grantOf(BOB)];
    subjects.seen(BOB, first.id);
    subjects.seen(BOB, second.id);
    expect(await subjects.idpAccessToken(BOB)).toMatch(/^idp-access-/);
    await subjects.endGrants(BOB);
    expect(revoked).toEqual([alices.id, second.id, first.id]);
    expect(await subjects.idpAccessToken(BOB)).toBeUndefined();
  });

  it('an IdP that cannot be reached makes the exchange "unavailable" and keeps the grant', async () => {
    const grant = await grantOf(ALICE);
    const subjects = sessions();
    subjects.seen(ALICE, grant.id);
    login.answer = 'down';
    const failure = await subjects.idpAccessToken(ALICE).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(failure).toBeInstanceOf(TokenExchangeError);
    expect(failure).toMatchObject({ kind: 'unavailable', message: 'the identity provider could not renew your sign-in (unreachable (ECONNREFUSED))' });
    expect(await grants.alive(grant.id)).toBe(true);
  });
});
