// Server-initiated requests (sampling, elicitation, roots) reach the client session that owns
// the upstream session, with gateway-issued ids, and the answer goes back to that upstream.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CreateMessageRequestSchema, ElicitRequestSchema, ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectClient, journal, startGateway, textOf, until, upstream, type TestGateway } from '../helpers/gateway.js';
import { startEverythingHttp, type EverythingHttp } from '../helpers/processes.js';

let remote: EverythingHttp;
let gw: TestGateway;

beforeAll(async () => {
  remote = await startEverythingHttp();
  gw = await startGateway({ upstreams: { everything: upstream.everything(), remote: upstream.http(remote.url), rogue: upstream.rogue() } });
});

afterAll(async () => {
  await gw?.close();
  await remote?.close();
});

/** A client that answers sampling with `reply` and records the requests it got. */
async function samplingClient(reply: string): Promise<{ client: Client; requests: { id: unknown; params: unknown }[] }> {
  const requests: { id: unknown; params: unknown }[] = [];
  const client = await connectClient(gw.url, { sampling: {} }, (c) =>
    c.setRequestHandler(CreateMessageRequestSchema, async (request, extra) => {
      requests.push({ id: extra.requestId, params: request.params });
      return { model: 'test-model', role: 'assistant', content: { type: 'text', text: reply } };
    }),
  );
  return { client, requests };
}

describe('sampling', () => {
  it.each(['everything', 'remote'])('reaches the client that called the tool and its answer reaches the upstream (%s)', async (name) => {
    const { client, requests } = await samplingClient('sampled by the client');
    try {
      const result = await client.callTool({ name: `${name}__trigger-sampling-request`, arguments: { prompt: 'say hi', maxTokens: 20 } });
      expect(textOf(result)).toContain('sampled by the client');
      expect(requests).toHaveLength(1);
      expect(requests[0]!.params).toMatchObject({ messages: [{ role: 'user', content: { type: 'text', text: expect.stringContaining('say hi') } }] });
    } finally {
      await client.close();
    }
  });

  it('lets two clients sample at the same time, each answering only its own', async () => {
    const a = await samplingClient('answer from A');
    const b = await samplingClient('answer from B');
    try {
      const [ra, rb] = await Promise.all([
        a.client.callTool({ name: 'remote__trigger-sampling-request', arguments: { prompt: 'question A', maxTokens: 20 } }),
        b.client.callTool({ name: 'remote__trigger-sampling-request', arguments: { prompt: 'question B', maxTokens: 20 } }),
      ]);
      expect(textOf(ra)).toContain('answer from A');
      expect(textOf(rb)).toContain('answer from B');
      expect(JSON.stringify(a.requests)).toContain('question A');
      expect(JSON.stringify(a.requests)).not.toContain('question B');
      expect(JSON.stringify(b.requests)).toContain('question B');
      expect(JSON.stringify(b.requests)).not.toContain('question A');
    } finally {
      await Promise.allSettled([a.client.close(), b.client.close()]);
    }
  });

  it('never reaches a client that did not declare sampling; the upstream gets an error', async () => {
    const client = await connectClient(gw.url);
    try {
      const reply = JSON.parse(textOf(await client.callTool({ name: 'rogue__ask', arguments: { method: 'sampling/createMessage', params: { messages: [], maxTokens: 1 } } })));
      expect(reply.error).toMatchObject({ code: -32601 });
    } finally {
      await client.close();
    }
  });

  it('uses gateway-issued ids towards the client, and the upstream\'s own id towards it', async () => {
    const { client, requests } = await samplingClient('ok');
    try {
      const reply = JSON.parse(textOf(await client.callTool({ name: 'rogue__ask', arguments: { method: 'sampling/createMessage', params: { messages: [], maxTokens: 1 } } })));
      expect(reply.result).toMatchObject({ model: 'test-model' });
      expect(requests).toHaveLength(1);
      expect(typeof requests[0]!.id).toBe('number'); // the rogue server used the id "rogue-1"
      const seen = await journal(client, 'rogue__journal');
      expect(seen).toContainEqual(expect.objectContaining({ id: 'rogue-1', result: expect.objectContaining({ model: 'test-model' }) }));
    } finally {
      await client.close();
    }
  });
});

describe('elicitation', () => {
  it.each(['everything', 'remote'])('asks the client and hands its answer to the tool (%s)', async (name) => {
    const messages: string[] = [];
    const client = await connectClient(gw.url, { elicitation: {} }, (c) =>
      c.setRequestHandler(ElicitRequestSchema, async (request) => {
        messages.push(String(request.params.message));
        return { action: 'accept', content: { name: 'Ada Lovelace' } };
      }),
    );
    try {
      const result = await client.callTool({ name: `${name}__trigger-elicitation-request`, arguments: {} });
      expect(JSON.stringify(result)).toContain('Ada Lovelace');
      expect(messages).toHaveLength(1);
    } finally {
      await client.close();
    }
  });
});

describe('roots', () => {
  it.each(['everything', 'remote'])('answers roots/list from the client, again after roots/list_changed (%s)', async (name) => {
    let roots = [{ uri: 'file:///first', name: 'first' }];
    let asked = 0;
    const wakers = new Set<() => void>();
    const client = await connectClient(gw.url, { roots: { listChanged: true } }, (c) =>
      c.setRequestHandler(ListRootsRequestSchema, async () => {
        asked++;
        for (const wake of wakers) wake();
        return { roots };
      }),
    );
    try {
      // server-everything asks for roots shortly after its initialization: the session's own
      // upstream session is opened by its first request that must reach the upstream.
      await client.callTool({ name: `${name}__echo`, arguments: { message: 'open' } });
      await until(() => asked >= 1, (wake) => wakers.add(wake), 10_000, 'the first roots/list');
      expect(textOf(await client.callTool({ name: `${name}__get-roots-list`, arguments: {} }))).toContain('file:///first');
      roots = [{ uri: 'file:///second', name: 'second' }];
      await client.sendRootsListChanged();
      await until(() => asked >= 2, (wake) => wakers.add(wake), 10_000, 'roots/list after list_changed');
    } finally {
      await client.close();
    }
  });
});
