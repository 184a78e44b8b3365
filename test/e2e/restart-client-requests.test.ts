// A request an upstream sent the client (sampling) outlives the child that sent it when the
// child crashes and restarts: the client is told it is cancelled, and its late answer never
// reaches the new child, which numbers its own requests afresh (the same ids), so the answer
// would be taken for the answer to another request.
import { CreateMessageRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterEach, describe, expect, it } from 'vitest';
import { connectClient, startGateway, textOf, upstream, type TestGateway } from '../helpers/gateway.js';

interface Asked {
  id: unknown;
  text: string;
  answer: (result: unknown) => void;
}

let gw: TestGateway | undefined;
let client: Client | undefined;
afterEach(async () => {
  await client?.close();
  await gw?.close();
});

const sampling = (text: string) => ({ method: 'sampling/createMessage', params: { messages: [{ role: 'user', content: { type: 'text', text } }], maxTokens: 10 } });
const reply = (text: string) => ({ role: 'assistant', model: 'm', content: { type: 'text', text } });

describe("a server's request to the client, when the server restarts", () => {
  it('is cancelled at the client, and a late answer to it is not taken for a new request', async () => {
    gw = await startGateway({ upstreams: { rogue: { ...upstream.rogue(), restart: { backoff: 50 } } } });
    const asked: Asked[] = [];
    const cancelled: unknown[] = [];
    client = await connectClient(gw.url, { sampling: {} }, (c) => {
      c.setRequestHandler(CreateMessageRequestSchema, (request, extra) => {
        extra.signal.addEventListener('abort', () => cancelled.push(extra.requestId));
        return new Promise((resolve) => asked.push({ id: extra.requestId, text: (request.params.messages[0]!.content as { text: string }).text, answer: resolve as (result: unknown) => void }));
      });
    });
    const first = client.callTool({ name: 'rogue__ask', arguments: sampling('FIRST') }).catch((err: Error) => err);
    await expect.poll(() => asked.length, { timeout: 10_000 }).toBe(1);
    await client.callTool({ name: 'rogue__crash', arguments: {} }).catch(() => undefined);
    expect(await first).toBeInstanceOf(Error);
    // The client hears that the request of the child that died is over.
    await expect.poll(() => cancelled, { timeout: 10_000 }).toContain(asked[0]!.id);
    const second = client.callTool({ name: 'rogue__ask', arguments: sampling('SECOND') });
    await expect.poll(() => asked.length, { timeout: 10_000 }).toBe(2);
    asked[0]!.answer(reply('ANSWER TO FIRST'));
    asked[1]!.answer(reply('ANSWER TO SECOND'));
    expect(textOf(await second)).toContain('ANSWER TO SECOND');
  });
});
