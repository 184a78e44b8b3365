// The token exchanger against a scripted token endpoint (oauth4webapi's customFetch; no sockets):
// what each refusal of the IdP becomes however it is spelled (an OAuth error body, a
// WWW-Authenticate challenge, no OAuth error at all), and what the end of a user's IdP session
// (invalid_grant) drops: their exchanged tokens for every upstream, here and in a shared store.
import { describe, expect, it } from 'vitest';
import type { TokenExchangeConfig } from '../../src/config/token-exchange-schema.js';
import { openCredentialStore, type CredentialStore } from '../../src/credentials/store.js';
import { TokenExchangeError, TokenExchanger } from '../../src/credentials/token-exchange.js';
import { createLogger } from '../../src/util/log.js';

const TOKEN_URL = 'https://login.example.com/token';
const KEY = 'token-exchange-refusals-unit-key-of-forty-chars';
const configOf = (audience: string): TokenExchangeConfig => ({ audience, scopes: [], tokenUrl: TOKEN_URL, client: 'login', variant: 'rfc8693', subjectTokenType: 'urn:ietf:params:oauth:token-type:access_token' });

interface Harness {
  exchanger: TokenExchanger;
  logs: string[];
  outcomes: Array<{ outcome: string; error?: string }>;
}

/** `answer` is given the request's form; `store` is shared between harnesses as between replicas. */
function harness(answer: (form: URLSearchParams) => Response, clock = { now: 1_000_000 }, store?: CredentialStore): Harness {
  const logs: string[] = [];
  const outcomes: Harness['outcomes'] = [];
  const exchanger = new TokenExchanger({
    issuer: 'https://login.example.com',
    login: { clientId: 'switchyard', clientSecret: 'login-secret' },
    config: (upstream) => configOf(`api://${upstream}`),
    subjects: { subjectToken: async (principal) => `subject-of-${principal}`, ended: async () => {} },
    logger: createLogger({ level: 'debug', write: (line) => logs.push(line) }),
    onExchange: ({ outcome, error }) => void outcomes.push({ outcome, ...(error ? { error } : {}) }),
    now: () => clock.now,
    ...(store ? { store: async () => store } : {}),
    fetch: (async (_url: string, init: { body: URLSearchParams }) => answer(new URLSearchParams(init.body))) as unknown as typeof fetch,
  });
  return { exchanger, logs, outcomes };
}

const granted = (token: string): Response => Response.json({ access_token: token, token_type: 'Bearer', expires_in: 600, issued_token_type: 'urn:ietf:params:oauth:token-type:access_token' });

async function failure(promise: Promise<unknown>): Promise<TokenExchangeError> {
  const err = await promise.then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(TokenExchangeError);
  return err as TokenExchangeError;
}

describe('a refusal of the IdP', () => {
  it('invalid_client as a 401 with WWW-Authenticate (RFC 6749 §5.2) is a configuration error, logged once, with its reason', async () => {
    const challenge = (): Response =>
      new Response('', { status: 401, headers: { 'www-authenticate': 'Basic realm="login", error="invalid_client", error_description="client authentication failed"' } });
    const { exchanger, logs, outcomes } = harness(challenge);
    for (let i = 0; i < 2; i++) {
      const err = await failure(exchanger.token('alice', 'wiki'));
      expect(err).toMatchObject({ kind: 'config', reason: 'invalid_client' });
      expect(err.publicMessage).toBe("the gateway's token exchange for wiki is misconfigured (the IdP answered invalid_client; the gateway's log says more)");
      expect(exchanger.credential('alice', 'wiki').unavailable(new Error('wrapped', { cause: err }))).toBe(false);
    }
    const errors = logs.filter((line) => line.includes('token exchange misconfigured'));
    expect(errors).toHaveLength(1);
    expect(JSON.parse(errors[0]!)).toMatchObject({ level: 'error', upstream: 'wiki', error: 'invalid_client', description: 'client authentication failed', status: 401 });
    expect(logs.filter((line) => line.includes('unavailable'))).toEqual([]);
    expect(outcomes).toEqual([{ outcome: 'config', error: 'invalid_client' }, { outcome: 'config', error: 'invalid_client' }]);
  });

  it('any other 4xx, with no OAuth error in it, is a configuration error too; a 5xx stays unavailable', async () => {
    const cases: Array<[Response, string, string]> = [
      [new Response('<html>Not Found</html>', { status: 404, headers: { 'content-type': 'text/html' } }), 'HTTP 404', 'http_404'],
      [Response.json({ message: 'no' }, { status: 400 }), 'HTTP 400', 'http_400'],
      [new Response('', { status: 401, headers: { 'www-authenticate': 'Basic realm="login"' } }), 'HTTP 401', 'http_401'],
      [Response.json({ error: 'unauthorized_client' }, { status: 403, headers: { 'www-authenticate': 'Bearer realm="login"' } }), 'HTTP 403', 'http_403'],
    ];
    for (const [response, said, reason] of cases) {
      const { exchanger } = harness(() => response);
      const err = await failure(exchanger.token('alice', 'wiki'));
      expect(err).toMatchObject({ kind: 'config', reason });
      expect(err.publicMessage).toBe(`the gateway's token exchange for wiki is misconfigured (the IdP answered ${said}; the gateway's log says more)`);
    }
    const { exchanger } = harness(() => new Response('<html>Bad Gateway</html>', { status: 502, headers: { 'content-type': 'text/html' } }));
    expect(await failure(exchanger.token('alice', 'wiki'))).toMatchObject({ kind: 'unavailable', publicMessage: 'the identity provider could not issue a token for wiki (the IdP answered HTTP 502)' });
  });
});

describe("the end of a user's IdP session", () => {
  it("drops the user's exchanged tokens for every upstream, here and in the shared store; others keep theirs; a new sign-in is served", async () => {
    const clock = { now: 1_000_000 };
    const store = await openCredentialStore('memory', [KEY], undefined, { now: () => clock.now });
    const revoked = new Set<string>();
    let issued = 0;
    const answer = (form: URLSearchParams): Response =>
      revoked.has(form.get('subject_token')!) ? Response.json({ error: 'invalid_grant' }, { status: 400 }) : granted(`${form.get('subject_token')}@${form.get('audience')}#${++issued}`);
    // Two replicas sharing the store.
    const here = harness(answer, clock, store);
    const there = harness(answer, clock, store);
    try {
      const before = await here.exchanger.token('alice', 'intranet');
      expect(await here.exchanger.token('alice', 'wiki')).toBe('subject-of-alice@api://wiki#2');
      const bobs = await here.exchanger.token('bob', 'intranet');
      // Only the other replica served her notes.
      await there.exchanger.token('alice', 'notes');
      expect(await store.count('exchange:intranet:')).toBe(2);
      revoked.add('subject-of-alice');
      clock.now += 1;
      // The wiki refused its token (401): its next exchange meets invalid_grant.
      here.exchanger.forget('alice', 'wiki');
      expect((await failure(here.exchanger.token('alice', 'wiki'))).kind).toBe('sign_in');
      // The intranet's token is not used again, on this replica or, from the store, on another.
      expect((await failure(here.exchanger.token('alice', 'intranet'))).kind).toBe('sign_in');
      expect(await store.count('exchange:intranet:')).toBe(1);
      // The store's copy of a token this replica never held is not taken here either.
      expect(await store.count('exchange:notes:')).toBe(1);
      expect((await failure(here.exchanger.token('alice', 'notes'))).kind).toBe('sign_in');
      expect((await failure(there.exchanger.token('alice', 'intranet'))).kind).toBe('sign_in');
      // Bob's session did not end.
      expect(await here.exchanger.token('bob', 'intranet')).toBe(bobs);
      // Alice signs in again: served anew, on both.
      revoked.delete('subject-of-alice');
      clock.now += 1;
      const after = await here.exchanger.token('alice', 'intranet');
      expect(after).not.toBe(before);
      expect(await there.exchanger.token('alice', 'intranet')).toBe(after);
    } finally {
      await store.close();
    }
  });
});
