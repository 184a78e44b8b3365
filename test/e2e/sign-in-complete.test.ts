// A sign-in started by `<prefix>__sign_in` (or by the -32042 consent) finishes cleanly, every
// time: the official SDK client that declared elicitation.url hears
// notifications/elicitation/complete with the elicitationId it was given (2025-11-25
// client/elicitation.mdx), and a 2026-07-28 client's retry completes. One gateway, one test IdP
// (the upstream's own authorization server), one real upstream and one Chromium serve every round.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrowserContext } from 'playwright-core';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitationCompleteNotificationSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { followSignIn, startBrowser, type TestBrowser } from '../helpers/browser.js';
import { startIdp, type TestIdp } from '../helpers/oidc.js';
import { startUserAuthUpstream, type UserAuthUpstream } from '../helpers/user-auth-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { messagesOf, postRpc } from '../helpers/raw-http.js';

const KEY = 'an-example-credentials-key-of-forty-chars!';
const ROUNDS = 20;

interface Harness {
  idp: TestIdp;
  upstream: UserAuthUpstream;
  gateway: TestGateway;
  browser: TestBrowser;
  /** One browser context for every round: the upstream's login is remembered after the first. */
  context: BrowserContext;
}

let h: Harness;

beforeAll(async () => {
  const resources: Record<string, { scope: string; accessTokenTtlSeconds?: number }> = {};
  const idp = await startIdp({ resources });
  const upstream = await startUserAuthUpstream(idp.issuer);
  resources[upstream.url] = { scope: 'repo', accessTokenTtlSeconds: 600 };
  const gateway = await startGateway({ upstreams: { github: { http: { url: upstream.url, userAuth: { type: 'oauth' } } } }, credentials: { key: KEY } });
  const browser = await startBrowser();
  h = { idp, upstream, gateway, browser, context: await browser.context() };
}, 60_000);

afterAll(async () => {
  await Promise.allSettled([h?.browser.close(), h?.gateway.close()]);
  await Promise.allSettled([h?.upstream.close(), h?.idp.close()]);
});

function bounded<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out: ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function textOf(result: unknown): string {
  const content = (result as { content?: Array<{ type: string; text?: string }> }).content ?? [];
  return content.map((part) => part.text ?? '').join('');
}

/** Opens a connect URL in the shared context and signs alice in. */
async function signInInBrowser(url: string): Promise<string> {
  const page = await h.context.newPage();
  try {
    return (await followSignIn(page, url, 'alice', { until: /Signed in to github/ })).text;
  } finally {
    await page.close();
  }
}

/** An SDK client declaring URL elicitation, and the elicitation ids it heard completed, in order. */
async function urlClient(): Promise<{ client: Client; completed: string[]; heard: (id: string) => Promise<void> }> {
  const client = new Client({ name: 'sign-in-complete-test', version: '1' }, { capabilities: { elicitation: { url: {} } } });
  const completed: string[] = [];
  const waiters: Array<() => void> = [];
  client.setNotificationHandler(ElicitationCompleteNotificationSchema, (message) => {
    completed.push(message.params.elicitationId);
    for (const wake of waiters.splice(0)) wake();
  });
  const heard = async (id: string): Promise<void> => {
    while (!completed.includes(id)) await new Promise<void>((resolve) => waiters.push(resolve));
  };
  await client.connect(new StreamableHTTPClientTransport(h.gateway.url));
  return { client, completed, heard };
}

describe('a sign-in finishes cleanly', () => {
  it(`notifications/elicitation/complete reaches the client with its elicitationId before sign_in answers, ${ROUNDS} rounds in a row`, async () => {
    const misses: string[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const { client, completed } = await urlClient();
      try {
        let asked: string | undefined;
        let browsing: Promise<string> | undefined;
        client.setRequestHandler(ElicitRequestSchema, async (request) => {
          const params = request.params as { mode?: string; url?: string; elicitationId?: string };
          asked = params.elicitationId;
          browsing = signInInBrowser(params.url!);
          return { action: 'accept' };
        });
        const result = await bounded(client.callTool({ name: 'github__sign_in', arguments: {} }), 30_000, `sign_in, round ${round}`);
        expect(textOf(result)).toBe('Signed in to github; its tools are listed now.');
        expect(await browsing).toContain('Signed in to github.');
        expect(asked).toEqual(expect.any(String));
        // On the call's own stream, ahead of its answer: already heard when the call returns.
        if (completed.length !== 1 || completed[0] !== asked) misses.push(`round ${round}: asked ${asked}, heard ${JSON.stringify(completed)}`);
        expect(textOf(await client.callTool({ name: 'github__whoami', arguments: {} }))).toBe('alice');
        expect(textOf(await client.callTool({ name: 'github__sign_out', arguments: {} }))).toBe('Signed out of github.');
      } finally {
        await client.close();
      }
    }
    expect(misses).toEqual([]);
  }, 240_000);

  it('after a -32042 consent, the completion follows the sign-in on the standalone stream, and a retry on hearing it reaches the upstream (3 rounds)', async () => {
    for (let round = 1; round <= 3; round++) {
      const { client, heard } = await urlClient();
      try {
        client.setRequestHandler(ElicitRequestSchema, async (request) => {
          void signInInBrowser((request.params as { url: string }).url);
          return { action: 'accept' };
        });
        expect(textOf(await bounded(client.callTool({ name: 'github__sign_in', arguments: {} }), 30_000, 'sign_in'))).toBe('Signed in to github; its tools are listed now.');
        expect(textOf(await client.callTool({ name: 'github__whoami', arguments: {} }))).toBe('alice');
        // The user's grant at the upstream's server ends, and the token with it: the consent.
        const token = (await h.upstream.headers()).map((headers) => headers.authorization ?? '').filter((v) => v.startsWith('Bearer ')).at(-1)!.slice(7);
        await h.idp.revokeGrants('alice');
        await h.upstream.revoke(token);
        const refused = await client.callTool({ name: 'github__whoami', arguments: {} }).then(
          () => undefined,
          (err: unknown) => err as { code?: number; data?: { elicitations?: Array<{ mode: string; url: string; elicitationId: string }> } },
        );
        expect(refused?.code).toBe(-32042);
        const elicitation = refused!.data!.elicitations![0]!;
        expect(elicitation).toMatchObject({ mode: 'url', elicitationId: expect.any(String) });
        expect(await signInInBrowser(elicitation.url)).toContain('Signed in to github.');
        await bounded(heard(elicitation.elicitationId), 15_000, `elicitation/complete after -32042, round ${round}`);
        // What a client may do on hearing it (elicitation.mdx): retry, and meet the upstream itself.
        expect(textOf(await client.callTool({ name: 'github__whoami', arguments: {} }))).toBe('alice');
        expect(textOf(await client.callTool({ name: 'github__sign_out', arguments: {} }))).toBe('Signed out of github.');
      } finally {
        await client.close();
      }
    }
  }, 120_000);

  it('a 2026-07-28 client: input_required with the URL, and its retry completes once the user signed in (3 rounds, no completion notification)', async () => {
    const meta = {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientInfo': { name: 'stateless-sign-in-test', version: '1' },
      'io.modelcontextprotocol/clientCapabilities': { elicitation: { url: {} } },
    };
    let id = 0;
    const call = async (name: string, extra: Record<string, unknown> = {}): Promise<{ result: Record<string, unknown>; methods: string[] }> => {
      const message = { jsonrpc: '2.0', id: ++id, method: 'tools/call', params: { name, arguments: {}, ...extra, _meta: meta } };
      const reply = await postRpc(h.gateway.url, message, { protocolVersion: '2026-07-28', headers: { 'mcp-method': 'tools/call', 'mcp-name': name } });
      const messages = reply.sse ? messagesOf<Record<string, unknown>>(reply) : [JSON.parse(reply.text) as Record<string, unknown>];
      return { result: messages.at(-1)!.result as Record<string, unknown>, methods: messages.map((m) => String(m.method ?? '')).filter(Boolean) };
    };
    for (let round = 1; round <= 3; round++) {
      const first = (await call('github__sign_in')).result as { resultType: string; inputRequests: Record<string, { method: string; params: { mode: string; url: string; elicitationId?: string } }>; requestState: string };
      expect(first.resultType).toBe('input_required');
      const [key, input] = Object.entries(first.inputRequests)[0]!;
      expect(input.params).toMatchObject({ mode: 'url' });
      expect(input.params.elicitationId).toBeUndefined();
      expect(await signInInBrowser(input.params.url)).toContain('Signed in to github.');
      const second = await call('github__sign_in', { inputResponses: { [key]: { action: 'accept' } }, requestState: first.requestState });
      expect(second.result.resultType).toBe('complete');
      expect(textOf(second.result)).toBe('Signed in to github; its tools are listed now.');
      expect(second.methods).not.toContain('notifications/elicitation/complete');
      expect(textOf((await call('github__whoami')).result)).toBe('alice');
      expect(textOf((await call('github__sign_out')).result)).toBe('Signed out of github.');
    }
  }, 120_000);
});
