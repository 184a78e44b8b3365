// 2026-07-28 on the wire, with raw HTTP: the era is decided per request, headers are checked
// against the body, results carry resultType, serverInfo and caching hints, relayed
// server requests become input_required, and subscriptions/listen tags what it delivers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/auth/api-keys.js';
import { connectClient, startGateway, textOf, upstream, type TestGateway } from '../helpers/gateway.js';
import { poll } from '../helpers/cli.js';
import { postRaw } from '../helpers/raw-http.js';
import { META, sendStateless, statelessCall, statelessRequest, V, type Sent } from '../helpers/stateless-wire.js';
import { SseReader } from '../helpers/sse-reader.js';

let gw: TestGateway;
/**
 * The main gateway's requests all come from one principal (an API key): its requests share one
 * gateway-held session, as the tests of state across requests (a listen hearing another
 * request's change, a journal of earlier calls) need. Anonymous requests each get a session of
 * their own (test/e2e/stateless-isolation.test.ts).
 */
const KEY = 'k-wire-0123456789abcdef';
const PRINCIPAL = { 'x-api-key': KEY };
const BY_KEY = { apiKeys: [{ id: 'wire', hash: hashApiKey(KEY) }] };
/** Gateways whose requests `send` makes as that principal. */
const keyed = new Set<string>();

beforeAll(async () => {
  gw = await startGateway({ upstreams: { everything: upstream.everything(), rogue: upstream.rogue() }, auth: BY_KEY });
  keyed.add(gw.url.href);
});

afterAll(async () => {
  await gw?.close();
});

/** A 2026-07-28 request as the test's principal where the gateway is keyed (stateless-wire.ts). */
function send(url: URL, message: Record<string, unknown>, headers: Record<string, string | undefined> = {}, signal?: AbortSignal): Promise<Sent> {
  return sendStateless(url, message, { ...(keyed.has(url.href) ? PRINCIPAL : {}), ...headers }, signal);
}

const request = statelessRequest;
const call = (id: number | string, name: string, args: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) => statelessCall(id, name, args, extra);

describe('validation', () => {
  it('answers an unsupported version 400 / -32022 with the supported list', async () => {
    const res = await send(gw.url, request(1, 'tools/list', {}, { ...META, 'io.modelcontextprotocol/protocolVersion': '2099-01-01' }), { 'mcp-protocol-version': '2099-01-01' });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ id: 1, error: { code: -32022, data: { requested: '2099-01-01' } } });
    const supported = (res.body!.error as { data: { supported: string[] } }).data.supported;
    expect(supported).toEqual(expect.arrayContaining([V, '2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05']));
  });

  it('answers a request without the required _meta 400 / -32602', async () => {
    const res = await send(gw.url, { jsonrpc: '2.0', id: 2, method: 'tools/list', params: { _meta: { 'io.modelcontextprotocol/protocolVersion': V } } });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ id: 2, error: { code: -32602, message: expect.stringContaining('clientCapabilities') } });
  });

  it.each([
    ['a missing MCP-Protocol-Version', { 'mcp-protocol-version': undefined }, request(3, 'tools/list')],
    ['a missing Mcp-Method', { 'mcp-method': undefined }, request(3, 'tools/list')],
    ['an Mcp-Method other than the body', { 'mcp-method': 'prompts/list' }, request(3, 'tools/list')],
    ['a missing Mcp-Name', {}, call(3, 'everything__echo', { message: 'x' })],
    ['an Mcp-Name other than the body (policy and routing use the body)', { 'mcp-name': 'everything__get-env' }, call(3, 'everything__echo', { message: 'x' })],
  ] as const)('answers %s 400 / -32020', async (_what, headers, message) => {
    const res = await send(gw.url, message, headers);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ id: 3, error: { code: -32020, message: expect.stringContaining('Header mismatch') } });
  });

  it('answers a version header the body contradicts 400 / -32020', async () => {
    const res = await send(gw.url, request(4, 'tools/list'), { 'mcp-protocol-version': '2025-11-25' });
    // A sessions-era header with no session is a sessions-era request: it needs its session.
    expect(res.status).toBe(400);
    const mismatch = await send(gw.url, request(4, 'tools/list', {}, { ...META, 'io.modelcontextprotocol/protocolVersion': '2025-11-25' }));
    expect(mismatch.status).toBe(400);
    expect(mismatch.body).toMatchObject({ id: 4, error: { code: -32020 } });
  });

  it('answers a header the body contradicts -32020 before looking at whether either version is supported', async () => {
    const res = await send(gw.url, request(4, 'tools/list', {}, { ...META, 'io.modelcontextprotocol/protocolVersion': '2099-01-01' }));
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ id: 4, error: { code: -32020 } });
  });

  it('answers a method no upstream of this client serves 404 / -32601 (completion without completions)', async () => {
    const bare = await startGateway({ upstreams: { rogue: upstream.rogue() } });
    try {
      const res = await send(bare.url, request(7, 'completion/complete', { ref: { type: 'ref/prompt', name: 'rogue__x' }, argument: { name: 'a', value: 'b' } }));
      expect(res.status).toBe(404);
      expect(res.body).toMatchObject({ id: 7, error: { code: -32601 } });
    } finally {
      await bare.close();
    }
  });

  it('sends no code of -32000..-32019 to a 2026-07-28 client: an unavailable upstream is -32603 with its reason', async () => {
    const left = await startGateway({ upstreams: { rogue: upstream.rogue(), gone: { stdio: { command: '/nonexistent/switchyard-test-server' } } } });
    try {
      const res = await send(left.url, call(8, 'gone__anything', {}), { 'mcp-name': 'gone__anything' });
      expect(res.body).toMatchObject({ id: 8, error: { code: -32603, data: { reason: 'upstream_unavailable' } } });
      // The same call from a sessions-era client keeps the gateway's code, which is not -32002.
      const client = await connectClient(left.url);
      try {
        await expect(client.callTool({ name: 'gone__anything', arguments: {} })).rejects.toMatchObject({ code: -32005 });
      } finally {
        await client.close();
      }
    } finally {
      await left.close();
    }
  });

  it("answers an upstream's -32021 (a capability the client lacks) with HTTP 400, and maps its legacy codes", async () => {
    const missing = await send(gw.url, call(10, 'rogue__fail', { code: -32021, message: 'needs sampling', data: { requiredCapabilities: { sampling: {} } } }), { 'mcp-name': 'rogue__fail' });
    expect(missing.status).toBe(400);
    expect(missing.body).toMatchObject({ id: 10, error: { code: -32021, data: { requiredCapabilities: { sampling: {} } } } });
    const legacy = await send(gw.url, call(11, 'rogue__fail', { code: -32010, message: 'an old server error' }), { 'mcp-name': 'rogue__fail' });
    expect(legacy.status).toBe(200);
    expect(legacy.body).toMatchObject({ id: 11, error: { code: -32603, message: 'an old server error', data: { reason: 'upstream_error' } } });
    const notFound = await send(gw.url, call(12, 'rogue__fail', { code: -32002, message: 'Resource not found', data: { uri: 'x://y' } }), { 'mcp-name': 'rogue__fail' });
    expect(notFound.body).toMatchObject({ id: 12, error: { code: -32602, data: { uri: 'x://y' } } });
  });

  it('answers a resource that does not exist -32602 with its uri in data', async () => {
    const uri = 'everything+demo://resource/static/document/no-such.md';
    const res = await send(gw.url, request(9, 'resources/read', { uri }), { 'mcp-name': uri });
    expect(res.body).toMatchObject({ id: 9, error: { code: -32602, data: { uri } } });
  });

  it('accepts an Mcp-Name in the Base64 sentinel form', async () => {
    const res = await send(gw.url, call(5, 'everything__echo', { message: 'sentinel' }), { 'mcp-name': `=?base64?${Buffer.from('everything__echo').toString('base64')}?=` });
    expect(res.status).toBe(200);
    expect(textOf(res.body!.result)).toContain('sentinel');
  });

  it('answers an unknown method 404 / -32601, and a removed one too', async () => {
    for (const method of ['nosuch/method', 'initialize', 'resources/subscribe', 'logging/setLevel']) {
      const res = await send(gw.url, request(6, method));
      expect(res.status, method).toBe(404);
      expect(res.body, method).toMatchObject({ id: 6, error: { code: -32601 } });
    }
  });

  it('refuses a batch and accepts a notification with 202', async () => {
    const batch = await postRaw(gw.url, [request(1, 'tools/list')], { protocolVersion: V, headers: PRINCIPAL, signal: null });
    expect(batch.status).toBe(400);
    const note = await send(gw.url, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1, _meta: META } });
    expect(note.status).toBe(202);
  });
});

describe('results', () => {
  it('server/discover lists every version and what the gateway offers, with serverInfo and caching hints', async () => {
    const res = await send(gw.url, request(1, 'server/discover'));
    expect(res.status).toBe(200);
    expect(res.body!.result).toMatchObject({
      resultType: 'complete',
      supportedVersions: expect.arrayContaining([V, '2025-11-25']),
      capabilities: { tools: expect.any(Object), prompts: expect.any(Object), resources: expect.any(Object) },
      _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'switchyard' } },
      ttlMs: expect.any(Number),
      // What the gateway offers depends on who asks (teams, the client's capabilities).
      cacheScope: 'private',
    });
  });

  it('lists namespaced tools with resultType, ttlMs and a private cacheScope (lists depend on the caller)', async () => {
    const res = await send(gw.url, request(2, 'tools/list'));
    const result = res.body!.result as { tools: { name: string }[]; resultType: string; ttlMs: number; cacheScope: string };
    expect(result.tools.map((t) => t.name)).toEqual(expect.arrayContaining(['everything__echo', 'rogue__slow']));
    expect(result).toMatchObject({ resultType: 'complete', ttlMs: expect.any(Number), cacheScope: 'private' });
  });

  it('reads a resource with ttlMs 0 and a private cacheScope', async () => {
    const uri = 'everything+demo://resource/static/document/architecture.md';
    const res = await send(gw.url, request(3, 'resources/read', { uri }), { 'mcp-name': uri });
    expect(res.body!.result).toMatchObject({ contents: [{ uri }], resultType: 'complete', ttlMs: 0, cacheScope: 'private' });
  });

  it('answers concurrent requests that reuse one id each with its own result', async () => {
    const [a, b] = await Promise.all([send(gw.url, call(7, 'everything__echo', { message: 'first' }), { 'mcp-name': 'everything__echo' }), send(gw.url, call(7, 'everything__echo', { message: 'second' }), { 'mcp-name': 'everything__echo' })]);
    expect(a.body).toMatchObject({ id: 7 });
    expect(b.body).toMatchObject({ id: 7 });
    expect(textOf(a.body!.result)).toContain('first');
    expect(textOf(b.body!.result)).toContain('second');
  });
});

type Entry = { id?: string | number; method?: string; params?: Record<string, unknown> };

/** What the rogue fixture behind `url` has received, asked as a 2026-07-28 client. */
async function journalOf(url: URL): Promise<Entry[]> {
  return JSON.parse(textOf((await send(url, call(99, 'rogue__journal'), { 'mcp-name': 'rogue__journal' })).body!.result)) as Entry[];
}

describe('cancellation', () => {
  const journal = () => journalOf(gw.url);

  it('cancels the upstream request when the client closes the connection before a JSON answer', async () => {
    const controller = new AbortController();
    const pending = send(gw.url, call(1, 'rogue__slow', { ms: 60_000 }), { 'mcp-name': 'rogue__slow' }, controller.signal).catch((err: unknown) => err);
    const started = await poll(async () => (await journal()).find((m) => m.method === 'tools/call' && m.params?.name === 'slow' && (m.params.arguments as { ms?: number }).ms === 60_000), 'the call to reach rogue');
    controller.abort();
    expect(await pending).toBeInstanceOf(Error);
    const cancelled = await poll(async () => (await journal()).find((m) => m.method === 'notifications/cancelled' && m.params?.requestId === started.id), 'rogue to hear the cancellation');
    expect(cancelled.params).toMatchObject({ requestId: started.id });
  });
});

describe('logging', () => {
  const logLine = { method: 'notifications/message', params: { level: 'warning', data: 'from rogue' } };

  it('sends a request the log lines of its upstream at the _meta logLevel it asked for, before its result', async () => {
    const res = await send(gw.url, request(1, 'tools/call', { name: 'rogue__notify', arguments: logLine }, { ...META, 'io.modelcontextprotocol/logLevel': 'info' }), { 'mcp-name': 'rogue__notify' });
    expect(res.messages.map((m) => m.method ?? 'result')).toEqual(['notifications/message', 'result']);
    expect(res.messages[0]).toMatchObject({ params: { level: 'warning', data: 'from rogue', logger: 'rogue' } });
  });

  it('refuses a logLevel that is not a level (-32602), rather than sending it every line', async () => {
    const res = await send(gw.url, request(4, 'tools/call', { name: 'rogue__notify', arguments: logLine }, { ...META, 'io.modelcontextprotocol/logLevel': 'bogus' }), { 'mcp-name': 'rogue__notify' });
    expect(res.status).toBe(400);
    expect(res.messages).toEqual([]);
    expect(res.body).toMatchObject({ id: 4, error: { code: -32602 } });
  });

  it('sends none below that level, and none to a request that asked for no logs', async () => {
    const above = await send(gw.url, request(2, 'tools/call', { name: 'rogue__notify', arguments: logLine }, { ...META, 'io.modelcontextprotocol/logLevel': 'error' }), { 'mcp-name': 'rogue__notify' });
    expect(above.messages).toEqual([]);
    expect(above.body).toMatchObject({ id: 2, result: { resultType: 'complete' } });
    const silent = await send(gw.url, call(3, 'rogue__notify', logLine), { 'mcp-name': 'rogue__notify' });
    expect(silent.messages).toEqual([]);
    expect(silent.body).toMatchObject({ id: 3, result: { resultType: 'complete' } });
  });
});

describe('a relayed server request', () => {
  const ask = (id: number, extra: Record<string, unknown> = {}) => call(id, 'everything__trigger-elicitation-request', {}, extra);
  const named = { 'mcp-name': 'everything__trigger-elicitation-request' };

  it('becomes input_required, and the retry with inputResponses completes the same call', async () => {
    const first = await send(gw.url, ask(1), named);
    const result = first.body!.result as { resultType: string; inputRequests: Record<string, { method: string; params: Record<string, unknown> }>; requestState: string };
    expect(result.resultType).toBe('input_required');
    const [key, input] = Object.entries(result.inputRequests)[0]!;
    expect(input.method).toBe('elicitation/create');
    expect(input.params).toMatchObject({ message: expect.any(String), requestedSchema: expect.any(Object) });
    // Random, and signed by the gateway (so a requestState an upstream made is told apart and passed on).
    expect(result.requestState).toMatch(/^[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{20,}$/);

    const second = await send(gw.url, ask(2, { inputResponses: { [key]: { action: 'accept', content: { name: 'Grace', username: 'grace' } } }, requestState: result.requestState }), named);
    expect(second.body).toMatchObject({ id: 2, result: { resultType: 'complete' } });
    expect(JSON.stringify(second.body!.result)).toContain('Grace');
  });

  it("lets an anonymous client's retry through at its session cap: it resumes a parked call, it opens nothing", async () => {
    const capped = await startGateway({ upstreams: { everything: upstream.everything() }, sessions: { maxPerPrincipal: 1 } });
    try {
      const first = await send(capped.url, ask(1), named);
      const result = first.body!.result as { inputRequests: Record<string, unknown>; requestState: string };
      const key = Object.keys(result.inputRequests)[0]!;
      // The parked call holds the one session the cap allows anonymous requests in flight.
      const second = await send(capped.url, ask(2, { inputResponses: { [key]: { action: 'accept', content: { name: 'Ada', username: 'ada' } } }, requestState: result.requestState }), named);
      expect(second.status).toBe(200);
      expect(second.body).toMatchObject({ id: 2, result: { resultType: 'complete' } });
    } finally {
      await capped.close();
    }
  });

  it('refuses a requestState used for another tool, or again after it completed', async () => {
    const first = await send(gw.url, ask(1), named);
    const { requestState, inputRequests } = first.body!.result as { requestState: string; inputRequests: Record<string, unknown> };
    const key = Object.keys(inputRequests)[0]!;
    const elsewhere = await send(gw.url, call(2, 'everything__echo', { message: 'x' }, { requestState, inputResponses: {} }), { 'mcp-name': 'everything__echo' });
    expect(elsewhere.body).toMatchObject({ id: 2, error: { code: -32602 } });
    const otherArguments = await send(gw.url, call(2, 'everything__trigger-elicitation-request', { extra: true }, { requestState, inputResponses: {} }), named);
    expect(otherArguments.body).toMatchObject({ id: 2, error: { code: -32602, message: expect.stringContaining('arguments') } });
    const done = await send(gw.url, ask(3, { inputResponses: { [key]: { action: 'decline' } }, requestState }), named);
    expect(done.body).toMatchObject({ id: 3, result: { resultType: 'complete' } });
    const again = await send(gw.url, ask(4, { inputResponses: { [key]: { action: 'decline' } }, requestState }), named);
    expect(again.body).toMatchObject({ id: 4, error: { code: -32602 } });
  });

  it('is refused to a client that did not declare the capability: the upstream gets -32601, the client no input_required', async () => {
    const meta = { ...META, 'io.modelcontextprotocol/clientCapabilities': {} };
    const params = { name: 'rogue__ask', arguments: { method: 'elicitation/create', params: { message: 'hi?', requestedSchema: { type: 'object', properties: {} } } } };
    const res = await send(gw.url, request(1, 'tools/call', params, meta), { 'mcp-name': 'rogue__ask' });
    expect(res.body).toMatchObject({ id: 1, result: { resultType: 'complete' } });
    // rogue's ask tool answers with what its request got back.
    expect(JSON.parse(textOf(res.body!.result))).toMatchObject({ error: { code: -32601 } });
  });
});

describe('a request waiting for input', () => {
  it('is cancelled upstream once sessions.inputTimeout passes without a retry, and its requestState is then unknown', async () => {
    const short = await startGateway({ upstreams: { rogue: upstream.rogue() }, sessions: { inputTimeout: 200 }, auth: BY_KEY });
    keyed.add(short.url.href);
    try {
      const named = { 'mcp-name': 'rogue__ask' };
      const asking = call(1, 'rogue__ask', { method: 'elicitation/create', params: { message: 'anyone?', requestedSchema: { type: 'object', properties: {} } } });
      const first = await send(short.url, asking, named);
      const { requestState, inputRequests } = first.body!.result as { requestState: string; inputRequests: Record<string, unknown> };
      expect(Object.values(inputRequests)).toEqual([{ method: 'elicitation/create', params: { message: 'anyone?', requestedSchema: { type: 'object', properties: {} } } }]);
      const journal = () => journalOf(short.url);
      const ask = (await journal()).find((m) => m.method === 'tools/call' && m.params?.name === 'ask')!;
      // The gateway answers rogue's elicitation with an error and cancels the call.
      await poll(async () => (await journal()).find((m) => m.method === 'notifications/cancelled' && m.params?.requestId === ask.id), 'the call to be cancelled upstream');
      const late = await send(short.url, { ...asking, id: 2, params: { ...asking.params, requestState, inputResponses: { [Object.keys(inputRequests)[0]!]: { action: 'accept', content: {} } } } }, named);
      expect(late.body).toMatchObject({ id: 2, error: { code: -32602, message: expect.stringContaining('requestState') } });
    } finally {
      await short.close();
    }
  });
});

describe('subscriptions/listen', () => {
  /** Opens a listen stream, its body unread; `controller` ends it. */
  const listen = (message: unknown, controller: AbortController): Promise<Response> =>
    postRaw(gw.url, message, { protocolVersion: V, headers: { ...PRINCIPAL, 'mcp-method': 'subscriptions/listen' }, signal: controller.signal });

  it('acknowledges first, then delivers list changes and resource updates tagged with the subscription id', async () => {
    const controller = new AbortController();
    const filter = { toolsListChanged: true, promptsListChanged: true, resourceSubscriptions: ['everything+demo://resource/static/document/architecture.md'] };
    const res = await listen(request('sub-1', 'subscriptions/listen', { notifications: filter }), controller);
    try {
      expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
      const events = readEvents(res);
      const ack = await events.next();
      expect(ack).toEqual({
        jsonrpc: '2.0',
        method: 'notifications/subscriptions/acknowledged',
        params: { _meta: { 'io.modelcontextprotocol/subscriptionId': 'sub-1' }, notifications: filter },
      });
      // rogue announces that its tools changed (stdio: unrelated to any request).
      await send(gw.url, call(1, 'rogue__notify', { method: 'notifications/tools/list_changed' }), { 'mcp-name': 'rogue__notify' });
      expect(await events.next()).toEqual({ jsonrpc: '2.0', method: 'notifications/tools/list_changed', params: { _meta: { 'io.modelcontextprotocol/subscriptionId': 'sub-1' } } });
      // everything sends updates for subscribed resources once told to.
      await send(gw.url, call(2, 'everything__toggle-subscriber-updates'), { 'mcp-name': 'everything__toggle-subscriber-updates' });
      const update = await events.next();
      expect(update).toMatchObject({
        method: 'notifications/resources/updated',
        params: { uri: filter.resourceSubscriptions[0], _meta: { 'io.modelcontextprotocol/subscriptionId': 'sub-1' } },
      });
      await send(gw.url, call(3, 'everything__toggle-subscriber-updates'), { 'mcp-name': 'everything__toggle-subscriber-updates' });
    } finally {
      controller.abort();
    }
  });

  it('keeps a resource subscribed upstream while any listen still wants it', async () => {
    const uri = 'everything+demo://resource/static/document/features.md';
    const open = (id: string, controller: AbortController) => listen(request(id, 'subscriptions/listen', { notifications: { resourceSubscriptions: [uri] } }), controller);
    const first = new AbortController();
    const second = new AbortController();
    try {
      // Opened at once: both count on one upstream subscription.
      const [a, b] = await Promise.all([open('a', first), open('b', second)]);
      const eventsA = readEvents(a);
      const eventsB = readEvents(b);
      expect(await eventsA.next()).toMatchObject({ params: { notifications: { resourceSubscriptions: [uri] } } });
      expect(await eventsB.next()).toMatchObject({ params: { notifications: { resourceSubscriptions: [uri] } } });
      first.abort();
      await send(gw.url, call(1, 'everything__toggle-subscriber-updates'), { 'mcp-name': 'everything__toggle-subscriber-updates' });
      expect(await eventsB.next()).toMatchObject({ method: 'notifications/resources/updated', params: { uri, _meta: { 'io.modelcontextprotocol/subscriptionId': 'b' } } });
      await send(gw.url, call(2, 'everything__toggle-subscriber-updates'), { 'mcp-name': 'everything__toggle-subscriber-updates' });
    } finally {
      first.abort();
      second.abort();
    }
  });

  it('never sends what the filter did not ask for', async () => {
    const controller = new AbortController();
    const res = await listen(request(9, 'subscriptions/listen', { notifications: { promptsListChanged: true } }), controller);
    try {
      const events = readEvents(res);
      expect(await events.next()).toMatchObject({ method: 'notifications/subscriptions/acknowledged', params: { notifications: { promptsListChanged: true } } });
      await send(gw.url, call(1, 'rogue__notify', { method: 'notifications/tools/list_changed' }), { 'mcp-name': 'rogue__notify' });
      await send(gw.url, call(2, 'rogue__notify', { method: 'notifications/prompts/list_changed' }), { 'mcp-name': 'rogue__notify' });
      // The tools change came first; only the prompts change is delivered.
      expect(await events.next()).toMatchObject({ method: 'notifications/prompts/list_changed' });
    } finally {
      controller.abort();
    }
  });
});

describe('policy', () => {
  it('gives each team its own discover and lists, marked private', async () => {
    const key = 'k-ops-0123456789abcdef';
    const gated = await startGateway({
      upstreams: { everything: upstream.everything(), rogue: upstream.rogue() },
      auth: { apiKeys: [{ id: 'ops', hash: hashApiKey(key), team: 'ops' }] },
      teams: [{ name: 'ops', allow: ['upstream:rogue'] }],
    });
    try {
      const headers = { 'x-api-key': key };
      const discovered = await send(gated.url, request(1, 'server/discover'), headers);
      // ops sees rogue only: tools and logging, none of everything's prompts or resources.
      expect(discovered.body!.result).toMatchObject({ cacheScope: 'private', capabilities: { tools: expect.any(Object) } });
      const capabilities = (discovered.body!.result as { capabilities: Record<string, unknown> }).capabilities;
      expect(capabilities).not.toHaveProperty('prompts');
      expect(capabilities).not.toHaveProperty('resources');
      const tools = await send(gated.url, request(2, 'tools/list'), headers);
      const result = tools.body!.result as { tools: { name: string }[]; cacheScope: string };
      expect(result.cacheScope).toBe('private');
      expect(result.tools.length).toBeGreaterThan(0);
      expect(result.tools.every((t) => t.name.startsWith('rogue__'))).toBe(true);
      const hidden = await send(gated.url, call(3, 'everything__echo', { message: 'x' }), { ...headers, 'mcp-name': 'everything__echo' });
      expect(hidden.body).toMatchObject({ id: 3, error: { code: -32602 } });
    } finally {
      await gated.close();
    }
  });
});

describe('a sessions-era upstream', () => {
  it('that never answers server/discover is initialized after the probe times out, once per upstream', async () => {
    const silent = await startGateway({ upstreams: { quiet: upstream.rogue({ SILENT_UNKNOWN: '1' }) } });
    try {
      for (const id of [1, 2]) {
        const client = await connectClient(silent.url);
        try {
          const entries = JSON.parse(textOf(await client.callTool({ name: 'quiet__journal', arguments: {} }))) as { method?: string }[];
          // The first upstream session (the catalog's, opened by the first initialize) got the
          // probe; the era is remembered after that, so no session's own is probed again.
          expect(entries.map((m) => m.method).slice(0, 2), `session ${id}`).toEqual(['initialize', 'notifications/initialized']);
        } finally {
          await client.close();
        }
      }
    } finally {
      await silent.close();
    }
  });
});

describe('a requestState', () => {
  it('is no credential: another principal presenting it is refused, and its owner still completes the call', async () => {
    const keys = { a: 'k-alice-0123456789abcdef', b: 'k-bob-0123456789abcdef00' };
    const gated = await startGateway({
      upstreams: { rogue: upstream.rogue() },
      auth: { apiKeys: [{ id: 'alice', hash: hashApiKey(keys.a) }, { id: 'bob', hash: hashApiKey(keys.b) }] },
    });
    try {
      const named = { 'mcp-name': 'rogue__ask' };
      const asking = call(1, 'rogue__ask', { method: 'elicitation/create', params: { message: 'alice?', requestedSchema: { type: 'object', properties: {} } } });
      const first = await send(gated.url, asking, { ...named, 'x-api-key': keys.a });
      const { requestState, inputRequests } = first.body!.result as { requestState: string; inputRequests: Record<string, unknown> };
      const inputResponses = { [Object.keys(inputRequests)[0]!]: { action: 'accept', content: { who: 'answered' } } };
      const retry = (id: number) => ({ ...asking, id, params: { ...asking.params, requestState, inputResponses } });
      const stolen = await send(gated.url, retry(2), { ...named, 'x-api-key': keys.b });
      expect(stolen.body).toMatchObject({ id: 2, error: { code: -32602 } });
      const owned = await send(gated.url, retry(3), { ...named, 'x-api-key': keys.a });
      expect(owned.body).toMatchObject({ id: 3, result: { resultType: 'complete' } });
      expect(JSON.parse(textOf(owned.body!.result))).toMatchObject({ result: { action: 'accept', content: { who: 'answered' } } });
    } finally {
      await gated.close();
    }
  });
});

describe('sessions-era clients', () => {
  it('are untouched: an SDK client of 2025-11-25 still initializes and calls', async () => {
    const client = await connectClient(gw.url, {}, undefined, PRINCIPAL);
    try {
      expect(textOf(await client.callTool({ name: 'everything__echo', arguments: { message: 'old' } }))).toContain('old');
    } finally {
      await client.close();
    }
  });
});

/** The SSE messages of a response as they arrive; `next` waits (bounded) for the next one and rejects if the stream ends. */
function readEvents(res: Response): { next(): Promise<unknown> } {
  const reader = new SseReader(res);
  return {
    async next() {
      const message = await reader.nextMessage(15_000, 'an event within 15 s');
      if (!message) throw new Error('the stream ended');
      return message;
    },
  };
}
