// A sessions-era client calling a 2026-07-28-only upstream (bridged): the upstream's
// input_required reaches the client as elicitation/create. The upstream answered input_required
// and holds nothing, so when the client cancels its call while that elicitation is open, only
// the gateway can withdraw it: the client gets notifications/cancelled for it, and the slot it
// held of the upstream's maxClientRequests is free for the next call's elicitation.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { join } from 'node:path';
import { CallToolResultSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { connectClient, startGateway, textOf, until, type TestGateway } from '../helpers/gateway.js';
import { FIXTURES, NODE } from '../helpers/paths.js';
import { stopChild, waitForLine } from '../helpers/processes.js';

let modern: ChildProcessWithoutNullStreams;
let gw: TestGateway;

beforeAll(async () => {
  modern = spawn(NODE, [join(FIXTURES, 'modern-server.mjs')], { stdio: 'pipe' });
  const [, url] = await waitForLine(modern, /listening on (\S+)/);
  gw = await startGateway({ upstreams: { modern: { http: { url: url! }, maxClientRequests: 1 } } }, { logLevel: 'warn' });
});

afterAll(async () => {
  await gw?.close();
  if (modern) await stopChild(modern);
});

it('withdraws the elicitation of a cancelled call at the client and frees its slot', async () => {
  /** Each elicitation the client was asked, and the reason its handler's signal aborted with (a notifications/cancelled's). */
  const asked: { withdrawn: Promise<unknown> }[] = [];
  const wakers = new Set<() => void>();
  const client = await connectClient(gw.url, { elicitation: {} }, (c) =>
    c.setRequestHandler(ElicitRequestSchema, async (_request, extra) => {
      const withdrawn = new Promise<unknown>((resolve) => extra.signal.addEventListener('abort', () => resolve(extra.signal.reason), { once: true }));
      asked.push({ withdrawn });
      for (const wake of wakers) wake();
      // The first is never answered: only a cancellation ends it. The second is.
      if (asked.length > 1) return { action: 'accept', content: { name: 'Ada' } };
      await withdrawn;
      throw new Error('withdrawn');
    }),
  );
  try {
    const abort = new AbortController();
    const first = client.callTool({ name: 'modern__ask', arguments: {} }, CallToolResultSchema, { signal: abort.signal });
    await until(() => asked.length === 1, (wake) => wakers.add(wake), 10_000, 'the first elicitation');
    abort.abort('the user gave up');
    await expect(first).rejects.toThrow(/the user gave up/);

    // The gateway's notifications/cancelled for it aborts the handler with its reason (a close would give none).
    const reason = await Promise.race([asked[0]!.withdrawn, new Promise((resolve) => setTimeout(() => resolve('not withdrawn within 10 s'), 10_000).unref())]);
    expect(reason).toBe('the request was cancelled');

    // maxClientRequests: 1, and the slot is free again: the second call is asked, and answered.
    const second = await client.callTool({ name: 'modern__ask', arguments: {} }, CallToolResultSchema, { timeout: 10_000 });
    expect(asked).toHaveLength(2);
    expect(textOf(second)).toMatch(/^hello Ada/);
  } finally {
    await client.close();
  }
});
