// The token exchanger against a scripted token endpoint (oauth4webapi's customFetch; no sockets):
// the form each variant sends, caching and renewal, single flight, and what each failure of the
// IdP becomes.
import { describe, expect, it } from 'vitest';
import type { TokenExchangeConfig } from '../../src/config/token-exchange-schema.js';
import { TokenExchangeError, TokenExchanger, type SubjectTokens } from '../../src/credentials/token-exchange.js';
import { createLogger } from '../../src/util/log.js';

const TOKEN_URL = 'https://login.example.com/token';
const RFC8693: TokenExchangeConfig = { audience: 'api://wiki', resource: 'https://wiki.internal/mcp', scopes: ['wiki.read'], tokenUrl: TOKEN_URL, client: 'login', variant: 'rfc8693', subjectTokenType: 'urn:ietf:params:oauth:token-type:access_token' };
const OBO: TokenExchangeConfig = { audience: 'api://wiki', scopes: ['ignored'], tokenUrl: TOKEN_URL, client: { clientId: 'obo', clientSecret: 'obo-secret' }, variant: 'entra-obo', subjectTokenType: 'urn:ietf:params:oauth:token-type:access_token' };

interface Seen {
  headers: Headers;
  form: URLSearchParams;
}

function harness(initial: TokenExchangeConfig, answer: (call: number) => Response) {
  let config = initial;
  const seen: Seen[] = [];
  const logs: string[] = [];
  const ended: string[] = [];
  const clock = { now: 1_000_000 };
  const subjects: SubjectTokens = {
    subjectToken: async (principal) => (principal === 'nobody' ? undefined : `subject-of-${principal}`),
    ended: async (principal) => void ended.push(principal),
  };
  const exchanger = new TokenExchanger({
    issuer: 'https://login.example.com',
    login: { clientId: 'switchyard', clientSecret: 'login-secret' },
    config: () => config,
    subjects,
    logger: createLogger({ level: 'debug', write: (line) => logs.push(line) }),
    now: () => clock.now,
    fetch: (async (_url: string, init: { headers: Headers; body: URLSearchParams }) => {
      seen.push({ headers: new Headers(init.headers), form: new URLSearchParams(init.body) });
      return answer(seen.length);
    }) as unknown as typeof fetch,
  });
  return { exchanger, seen, logs, ended, clock, configure: (next: TokenExchangeConfig) => void (config = next) };
}

const granted = (token: string, expiresIn = 100): Response => Response.json({ access_token: token, token_type: 'Bearer', expires_in: expiresIn, issued_token_type: 'urn:ietf:params:oauth:token-type:access_token' });
const refused = (error: string, status = 400): Response => Response.json({ error, error_description: `refused with ${error}` }, { status });

async function failure(promise: Promise<unknown>): Promise<TokenExchangeError> {
  const err = await promise.then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(TokenExchangeError);
  return err as TokenExchangeError;
}

describe('TokenExchanger', () => {
  it('rfc8693: the subject, its type, audience, resource and scope, with the login client by HTTP Basic', async () => {
    const { exchanger, seen } = harness(RFC8693, () => granted('exchanged-1'));
    expect(await exchanger.token('alice', 'wiki')).toBe('exchanged-1');
    const { form, headers } = seen[0]!;
    expect(Object.fromEntries(form)).toEqual({
      grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
      subject_token: 'subject-of-alice',
      subject_token_type: 'urn:ietf:params:oauth:token-type:access_token',
      requested_token_type: 'urn:ietf:params:oauth:token-type:access_token',
      audience: 'api://wiki',
      resource: 'https://wiki.internal/mcp',
      scope: 'wiki.read',
    });
    // RFC 6749 §2.3.1: id and secret form-urlencoded, then Basic.
    const basic = Buffer.from(headers.get('authorization')!.replace(/^Basic /, ''), 'base64').toString();
    expect(basic.split(':').map(decodeURIComponent)).toEqual(['switchyard', 'login-secret']);
  });

  it('entra-obo: exactly jwt-bearer, the assertion, on_behalf_of, <audience>/.default and the client in the form', async () => {
    const { exchanger, seen } = harness(OBO, () => granted('exchanged-obo'));
    expect(await exchanger.token('alice', 'wiki')).toBe('exchanged-obo');
    expect(Object.fromEntries(seen[0]!.form)).toEqual({
      grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer',
      assertion: 'subject-of-alice',
      requested_token_use: 'on_behalf_of',
      scope: 'api://wiki/.default',
      client_id: 'obo',
      client_secret: 'obo-secret',
    });
    expect(seen[0]!.headers.get('authorization')).toBeNull();
  });

  it('keeps a token until 80 % of its life, shares one exchange between concurrent callers, and forgets on invalidate', async () => {
    const { exchanger, seen, clock } = harness(RFC8693, (n) => granted(`exchanged-${n}`, 100));
    const tokens = await Promise.all(Array.from({ length: 5 }, () => exchanger.token('alice', 'wiki')));
    expect(new Set(tokens)).toEqual(new Set(['exchanged-1']));
    clock.now += 79_000;
    expect(await exchanger.token('alice', 'wiki')).toBe('exchanged-1');
    clock.now += 2_000;
    expect(await exchanger.token('alice', 'wiki')).toBe('exchanged-2');
    exchanger.credential('alice', 'wiki').invalidate();
    expect(await exchanger.credential('alice', 'wiki').authorization()).toBe('Bearer exchanged-3');
    expect(await exchanger.token('bob', 'wiki')).toBe('exchanged-4');
    expect(seen).toHaveLength(4);
  });

  it('a reload that changes what the token is for exchanges anew; a new client secret alone does not', async () => {
    const { exchanger, seen, configure } = harness(RFC8693, (n) => granted(`exchanged-${n}`));
    expect(await exchanger.token('alice', 'wiki')).toBe('exchanged-1');
    configure({ ...RFC8693, client: { clientId: 'switchyard', clientSecret: 'rotated' } });
    expect(await exchanger.token('alice', 'wiki')).toBe('exchanged-1');
    configure({ ...RFC8693, scopes: ['wiki.read', 'wiki.write'] });
    expect(await exchanger.token('alice', 'wiki')).toBe('exchanged-2');
    expect(seen[1]!.form.get('scope')).toBe('wiki.read wiki.write');
  });

  it('an IdP answering 5xx is unavailable (the circuit counts it); nothing is cached', async () => {
    const { exchanger, seen } = harness(RFC8693, (n) => (n === 1 ? new Response('busy', { status: 503 }) : granted('exchanged-2')));
    const err = await failure(exchanger.token('alice', 'wiki'));
    expect(err.kind).toBe('unavailable');
    expect(err.publicMessage).toBe('the identity provider could not issue a token for wiki (the IdP answered HTTP 503)');
    expect(exchanger.credential('alice', 'wiki').unavailable(new Error('wrapped', { cause: err }))).toBe(true);
    expect(await exchanger.token('alice', 'wiki')).toBe('exchanged-2');
    expect(seen).toHaveLength(2);
  });

  it('invalid_grant asks the user to sign in again and ends what keeps their IdP session', async () => {
    const { exchanger, ended } = harness(RFC8693, () => refused('invalid_grant'));
    const err = await failure(exchanger.token('alice', 'wiki'));
    expect(err.kind).toBe('sign_in');
    expect(err.publicMessage).toBe('your sign-in at the identity provider has ended; sign in to Switchyard again to use wiki');
    expect(exchanger.credential('alice', 'wiki').unavailable(err)).toBe(false);
    expect(ended).toEqual(['alice']);
  });

  it('invalid_scope is a configuration error, logged once with the IdP\'s error; no token is logged', async () => {
    const { exchanger, logs } = harness(RFC8693, () => refused('invalid_scope'));
    for (let i = 0; i < 3; i++) expect((await failure(exchanger.token('alice', 'wiki'))).kind).toBe('config');
    const errors = logs.filter((line) => line.includes('token exchange misconfigured'));
    expect(errors).toHaveLength(1);
    expect(JSON.parse(errors[0]!)).toMatchObject({ level: 'error', upstream: 'wiki', error: 'invalid_scope', description: 'refused with invalid_scope' });
    expect(logs.join('\n')).not.toContain('subject-of-alice');
  });

  it('without a subject token, the user is asked to sign in again and the IdP is not asked', async () => {
    const { exchanger, seen } = harness(RFC8693, () => granted('never'));
    expect((await failure(exchanger.token('nobody', 'wiki'))).kind).toBe('sign_in');
    expect(seen).toHaveLength(0);
  });

  it('a subject that cannot be renewed (the front door could not reach the IdP) is unavailable, reported, and the IdP is not asked to exchange', async () => {
    const outcomes: string[] = [];
    let asked = 0;
    const exchanger = new TokenExchanger({
      issuer: 'https://login.example.com',
      login: { clientId: 'switchyard', clientSecret: 'login-secret' },
      config: () => RFC8693,
      subjects: { subjectToken: () => Promise.reject(new TokenExchangeError('unavailable', 'the identity provider could not renew your sign-in (no answer in time)')) },
      logger: createLogger({ level: 'silent', write: () => {} }),
      onExchange: ({ outcome }) => void outcomes.push(outcome),
      fetch: (async () => {
        asked++;
        return granted('never');
      }) as unknown as typeof fetch,
    });
    const err = await failure(exchanger.token('alice', 'wiki'));
    expect(err).toMatchObject({ kind: 'unavailable', message: 'the identity provider could not renew your sign-in (no answer in time)' });
    expect(exchanger.credential('alice', 'wiki').unavailable(new Error('wrapped', { cause: err }))).toBe(true);
    expect(outcomes).toEqual(['unavailable']);
    expect(asked).toBe(0);
  });
});
