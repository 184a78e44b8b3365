// A reload of keys that need a restart (gateway.reload): warned about, and not applied, in part
// or whole, until one. The running gateway reads some of them live (the call log's arguments);
// they keep their running values, and the next reload is compared with those.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { configFromObject } from '../../src/config/load.js';
import { connectClient, startGateway, textOf, upstream, type TestGateway } from '../helpers/gateway.js';
import { ROOT } from '../helpers/paths.js';

let gw: TestGateway | undefined;
let client: Client | undefined;

afterEach(async () => {
  await client?.close();
  await gw?.close();
  client = undefined;
  gw = undefined;
});

/** A config as startGateway builds one, with `raw` over the upstream everything. */
function configOf(raw: Record<string, unknown>) {
  return configFromObject({ listen: { port: 0 }, health: { probeInterval: 0 }, upstreams: { everything: upstream.everything() }, ...raw }, { file: join(ROOT, 'gateway.test.yaml'), env: {} });
}

describe('a reload of keys that need a restart', () => {
  it('logging.arguments: values is warned about and not applied: the next call logs the shape only, and a later reload warns again', async () => {
    gw = await startGateway({ upstreams: { everything: upstream.everything() } });
    client = await connectClient(gw.url);
    expect(gw.gateway.reload(configOf({ logging: { arguments: 'values' } }))).toEqual(['logging']);

    expect(textOf(await client.callTool({ name: 'everything__echo', arguments: { message: 'not-for-the-log' } }))).toBe('Echo: not-for-the-log');
    const calls = gw.logs.filter((line) => line.includes('"tool":"echo"'));
    expect(calls).toHaveLength(1);
    expect(calls[0]).toContain('"arguments":{"message":"string"}');
    expect(calls[0]).not.toContain('not-for-the-log');
    // Still not applied: a reload of the same file still needs the restart, and one back to the running value does not.
    expect(gw.gateway.reload(configOf({ logging: { arguments: 'values' }, shutdown: { gracePeriod: '3s' } }))).toEqual(['logging']);
    expect(gw.gateway.reload(configOf({}))).toEqual([]);
  }, 30_000);
});
