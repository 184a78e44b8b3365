// A session taken over on another replica (self-describing ids, `sessions.keys`): requests that
// reach that replica while it is still opening the session's upstreams wait for them, instead
// of finding the session there with nothing attached (an unavailable upstream, an empty list).
import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { startGateway, upstream, type TestGateway } from '../helpers/gateway.js';
import { initializeRaw, postRpc } from '../helpers/raw-http.js';

const gateways: TestGateway[] = [];
afterEach(async () => {
  await Promise.all(gateways.splice(0).map((gw) => gw.close()));
});

async function replica(keys: string[]): Promise<TestGateway> {
  const gw = await startGateway({ sessions: { keys }, upstreams: { everything: upstream.everything() } });
  gateways.push(gw);
  return gw;
}

describe('a session taken over by another replica', () => {
  it('answers every request that arrives while its upstreams open as the first one is answered', async () => {
    const keys = [randomBytes(32).toString('hex')];
    const [a, b] = [await replica(keys), await replica(keys)];
    const session = await initializeRaw(a.url);
    // The first request starts the takeover on b (a stdio child to spawn); the others arrive meanwhile.
    const call = (id: number) => postRpc(b.url, { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'everything__echo', arguments: { message: `m${id}` } } }, { headers: session.headers });
    const list = postRpc(b.url, { jsonrpc: '2.0', id: 9, method: 'tools/list', params: {} }, { headers: session.headers });
    const answers = await Promise.all([call(1), call(2), call(3), list]);
    for (const [i, reply] of answers.slice(0, 3).entries()) {
      expect(reply.status, reply.text).toBe(200);
      expect(reply.messages[0]?.result, reply.text).toBeDefined();
      expect(JSON.stringify(reply.messages[0]?.result)).toContain(`m${i + 1}`);
    }
    const tools = (answers[3]!.messages[0]?.result as { tools?: unknown[] } | undefined)?.tools ?? [];
    expect(tools.length).toBeGreaterThan(0);
  });
});
