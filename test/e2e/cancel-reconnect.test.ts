// After the official SDK client cancels a call answered over SSE, its reconnection ends quietly
// ("Hold under hostile load", item 8): the request stream ended without a response, the client
// resumes it with Last-Event-ID, and the gateway tells it the stream is over, so it neither
// falls back to a plain GET (409 while the session's GET stream is open) nor gives up with
// "Maximum reconnection attempts exceeded".
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { poll } from '../helpers/cli.js';
import { startGateway, textOf, upstream, type TestGateway } from '../helpers/gateway.js';

/** The reconnect delay the gateway suggests; short, so a reconnection loop shows quickly. */
const RETRY_MS = 100;

interface Exchange {
  method: string;
  lastEventId: string | null;
  status: number;
  /** The answer carried a body (an SSE stream, for a GET). */
  body: boolean;
}

let gw: TestGateway;

beforeAll(async () => {
  gw = await startGateway({ upstreams: { everything: upstream.everything() }, sessions: { retry: RETRY_MS } }, { logLevel: 'info' });
});

afterAll(async () => {
  await gw?.close();
});

/** The SDK client over Streamable HTTP, with every HTTP exchange and every reported error recorded. */
async function recordedClient(): Promise<{ client: Client; exchanges: Exchange[]; errors: Error[] }> {
  const exchanges: Exchange[] = [];
  const errors: Error[] = [];
  const recording = async (url: string | URL, init?: RequestInit): Promise<Response> => {
    const response = await fetch(url, init);
    const headers = new Headers(init?.headers);
    exchanges.push({ method: init?.method ?? 'GET', lastEventId: headers.get('last-event-id'), status: response.status, body: response.body !== null });
    return response;
  };
  const client = new Client({ name: 'switchyard-test', version: '1.0.0' }, { capabilities: {} });
  client.onerror = (err) => void errors.push(err);
  const transport = new StreamableHTTPClientTransport(gw.url, {
    fetch: recording,
    reconnectionOptions: { initialReconnectionDelay: 50, maxReconnectionDelay: 500, reconnectionDelayGrowFactor: 1.5, maxRetries: 20 },
  });
  await client.connect(transport);
  return { client, exchanges, errors };
}

const isResume = (e: Exchange): boolean => e.method === 'GET' && e.lastEventId !== null;

describe('a call cancelled by the SDK client', () => {
  it('ends its stream so that the client stops reconnecting without an error or a 409', async () => {
    const { client, exchanges, errors } = await recordedClient();
    try {
      // The SDK opens the session's GET stream once initialized.
      await poll(() => (exchanges.some((e) => e.method === 'GET' && e.lastEventId === null && e.status === 200) ? true : undefined), 'the GET stream');

      const abort = new AbortController();
      const call = client.callTool({ name: 'everything__trigger-long-running-operation', arguments: { duration: 5, steps: 5 } }, undefined, {
        signal: abort.signal,
        onprogress: () => abort.abort('the user gave up'),
      });
      await expect(call).rejects.toThrow(/gave up|abort/i);

      // The client resumes the ended stream; the sequence is over when the gateway's answer
      // leaves it nothing to read (no stream), or when it runs into a 409 or gives up.
      await poll(
        () => (exchanges.some((e) => isResume(e) && !e.body) || exchanges.some((e) => e.status === 409) || errors.length > 0 ? true : undefined),
        'the reconnection sequence to end',
        15_000,
      );
      expect(exchanges.filter(isResume).map((e) => e.status)).toEqual([204]);
      expect(exchanges.filter((e) => e.status === 409)).toEqual([]);
      expect(errors.map((e) => e.message)).toEqual([]);

      // The session goes on: a later call is answered, and still nothing went wrong.
      expect(textOf(await client.callTool({ name: 'everything__echo', arguments: { message: 'after the cancel' } }))).toContain('after the cancel');
      expect(exchanges.filter((e) => e.status === 409 || e.status >= 500)).toEqual([]);
      expect(errors.map((e) => e.message)).toEqual([]);
      // Only the GET stream opened at connect: the client never fell back to a plain GET.
      expect(exchanges.filter((e) => e.method === 'GET' && e.lastEventId === null)).toHaveLength(1);
    } finally {
      await client.close();
    }
  });
});
