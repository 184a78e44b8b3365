// What the upstream client needs for 2026-07-28 servers: telling the eras apart, the _meta
// envelope, multi round-trip results and the listen filter.
import { describe, expect, it } from 'vitest';
import { META } from '../../src/mcp/era.js';
import { RpcError } from '../../src/mcp/errors.js';
import { TransportError } from '../../src/transport/types.js';
import { completeRounds, eraFromProbe, initFromDiscover, listenFilter, listenNamedBy, withEnvelope, withoutSubscriptionId, withoutWireFields } from '../../src/upstream/stateless-protocol.js';

describe('eraFromProbe', () => {
  it('is modern for a discover result offering 2026-07-28', () => {
    expect(eraFromProbe({ supportedVersions: ['2026-07-28'], capabilities: {} })).toBe('stateless');
  });

  it('is legacy for a JSON-RPC error, a 4xx or silence', () => {
    expect(eraFromProbe(new RpcError({ code: -32601, message: 'Method not found' }))).toBe('sessions');
    expect(eraFromProbe(new RpcError({ code: -32000, message: 'Bad Request: Server not initialized' }))).toBe('sessions');
    expect(eraFromProbe(new TransportError('http_status', 'HTTP 400', 400))).toBe('sessions');
    expect(eraFromProbe(new TransportError('http_status', 'HTTP 404', 404))).toBe('sessions');
    expect(eraFromProbe(new Error('timed out'))).toBe('sessions');
  });

  it('fails the connection on a refused credential or a server failure, rather than guess', () => {
    expect(eraFromProbe(new TransportError('http_status', 'HTTP 401', 401))).toBeInstanceOf(Error);
    expect(eraFromProbe(new TransportError('http_status', 'HTTP 503', 503))).toBeInstanceOf(Error);
    expect(eraFromProbe(new TransportError('network', 'ECONNREFUSED'))).toBeInstanceOf(Error);
  });

  it('fails when the server speaks only a modern version the gateway does not', () => {
    const refusal = new RpcError({ code: -32022, message: 'Unsupported', data: { supported: ['2026-07-28'], requested: 'x' } });
    expect(eraFromProbe(refusal)).toBeInstanceOf(Error);
    expect(eraFromProbe(new RpcError({ code: -32022, message: 'Unsupported', data: { supported: ['2025-06-18'] } }))).toBe('sessions');
  });
});

describe('envelope and wire fields', () => {
  it('adds the protocol fields to _meta, keeping the caller\'s own', () => {
    const params = withEnvelope({ name: 't', _meta: { progressToken: 3 } }, { clientCapabilities: { sampling: {} }, clientInfo: { name: 'c', version: '1' }, logLevel: 'debug' });
    expect(params).toEqual({
      name: 't',
      _meta: { progressToken: 3, [META.protocolVersion]: '2026-07-28', [META.clientCapabilities]: { sampling: {} }, [META.clientInfo]: { name: 'c', version: '1' }, [META.logLevel]: 'debug' },
    });
  });

  it('reads discovery as an initialize result', () => {
    expect(initFromDiscover({ supportedVersions: ['2026-07-28'], capabilities: { tools: {} }, instructions: 'use it', _meta: { [META.serverInfo]: { name: 's', version: '2' } } })).toEqual({
      protocolVersion: '2026-07-28',
      capabilities: { tools: {} },
      serverInfo: { name: 's', version: '2' },
      instructions: 'use it',
    });
  });

  it('drops resultType, caching hints, serverInfo and subscription ids', () => {
    expect(withoutWireFields({ tools: [], resultType: 'complete', ttlMs: 5, cacheScope: 'public', _meta: { [META.serverInfo]: {} } })).toEqual({ tools: [] });
    expect(withoutWireFields({ content: [], _meta: { [META.serverInfo]: {}, other: 1 } })).toEqual({ content: [], _meta: { other: 1 } });
    expect(withoutSubscriptionId({ uri: 'u', _meta: { [META.subscriptionId]: 4 } })).toEqual({ uri: 'u' });
  });
});

describe('completeRounds', () => {
  it('answers each round\'s input requests and retries with them and the requestState, unchanged', async () => {
    const sent: unknown[] = [];
    const asked: string[] = [];
    const result = await completeRounds(
      { resultType: 'input_required', inputRequests: { a: { method: 'elicitation/create', params: { message: 'name?' } }, b: { method: 'roots/list' } }, requestState: 'r1' },
      async (inputResponses, requestState) => {
        sent.push({ inputResponses, requestState });
        return sent.length === 1 ? { resultType: 'input_required', requestState: 'r2' } : { resultType: 'complete', content: [] };
      },
      async (method) => {
        asked.push(method);
        return method === 'roots/list' ? { roots: [] } : { action: 'accept', content: { name: 'x' } };
      },
    );
    expect(result).toEqual({ content: [] });
    expect(asked.sort()).toEqual(['elicitation/create', 'roots/list']);
    expect(sent).toEqual([
      { inputResponses: { a: { action: 'accept', content: { name: 'x' } }, b: { roots: [] } }, requestState: 'r1' },
      { inputResponses: {}, requestState: 'r2' },
    ]);
  });

  it('refuses input_required with neither requests nor state', async () => {
    await expect(completeRounds({ resultType: 'input_required' }, async () => ({}), async () => ({}))).rejects.toThrow(/neither inputRequests nor requestState/);
  });
});

describe('listenFilter', () => {
  it('asks for the list changes a server announces and the resources subscribed to', () => {
    expect(listenFilter({ tools: { listChanged: true }, prompts: {}, resources: { listChanged: true } }, new Set(['file:///a']))).toEqual({
      toolsListChanged: true,
      resourcesListChanged: true,
      resourceSubscriptions: ['file:///a'],
    });
    expect(listenFilter({ tools: {} }, new Set())).toBeUndefined();
  });
});

describe('listenNamedBy', () => {
  const listen = { method: 'subscriptions/listen' };
  const call = { method: 'tools/call' };
  const pending = new Map<unknown, { method: string }>([[7, listen], [8, call]]);
  const pendingOf = (id: unknown): { method: string } | undefined => pending.get(id);

  it('is the open listen a notification names by its subscription id (stdio shares one channel among listens)', () => {
    expect(listenNamedBy({ taskId: 't', _meta: { [META.subscriptionId]: 7 } }, pendingOf)).toBe(listen);
  });

  it('is nothing for an id that names no listen, no pending request, or no id at all', () => {
    expect(listenNamedBy({ _meta: { [META.subscriptionId]: 8 } }, pendingOf)).toBeUndefined();
    expect(listenNamedBy({ _meta: { [META.subscriptionId]: 9 } }, pendingOf)).toBeUndefined();
    expect(listenNamedBy({ _meta: { [META.subscriptionId]: { id: 7 } } }, pendingOf)).toBeUndefined();
    expect(listenNamedBy({ taskId: 't' }, pendingOf)).toBeUndefined();
    expect(listenNamedBy(undefined, pendingOf)).toBeUndefined();
  });
});
