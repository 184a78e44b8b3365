// A user's OAuth credential refreshed against a real token endpoint whose answer the test holds
// back: sign-out and sign-in wait for a refresh in flight and are never undone by it; a refresh
// that outlived its lock keeps its result only for the credential it renewed (else drops and
// revokes it); and an answer without expires_in gives a token used until refused, not one
// refreshed again on every request.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Sealer } from '../../src/credentials/sealed.js';
import { MemoryCredentialStore } from '../../src/credentials/store.js';
import { ConsentRequiredError, UserCredentials, type CredentialChange, type StoredCredential } from '../../src/credentials/user-credentials.js';
import { silentLogger } from '../../src/util/log.js';

const KEY = 'user-credentials-refresh-test-key-of-forty-chars';
const HOUR_MS = 3_600_000;

/** The memory store, telling the test when a call reaches it; `lapsed` makes every lock one that already expired. */
class WatchedStore extends MemoryCredentialStore {
  lapsed = false;
  #waiting: Array<{ test: (call: string, key: string) => boolean; resolve: () => void }> = [];

  /** Resolves at the next call that `test` accepts (`lock`, `set` or `delete`, with its key). */
  reached(test: (call: string, key: string) => boolean): Promise<void> {
    return new Promise((resolve) => this.#waiting.push({ test, resolve }));
  }

  override async set(key: string, value: unknown, ttlMs?: number): Promise<void> {
    this.#saw('set', key);
    return super.set(key, value, ttlMs);
  }

  override async delete(key: string): Promise<boolean> {
    this.#saw('delete', key);
    return super.delete(key);
  }

  override async withLock<T>(key: string, ttlMs: number, fn: () => Promise<T>, waitMs?: number): Promise<T> {
    this.#saw('lock', key);
    return this.lapsed ? fn() : super.withLock(key, ttlMs, fn, waitMs);
  }

  #saw(call: string, key: string): void {
    const matched = this.#waiting.filter((waiter) => waiter.test(call, key));
    this.#waiting = this.#waiting.filter((waiter) => !matched.includes(waiter));
    for (const waiter of matched) waiter.resolve();
  }
}

/** The upstream and its authorization server in one: a 401 with resource_metadata, RFC 8414 metadata, a token endpoint the test can hold, RFC 7009 revocation. */
interface TokenServer {
  url: string;
  issuer: string;
  refreshes: number;
  revoked: string[];
  /** What a refresh answers besides the tokens (e.g. expires_in, scope). */
  extra: Record<string, unknown>;
  /** Holds the next token answer: `arrived` when the request is in, sent at `release()`. */
  hold(): { arrived: Promise<void>; release(): void };
  close(): Promise<void>;
}

async function startTokenServer(): Promise<TokenServer> {
  let held: { arrived: () => void; released: Promise<void> } | undefined;
  const state: TokenServer = {
    url: '',
    issuer: '',
    refreshes: 0,
    revoked: [],
    extra: {},
    hold() {
      let arrived: () => void = () => {};
      let release: () => void = () => {};
      const arrival = new Promise<void>((resolve) => (arrived = resolve));
      held = { arrived, released: new Promise<void>((resolve) => (release = resolve)) };
      return { arrived: arrival, release };
    },
    close: () => {
      // A held answer a failed test left behind must not keep the server open.
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const server: Server = createServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    const json = (value: unknown, status = 200, headers: Record<string, string> = {}): void => {
      res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(value));
    };
    const base = state.issuer;
    switch (req.url) {
      case '/mcp':
        return json({}, 401, { 'www-authenticate': `Bearer resource_metadata="${base}/prm"` });
      case '/prm':
        return json({ resource: `${base}/mcp`, authorization_servers: [base] });
      case '/.well-known/oauth-authorization-server':
        return json({ issuer: base, authorization_endpoint: `${base}/authorize`, token_endpoint: `${base}/token`, revocation_endpoint: `${base}/revoke`, code_challenge_methods_supported: ['S256'] });
      case '/token': {
        const n = ++state.refreshes;
        const holding = held;
        held = undefined;
        if (holding) {
          holding.arrived();
          await holding.released;
        }
        return json({ access_token: `A${n}`, token_type: 'Bearer', refresh_token: `R${n}`, ...state.extra });
      }
      case '/revoke':
        state.revoked.push(new URLSearchParams(body).get('token') ?? '');
        return void res.writeHead(200).end();
      default:
        return void res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.url = `${state.issuer}/mcp`;
  return state;
}

let server: TokenServer;
let store: WatchedStore;
let credentials: UserCredentials;
let changes: CredentialChange[];

beforeEach(async () => {
  server = await startTokenServer();
  store = new WatchedStore(new Sealer([KEY]));
  changes = [];
  credentials = new UserCredentials({
    store,
    upstreams: () => new Map([['tickets', { url: server.url, userAuth: { type: 'oauth' as const, clientId: 'switchyard' } }]]),
    logger: silentLogger,
    redirectUri: () => 'http://127.0.0.1:1/connect/callback',
  });
  credentials.onChange((change) => changes.push(change));
});

afterEach(async () => {
  try {
    credentials.close();
    await store.close();
  } finally {
    await server.close();
  }
});

/** alice's credential, its access token expired a second ago (the next request refreshes it). */
function expired(): StoredCredential {
  const now = Date.now();
  return { kind: 'oauth', issuer: server.issuer, obtainedAt: now - HOUR_MS, accessToken: 'A0', tokenType: 'Bearer', refreshToken: 'R0', expiresAt: now - 1_000, scope: 'old' };
}

const credentialKey = (key: string): boolean => key.startsWith('refresh:cred:tickets:') || key.startsWith('cred:tickets:');

describe('a refresh answer', () => {
  it('without expires_in gives a token used until the upstream refuses it: one refresh for many requests', async () => {
    await credentials.save('alice', 'tickets', expired());
    for (let i = 0; i < 3; i++) expect(await credentials.headerValue('alice', 'tickets', false)).toBe('Bearer A1');
    expect(server.refreshes).toBe(1);
    const stored = await credentials.get('alice', 'tickets');
    expect(stored).toMatchObject({ accessToken: 'A1', refreshToken: 'R1' });
    expect(stored).not.toHaveProperty('expiresAt');
    expect(stored).not.toHaveProperty('scope');
  });

  it('with expires_in and scope: the new token expires when the answer says, with its scope', async () => {
    server.extra = { expires_in: 3_600, scope: 'tickets.read' };
    await credentials.save('alice', 'tickets', expired());
    const before = Date.now();
    expect(await credentials.headerValue('alice', 'tickets', false)).toBe('Bearer A1');
    const stored = (await credentials.get('alice', 'tickets')) as Extract<StoredCredential, { kind: 'oauth' }>;
    expect(stored.scope).toBe('tickets.read');
    expect(stored.expiresAt).toBeGreaterThanOrEqual(before + HOUR_MS - 1_000);
    expect(await credentials.headerValue('alice', 'tickets', false)).toBe('Bearer A1');
    expect(server.refreshes).toBe(1);
  });
});

describe('a refresh in flight', () => {
  it('does not undo a sign-out: the principal stays signed out and the tokens the refresh got are revoked', async () => {
    await credentials.save('alice', 'tickets', expired());
    const answer = server.hold();
    const request = credentials.headerValue('alice', 'tickets', false);
    await answer.arrived;
    const signOutReachedStore = store.reached((call, key) => (call === 'lock' || call === 'delete') && credentialKey(key));
    const signingOut = credentials.signOut('alice', 'tickets');
    await signOutReachedStore;
    answer.release();
    expect(await request).toBe('Bearer A1');
    expect(await signingOut).toBe(true);
    expect(await credentials.has('alice', 'tickets')).toBe(false);
    expect(server.revoked).toEqual(['R1', 'A1']);
    expect(changes.at(-1)).toEqual({ principal: 'alice', upstream: 'tickets', signedIn: false });
  });

  it('does not overwrite a new sign-in: the credential signed in is the one kept', async () => {
    await credentials.save('alice', 'tickets', expired());
    const answer = server.hold();
    const request = credentials.headerValue('alice', 'tickets', false);
    await answer.arrived;
    const signInReachedStore = store.reached((call, key) => (call === 'lock' || call === 'set') && credentialKey(key));
    const fresh: StoredCredential = { kind: 'oauth', issuer: server.issuer, obtainedAt: Date.now(), accessToken: 'NEW', tokenType: 'Bearer', refreshToken: 'NEW-R', expiresAt: Date.now() + HOUR_MS };
    const signingIn = credentials.save('alice', 'tickets', fresh);
    await signInReachedStore;
    answer.release();
    await Promise.all([request, signingIn]);
    expect(await credentials.get('alice', 'tickets')).toMatchObject({ accessToken: 'NEW', refreshToken: 'NEW-R' });
    expect(await credentials.headerValue('alice', 'tickets', false)).toBe('Bearer NEW');
  });

  it('that outlived its lock keeps nothing for a credential signed out meanwhile: what it got is revoked, and the request asks for a sign-in', async () => {
    await credentials.save('alice', 'tickets', expired());
    store.lapsed = true;
    const answer = server.hold();
    const request = credentials.headerValue('alice', 'tickets', false);
    await answer.arrived;
    expect(await credentials.signOut('alice', 'tickets')).toBe(true);
    expect(server.revoked).toEqual(['R0', 'A0']);
    answer.release();
    await expect(request).rejects.toBeInstanceOf(ConsentRequiredError);
    expect(await credentials.has('alice', 'tickets')).toBe(false);
    expect(server.revoked).toEqual(['R0', 'A0', 'R1', 'A1']);
  });

  it('that outlived its lock leaves a sign-in made meanwhile, and the request gets that sign-in\'s token', async () => {
    await credentials.save('alice', 'tickets', expired());
    store.lapsed = true;
    const answer = server.hold();
    const request = credentials.headerValue('alice', 'tickets', false);
    await answer.arrived;
    await credentials.save('alice', 'tickets', { kind: 'oauth', issuer: server.issuer, obtainedAt: Date.now(), accessToken: 'NEW', tokenType: 'Bearer', refreshToken: 'NEW-R' });
    answer.release();
    expect(await request).toBe('Bearer NEW');
    expect(await credentials.get('alice', 'tickets')).toMatchObject({ accessToken: 'NEW', refreshToken: 'NEW-R' });
    expect(server.revoked).toEqual(['R1', 'A1']);
  });
});
