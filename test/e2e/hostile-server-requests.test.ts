// An upstream that floods its client with server-initiated requests the client never answers
// ("Hold under hostile load", item 4): only `maxClientRequests` of them are in flight per
// upstream session, the excess is refused to the upstream at once, the ones in flight time out,
// and the gateway's memory and its other sessions are unaffected.
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CreateMessageRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { poll } from '../helpers/cli.js';
import { connectClient, startGateway, textOf, type TestGateway } from '../helpers/gateway.js';
import { scrape } from '../helpers/metrics.js';
import { FIXTURES, NODE } from '../helpers/paths.js';

/** The default cap of server-initiated requests in flight per upstream session. */
const CAP = 64;
const FLOOD = 20_000;
const REFUSED = -32003;
const TIMED_OUT = -32001;

// A forced collection makes heap figures comparable; vitest does not start node with --expose-gc.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

let gw: TestGateway;
const flood = () => ({ stdio: { command: NODE, args: [join(FIXTURES, 'flood-server.mjs')] } });

beforeAll(async () => {
  gw = await startGateway(
    // `brief` is the same server with deadlines short enough to watch them pass.
    { metrics: { enabled: true }, upstreams: { flood: flood(), brief: { ...flood(), timeoutMs: 1_500, maxTotalTimeoutMs: 1_500 } } },
    { logLevel: 'info' },
  );
});

afterAll(async () => {
  await gw?.close();
});

/** A client that declares sampling and never answers it; `asked` counts what reached it. */
async function silentClient(): Promise<{ client: Client; asked: () => number }> {
  let asked = 0;
  const client = await connectClient(gw.url, { sampling: {} }, (c) =>
    c.setRequestHandler(CreateMessageRequestSchema, () => {
      asked++;
      return new Promise<never>(() => {});
    }),
  );
  return { client, asked: () => asked };
}

interface Tally {
  answered: number;
  errors: Record<string, number>;
}

async function tally(client: Client, upstream: string): Promise<Tally> {
  return JSON.parse(textOf(await client.callTool({ name: `${upstream}__tally`, arguments: {} }))) as Tally;
}

function heapUsed(): number {
  gc();
  return process.memoryUsage().heapUsed;
}

async function serverRequests(outcome: string): Promise<number> {
  const series = await scrape(new URL('/metrics', gw.url));
  return series.get(`switchyard_server_requests_total{method="sampling/createMessage",outcome="${outcome}"}`) ?? 0;
}

describe('server-initiated requests to a client that never answers', () => {
  it('are capped per upstream session: the excess is refused at once and memory stays bounded', async () => {
    const { client, asked } = await silentClient();
    const other = await connectClient(gw.url);
    try {
      await client.listTools();
      const limitedBefore = await serverRequests('limited');
      const heapBefore = heapUsed();
      const started = Date.now();
      expect(textOf(await client.callTool({ name: 'flood__flood', arguments: { count: FLOOD } }))).toBe(`sent ${FLOOD}`);
      const seen = await poll(async () => {
        const t = await tally(client, 'flood');
        return (t.errors[REFUSED] ?? 0) >= FLOOD - CAP ? t : undefined;
      }, `${FLOOD - CAP} refusals at the upstream`, 15_000, 100);
      const elapsed = Date.now() - started;
      const growth = heapUsed() - heapBefore;
      console.log(`flood of ${FLOOD}: refusals after ${elapsed} ms, heap growth ${(growth / 1048576).toFixed(1)} MiB, ${asked()} reached the client`);

      // Exactly the cap is in flight (none answered, none timed out yet); the rest were refused.
      expect(seen).toEqual({ answered: 0, errors: { [REFUSED]: FLOOD - CAP } });
      expect(asked()).toBe(CAP);
      expect(growth).toBeLessThan(16 * 1048576);
      expect((await serverRequests('limited')) - limitedBefore).toBe(FLOOD - CAP);

      // The flooded session and another one are both served as usual.
      await client.ping();
      expect((await other.listTools()).tools.map((t) => t.name)).toContain('flood__tally');
      expect(await tally(other, 'flood')).toEqual({ answered: 0, errors: {} });
    } finally {
      await other.close();
      await client.close();
    }
  });

  it('time out, are answered with an error to the upstream and free their slots', async () => {
    const { client, asked } = await silentClient();
    try {
      const failedBefore = await serverRequests('failed');
      await client.callTool({ name: 'brief__flood', arguments: { count: CAP + 10 } });
      expect((await tally(client, 'brief')).errors[REFUSED]).toBe(10);
      const done = await poll(async () => {
        const t = await tally(client, 'brief');
        return t.errors[TIMED_OUT] === CAP ? t : undefined;
      }, 'every request in flight timed out', 10_000, 100);
      expect(done).toEqual({ answered: 0, errors: { [REFUSED]: 10, [TIMED_OUT]: CAP } });
      expect((await serverRequests('failed')) - failedBefore).toBe(CAP);

      // The slots are free again: a new flood gets the full cap through.
      await client.callTool({ name: 'brief__flood', arguments: { count: CAP + 1 } });
      await poll(async () => ((await tally(client, 'brief')).errors[REFUSED] === 11 ? true : undefined), 'the second flood refused beyond the cap');
      expect(asked()).toBe(2 * CAP);
    } finally {
      await client.close();
    }
  });
});
