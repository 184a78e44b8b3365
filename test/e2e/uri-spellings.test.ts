// A team's resource rules hold however a client spells the URI: the gateway decides on, and
// sends the upstream, the canonical form of the upstream's part (WHATWG URL serialisation: the
// scheme lowercased, `.` and `..` segments resolved, tabs and newlines dropped), as the SDK's
// McpServer resolves it. So `./`, `../`, an uppercase scheme or a tab inside reach no denied
// resource by read, subscribe, unsubscribe, completion or a 2026-07-28 listen, an upstream's
// update under such a spelling is dropped, and a visible resource may be named so.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/auth/api-keys.js';
import { connectClient, endSessions, recordNotifications, startGateway, upstream, type NotificationLog, type TestGateway } from '../helpers/gateway.js';
import { postRaw } from '../helpers/raw-http.js';
import { SseReader } from '../helpers/sse-reader.js';
import { statelessRequest, V } from '../helpers/stateless-wire.js';

const KEY = 'sk-switchyard-uri-spellings-4b1d9e7a25c3';
const DOC = 'everything+demo://resource/static/document/';
const BLOB = 'everything+demo://resource/dynamic/blob/{resourceId}';
const TEXT = 'everything+demo://resource/dynamic/text/{resourceId}';

/** Other spellings of startup.md, which the team's deny (`…/document/s*`) names. */
const DENIED_DOCS = [
  `${DOC}startup.md`,
  `${DOC}./startup.md`,
  `${DOC}%2e/startup.md`,
  'everything+demo://resource/static/x/../document/startup.md',
  'everything+DEMO://resource/static/document/startup.md',
  `${DOC}\tstartup.md`,
  `${DOC}\nstartup.md`,
];
/** Other spellings of the blob template, which the team's deny (`…/dynamic/blob/*`) names. */
const DENIED_TEMPLATES = [
  BLOB,
  'everything+demo://resource/dynamic/./blob/{resourceId}',
  'everything+demo://resource/dynamic/x/../blob/{resourceId}',
  'everything+Demo://resource/dynamic/blob/{resourceId}',
  'everything+demo://resource/dynamic/bl\tob/{resourceId}',
];

let gw: TestGateway;
const opened: Client[] = [];

beforeAll(async () => {
  gw = await startGateway({
    auth: { apiKeys: [{ id: 'bot', hash: hashApiKey(KEY), team: 'support' }] },
    teams: [
      {
        name: 'support',
        allow: ['upstream:everything', 'upstream:rogue', 'upstream:paged'],
        deny: [`${DOC}s*`, 'everything+demo://resource/dynamic/blob/*', 'rogue+secret://vault/k*'],
      },
    ],
    upstreams: { everything: upstream.everything(), rogue: upstream.rogue(), paged: upstream.paged() },
  });
});

afterEach(() => endSessions(opened));
afterAll(async () => {
  await gw?.close();
});

async function client(notes?: (log: NotificationLog) => void): Promise<Client> {
  const c = await connectClient(gw.url, {}, notes && ((prepared) => notes(recordNotifications(prepared))), { 'x-api-key': KEY });
  opened.push(c);
  return c;
}

/** The error a request ended with, as code and message; or `answered`. */
async function outcome(request: Promise<unknown>): Promise<unknown> {
  try {
    await request;
    return 'answered';
  } catch (err) {
    const { code, message } = err as { code?: number; message: string };
    return { code, message: message.replace(/^MCP error -?\d+: /, '') };
  }
}

const unknown = (uri: string) => ({ code: -32602, message: `Unknown resource: ${uri}` });

/** The outcome of `request` for each URI, one after another. */
async function each(uris: readonly string[], request: (uri: string) => Promise<unknown>): Promise<unknown[]> {
  const outcomes: unknown[] = [];
  for (const uri of uris) outcomes.push(await outcome(request(uri)));
  return outcomes;
}

describe('another spelling of a denied resource URI', () => {
  it('is an unknown resource to resources/read', async () => {
    const c = await client();
    const uris = [...DENIED_DOCS, 'everything+demo://resource/dynamic/./blob/1', 'everything+DEMO://resource/dynamic/blob/1'];
    expect(await each(uris, (uri) => c.readResource({ uri }))).toEqual(uris.map(unknown));
  });

  it('is an unknown resource to resources/subscribe and resources/unsubscribe', async () => {
    const c = await client();
    expect(await each(DENIED_DOCS, (uri) => c.subscribeResource({ uri }))).toEqual(DENIED_DOCS.map(unknown));
    expect(await each(DENIED_DOCS, (uri) => c.unsubscribeResource({ uri }))).toEqual(DENIED_DOCS.map(unknown));
  });

  it('is an unknown resource to completion/complete', async () => {
    const c = await client();
    const argument = { name: 'resourceId', value: '7' };
    expect(await each(DENIED_TEMPLATES, (uri) => c.complete({ ref: { type: 'ref/resource', uri }, argument }))).toEqual(DENIED_TEMPLATES.map(unknown));
  });

  it('is not held by a 2026-07-28 subscriptions/listen', async () => {
    const controller = new AbortController();
    try {
      const visible = `${DOC}architecture.md`;
      const uris = [...DENIED_DOCS, visible];
      const message = statelessRequest('listen', 'subscriptions/listen', { notifications: { resourceSubscriptions: uris } });
      const res = await postRaw(gw.url, message, { protocolVersion: V, headers: { 'x-api-key': KEY, 'mcp-method': 'subscriptions/listen' }, signal: controller.signal });
      expect(res.status).toBe(200);
      const ack = await new SseReader(res).nextMessage(10_000, 'the acknowledgement');
      expect(ack).toMatchObject({ method: 'notifications/subscriptions/acknowledged', params: { notifications: { resourceSubscriptions: [visible] } } });
    } finally {
      controller.abort();
    }
  });

  it('in an upstream\'s resources/updated does not reach the client', async () => {
    let notes: NotificationLog | undefined;
    const c = await client((log) => (notes = log));
    const updated = (uri: string) => c.callTool({ name: 'rogue__notify', arguments: { method: 'notifications/resources/updated', params: { uri } } });
    for (const uri of ['secret://vault/./key', 'SECRET://vault/key', 'secret://vault/x/../key', 'secret://vault/\tkey']) await updated(uri);
    await updated('public://board');
    await notes!.waitFor((n) => n.method === 'notifications/resources/updated' && n.params?.uri === 'rogue+public://board', 'the visible update');
    // Relayed in order: every hidden one before it would have arrived first.
    expect(notes!.all.filter((n) => n.method === 'notifications/resources/updated')).toEqual([{ method: 'notifications/resources/updated', params: { uri: 'rogue+public://board' } }]);
  });
});

describe('another spelling of a visible resource URI', () => {
  it('reads and subscribes to the resource, sent to the upstream in its canonical form', async () => {
    const c = await client();
    for (const uri of [`${DOC}./architecture.md`, 'everything+DEMO://resource/static/x/../document/architecture.md', `${DOC}arch\titecture.md`]) {
      const read = await c.readResource({ uri });
      expect(read.contents[0], JSON.stringify(uri)).toMatchObject({ uri: `${DOC}architecture.md` });
      expect(await outcome(c.subscribeResource({ uri }))).toBe('answered');
      expect(await outcome(c.unsubscribeResource({ uri }))).toBe('answered');
    }
  });

  it('reaches the upstream in its canonical form only', async () => {
    // paged's resources/read and completion/complete answer with the URI they were sent.
    const c = await client();
    const spellings = ['paged+fixture://item/./3', 'paged+FIXTURE://item/x/../3', 'paged+fixture://item/\t3', 'paged+fixture://item/x/%2E%2e/3'];
    const read = async (uri: string) => ((await c.readResource({ uri })).contents[0] as { text: string }).text;
    for (const uri of spellings) expect(await read(uri), JSON.stringify(uri)).toBe('content of fixture://item/3');
    const complete = async (uri: string) => (await c.complete({ ref: { type: 'ref/resource', uri }, argument: { name: 'id', value: '7' } })).completion.values;
    for (const uri of ['paged+fixture://item/./{id}', 'paged+Fixture://item/{id}']) expect(await complete(uri), JSON.stringify(uri)).toEqual(['ref/resource:fixture://item/{id}:7']);
  });

  it('completes a template, whose braces stay as the upstream wrote them', async () => {
    const c = await client();
    const argument = { name: 'resourceId', value: '7' };
    for (const uri of [TEXT, 'everything+demo://resource/dynamic/./text/{resourceId}', 'everything+DEMO://resource/dynamic/text/{resourceId}']) {
      expect((await c.complete({ ref: { type: 'ref/resource', uri }, argument })).completion.values, JSON.stringify(uri)).toEqual(['7']);
    }
  });
});
