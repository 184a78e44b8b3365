// The gateway's pooled connections to an HTTP upstream: one idle between requests is closed by
// the gateway before an upstream that gives no Keep-Alive hint (uvicorn, Go; 5 s is common)
// closes it, so no call is ever written on a connection the upstream is closing at that moment
// (it would fail, and a POST cannot be sent again: the upstream may have read it).
import { afterEach, describe, expect, it } from 'vitest';
import { poll } from '../helpers/cli.js';
import { startFlakyHttp, type FlakyHttp } from '../helpers/flaky-http.js';
import { connectClient, startGateway, textOf, upstream, type TestGateway } from '../helpers/gateway.js';

let gw: TestGateway | undefined;
let flaky: FlakyHttp | undefined;
afterEach(async () => {
  await gw?.close();
  await flaky?.close();
  gw = undefined;
  flaky = undefined;
});

describe('connections to an HTTP upstream', () => {
  it('an idle one is closed by the gateway before an upstream without a Keep-Alive hint closes it', async () => {
    flaky = await startFlakyHttp({ idleCloseMs: 10_000 });
    gw = await startGateway({ upstreams: { flaky: upstream.http(flaky.url) } });
    const client = await connectClient(gw.url);
    try {
      expect(textOf(await client.callTool({ name: 'flaky__echo', arguments: { message: 'hi' } }))).toBe('echo: hi');
      const closed = await poll(
        async () => {
          const { idleCloses } = await flaky!.stats();
          return idleCloses.byClient + idleCloses.byServer > 0 ? idleCloses : undefined;
        },
        'an idle upstream connection to close',
        20_000,
      );
      expect(closed).toEqual({ byServer: 0, byClient: expect.any(Number) });
      expect(textOf(await client.callTool({ name: 'flaky__echo', arguments: { message: 'again' } }))).toBe('echo: again');
    } finally {
      await client.close();
    }
  }, 30_000);
});
