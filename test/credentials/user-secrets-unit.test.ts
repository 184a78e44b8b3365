// A pasted secret (userAuth: secret) from the connect form to the header a request carries: sent
// exactly as pasted ($ and all), refused with the form again when a request header cannot carry
// it (control characters, or characters outside Latin-1 once in the header's format), and a
// stored one no request can carry is dropped so the user can sign in anew.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConnectFlows, FLOW_COOKIE } from '../../src/credentials/connect-flow.js';
import { Sealer } from '../../src/credentials/sealed.js';
import { MemoryCredentialStore } from '../../src/credentials/store.js';
import { ConsentRequiredError, principalKey, UnusableSecretError, UserCredentials, type CredentialChange } from '../../src/credentials/user-credentials.js';
import { silentLogger } from '../../src/util/log.js';

const KEY = 'user-secrets-unit-test-credentials-key-0123';

let store: MemoryCredentialStore;
let credentials: UserCredentials;
let flows: ConnectFlows;
let changes: CredentialChange[];

beforeEach(() => {
  const sealer = new Sealer([KEY]);
  store = new MemoryCredentialStore(sealer);
  changes = [];
  credentials = new UserCredentials({
    store,
    upstreams: () => new Map([['search', { url: 'http://search.invalid/mcp', userAuth: { type: 'secret' as const, header: 'Authorization', format: 'Token {secret}' } }]]),
    logger: silentLogger,
    redirectUri: () => 'http://127.0.0.1:1/connect/callback',
  });
  credentials.onChange((change) => changes.push(change));
  flows = new ConnectFlows({ store, sealer, credentials, login: undefined, base: () => 'http://127.0.0.1:1', ttlMs: 600_000, logger: silentLogger });
});

afterEach(async () => {
  credentials.close();
  await store.close();
});

/** Opens a connect URL for `local` on loopback: the secret form's browser cookies and anti-forgery token. */
async function secretForm(): Promise<{ cookies: Record<string, string>; csrf: string }> {
  const link = flows.link('local', 'search');
  link.abandon();
  const step = await flows.open(link.url.slice(link.url.lastIndexOf('/') + 1), { cookies: {}, loopback: true });
  const flowId = /^switchyard_connect=([^;]+)/.exec(step.cookies?.[0] ?? '')![1]!;
  const csrf = /name="csrf" value="([^"]+)"/.exec('html' in step ? step.html : '')![1]!;
  return { cookies: { [FLOW_COOKIE]: flowId }, csrf };
}

async function paste(form: { cookies: Record<string, string>; csrf: string }, secret: string): Promise<{ status: number; html: string }> {
  const step = await flows.secret(new URLSearchParams({ csrf: form.csrf, secret }), { cookies: form.cookies, loopback: true });
  if (!('html' in step)) throw new Error('the secret form answered with a redirect');
  return step;
}

describe('a pasted secret', () => {
  it('is sent exactly as pasted: $ in it is no replacement pattern', async () => {
    for (const secret of ['pa$$w0rd$&x', "a$'b$`c$1$<d>", '$']) {
      const answer = await paste(await secretForm(), secret);
      expect(answer.status).toBe(200);
      expect(await credentials.headerValue('local', 'search', false)).toBe(`Token ${secret}`);
    }
  });

  it('with a control character is refused with the form again, nothing stored, and the same form then takes a good one', async () => {
    const form = await secretForm();
    for (const secret of ['abc\x00def', 'abc\x08def', 'abc\x0bdef', 'abc\x1bdef', 'abc\x7fdef', 'abc\ndef', 'abc\rdef']) {
      const answer = await paste(form, secret);
      expect(answer.status, JSON.stringify(secret)).toBe(400);
      expect(answer.html).toContain('control character');
      expect(answer.html).toContain('name="secret"');
    }
    expect(await credentials.has('local', 'search')).toBe(false);
    expect(changes).toEqual([]);
    expect((await paste(form, 'abc\tdef')).status).toBe(200);
    expect(await credentials.headerValue('local', 'search', false)).toBe('Token abc\tdef');
  });

  it('that a header cannot carry once in its format (outside Latin-1) is refused with the form again', async () => {
    const form = await secretForm();
    const answer = await paste(form, 'price-in-€');
    expect(answer.status).toBe(400);
    expect(answer.html).toContain('a request header cannot carry');
    expect(answer.html).toContain('name="secret"');
    expect(await credentials.has('local', 'search')).toBe(false);
    expect((await paste(form, 'café')).status).toBe(200);
  });
});

describe('a secret credential', () => {
  it('is never saved when its header value cannot be sent', async () => {
    await expect(credentials.save('local', 'search', { kind: 'secret', secret: 'a\u0000b', obtainedAt: 1 })).rejects.toBeInstanceOf(UnusableSecretError);
    expect(await credentials.has('local', 'search')).toBe(false);
    expect(changes).toEqual([]);
  });

  it('stored before it was checked, and no request can carry it: dropped, and the user asked to sign in anew', async () => {
    await store.set(`cred:search:${principalKey('local')}`, { kind: 'secret', secret: 'a\u0001b', obtainedAt: 1 });
    await expect(credentials.headerValue('local', 'search', false)).rejects.toBeInstanceOf(ConsentRequiredError);
    expect(await credentials.has('local', 'search')).toBe(false);
    expect(changes).toEqual([{ principal: 'local', upstream: 'search', signedIn: false }]);
  });
});
