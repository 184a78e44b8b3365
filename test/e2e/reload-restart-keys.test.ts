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

describe('a reload of parts built in at the start', () => {
  it('credentials and rateLimits.maxPrincipals are named as needing a restart, on every reload until one', async () => {
    const key = Buffer.alloc(32, 7).toString('base64');
    const credentials = { key: [key], store: 'memory' };
    gw = await startGateway({ upstreams: { everything: upstream.everything() }, credentials, rateLimits: { perClient: { rate: 100, per: '1s' } } });
    const otherKey = { ...credentials, key: [Buffer.alloc(32, 9).toString('base64')] };
    expect(gw.gateway.reload(configOf({ credentials: otherKey, rateLimits: { perClient: { rate: 100, per: '1s' }, maxPrincipals: 500 } }))).toEqual(['credentials', 'rateLimits.maxPrincipals']);
    // Still as at the start: the same file again still needs the restart; the running values do not.
    expect(gw.gateway.reload(configOf({ credentials: otherKey, rateLimits: { perClient: { rate: 100, per: '1s' }, maxPrincipals: 500 } }))).toEqual(['credentials', 'rateLimits.maxPrincipals']);
    expect(gw.gateway.reload(configOf({ credentials, rateLimits: { perClient: { rate: 50, per: '1s' } } }))).toEqual([]);
  }, 30_000);

  it("an endpoint's new path is named as needing a restart on every reload, and served only where it was", async () => {
    gw = await startGateway({ upstreams: { everything: upstream.everything() }, endpoints: [{ path: '/mcp/a' }] });
    const moved = configOf({ endpoints: [{ path: '/mcp/b' }] });
    expect(gw.gateway.reload(moved)).toEqual(['endpoints']);
    expect(gw.gateway.reload(configOf({ endpoints: [{ path: '/mcp/b' }], shutdown: { gracePeriod: '3s' } }))).toEqual(['endpoints']);
    const post = (path: string) => fetch(new URL(path, gw!.url), { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: '{"jsonrpc":"2.0","id":1,"method":"ping"}' });
    expect((await post('/mcp/b')).status).toBe(404);
    expect(gw.gateway.reload(configOf({ endpoints: [{ path: '/mcp/a' }] }))).toEqual([]);
  }, 30_000);

  it('health.probeInterval applies at once: probing starts, and /readyz then waits for an upstream', async () => {
    gw = await startGateway({ upstreams: { everything: upstream.everything() } });
    const health = async () => ((await (await fetch(new URL('/readyz', gw!.url))).json()) as { upstreams: Record<string, { state: string }> }).upstreams.everything?.state;
    expect(await health()).toBe('unknown');
    expect(gw.gateway.reload(configOf({ health: { probeInterval: '1h' } }))).toEqual([]);
    await expect.poll(health, { timeout: 20_000 }).toBe('up');
  }, 30_000);
});
