// Where per-user credentials live: a file store keeps a sign-in across a restart and refuses a
// wrong key at start in one line; two replicas on one Redis store share a sign-in, and a session
// on the other replica hears list_changed.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { followSignIn, startBrowser, type TestBrowser } from '../helpers/browser.js';
import { startIdp, type TestIdp } from '../helpers/oidc.js';
import { startUserAuthUpstream, type UserAuthUpstream } from '../helpers/user-auth-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';

const KEY = 'a-third-example-credentials-key-forty-char';

let idp: TestIdp;
let upstream: UserAuthUpstream;
let browser: TestBrowser;
let dir: string;

beforeAll(async () => {
  const resources: Record<string, { scope: string }> = {};
  idp = await startIdp({ resources, clients: [{ client_id: 'paste-client', token_endpoint_auth_method: 'none', redirect_uris: ['http://127.0.0.1/none'], grant_types: ['authorization_code'] }] });
  upstream = await startUserAuthUpstream(idp.issuer);
  resources[upstream.url] = { scope: 'repo' };
  browser = await startBrowser();
  dir = await mkdtemp(join(tmpdir(), 'switchyard-cred-'));
}, 60_000);

afterAll(async () => {
  await Promise.allSettled([browser?.close(), upstream?.close(), idp?.close()]);
  await rm(dir, { recursive: true, force: true });
});

function configWith(store: unknown, key = KEY): Record<string, unknown> {
  return { upstreams: { github: { http: { url: upstream.url, userAuth: { type: 'oauth' } } } }, credentials: { key, store } };
}

async function connect(gateway: TestGateway): Promise<Client> {
  const client = new Client({ name: 'stores-test', version: '1' }, { capabilities: {} });
  await client.connect(new StreamableHTTPClientTransport(gateway.url));
  return client;
}

async function toolNames(client: Client): Promise<string[]> {
  return (await client.listTools()).tools.map((tool) => tool.name).sort();
}

/** Signs the local principal in through the sign_in tool's connect URL, in the browser. */
async function signIn(client: Client, user: string): Promise<void> {
  const result = await client.callTool({ name: 'github__sign_in', arguments: {} });
  const text = (result.content as Array<{ text?: string }>).map((part) => part.text ?? '').join('');
  const url = /(http:\/\/\S+\/connect\/\S+) in a browser/.exec(text)![1]!;
  const end = await followSignIn(await (await browser.context()).newPage(), url, user, { until: /Signed in to github/ });
  expect(end.text).toContain('Signed in to github.');
}

describe('credential stores', () => {
  it('a file store keeps the sign-in across a restart, sealed; a wrong key fails the start with one line', async () => {
    const path = join(dir, 'credentials.json');
    const first = await startGateway(configWith({ file: { path } }));
    try {
      const client = await connect(first);
      await signIn(client, 'carol');
      await client.close();
    } finally {
      await first.close();
    }
    const stored = await readFile(path, 'utf8');
    for (const token of (await upstream.headers()).map((headers) => headers.authorization ?? '').filter(Boolean)) expect(stored).not.toContain(token.slice(7));
    const second = await startGateway(configWith({ file: { path } }));
    try {
      const client = await connect(second);
      expect(await toolNames(client)).toEqual(['github__echo', 'github__sign_out', 'github__whoami']);
      expect((await client.callTool({ name: 'github__whoami', arguments: {} })).content).toEqual([{ type: 'text', text: 'carol' }]);
      await client.close();
    } finally {
      await second.close();
    }
    const wrong = startGateway(configWith({ file: { path } }, 'a-wrong-credentials-key-of-forty-characters'));
    const err = await wrong.then(
      async (gateway) => {
        await gateway.close();
        return undefined;
      },
      (e: unknown) => e as Error,
    );
    expect(err?.name).toBe('CredentialKeyError');
    expect(err!.message).not.toContain('\n');
    expect(err!.message).toContain('credentials.key');
  }, 60_000);

  it('a secret upstream: the user pastes their secret on the connect page, and it is sent as configured', async () => {
    const gateway = await startGateway({ upstreams: { tickets: { http: { url: upstream.url, userAuth: { type: 'secret', header: 'Authorization', format: 'Bearer {secret}' } } } }, credentials: { key: KEY } });
    try {
      const client = await connect(gateway);
      expect(await toolNames(client)).toEqual(['tickets__sign_in']);
      const text = ((await client.callTool({ name: 'tickets__sign_in', arguments: {} })).content as Array<{ text?: string }>)[0]!.text!;
      const url = /(http:\/\/\S+\/connect\/\S+) in a browser/.exec(text)![1]!;
      const secret = await idp.issueAccessToken({ sub: 'erin', clientId: 'paste-client', resource: upstream.url, scope: 'repo' });
      let changed!: () => void;
      const heard = new Promise<void>((resolve) => (changed = resolve));
      client.setNotificationHandler(ToolListChangedNotificationSchema, () => changed());
      const page = await (await browser.context()).newPage();
      await page.goto(url);
      await page.fill('#secret', secret);
      await Promise.all([page.waitForURL(/\/connect\/secret$/), page.click('#submit')]);
      expect(await page.textContent('#message')).toBe('Signed in to tickets. You may close this page and go back to the assistant.');
      await Promise.race([heard, new Promise((_, reject) => setTimeout(() => reject(new Error('no list_changed')), 10_000).unref())]);
      expect((await client.callTool({ name: 'tickets__whoami', arguments: {} })).content).toEqual([{ type: 'text', text: 'erin' }]);
      expect(gateway.logs.join('\n')).not.toContain(secret);
      await client.close();
    } finally {
      await gateway.close();
    }
  }, 60_000);

  describe('two replicas on one Redis store', () => {
    let redis: TestRedis;
    beforeAll(async () => {
      redis = await startRedis();
    });
    afterAll(async () => redis?.close());

    it('share a sign-in: a new session on the other replica lists the tools, an open one hears list_changed', async () => {
      const store = { redis: { url: redis.url, prefix: `${redis.prefix}cred:` } };
      const a = await startGateway(configWith(store));
      const b = await startGateway(configWith(store));
      try {
        const onB = await connect(b);
        expect(await toolNames(onB)).toEqual(['github__sign_in']);
        let changed!: () => void;
        const heard = new Promise<void>((resolve) => (changed = resolve));
        onB.setNotificationHandler(ToolListChangedNotificationSchema, () => changed());
        const onA = await connect(a);
        await signIn(onA, 'dave');
        await Promise.race([heard, new Promise((_, reject) => setTimeout(() => reject(new Error('no list_changed on replica b')), 10_000).unref())]);
        expect(await toolNames(onB)).toEqual(['github__echo', 'github__sign_out', 'github__whoami']);
        expect((await onB.callTool({ name: 'github__whoami', arguments: {} })).content).toEqual([{ type: 'text', text: 'dave' }]);
        const fresh = await connect(b);
        expect(await toolNames(fresh)).toContain('github__whoami');
        await Promise.allSettled([onA.close(), onB.close(), fresh.close()]);
      } finally {
        await Promise.allSettled([a.close(), b.close()]);
      }
    }, 60_000);
  });
});
