// Pinning in front of an upstream whose tool list depends on who asks
// (test/fixtures/two-faced-server.mjs: `act` takes a string for clientInfo alice, a number for
// anyone else). Bob is shown the approved definition, alice a changed one: the change waits (or
// stays rejected) until an operator decides, is reported once, and bob's listings neither let it
// go nor send every session list_changed. Counted over a fixed number of listings.
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterEach, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/auth/api-keys.js';
import { endSessions, recordNotifications, startGateway, type NotificationLog, type TestGateway } from '../helpers/gateway.js';
import { scrape } from '../helpers/metrics.js';
import { FIXTURES, NODE } from '../helpers/paths.js';

const ADMIN_KEY = 'sk-switchyard-admin-7c2e94b1d05a3f68';
const USER_KEY = 'sk-switchyard-user-3b8d1f6a29c47e05';
const ROUNDS = 10;

const gateways: TestGateway[] = [];
const clients: Client[] = [];

afterEach(async () => {
  await endSessions(clients);
  await Promise.allSettled(gateways.splice(0).map((gw) => gw.close()));
});

async function start(mode: 'hide' | 'quarantine'): Promise<TestGateway> {
  const auth = { apiKeys: [{ id: 'ops', hash: hashApiKey(ADMIN_KEY), scopes: ['switchyard:admin'] }, { id: 'user', hash: hashApiKey(USER_KEY), scopes: ['mcp'] }] };
  const gw = await startGateway({ metrics: { enabled: true }, auth, pinning: { mode }, upstreams: { tf: { stdio: { command: NODE, args: [join(FIXTURES, 'two-faced-server.mjs')] } } } }, { logLevel: 'warn' });
  gateways.push(gw);
  return gw;
}

/** A session whose clientInfo is `name`, recording every notification. */
async function connectAs(gw: TestGateway, name: string): Promise<{ client: Client; notes: NotificationLog }> {
  const client = new Client({ name, version: '1.0.0' }, { capabilities: {} });
  const notes = recordNotifications(client);
  await client.connect(new StreamableHTTPClientTransport(gw.url, { requestInit: { headers: { authorization: `Bearer ${USER_KEY}` } } }));
  clients.push(client);
  return { client, notes };
}

/** The upstream's tools a session is shown, `act` with the type of its argument. */
async function shown(client: Client): Promise<string[]> {
  const { tools } = await client.listTools();
  return tools.map((tool) => (tool.name === 'tf__act' ? `act:${(tool.inputSchema.properties as { x: { type: string } }).x.type}` : tool.name)).sort();
}

const listChanged = (notes: NotificationLog): number => notes.all.filter((n) => n.method === 'notifications/tools/list_changed').length;

const driftAudits = (gw: TestGateway): Record<string, unknown>[] =>
  gw.logs.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line.event === 'audit' && line.action === 'pin.drift');

async function pinOf(gw: TestGateway): Promise<{ state: string; since?: string; pendingDigest?: string } | undefined> {
  const answer = await fetch(new URL('/admin/pins?upstream=tf&name=act', gw.url), { headers: { authorization: `Bearer ${ADMIN_KEY}` } });
  expect(answer.status).toBe(200);
  return ((await answer.json()) as { pins: { name: string; state: string; since?: string }[] }).pins.find((row) => row.name === 'act');
}

async function decide(gw: TestGateway, action: 'approve' | 'reject'): Promise<void> {
  const answer = await fetch(new URL('/admin/pins', gw.url), {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ action, upstream: 'tf', name: 'act' }),
  });
  expect(answer.status).toBe(200);
}

describe('an upstream that shows each client another definition', () => {
  it('hide: the change waits and stays rejected, reported once; listings tell nobody; the approval is told once', async () => {
    const gw = await start('hide');
    const bob = await connectAs(gw, 'bob');
    const alice = await connectAs(gw, 'alice');
    expect(await shown(bob.client)).toEqual(['act:number', 'tf__calls']);
    expect(await shown(alice.client)).toEqual(['tf__calls']);
    // Alice's listing held her definition back: every session that listed hears it once.
    await bob.notes.waitFor((n) => n.method === 'notifications/tools/list_changed', 'list_changed for the hold');
    const waiting = await pinOf(gw);
    expect(waiting).toMatchObject({ state: 'pending', drift: 'changed' });

    for (let i = 0; i < ROUNDS; i++) {
      expect(await shown(bob.client)).toEqual(['act:number', 'tf__calls']);
      expect(await shown(alice.client)).toEqual(['tf__calls']);
    }
    expect(await pinOf(gw)).toEqual(waiting);
    expect(driftAudits(gw)).toHaveLength(1);
    expect((await scrape(new URL('/metrics', gw.url))).get('switchyard_tool_drift_total{upstream="tf",kind="changed"}')).toBe(1);

    await decide(gw, 'reject');
    for (let i = 0; i < ROUNDS; i++) {
      expect(await shown(bob.client)).toEqual(['act:number', 'tf__calls']);
      expect(await shown(alice.client)).toEqual(['tf__calls']);
    }
    expect(await pinOf(gw)).toEqual({ ...waiting, state: 'rejected' });
    expect(driftAudits(gw)).toHaveLength(1);

    // The approval is the one change after the hold; the stream delivers in order, so once it is
    // heard every list_changed sent before it has been too.
    const before = listChanged(bob.notes);
    await decide(gw, 'approve');
    await bob.notes.waitFor(() => listChanged(bob.notes) > before, 'list_changed for the approval');
    expect(listChanged(bob.notes)).toBe(2);
    expect(await shown(alice.client)).toEqual(['act:string', 'tf__calls']);
  });

  it('quarantine: the upstream stays out for bob too until an operator decides', async () => {
    const gw = await start('quarantine');
    const bob = await connectAs(gw, 'bob');
    const alice = await connectAs(gw, 'alice');
    expect(await shown(bob.client)).toEqual(['act:number', 'tf__calls']);
    expect(await shown(alice.client)).toEqual([]);
    await bob.notes.waitFor((n) => n.method === 'notifications/tools/list_changed', 'list_changed for the quarantine');
    for (let i = 0; i < ROUNDS; i++) {
      expect(await shown(bob.client)).toEqual([]);
      expect(await shown(alice.client)).toEqual([]);
    }
    await expect(bob.client.callTool({ name: 'tf__calls', arguments: {} })).rejects.toThrow(/withheld by pinning: its upstream is quarantined/);
    expect(await pinOf(gw)).toMatchObject({ state: 'pending', drift: 'changed' });
    expect(driftAudits(gw)).toHaveLength(1);

    const before = listChanged(bob.notes);
    await decide(gw, 'approve');
    await bob.notes.waitFor(() => listChanged(bob.notes) > before, 'list_changed for the approval');
    expect(listChanged(bob.notes)).toBe(2);
    expect(await shown(alice.client)).toEqual(['act:string', 'tf__calls']);
  });
});
