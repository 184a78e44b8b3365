// An unknown tool, prompt, resource or method is named in the error, but a client's long string
// is not said back to it whole: the message quotes its first characters (QUOTE_LIMIT) and "…".
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { QUOTE_LIMIT } from '../../src/util/cut.js';
import { connectClient, startGateway, upstream, type TestGateway } from '../helpers/gateway.js';

let gw: TestGateway;
let client: Client;

beforeAll(async () => {
  gw = await startGateway({ upstreams: { everything: upstream.everything() } });
  client = await connectClient(gw.url);
}, 30_000);

afterAll(async () => {
  try {
    await client?.close();
  } finally {
    await gw?.close();
  }
});

const long = `everything__${'n'.repeat(200_000)}`;

/** The JSON-RPC error message the request got. */
async function messageOf(request: Promise<unknown>): Promise<string> {
  const err = await request.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(Error);
  return (err as Error).message;
}

describe('an unknown name in an error message', () => {
  it.each([
    ['tool', () => client.callTool({ name: long, arguments: {} }), 'Unknown tool: '],
    ['prompt', () => client.getPrompt({ name: long }), 'Unknown prompt: '],
    ['resource', () => client.readResource({ uri: `everything+test://${'n'.repeat(200_000)}` }), 'Unknown resource: '],
    ['method', () => client.request({ method: `x/${'n'.repeat(200_000)}`, params: {} }, z.object({}).passthrough()), 'Method not found: '],
  ])('%s: quoted cut to its first characters', async (_kind, send, prefix) => {
    const message = await messageOf(send());
    expect(message).toContain(prefix);
    expect(message).toContain('…');
    expect(message.length).toBeLessThan(QUOTE_LIMIT + 100);
  }, 30_000);

  it('a short name is quoted whole', async () => {
    expect(await messageOf(client.callTool({ name: 'everything__nope', arguments: {} }))).toContain('Unknown tool: everything__nope');
  }, 30_000);
});
