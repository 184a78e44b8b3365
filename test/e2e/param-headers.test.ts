// Tool parameters mirrored into Mcp-Param-* headers through the gateway (issue 22 item 6):
// towards a 2026-07-28 upstream the gateway makes them from the arguments it sends, after a
// view's rename and its pinned arguments, for clients of either era; from a 2026-07-28 client
// it checks them against the schema that client was shown (400 / -32020 when they differ), and
// CORS lets a browser client send them. The upstream is the v2 SDK fixture over HTTP, which
// refuses a call whose header is missing or differs.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/auth/api-keys.js';
import { connectClient, startGateway, textOf, type TestGateway } from '../helpers/gateway.js';
import { FIXTURES, NODE } from '../helpers/paths.js';
import { rawFetch } from '../helpers/raw-http.js';
import { stopChild, waitForLine } from '../helpers/processes.js';
import { callStateless, statelessRequest, sendStateless } from '../helpers/stateless-wire.js';

const KEYS = { plain: 'k-plain-0123456789abcdef', pinned: 'k-pinned-0123456789abcde' };

let modern: ChildProcessWithoutNullStreams;
let modernUrl: string;
let gw: TestGateway;

beforeAll(async () => {
  modern = spawn(NODE, [join(FIXTURES, 'modern-server.mjs')], { stdio: 'pipe' });
  [, modernUrl] = (await waitForLine(modern, /listening on (\S+)/)) as unknown as [string, string];
  gw = await startGateway({
    upstreams: { modern: { http: { url: modernUrl } } },
    listen: { allowedOrigins: ['https://app.example'] },
    auth: { apiKeys: [{ id: 'plain', hash: hashApiKey(KEYS.plain), team: 'plain' }, { id: 'pinned', hash: hashApiKey(KEYS.pinned), team: 'eu' }] },
    teams: [
      { name: 'plain', allow: ['modern__*'] },
      // The eu team calls the tool under its own name, and its region is fixed (and not shown).
      { name: 'eu', allow: ['modern__*'], views: { modern__region: { name: 'eu_query', pin: { region: 'eu-west1' } } } },
    ],
  }, { logLevel: 'warn' });
}, 30_000);

afterAll(async () => {
  await gw?.close();
  if (modern) await stopChild(modern);
});

const as = (key: string) => ({ 'x-api-key': key });

describe('towards a 2026-07-28 upstream', () => {
  it("mirrors the parameter for a 2026-07-28 client's call (the upstream refuses a call without it)", async () => {
    const res = await callStateless(gw.url, 1, 'modern__region', { region: 'us-west1', query: 'q' }, {}, { ...as(KEYS.plain), 'mcp-param-region': 'us-west1' });
    expect(res.status).toBe(200);
    expect(textOf(res.body!.result)).toBe('q in us-west1');
  });

  it("mirrors it for a sessions-era client's call too, which sends no such header itself", async () => {
    const client = await connectClient(gw.url, {}, undefined, as(KEYS.plain));
    try {
      expect(textOf(await client.callTool({ name: 'modern__region', arguments: { region: 'Hello, 世界', query: 'q' } }))).toBe('q in Hello, 世界');
    } finally {
      await client.close();
    }
  });

  it("makes it from a view's pinned argument, under the view's name, when the client's schema has no such parameter", async () => {
    const listed = await sendStateless(gw.url, statelessRequest(1, 'tools/list'), as(KEYS.pinned));
    const tool = (listed.body!.result as { tools: { name: string; inputSchema: { properties: Record<string, unknown> } }[] }).tools.find((t) => t.name === 'eu_query')!;
    expect(Object.keys(tool.inputSchema.properties)).toEqual(['query']);
    const res = await callStateless(gw.url, 2, 'eu_query', { query: 'q' }, {}, as(KEYS.pinned));
    expect(textOf(res.body!.result)).toBe('q in eu-west1');
  });
});

describe('from a 2026-07-28 client', () => {
  it.each([
    ['missing', {}],
    ['different from the body', { 'mcp-param-region': 'us-east1' }],
    ['malformed Base64', { 'mcp-param-region': '=?base64?dXMtd2VzdDE?=' }],
  ])('refuses a header %s with 400 / -32020, before anything reaches the upstream', async (_what, headers) => {
    const res = await callStateless(gw.url, 3, 'modern__region', { region: 'us-west1', query: 'q' }, {}, { ...as(KEYS.plain), ...headers });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ id: 3, error: { code: -32020, message: expect.stringContaining('Mcp-Param-Region') } });
  });

  it('takes a Base64 header that decodes to the body value', async () => {
    const res = await callStateless(gw.url, 4, 'modern__region', { region: 'us-west1', query: 'q' }, {}, { ...as(KEYS.plain), 'mcp-param-region': `=?base64?${Buffer.from('us-west1').toString('base64')}?=` });
    expect(textOf(res.body!.result)).toBe('q in us-west1');
  });

  it('lets a browser send them: a preflight asking for Mcp-Param headers is allowed them', async () => {
    const res = await rawFetch(gw.url, { method: 'OPTIONS', headers: { origin: 'https://app.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type, mcp-param-region, Mcp-Param-Dry-Run' } });
    expect(res.status).toBe(204);
    const allowed = (res.headers.get('access-control-allow-headers') ?? '').split(',').map((h) => h.trim());
    expect(allowed).toEqual(expect.arrayContaining(['mcp-method', 'mcp-name', 'mcp-param-region', 'mcp-param-dry-run']));
  });
});
