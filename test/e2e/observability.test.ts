// What operators see: exact Prometheus metrics for the traffic driven through the gateway,
// label values that no client can multiply, logs free of secrets, one call line per request
// with the request id the client got back, and trace context carried into upstreams.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CreateMessageRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectClient, journal, startGateway, textOf, upstream, type TestGateway } from '../helpers/gateway.js';
import { startFlakyHttp, type FlakyHttp } from '../helpers/flaky-http.js';
import { scrape } from '../helpers/metrics.js';
import { initializeRaw, POST_HEADERS, postRaw, rawHeaders } from '../helpers/raw-http.js';


const rpc = (id: number, method: string, params: Record<string, unknown> = {}) => ({ jsonrpc: '2.0', id, method, params });

describe('metrics', () => {
  let gw: TestGateway;
  let client: Client;

  beforeAll(async () => {
    gw = await startGateway({
      upstreams: { rogue: upstream.rogue(), strict: { ...upstream.rogue(), timeoutMs: 200 }, paged: upstream.paged() },
      metrics: { enabled: true },
    });
    client = await connectClient(gw.url, { sampling: {} }, (c) =>
      c.setRequestHandler(CreateMessageRequestSchema, async () => ({ model: 'm', role: 'assistant', content: { type: 'text', text: 'ok' } })),
    );
  });

  afterAll(async () => {
    await client?.close();
    await gw?.close();
  });

  it('counts requests, tool latency, cancellations, notifications and relayed requests exactly', async () => {
    // Before any listing: checking its arguments reads the upstream's tools, so "pid" is known.
    await client.callTool({ name: 'rogue__pid', arguments: {} });
    await client.listTools();
    for (let i = 0; i < 3; i++) await client.callTool({ name: 'rogue__pid', arguments: {} });
    await expect(client.callTool({ name: 'paged__no-such-tool', arguments: {} })).rejects.toMatchObject({ code: -32602 });
    await expect(client.callTool({ name: 'ghost__tool', arguments: {} })).rejects.toMatchObject({ code: -32602 });
    await expect(client.callTool({ name: 'strict__slow', arguments: { ms: 2_000 } })).rejects.toMatchObject({ code: -32001 });
    await client.callTool({ name: 'rogue__notify', arguments: { method: 'notifications/tools/list_changed' } });
    await client.callTool({ name: 'rogue__ask', arguments: { method: 'sampling/createMessage', params: { messages: [], maxTokens: 1 } } });
    await client.callTool({ name: 'rogue__ask', arguments: { method: 'elicitation/create', params: { message: 'x', requestedSchema: { type: 'object', properties: {} } } } });

    const metrics = new URL('/metrics', gw.url);
    const m = await scrape(metrics);
    const get = (key: string): number | undefined => m.get(key);
    expect(get('switchyard_requests_total{method="initialize",upstream="none",outcome="ok"}')).toBe(1);
    expect(get('switchyard_requests_total{method="tools/list",upstream="none",outcome="ok"}')).toBe(1);
    expect(get('switchyard_requests_total{method="tools/call",upstream="rogue",outcome="ok"}')).toBe(7);
    // An unknown tool, of a known upstream or not, is answered by the gateway (like a hidden one).
    expect(get('switchyard_requests_total{method="tools/call",upstream="paged",outcome="error"}')).toBeUndefined();
    expect(get('switchyard_requests_total{method="tools/call",upstream="none",outcome="error"}')).toBe(2);
    expect(get('switchyard_requests_total{method="tools/call",upstream="strict",outcome="timeout"}')).toBe(1);
    expect(get('switchyard_tool_call_duration_seconds_count{upstream="rogue",tool="pid"}')).toBe(4);
    // A name the upstream never listed is never a label value.
    expect([...m.keys()].some((k) => k.includes('no-such-tool'))).toBe(false);
    expect(get('switchyard_cancellations_total{upstream="strict",cause="timeout"}')).toBe(1);
    expect(get('switchyard_notifications_total{method="notifications/tools/list_changed",outcome="forwarded"}')).toBe(1);
    expect(get('switchyard_server_requests_total{method="sampling/createMessage",outcome="answered"}')).toBe(1);
    expect(get('switchyard_server_requests_total{method="elicitation/create",outcome="refused"}')).toBe(1);
    expect(get('switchyard_sessions')).toBe(1);
    // The catalog's upstream session and the session's own (opened by its first call).
    expect(get('switchyard_upstream_sessions{upstream="rogue"}')).toBe(2);
    expect(get('switchyard_upstream_state{upstream="rogue",state="up"}')).toBe(1);
    expect(get('switchyard_upstream_pending_requests{upstream="rogue"}')).toBe(0);
    expect(get('switchyard_open_streams{kind="standalone"}')).toBe(1);
    expect(get('switchyard_config_reloads_total{outcome="applied"}')).toBe(0);
    expect(get('process_cpu_seconds_total')).toBeGreaterThan(0);
  });

  it('serves /metrics on a separate admin port when one is configured', async () => {
    const admin = await startGateway({ upstreams: { rogue: upstream.rogue() }, metrics: { enabled: true, port: 0 } });
    try {
      expect((await fetch(new URL('/metrics', admin.url))).status).toBe(404);
      const url = admin.gateway.metricsUrl()!;
      expect(url.port).not.toBe(admin.url.port);
      expect((await scrape(url)).has('switchyard_sessions')).toBe(true);
    } finally {
      await admin.close();
    }
  });

  it('is off unless enabled', async () => {
    const off = await startGateway({ upstreams: { rogue: upstream.rogue() } });
    try {
      expect((await fetch(new URL('/metrics', off.url))).status).toBe(404);
    } finally {
      await off.close();
    }
  });
});

describe('label cardinality', () => {
  it('adds no series for 10,000 unknown tool names and 10,000 distinct clients', async () => {
    const gw = await startGateway({ upstreams: { rogue: upstream.rogue() }, metrics: { enabled: true }, logging: { level: 'warn' } }, { logLevel: 'warn' });
    try {
      const post = async (body: unknown, session?: string): Promise<Response> =>
        gw.gateway.app.request(gw.url.pathname, {
          method: 'POST',
          headers: rawHeaders(POST_HEADERS, { session }),
          body: JSON.stringify(body),
        });
      const open = async (name: string): Promise<string> => {
        const res = await post(rpc(0, 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name, version: name } }));
        return res.headers.get('mcp-session-id')!;
      };
      const session = await open('warm-up');
      const unknownTools = async (from: number, count: number): Promise<void> => {
        for (let i = from; i < from + count; i++) {
          await post(rpc(i, 'tools/call', { name: `rogue__no-such-tool-${i}`, arguments: {} }), session);
          await post(rpc(i, 'tools/call', { name: `ghost-${i}__tool`, arguments: {} }), session);
          await post(rpc(i, `made/up-${i}`, {}), session);
        }
      };
      // Warm up every bounded series first, then look for new ones.
      await unknownTools(0, 10);
      const before = new Set((await scrape(new URL('/metrics', gw.url))).keys());
      await unknownTools(10, 10_000);
      const noUpstreams = await startGateway({ upstreams: {}, metrics: { enabled: true } }, { logLevel: 'warn' });
      try {
        const clientsBefore = new Set((await scrape(new URL('/metrics', noUpstreams.url))).keys());
        for (let i = 0; i < 10_000; i++) {
          const res = await noUpstreams.gateway.app.request(noUpstreams.url.pathname, {
            method: 'POST',
            headers: POST_HEADERS,
            body: JSON.stringify(rpc(0, 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: `client-${i}`, version: String(i) } })),
          });
          const id = res.headers.get('mcp-session-id')!;
          await noUpstreams.gateway.app.request(noUpstreams.url.pathname, { method: 'DELETE', headers: { 'mcp-session-id': id } });
        }
        const clientsAfter = new Set((await scrape(new URL('/metrics', noUpstreams.url))).keys());
        expect([...clientsAfter].filter((k) => !clientsBefore.has(k) && k.startsWith('switchyard_'))).toEqual(
          ['switchyard_requests_total{method="initialize",upstream="none",outcome="ok"}', 'switchyard_endpoint_requests_total{endpoint="/mcp",method="initialize",outcome="ok"}'].filter((k) => !clientsBefore.has(k)),
        );
      } finally {
        await noUpstreams.close();
      }
      const after = new Set((await scrape(new URL('/metrics', gw.url))).keys());
      expect([...after].filter((k) => !before.has(k) && k.startsWith('switchyard_'))).toEqual([]);
    } finally {
      await gw.close();
    }
  }, 180_000);
});

describe('logs', () => {
  const SECRETS = {
    upstreamToken: 'upstream-token-7f3a9c2e41',
    envSecret: 'env-secret-value-5b8d1e',
    clientToken: 'client-bearer-token-99c4aa',
    argument: 'argument-secret-31d7',
    jwt: 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLWJ5dGVz',
  };
  let flaky: FlakyHttp;

  beforeAll(async () => {
    flaky = await startFlakyHttp();
  });

  afterAll(async () => {
    await flaky?.close();
  });

  it('never contain tokens, secret env values or argument values, at debug level', async () => {
    const gw = await startGateway(
      {
        upstreams: {
          remote: { http: { url: flaky.url, headers: { Authorization: 'Bearer ${UPSTREAM_TOKEN}' } } },
          rogue: upstream.rogue({ API_SECRET: '${ROGUE_SECRET}' }),
        },
        logging: { level: 'debug' },
      },
      { env: { UPSTREAM_TOKEN: SECRETS.upstreamToken, ROGUE_SECRET: SECRETS.envSecret }, logLevel: 'debug' },
    );
    const client = await connectClient(gw.url, {}, undefined, { authorization: `Bearer ${SECRETS.clientToken}` });
    try {
      await client.callTool({ name: 'remote__echo', arguments: { message: SECRETS.argument, token: SECRETS.jwt } });
      // The upstream echoes its secret to stderr, which the gateway logs.
      await client.callTool({ name: 'rogue__stderr', arguments: { text: `leaking ${SECRETS.envSecret} and ${SECRETS.jwt}` } });
      await client.callTool({ name: 'rogue__slow', arguments: { ms: 1, secret: SECRETS.argument } });
      await flaky.control({ unauthorized: true });
      await client.callTool({ name: 'remote__echo', arguments: { message: 'x' } }).catch(() => {});
      await flaky.control({ unauthorized: false });
      // The upstream got its configured credential and never the client's.
      const calls = (await flaky.stats()).toolCalls;
      expect(calls.every((c) => c.authorization === `Bearer ${SECRETS.upstreamToken}`)).toBe(true);
    } finally {
      await client.close();
      await gw.close();
    }
    const output = gw.logs.join('');
    expect(output.length).toBeGreaterThan(1_000);
    for (const [name, secret] of Object.entries(SECRETS)) expect(output.includes(secret), name).toBe(false);
    expect(output).toContain('[redacted]');
    const calls = gw.logs.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.msg === 'call' && l.method === 'tools/call');
    expect(calls.find((l) => l.tool === 'echo')?.arguments).toEqual({ message: 'string', token: 'string' });
  });

  it('writes one call line per request with the request id the client got back', async () => {
    const gw = await startGateway({ upstreams: { rogue: upstream.rogue() } });
    try {
      // A raw session whose requests carry no MCP-Protocol-Version.
      const { id: session } = await initializeRaw(gw.url, { protocolVersion: '2025-06-18', id: 1, versionHeader: false });
      const res = await postRaw(gw.url, rpc(2, 'tools/call', { name: 'rogue__pid', arguments: {} }), { session });
      const requestId = res.headers.get('x-request-id');
      expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
      await res.json();
      const chosen = await postRaw(gw.url, rpc(3, 'ping'), { session, headers: { 'x-request-id': 'caller-chosen.42' } });
      expect(chosen.headers.get('x-request-id')).toBe('caller-chosen.42');
      const lines = gw.logs.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.msg === 'call');
      expect(lines).toContainEqual(expect.objectContaining({ requestId, method: 'tools/call', upstream: 'rogue', tool: 'pid', outcome: 'ok', durationMs: expect.any(Number) }));
      expect(lines.filter((l) => l.requestId === requestId)).toHaveLength(1);
      expect(lines).toContainEqual(expect.objectContaining({ requestId: 'caller-chosen.42', method: 'ping' }));
    } finally {
      await gw.close();
    }
  });
});

describe('trace context', () => {
  const TRACE = '0af7651916cd43dd8448eb211c80319c';
  const PARENT = `00-${TRACE}-b7ad6b7169203331-01`;

  it('continues the client\'s traceparent into stdio and HTTP upstreams as a child span', async () => {
    const flaky = await startFlakyHttp();
    const gw = await startGateway({ upstreams: { rogue: upstream.rogue(), remote: { http: { url: flaky.url } } } });
    const client = await connectClient(gw.url, {}, undefined, { traceparent: PARENT, tracestate: 'vendor=1' });
    try {
      await client.callTool({ name: 'rogue__pid', arguments: {} });
      const call = (await journal(client, 'rogue__journal')).find((m) => m.method === 'tools/call' && (m.params as { name: string }).name === 'pid')!;
      const meta = (call.params as { _meta: { traceparent: string; tracestate: string } })._meta;
      expect(meta.traceparent).toMatch(new RegExp(`^00-${TRACE}-[0-9a-f]{16}-01$`));
      expect(meta.traceparent).not.toBe(PARENT);
      expect(meta.tracestate).toBe('vendor=1');

      expect(textOf(await client.callTool({ name: 'remote__echo', arguments: { message: 'traced' } }))).toBe('echo: traced');
      const seen = (await flaky.stats()).toolCalls.at(-1)!;
      expect(seen.traceparent).toMatch(new RegExp(`^00-${TRACE}-[0-9a-f]{16}-01$`));
      expect(seen.traceparent).toBe((seen.meta as { traceparent: string }).traceparent);

      // A traceparent in the request's own _meta wins over the header.
      const other = '00-11111111111111111111111111111111-2222222222222222-00';
      await client.callTool({ name: 'remote__echo', arguments: { message: 'x' }, _meta: { traceparent: other } });
      expect((await flaky.stats()).toolCalls.at(-1)!.traceparent).toMatch(/^00-11111111111111111111111111111111-[0-9a-f]{16}-00$/);
    } finally {
      await client.close();
      await gw.close();
      await flaky.close();
    }
  });
});
