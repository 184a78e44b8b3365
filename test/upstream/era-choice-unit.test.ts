// How one upstream connection picks its era (UpstreamClient.connect with an EraChoice): each
// client meets the upstream in the client's own era where the upstream speaks it, and bridging
// is for upstreams that speak only the other one (spec/2026-07-28 basic/versioning.mdx "Backward
// Compatibility"). Scripted servers over an in-memory transport: a sessions-era one, a dual-era
// one (answers server/discover and initialize) and a 2026-07-28-only one (refuses initialize).
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ErrorCode } from '../../src/mcp/errors.js';
import type { JsonObject } from '../../src/mcp/jsonrpc.js';
import { UpstreamClient } from '../../src/upstream/client.js';
import type { EraChoice, EraFacts } from '../../src/upstream/stateless-protocol.js';
import { silentLogger } from '../../src/util/log.js';
import { linkedTransports, ScriptedServer, settlesNow } from '../helpers/memory-transport.js';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

const DISCOVERED = { resultType: 'complete', supportedVersions: ['2026-07-28'], capabilities: { tools: {} }, _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'dual', version: '1' } } };

type Kind = 'sessions' | 'dual' | 'modern-only';

function serverOf(kind: Kind): { client: UpstreamClient; server: ScriptedServer } {
  const { client: transport, server: end } = linkedTransports();
  const server = new ScriptedServer(end);
  if (kind !== 'sessions') server.handle('server/discover', () => DISCOVERED);
  // A 2026-07-28-only server names the versions it supports when refusing initialize (versioning.mdx).
  if (kind === 'modern-only') server.handle('initialize', () => ({ error: { code: -32022, message: 'Unsupported protocol version', data: { supported: ['2026-07-28'] } } }));
  server.handle('tools/call', (request) => ({ resultType: 'complete', content: [{ type: 'text', text: JSON.stringify(request.params?._meta ?? null) }] }));
  return { client: new UpstreamClient('up', transport, { timeoutMs: 60_000, maxTotalTimeoutMs: 60_000, logger: silentLogger }), server };
}

const params = (protocolVersion: string): JsonObject => ({ protocolVersion, capabilities: {}, clientInfo: { name: 'unit', version: '1' } });

async function connect(kind: Kind, protocolVersion: string, known: EraFacts = {}): Promise<{ client: UpstreamClient; server: ScriptedServer; learned: EraFacts }> {
  const { client, server } = serverOf(kind);
  const learned: EraFacts = {};
  const choice: EraChoice = { prefer: protocolVersion === '2026-07-28' ? 'stateless' : 'sessions', known, learn: (facts) => Object.assign(learned, facts) };
  await settlesNow(client.connect(params(protocolVersion), 10_000, choice), 'connect');
  return { client, server, learned };
}

const methods = (server: ScriptedServer): string[] => server.received.map((m) => ('method' in m ? m.method : 'response'));

describe('a sessions-era client', () => {
  it('is initialized at a dual-era server after its probe: the server meets it in its own era', async () => {
    const { client, server, learned } = await connect('dual', '2025-11-25');
    expect(client.era).toBe('sessions');
    expect(methods(server)).toEqual(['server/discover', 'initialize', 'notifications/initialized']);
    expect(learned).toEqual({ stateless: true, sessions: true });
    // No per-request envelope: the upstream session is a sessions-era one.
    const result = await client.request('tools/call', { name: 'x' });
    expect(result.content).toEqual([{ type: 'text', text: 'null' }]);
  });

  it('is bridged to a 2026-07-28-only server, which refused initialize, and it is called statelessly', async () => {
    const { client, server, learned } = await connect('modern-only', '2025-11-25');
    expect(client.era).toBe('stateless');
    expect(methods(server)).toEqual(['server/discover', 'initialize']);
    expect(learned).toEqual({ stateless: true, sessions: false });
    const result = await client.request('tools/call', { name: 'x' });
    expect(JSON.parse((result.content as { text: string }[])[0]!.text)).toMatchObject({ 'io.modelcontextprotocol/protocolVersion': '2026-07-28' });
  });

  it('is initialized at once where the upstream is known to speak its era (no probe)', async () => {
    const { client, server } = await connect('dual', '2025-11-25', { stateless: true, sessions: true });
    expect(client.era).toBe('sessions');
    expect(methods(server)).toEqual(['initialize', 'notifications/initialized']);
  });

  it('is not initialized where the upstream is known to refuse it: the probe, then stateless', async () => {
    const { client, server } = await connect('modern-only', '2025-11-25', { stateless: true, sessions: false });
    expect(client.era).toBe('stateless');
    expect(methods(server)).toEqual(['server/discover']);
  });

  it('is initialized at a sessions-era server, which did not answer the probe', async () => {
    const { client, server, learned } = await connect('sessions', '2025-11-25');
    expect(client.era).toBe('sessions');
    expect(methods(server)).toEqual(['server/discover', 'initialize', 'notifications/initialized']);
    expect(learned).toEqual({ stateless: false });
  });
});

describe('a 2026-07-28 client', () => {
  it('calls a dual-era server statelessly: no initialize', async () => {
    const { client, server, learned } = await connect('dual', '2026-07-28', { stateless: true, sessions: true });
    expect(client.era).toBe('stateless');
    expect(methods(server)).toEqual(['server/discover']);
    expect(learned).toEqual({ stateless: true });
  });

  it('is bridged to a sessions-era server: initialized with the newest version of that era', async () => {
    const { client, server } = await connect('sessions', '2026-07-28');
    expect(client.era).toBe('sessions');
    expect(server.requests('initialize')[0]?.params?.protocolVersion).toBe('2025-11-25');
  });
});

describe('an initialize that fails for another reason', () => {
  it('fails the connection (a server that did not answer in time is not taken for a 2026-07-28-only one)', async () => {
    const { client: transport, server: end } = linkedTransports();
    const server = new ScriptedServer(end).handle('server/discover', () => DISCOVERED).handle('initialize', () => undefined);
    const client = new UpstreamClient('up', transport, { timeoutMs: 60_000, maxTotalTimeoutMs: 60_000, logger: silentLogger });
    const learned: EraFacts = {};
    const connecting = client.connect(params('2025-11-25'), 2_000, { prefer: 'sessions', known: {}, learn: (facts) => Object.assign(learned, facts) }).catch((err: unknown) => err);
    await vi.advanceTimersByTimeAsync(2_000);
    expect(await connecting).toMatchObject({ code: 'upstream_timeout' });
    expect(learned).toEqual({ stateless: true });
    expect(server.requests('initialize')).toHaveLength(1);
  });

  it('counts an answered JSON-RPC error of any code as a refusal', async () => {
    const { client: transport, server: end } = linkedTransports();
    new ScriptedServer(end).handle('server/discover', () => DISCOVERED).handle('initialize', () => ({ error: { code: ErrorCode.MethodNotFound, message: 'Method not found' } }));
    const client = new UpstreamClient('up', transport, { timeoutMs: 60_000, maxTotalTimeoutMs: 60_000, logger: silentLogger });
    await settlesNow(client.connect(params('2025-11-25'), 10_000, { prefer: 'sessions', known: {} }), 'connect');
    expect(client.era).toBe('stateless');
  });
});
