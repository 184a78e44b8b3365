// What an HTTP upstream session asked the client (sampling) ends with that session: once the
// upstream forgot it and the gateway renewed it, the old session's requests are cancelled at the
// client as a crashed child's are (docs/protocol.md, -32000), and a late answer to one goes
// nowhere. A renewed SDK server numbers its requests from 0 again: before, a late answer to the
// old session's request 0 completed the renewed session's request 0, and the renewed session's
// cancellation of its request 0 cancelled the old session's one at the client instead.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CreateMessageRequestSchema, type CreateMessageResult, type RequestId } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectClient, startGateway, textOf, until, upstream, type TestGateway } from '../helpers/gateway.js';
import { FIXTURES, NODE } from '../helpers/paths.js';
import { stopChild, waitForLine } from '../helpers/processes.js';

let child: ChildProcessWithoutNullStreams;
let url: string;
let gw: TestGateway;

beforeAll(async () => {
  child = spawn(NODE, [join(FIXTURES, 'forgetful-sampler.mjs')], { stdio: 'pipe' });
  url = (await waitForLine(child, /listening on (\S+)/))[1]!;
  gw = await startGateway({ upstreams: { s: upstream.http(url) } }, { logLevel: 'warn' });
});

afterAll(async () => {
  await gw?.close();
  if (child) await stopChild(child);
});

/** A sampling request the client got: answered by the test, or cancelled by the gateway. */
interface Asked {
  id: RequestId;
  q: string;
  cancelled: boolean;
  answer(text: string): void;
}

interface Sampler {
  client: Client;
  asked: Asked[];
  waitFor(predicate: () => boolean, what: string, timeoutMs?: number): Promise<void>;
  /** Resolves at the next sampling request or cancellation the client gets. */
  next(): Promise<void>;
}

async function sampler(): Promise<Sampler> {
  const asked: Asked[] = [];
  const wakers = new Set<() => void>();
  const wake = (): void => {
    for (const waker of wakers) waker();
  };
  const client = await connectClient(gw.url, { sampling: {} }, (c) =>
    c.setRequestHandler(CreateMessageRequestSchema, (request, extra) =>
      new Promise<CreateMessageResult>((resolve, reject) => {
        const content = request.params.messages[0]?.content as { text?: string } | undefined;
        const entry: Asked = { id: extra.requestId, q: content?.text ?? '', cancelled: false, answer: (text) => resolve({ model: 'm', role: 'assistant', content: { type: 'text', text } }) };
        extra.signal.addEventListener('abort', () => {
          entry.cancelled = true;
          reject(new Error('cancelled'));
          wake();
        });
        asked.push(entry);
        wake();
      }),
    ),
  );
  return {
    client,
    asked,
    waitFor: (predicate, what, timeoutMs = 10_000) => until(predicate, (waker) => wakers.add(waker), timeoutMs, what),
    next: () =>
      new Promise((resolve) => {
        const once = (): void => {
          wakers.delete(once);
          resolve();
        };
        wakers.add(once);
      }),
  };
}

const outcome = (call: Promise<unknown>): Promise<string> => call.then((result) => textOf(result), (err: Error) => `error: ${err.message}`);

/**
 * The client's FIRST call is waiting for its sampling answer when the upstream forgets its
 * sessions; its SECOND call reaches the renewed session (after one that met the 404, which is
 * not sent again) and is asked too. Returns both calls' outcomes.
 */
async function askAcrossRenewal(s: Sampler): Promise<{ first: Promise<string>; second: Promise<string> }> {
  const first = outcome(s.client.callTool({ name: 's__ask', arguments: { q: 'FIRST' } }));
  await s.waitFor(() => s.asked.length >= 1, 'the first sampling request');
  expect((await fetch(new URL('/forget', url), { method: 'POST' })).status).toBe(200);
  for (let attempt = 0; ; attempt++) {
    expect(attempt, 'attempts to reach the renewed session').toBeLessThan(3);
    const second = outcome(s.client.callTool({ name: 's__ask', arguments: { q: 'SECOND' } }));
    for (;;) {
      const settled = await Promise.race([second, s.next().then(() => undefined)]);
      if (s.asked.some((a) => a.q === 'SECOND')) return { first, second };
      if (settled !== undefined) {
        expect(settled).toMatch(/session expired/);
        break;
      }
    }
  }
}

describe('server-initiated requests of an upstream session the gateway renewed', () => {
  it('are cancelled at the client, and a late answer to one does not answer the renewed session\'s request of the same id', async () => {
    const s = await sampler();
    try {
      const { first, second } = await askAcrossRenewal(s);
      const [old, renewed] = [s.asked.find((a) => a.q === 'FIRST')!, s.asked.find((a) => a.q === 'SECOND')!];
      // The client answers the old session's request late (raw: the SDK drops an answer to a
      // request it saw cancelled), then the renewed session's own.
      await s.client.transport!.send({ jsonrpc: '2.0', id: old.id, result: { model: 'm', role: 'assistant', content: { type: 'text', text: 'meant for FIRST' } } });
      renewed.answer('meant for SECOND');
      expect(await second).toMatch(/question "SECOND" got answer "meant for SECOND"/);
      await s.waitFor(() => old.cancelled, 'the old session\'s sampling request cancelled at the client', 5_000);
      expect(renewed.cancelled).toBe(false);
      expect(await first).toMatch(/^error: .*session expired/);
    } finally {
      await s.client.close();
    }
  });

  it('the renewed session\'s cancellation of its request cancels that one at the client', async () => {
    const s = await sampler();
    try {
      const { second } = await askAcrossRenewal(s);
      const renewed = s.asked.find((a) => a.q === 'SECOND')!;
      expect(await (await fetch(new URL('/cancel?q=SECOND', url), { method: 'POST' })).text()).toBe('cancelled');
      await s.waitFor(() => renewed.cancelled, 'the renewed session\'s sampling request cancelled at the client', 5_000);
      expect(s.asked.every((a) => a.cancelled)).toBe(true);
      expect(await second).toMatch(/error|given up/i);
    } finally {
      await s.client.close();
    }
  });
});
