// Per-user upstream credentials with real parts: oidc-provider as the upstream's own
// authorization server, a real MCP server that accepts only its tokens, the official SDK client
// through Switchyard, and headless Chromium completing the sign-in. A loopback gateway without
// auth serves one local principal.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { followSignIn, startBrowser, type TestBrowser } from '../helpers/browser.js';
import { startIdp, type TestIdp } from '../helpers/oidc.js';
import { startUserAuthUpstream, type UserAuthUpstream } from '../helpers/user-auth-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { messagesOf, postRpc } from '../helpers/raw-http.js';

const KEY = 'an-example-credentials-key-of-forty-chars!';

interface Harness {
  idp: TestIdp;
  upstream: UserAuthUpstream;
  gateway: TestGateway;
  browser: TestBrowser;
}

let h: Harness;

beforeAll(async () => {
  const resources: Record<string, { scope: string; accessTokenTtlSeconds?: number }> = {};
  const idp = await startIdp({ resources });
  const upstream = await startUserAuthUpstream(idp.issuer);
  resources[upstream.url] = { scope: 'repo', accessTokenTtlSeconds: 600 };
  const gateway = await startGateway({
    upstreams: { github: { http: { url: upstream.url, userAuth: { type: 'oauth' } } } },
    credentials: { key: KEY },
    metrics: { enabled: true },
  });
  h = { idp, upstream, gateway, browser: await startBrowser() };
}, 60_000);

afterAll(async () => {
  await Promise.allSettled([h?.browser.close(), h?.gateway.close()]);
  await Promise.allSettled([h?.upstream.close(), h?.idp.close()]);
});

function bounded<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([promise, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`timed out: ${what}`)), ms).unref())]);
}

async function connect(capabilities: Record<string, unknown>): Promise<Client> {
  const client = new Client({ name: 'user-credentials-test', version: '1' }, { capabilities });
  await client.connect(new StreamableHTTPClientTransport(h.gateway.url));
  return client;
}

async function toolNames(client: Client): Promise<string[]> {
  return (await client.listTools()).tools.map((tool) => tool.name).sort();
}

function textOf(result: unknown): string {
  const content = (result as { content?: Array<{ type: string; text?: string }> }).content ?? [];
  return content.map((part) => part.text ?? '').join('');
}

/** Calls github__sign_in, accepting its URL elicitation and signing `user` in in the browser; the call's text. */
async function signInByElicitation(client: Client, user: string): Promise<string> {
  let browsing: Promise<unknown> | undefined;
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    const url = (request.params as { url: string }).url;
    browsing = h.browser.context().then(async (context) => followSignIn(await context.newPage(), url, user, { until: /Signed in to github/ }));
    return { action: 'accept' };
  });
  const text = textOf(await bounded(client.callTool({ name: 'github__sign_in', arguments: {} }), 45_000, 'sign_in'));
  await browsing;
  return text;
}

describe('per-user upstream credentials (userAuth: oauth)', () => {
  it('lists only sign_in until the user signs in; a client without URL elicitation gets the connect URL in one sentence', async () => {
    const client = await connect({});
    try {
      expect(await toolNames(client)).toEqual(['github__sign_in']);
      const result = await client.callTool({ name: 'github__sign_in', arguments: {} });
      expect(result.isError).toBe(true);
      expect(textOf(result)).toMatch(new RegExp(`^To use github, the user must first sign in .* ${h.gateway.url.origin}/connect/\\S+ in a browser, then try again\\.$`));
    } finally {
      await client.close();
    }
  });

  it('signs in through a URL elicitation and the browser; list_changed arrives, the tools answer as the user, sign-out revokes', async () => {
    const client = await connect({ elicitation: { url: {} } });
    const other = await connect({});
    try {
      let changed!: () => void;
      const listChanged = new Promise<void>((resolve) => (changed = resolve));
      other.setNotificationHandler(ToolListChangedNotificationSchema, () => changed());
      let signedIn: Promise<{ url: string; text: string }> | undefined;
      client.setRequestHandler(ElicitRequestSchema, async (request) => {
        const params = request.params as { mode?: string; url?: string; elicitationId?: string };
        expect(params.mode).toBe('url');
        expect(params.elicitationId).toEqual(expect.any(String));
        expect(params.url!.startsWith(`${h.gateway.url.origin}/connect/`)).toBe(true);
        signedIn = h.browser.context().then(async (context) => followSignIn(await context.newPage(), params.url!, 'alice', { until: /Signed in to github/ }));
        return { action: 'accept' };
      });
      const result = await bounded(client.callTool({ name: 'github__sign_in', arguments: {} }), 45_000, 'sign_in');
      expect(textOf(result)).toBe('Signed in to github; its tools are listed now.');
      expect((await signedIn!).text).toContain('Signed in to github. You may close this page');
      // Every session of the principal hears it, not only the one that signed in.
      await bounded(listChanged, 10_000, 'list_changed');
      expect(await toolNames(other)).toEqual(['github__echo', 'github__sign_out', 'github__whoami']);
      expect(textOf(await client.callTool({ name: 'github__whoami', arguments: {} }))).toBe('alice');
      // The upstream saw only tokens of its own server, never anything of the client's.
      const authorizations = (await h.upstream.headers()).map((headers) => headers.authorization).filter(Boolean);
      expect(authorizations.length).toBeGreaterThan(0);
      for (const value of authorizations) expect(value).toMatch(/^Bearer ey/);
      const health = (await (await fetch(new URL('/healthz', h.gateway.url))).json()) as { signedIn?: Record<string, number> };
      expect(health.signedIn).toEqual({ github: 1 });
      const revokedBefore = h.idp.revocations();
      expect(textOf(await client.callTool({ name: 'github__sign_out', arguments: {} }))).toBe('Signed out of github.');
      expect(h.idp.revocations()).toBeGreaterThan(revokedBefore);
      expect(await toolNames(client)).toEqual(['github__sign_in']);
    } finally {
      await Promise.allSettled([client.close(), other.close()]);
    }
  }, 60_000);

  it('refuses a connect URL opened a second time, and stores nothing from it', async () => {
    const client = await connect({});
    try {
      const url = /(http:\/\/\S+\/connect\/\S+) in a browser/.exec(textOf(await client.callTool({ name: 'github__sign_in', arguments: {} })))![1]!;
      const first = await fetch(url, { redirect: 'manual' });
      expect(first.status).toBe(302);
      const second = await fetch(url, { redirect: 'manual' });
      expect(second.status).toBe(410);
      expect(await second.text()).toContain('already used');
      expect(await toolNames(client)).toEqual(['github__sign_in']);
    } finally {
      await client.close();
    }
  });

  it('a refused access token is refreshed without a new sign-in; a revoked refresh token asks for a new sign-in (-32042)', async () => {
    const client = await connect({ elicitation: { url: {} } });
    try {
      expect(await signInByElicitation(client, 'alice')).toBe('Signed in to github; its tools are listed now.');
      expect(textOf(await client.callTool({ name: 'github__whoami', arguments: {} }))).toBe('alice');
      const lastToken = async (): Promise<string> => (await h.upstream.headers()).map((headers) => headers.authorization ?? '').filter((v) => v.startsWith('Bearer ')).at(-1)!.slice(7);
      const first = await lastToken();
      await h.upstream.revoke(first);
      // Refused once: one refresh, and the call goes through as alice.
      expect(textOf(await client.callTool({ name: 'github__whoami', arguments: {} }))).toBe('alice');
      expect(await lastToken()).not.toBe(first);
      // The refresh token revoked too: a new sign-in, never a loop.
      await h.idp.revokeGrants('alice');
      await h.upstream.revoke(await lastToken());
      const refused = await client.callTool({ name: 'github__whoami', arguments: {} }).then(
        () => undefined,
        (err: unknown) => err as { code?: number; data?: { elicitations?: Array<{ mode: string; url: string; elicitationId: string }> } },
      );
      expect(refused?.code).toBe(-32042);
      expect(refused?.data?.elicitations?.[0]).toMatchObject({ mode: 'url', elicitationId: expect.any(String) });
      expect(refused!.data!.elicitations![0]!.url.startsWith(`${h.gateway.url.origin}/connect/`)).toBe(true);
      expect(await toolNames(client)).toEqual(['github__sign_in']);
    } finally {
      await client.close();
    }
  }, 60_000);

  it('a prompt of an upstream whose credential went answers the consent too (-32042)', async () => {
    const client = await connect({ elicitation: { url: {} } });
    try {
      expect(await signInByElicitation(client, 'alice')).toBe('Signed in to github; its tools are listed now.');
      const prompt = await client.getPrompt({ name: 'github__whoami' });
      expect(prompt.messages[0]!.content).toEqual({ type: 'text', text: 'alice' });
      const token = (await h.upstream.headers()).map((headers) => headers.authorization ?? '').filter((v) => v.startsWith('Bearer ')).at(-1)!.slice(7);
      await h.idp.revokeGrants('alice');
      await h.upstream.revoke(token);
      const refused = await client.getPrompt({ name: 'github__whoami' }).then(
        () => undefined,
        (err: unknown) => err as { code?: number; data?: { elicitations?: Array<{ mode: string }> } },
      );
      expect(refused?.code).toBe(-32042);
      expect(refused?.data?.elicitations?.[0]?.mode).toBe('url');
    } finally {
      await client.close();
    }
  }, 60_000);

  it('DELETE /connect/<upstream> from the browser signs out; sign-ins and refreshes are counted by outcome', async () => {
    const client = await connect({});
    try {
      const url = /(http:\/\/\S+\/connect\/\S+) in a browser/.exec(textOf(await client.callTool({ name: 'github__sign_in', arguments: {} })))![1]!;
      const end = await followSignIn(await (await h.browser.context()).newPage(), url, 'alice', { until: /Signed in to github/ });
      expect(end.text).toContain('Signed in to github.');
      let changed!: () => void;
      const heard = new Promise<void>((resolve) => (changed = resolve));
      client.setNotificationHandler(ToolListChangedNotificationSchema, () => changed());
      const response = await fetch(new URL('/connect/github', h.gateway.url), { method: 'DELETE' });
      expect(response.status).toBe(200);
      expect(await response.text()).toContain('Signed out of github.');
      const metrics = await (await fetch(new URL('/metrics', h.gateway.url))).text();
      expect(metrics).toMatch(/switchyard_user_sign_ins_total\{upstream="github",outcome="ok"\} [1-9]/);
      expect(metrics).toMatch(/switchyard_user_token_refreshes_total\{upstream="github",outcome="(ok|rejected)"\} [1-9]/);
      await bounded(heard, 10_000, 'list_changed after sign-out');
      expect(await toolNames(client)).toEqual(['github__sign_in']);
    } finally {
      await client.close();
    }
  }, 60_000);

  it('a 2026-07-28 client gets the URL through input_required, and its retry completes once the user signed in', async () => {
    const meta = {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientInfo': { name: 'stateless-test', version: '1' },
      'io.modelcontextprotocol/clientCapabilities': { elicitation: { url: {} } },
    };
    const send = async (id: number, name: string, extra: Record<string, unknown> = {}): Promise<Record<string, unknown>> => {
      const message = { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {}, ...extra, _meta: meta } };
      const reply = await postRpc(h.gateway.url, message, { protocolVersion: '2026-07-28', headers: { 'mcp-method': 'tools/call', 'mcp-name': name } });
      const body = reply.sse ? messagesOf<Record<string, unknown>>(reply).at(-1)! : (JSON.parse(reply.text) as Record<string, unknown>);
      return body.result as Record<string, unknown>;
    };
    const first = (await send(1, 'github__sign_in')) as { resultType: string; inputRequests: Record<string, { method: string; params: { mode: string; url: string; elicitationId?: string } }>; requestState: string };
    expect(first.resultType).toBe('input_required');
    const [key, input] = Object.entries(first.inputRequests)[0]!;
    expect(input.method).toBe('elicitation/create');
    expect(input.params.mode).toBe('url');
    // 2026-07-28 has no elicitationId (its retry carries the outcome).
    expect(input.params.elicitationId).toBeUndefined();
    const end = await followSignIn(await (await h.browser.context()).newPage(), input.params.url, 'alice', { until: /Signed in to github/ });
    expect(end.text).toContain('Signed in to github.');
    const second = await send(2, 'github__sign_in', { inputResponses: { [key]: { action: 'accept' } }, requestState: first.requestState });
    expect(second.resultType).toBe('complete');
    expect(textOf(second)).toBe('Signed in to github; its tools are listed now.');
    expect(textOf(await send(3, 'github__whoami'))).toBe('alice');
  }, 60_000);
});
