// Per-user upstream credentials behind OAuth: two real oidc-provider servers (the company IdP
// that issues the clients' tokens, and the upstream's own authorization server), alice and bob
// connected in parallel with tokens of the IdP, Chromium signing each in at both. Each reaches
// the upstream as themselves; a connect URL opened by the wrong user stores nothing; the
// client's own token never reaches the upstream.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { followSignIn, startBrowser, type TestBrowser } from '../helpers/browser.js';
import { startIdp, type TestIdp } from '../helpers/oidc.js';
import { startUserAuthUpstream, type UserAuthUpstream } from '../helpers/user-auth-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { freePort } from '../helpers/redis.js';

const KEY = 'another-example-credentials-key-forty-chars';

interface Harness {
  company: TestIdp;
  upstreamAs: TestIdp;
  upstream: UserAuthUpstream;
  gateway: TestGateway;
  browser: TestBrowser;
  resource: string;
}

let h: Harness;

beforeAll(async () => {
  const port = await freePort();
  const publicUrl = `http://127.0.0.1:${port}/mcp`;
  const company = await startIdp({ clients: [{ client_id: 'test-client', token_endpoint_auth_method: 'none', redirect_uris: ['http://127.0.0.1/none'], grant_types: ['authorization_code'] }], resources: { [publicUrl]: { scope: 'mcp' } } });
  const resources: Record<string, { scope: string }> = {};
  const upstreamAs = await startIdp({ resources });
  const upstream = await startUserAuthUpstream(upstreamAs.issuer);
  resources[upstream.url] = { scope: 'repo' };
  const gateway = await startGateway({
    listen: { port, publicUrl },
    auth: { oauth: { issuer: company.issuer, jwksUri: `${company.issuer}/jwks`, login: {} } },
    upstreams: { github: { http: { url: upstream.url, userAuth: { type: 'oauth' } } } },
    credentials: { key: KEY },
  });
  h = { company, upstreamAs, upstream, gateway, browser: await startBrowser(), resource: publicUrl };
}, 60_000);

afterAll(async () => {
  await Promise.allSettled([h?.browser.close(), h?.gateway.close()]);
  await Promise.allSettled([h?.upstream.close(), h?.upstreamAs.close(), h?.company.close()]);
});

function bounded<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([promise, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`timed out: ${what}`)), ms).unref())]);
}

async function connectAs(user: string, capabilities: Record<string, unknown> = {}): Promise<{ client: Client; token: string }> {
  const token = await h.company.issueAccessToken({ sub: user, clientId: 'test-client', resource: h.resource, scope: 'mcp' });
  const client = new Client({ name: `client-of-${user}`, version: '1' }, { capabilities });
  await client.connect(new StreamableHTTPClientTransport(h.gateway.url, { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  return { client, token };
}

function textOf(result: unknown): string {
  const content = (result as { content?: Array<{ type: string; text?: string }> }).content ?? [];
  return content.map((part) => part.text ?? '').join('');
}

async function toolNames(client: Client): Promise<string[]> {
  return (await client.listTools()).tools.map((tool) => tool.name).sort();
}

/** Signs `user` in through a URL elicitation on github__sign_in, in a browser context of their own. */
async function signIn(client: Client, user: string): Promise<string> {
  let browsing: Promise<unknown> | undefined;
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    const url = (request.params as { url: string }).url;
    browsing = h.browser.context().then(async (context) => followSignIn(await context.newPage(), url, user, { until: /Signed in to github/ }));
    return { action: 'accept' };
  });
  const result = await bounded(client.callTool({ name: 'github__sign_in', arguments: {} }), 45_000, `sign-in of ${user}`);
  await browsing;
  return textOf(result);
}

describe('per-user upstream credentials behind OAuth', () => {
  it('a connect URL made for alice and opened by a browser signed in as bob stores nothing', async () => {
    const { client } = await connectAs('alice');
    try {
      const url = /(http:\/\/\S+\/connect\/\S+) in a browser/.exec(textOf(await client.callTool({ name: 'github__sign_in', arguments: {} })))![1]!;
      const page = await (await h.browser.context()).newPage();
      const end = await followSignIn(page, url, 'bob', { until: /another user/ });
      expect(end.text).toContain('This link was made for another user than the one signed in here, so nothing was stored.');
      expect(await toolNames(client)).toEqual(['github__sign_in']);
      expect(h.gateway.logs.some((line) => line.includes('sign_in_refused'))).toBe(true);
    } finally {
      await client.close();
    }
  }, 60_000);

  it('alice and bob sign in in parallel and each reaches the upstream as themselves; no client token reaches it', async () => {
    const alice = await connectAs('alice', { elicitation: { url: {} } });
    const bob = await connectAs('bob', { elicitation: { url: {} } });
    try {
      const [a, b] = await Promise.all([signIn(alice.client, 'alice'), signIn(bob.client, 'bob')]);
      expect(a).toBe('Signed in to github; its tools are listed now.');
      expect(b).toBe('Signed in to github; its tools are listed now.');
      expect(textOf(await alice.client.callTool({ name: 'github__whoami', arguments: {} }))).toBe('alice');
      expect(textOf(await bob.client.callTool({ name: 'github__whoami', arguments: {} }))).toBe('bob');
      const seen = (await h.upstream.headers()).map((headers) => headers.authorization ?? '');
      for (const token of [alice.token, bob.token]) expect(seen.some((value) => value.includes(token))).toBe(false);
      // The connect page's login and the stored tokens never reach the log.
      expect(h.gateway.logs.join('\n')).not.toContain(alice.token);
    } finally {
      await Promise.allSettled([alice.client.close(), bob.client.close()]);
    }
  }, 90_000);
});
