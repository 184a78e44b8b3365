// 2026-07-28 clients never share state with another client (issue 22 item 4), and a 2026-07-28
// upstream's multi round-trip reaches a 2026-07-28 client as the upstream made it (item 6).
// Without a principal nothing tells two clients apart, so each request gets a gateway-held
// session of its own, ended with it; one principal's requests share one (documented). Real
// server-everything over stdio, the rogue fixture, and the v2 SDK 2026-07-28 fixture over HTTP;
// raw 2026-07-28 requests.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/auth/api-keys.js';
import { startGateway, textOf, upstream, type TestGateway } from '../helpers/gateway.js';
import { poll } from '../helpers/cli.js';
import { FIXTURES, NODE } from '../helpers/paths.js';
import { postRaw } from '../helpers/raw-http.js';
import { SseReader } from '../helpers/sse-reader.js';
import { startEverythingHttp, stopChild, waitForLine } from '../helpers/processes.js';
import { randomBytes } from 'node:crypto';
import { callStateless, META, sendStateless, statelessCall, statelessRequest, V } from '../helpers/stateless-wire.js';
import { descendantsOf } from '../helpers/children.js';

const KEY = 'k-iso-0123456789abcdef';
const PRINCIPAL = { 'x-api-key': KEY };

let modern: ChildProcessWithoutNullStreams;
let modernUrl: URL;
let anonymous: TestGateway;
let keyed: TestGateway;

beforeAll(async () => {
  modern = spawn(NODE, [join(FIXTURES, 'modern-server.mjs')], { stdio: 'pipe' });
  const [, url] = await waitForLine(modern, /listening on (\S+)/);
  modernUrl = new URL(url!);
  const upstreams = { everything: upstream.everything(), rogue: upstream.rogue(), modern: upstream.http(url!) };
  [anonymous, keyed] = await Promise.all([
    startGateway({ upstreams }, { logLevel: 'warn' }),
    startGateway({ upstreams, auth: { apiKeys: [{ id: 'iso', hash: hashApiKey(KEY) }] } }, { logLevel: 'warn' }),
  ]);
}, 30_000);

afterAll(async () => {
  await Promise.allSettled([anonymous?.close(), keyed?.close()]);
  if (modern) await stopChild(modern);
});

const gzipArgs = (name: string) => ({ name, data: `data:text/plain;base64,${Buffer.from(`made by ${name}`).toString('base64')}`, outputType: 'resourceLink' });

/** The resource link a tool answered with. */
function linkOf(result: unknown): string {
  const link = (result as { content: { type: string; uri?: string }[] }).content.find((b) => b.type === 'resource_link');
  if (!link?.uri) throw new Error(`no resource link in ${JSON.stringify(result)}`);
  return link.uri;
}

async function resourceUris(url: URL, headers: Record<string, string> = {}): Promise<string[]> {
  const listed = await sendStateless(url, statelessRequest(1, 'resources/list'), headers);
  return ((listed.body!.result as { resources: { uri: string }[] }).resources).map((r) => r.uri);
}

describe('two anonymous 2026-07-28 clients with the same clientInfo and capabilities', () => {
  it('share nothing: B neither lists nor reads the session resource A created', async () => {
    const created = await callStateless(anonymous.url, 1, 'everything__gzip-file-as-resource', gzipArgs('a-only.txt.gz'));
    const uri = linkOf(created.body!.result);
    expect(uri).toBe('everything+demo://resource/session/a-only.txt.gz');
    // B is indistinguishable from A on the wire: same _meta, no principal.
    expect(await resourceUris(anonymous.url)).not.toContain(uri);
    const read = await sendStateless(anonymous.url, statelessRequest(2, 'resources/read', { uri }), { 'mcp-name': uri });
    expect(read.body).toMatchObject({ id: 2, error: { code: -32602, data: { uri } } });
  });

  it("never carry the other's upstream log lines on their streams", async () => {
    const withLogs = { ...META, 'io.modelcontextprotocol/logLevel': 'debug' };
    // B runs a long call that reports progress (so its answer is a stream it reads as it goes).
    const b = await postRaw(anonymous.url, statelessCall(1, 'rogue__progress', { count: 3, intervalMs: 300 }, {}, { ...withLogs, progressToken: 'b' }), {
      protocolVersion: V,
      headers: { 'mcp-method': 'tools/call', 'mcp-name': 'rogue__progress' },
      signal: AbortSignal.timeout(15_000),
    });
    const stream = new SseReader(b);
    expect(await stream.nextMessage(10_000, 'B running')).toMatchObject({ method: 'notifications/progress' });
    // While B runs, A's call makes rogue log a line: A hears it, B must not.
    const a = await callStateless(anonymous.url, 2, 'rogue__notify', { method: 'notifications/message', params: { level: 'warning', data: 'from A' } }, {}, {}, withLogs);
    expect(a.messages.map((m) => m.method ?? 'result')).toEqual(['notifications/message', 'result']);
    const rest: unknown[] = [];
    for (let m = await stream.nextMessage(10_000, 'B'); m; m = await stream.nextMessage(10_000, 'B')) {
      rest.push(m);
      if ('result' in (m as object) || 'error' in (m as object)) break;
    }
    expect(JSON.stringify(rest)).not.toContain('from A');
    expect(rest.at(-1)).toMatchObject({ id: 1, result: { resultType: 'complete' } });
  });

  it('each get a gateway-held session that ends with the request: none is left, nor its own child', async () => {
    const before = await descendantsOf();
    await callStateless(anonymous.url, 1, 'everything__echo', { message: 'alone' });
    const health = async () => (await (await fetch(new URL('/healthz', anonymous.url))).json()) as { sessions: number };
    await poll(async () => ((await health()).sessions === 0 ? true : undefined), 'no session left');
    // The call's own everything child (spawned for it) is stopped with its session.
    await poll(async () => {
      const now = await descendantsOf();
      return now.filter((pid) => !before.includes(pid)).length === 0 ? true : undefined;
    }, 'no child left');
  });
});

describe('an anonymous 2026-07-28 request with self-describing session ids configured', () => {
  it('opens no upstream session of an HTTP upstream just to list (its session has no id to carry it in)', async () => {
    const remote = await startEverythingHttp();
    const gw = await startGateway({ upstreams: { remote: upstream.http(remote.url) }, sessions: { keys: [randomBytes(36).toString('base64url')] } }, { logLevel: 'warn' });
    try {
      for (let id = 1; id <= 3; id++) expect((await sendStateless(gw.url, statelessRequest(id, 'tools/list'))).status).toBe(200);
      // The catalog's one initialize, none per request.
      expect((await remote.stats()).initializes).toBe(1);
    } finally {
      await gw.close();
      await remote.close();
    }
  });
});

describe('anonymous 2026-07-28 requests to a shared child (sharing: shared)', () => {
  it("read its lists from the hub's cache: one tools/list reaches the child for any number of requests", async () => {
    const gw = await startGateway({ upstreams: { rogue: { ...upstream.rogue(), sharing: 'shared' } } }, { logLevel: 'warn' });
    try {
      for (let id = 1; id <= 3; id++) {
        await sendStateless(gw.url, statelessRequest(id, 'tools/list'));
        expect(textOf((await callStateless(gw.url, id, 'rogue__pid')).body!.result)).toMatch(/^\d+$/);
      }
      const journal = JSON.parse(textOf((await callStateless(gw.url, 9, 'rogue__journal')).body!.result)) as { method?: string }[];
      expect(journal.filter((m) => m.method === 'tools/list')).toHaveLength(1);
      expect(journal.filter((m) => m.method === 'tools/call')).toHaveLength(4);
    } finally {
      await gw.close();
    }
  });
});

describe("one principal's 2026-07-28 requests", () => {
  it('share its gateway-held session: what one request created, the next one reads (documented)', async () => {
    const created = await callStateless(keyed.url, 1, 'everything__gzip-file-as-resource', gzipArgs('shared.txt.gz'), {}, PRINCIPAL);
    const uri = linkOf(created.body!.result);
    expect(await resourceUris(keyed.url, PRINCIPAL)).toContain(uri);
    const read = await sendStateless(keyed.url, statelessRequest(2, 'resources/read', { uri }), { 'mcp-name': uri, ...PRINCIPAL });
    expect(read.body).toMatchObject({ id: 2, result: { contents: [{ uri }] } });
  });
});

describe("a 2026-07-28 upstream's input_required, to a 2026-07-28 client", () => {
  const answer = (key: string, text: string) => ({ [key]: { action: 'accept', content: { answer: text } } });
  type Round = { resultType: string; inputRequests: Record<string, { method: string }>; requestState: string };

  it('passes through as the upstream made it: its input keys and a fresh requestState each round, directly and through Switchyard alike', async () => {
    const run = async (url: URL, name: string): Promise<{ rounds: Round[]; final: string }> => {
      const rounds: Round[] = [];
      let extra: Record<string, unknown> = {};
      for (let id = 1; id <= 4; id++) {
        const res = await callStateless(url, id, name, {}, extra);
        const result = res.body!.result as Round & { content?: unknown };
        if (result.resultType !== 'input_required') return { rounds, final: textOf(result) };
        rounds.push({ resultType: result.resultType, inputRequests: result.inputRequests, requestState: result.requestState });
        const key = Object.keys(result.inputRequests)[0]!;
        extra = { inputResponses: answer(key, `answer ${id}`), requestState: result.requestState };
      }
      throw new Error('too many rounds');
    };
    const direct = await run(modernUrl, 'rounds');
    const through = await run(anonymous.url, 'modern__rounds');
    expect(direct.rounds.map((r) => [Object.keys(r.inputRequests), r.requestState])).toEqual([
      [['q1'], 'round-1'],
      [['q2'], 'round-2'],
    ]);
    expect(through.rounds).toEqual(direct.rounds);
    expect(through.final).toBe(direct.final);
    expect(through.final).toBe('rounds done: last state round-2, last answer answer 2');
  });

  it('keeps no call waiting in the gateway: each round is its own request, answered by the upstream', async () => {
    const first = await callStateless(anonymous.url, 1, 'modern__ask', {});
    const result = first.body!.result as Round;
    expect(result).toMatchObject({ resultType: 'input_required', requestState: 'asked-once', inputRequests: { user_name: { method: 'elicitation/create' } } });
    const health = async () => (await (await fetch(new URL('/healthz', anonymous.url))).json()) as { sessions: number };
    await poll(async () => ((await health()).sessions === 0 ? true : undefined), 'no session held for the round');
    const second = await callStateless(anonymous.url, 2, 'modern__ask', {}, { inputResponses: { user_name: { action: 'accept', content: { name: 'Ada' } } }, requestState: 'asked-once' });
    expect(textOf(second.body!.result)).toBe('hello Ada (state asked-once)');
  });

  it("refuses a requestState the gateway did not issue for a sessions-era upstream (it made none), and does not run the call", async () => {
    const res = await callStateless(anonymous.url, 1, 'rogue__notify', { method: 'notifications/message', params: { level: 'error', data: 'ran' } }, { requestState: 'forged', inputResponses: {} }, {}, { ...META, 'io.modelcontextprotocol/logLevel': 'debug' });
    expect(res.body).toMatchObject({ id: 1, error: { code: -32602, message: expect.stringContaining('requestState') } });
    expect(res.messages).toEqual([]);
  });
});
