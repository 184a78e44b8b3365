// A 2026-07-28 subscriptions/listen may name a resource in its bare (unprefixed) spelling, as
// an upstream wrote it, or namespaced: either way it hears that resource's updates, and two
// listens of one session holding the same resource under the two spellings count as one
// subscription upstream (closing one leaves the other's alive).
import { afterEach, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/auth/api-keys.js';
import { startGateway, upstream, type TestGateway } from '../helpers/gateway.js';
import { postRaw } from '../helpers/raw-http.js';
import { SseReader } from '../helpers/sse-reader.js';
import { sendStateless, statelessRequest, V } from '../helpers/stateless-wire.js';

const KEY = 'k-listen-spellings-0123456789';
const BARE = 'demo://resource/static/document/architecture.md';
const NS = `everything+${BARE}`;
// server-everything sends each subscribed URI an update every few seconds once toggled on.
const UPDATE_MS = 12_000;

let gw: TestGateway | undefined;
const controllers: AbortController[] = [];

afterEach(async () => {
  for (const controller of controllers.splice(0)) controller.abort();
  await gw?.close();
  gw = undefined;
});

async function listen(url: URL, id: string, uris: string[]): Promise<{ reader: SseReader; controller: AbortController }> {
  const controller = new AbortController();
  controllers.push(controller);
  const message = statelessRequest(id, 'subscriptions/listen', { notifications: { resourceSubscriptions: uris } });
  const res = await postRaw(url, message, { protocolVersion: V, headers: { 'x-api-key': KEY, 'mcp-method': 'subscriptions/listen' }, signal: controller.signal });
  expect(res.status).toBe(200);
  const reader = new SseReader(res);
  const ack = await reader.nextMessage(10_000, 'the acknowledgement');
  expect(ack).toMatchObject({ method: 'notifications/subscriptions/acknowledged', params: { notifications: { resourceSubscriptions: uris } } });
  return { reader, controller };
}

/** The URI of the listen's next resource update (failing after UPDATE_MS). */
async function nextUpdate(reader: SseReader, what: string): Promise<unknown> {
  const messages = await reader.messagesUntil((m) => 'method' in m && m.method === 'notifications/resources/updated', what, UPDATE_MS);
  return (messages.at(-1) as unknown as { params: { uri: unknown } }).params.uri;
}

describe('subscriptions/listen naming a resource bare or namespaced', () => {
  it('hears the updates under either spelling, and one listen closing leaves the other subscribed', async () => {
    gw = await startGateway({ auth: { apiKeys: [{ id: 'ci', hash: hashApiKey(KEY) }] }, upstreams: { everything: upstream.everything() } });
    const bare = await listen(gw.url, 'bare', [BARE]);
    const toggled = await sendStateless(gw.url, statelessRequest(1, 'tools/call', { name: 'everything__toggle-subscriber-updates', arguments: {} }), { 'x-api-key': KEY, 'mcp-name': 'everything__toggle-subscriber-updates' });
    expect(toggled.status).toBe(200);
    expect([BARE, NS]).toContain(await nextUpdate(bare.reader, 'an update on the bare listen'));
    const ns = await listen(gw.url, 'ns', [NS]);
    expect(await nextUpdate(ns.reader, 'an update on the namespaced listen')).toBe(NS);
    // The bare listen goes: the resource is still held (by the namespaced listen) upstream.
    bare.controller.abort();
    await nextUpdate(ns.reader, 'an update on the namespaced listen');
    await nextUpdate(ns.reader, 'an update on the namespaced listen after the bare one closed');
  }, 60_000);
});
