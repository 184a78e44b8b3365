// What a 2026-07-28 request the edge answers itself is accounted with, as the router accounts
// the rest: server/discover, and tasks/get and tasks/cancel of a task the gateway made (served
// from the task store) each get a SERVER span (tracing.md), a `call` log line and a count in
// switchyard_requests_total and switchyard_team_requests_total (operations.md). And a request
// refused at a session cap (sessions.max, sessions.maxPerPrincipal) or past a principal's
// subscriptions/listen streams, of either era, is a `request.refused` audit record (audit.md).
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { WritableLike } from '../../src/audit/audit.js';
import { hashApiKey } from '../../src/auth/api-keys.js';
import { configFromObject } from '../../src/config/load.js';
import { createGateway, type Gateway } from '../../src/gateway.js';
import { createLogger } from '../../src/util/log.js';
import { scrape } from '../helpers/metrics.js';
import { SERVER, startOtlpReceiver, type OtlpReceiver } from '../helpers/otlp-receiver.js';
import { FIXTURES, NODE, ROOT } from '../helpers/paths.js';
import { postRaw, postRpc } from '../helpers/raw-http.js';
import { SseReader } from '../helpers/sse-reader.js';
import { callStateless, sendStateless, statelessMeta, statelessRequest, V } from '../helpers/stateless-wire.js';

const KEYS = { alice: 'k-acct-alice-0123456789abcdef', bob: 'k-acct-bob-0123456789abcdef', carol: 'k-acct-carol-0123456789abcdef' };
const apiKeys = Object.entries(KEYS).map(([id, key]) => ({ id, hash: hashApiKey(key) }));
const as = (who: keyof typeof KEYS, requestId: string, traceId?: string): Record<string, string> => ({
  'x-api-key': KEYS[who],
  'x-request-id': requestId,
  ...(traceId ? { traceparent: `00-${traceId}-00f067aa0ba902b7-01` } : {}),
});
const traceIdOf = (n: number): string => n.toString(16).padStart(32, 'a');
const probe = { stdio: { command: NODE, args: [join(FIXTURES, 'lazy-probe-server.mjs')] } };

interface Started {
  gateway: Gateway;
  url: URL;
  logs: string[];
  audit: string[];
}

async function start(raw: Record<string, unknown>): Promise<Started> {
  const logs: string[] = [];
  const audit: string[] = [];
  const stdout: WritableLike = { write: (chunk, done) => (audit.push(...chunk.trim().split('\n')), done(), true) };
  const config = configFromObject({ listen: { port: 0 }, health: { probeInterval: 0 }, ...raw }, { file: join(ROOT, 'gateway.test.yaml'), env: {} });
  const gateway = createGateway(config, { logger: createLogger({ level: 'info', write: (line) => logs.push(line) }), baseEnv: { PATH: process.env.PATH, HOME: process.env.HOME }, stdout });
  return { gateway, url: await gateway.start(), logs, audit };
}

/** The `call` log lines written so far. */
const callLines = (logs: string[]): Record<string, unknown>[] => logs.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.msg === 'call');

describe('2026-07-28 requests the edge answers itself', () => {
  let otlp: OtlpReceiver;
  let gw: Started;
  const TASKS = statelessMeta({ extensions: { 'io.modelcontextprotocol/tasks': {} } });

  beforeAll(async () => {
    otlp = await startOtlpReceiver();
    gw = await start({
      metrics: { enabled: true },
      auth: { apiKeys },
      teams: [{ name: 'crew', default: true }],
      sessions: { keys: ['acct-task-handle-key-0123456789abcdef01234'], taskAfter: '200ms' },
      upstreams: { probe },
      tracing: { otlp: { endpoint: otlp.url }, sampleRatio: 1 },
    });
  });

  afterAll(async () => {
    await gw?.gateway.close();
    await otlp?.close();
  });

  it('server/discover, tasks/get and tasks/cancel of a gateway task: a SERVER span, a call line and a count each', async () => {
    const { url } = gw;
    const discover = await sendStateless(url, statelessRequest(1, 'server/discover', {}, TASKS), as('alice', 'acct-discover', traceIdOf(1)));
    expect(discover.status).toBe(200);
    const made = await callStateless(url, 2, 'probe__slow', { steps: 100 }, {}, as('alice', 'acct-call', traceIdOf(2)), TASKS);
    const taskId = (made.body?.result as { taskId?: string } | undefined)?.taskId;
    expect(taskId, JSON.stringify(made.body)).toEqual(expect.any(String));
    const task = (method: string, id: number, requestId: string, trace: number, handle = taskId!) =>
      sendStateless(url, statelessRequest(id, method, { taskId: handle }, TASKS), { 'mcp-name': handle, ...as('alice', requestId, traceIdOf(trace)) });
    const got = await task('tasks/get', 3, 'acct-get', 3);
    expect(got.body).toMatchObject({ result: { status: 'working' } });
    // A handle that opens to nothing is answered at the edge too, as an error.
    const unknown = await task('tasks/get', 4, 'acct-get-unknown', 4, 'no-such-task');
    expect(unknown.body).toMatchObject({ error: {} });
    const cancelled = await task('tasks/cancel', 5, 'acct-cancel', 5);
    expect(cancelled.body).toMatchObject({ result: {} });

    const expected = [
      { trace: 1, name: 'server/discover', requestId: 'acct-discover', outcome: 'ok' },
      { trace: 3, name: 'tasks/get', requestId: 'acct-get', outcome: 'ok' },
      { trace: 4, name: 'tasks/get', requestId: 'acct-get-unknown', outcome: 'error' },
      { trace: 5, name: 'tasks/cancel', requestId: 'acct-cancel', outcome: 'ok' },
    ];
    const serverSpan = (trace: number) => otlp.spans.find((s) => s.kind === SERVER && s.traceId === traceIdOf(trace));
    await otlp.waitFor(() => expected.every((e) => serverSpan(e.trace) !== undefined), 'a SERVER span of each edge-answered request', 10_000);
    for (const e of expected) {
      const span = serverSpan(e.trace)!;
      expect(span.name).toBe(e.name);
      expect(span.parentSpanId).toBe('00f067aa0ba902b7');
      expect(span.attributes).toMatchObject({ 'mcp.method.name': e.name, 'mcp.protocol.version': V });
      expect(span.attributes['mcp.session.id']).toBeUndefined();
      expect(span.status.code, e.name).toBe(e.outcome === 'ok' ? 0 : 2);
    }

    const lines = callLines(gw.logs);
    for (const e of expected) {
      expect(lines.find((l) => l.requestId === e.requestId)).toMatchObject({ method: e.name, outcome: e.outcome, principal: 'apikey:alice', durationMs: expect.any(Number) });
    }

    const series = await scrape(new URL('/metrics', url));
    expect(series.get('switchyard_requests_total{method="server/discover",upstream="none",outcome="ok"}')).toBe(1);
    expect(series.get('switchyard_requests_total{method="tasks/get",upstream="none",outcome="ok"}')).toBe(1);
    expect(series.get('switchyard_requests_total{method="tasks/get",upstream="none",outcome="error"}')).toBe(1);
    expect(series.get('switchyard_requests_total{method="tasks/cancel",upstream="none",outcome="ok"}')).toBe(1);
    expect(series.get('switchyard_endpoint_requests_total{endpoint="/mcp",method="tasks/cancel",outcome="ok"}')).toBe(1);
    expect(series.get('switchyard_team_requests_total{team="crew",method="server/discover",outcome="ok"}')).toBe(1);
    expect(series.get('switchyard_team_requests_total{team="crew",method="tasks/get",outcome="ok"}')).toBe(1);
  });
});

describe('requests refused at the session and listen caps', () => {
  let gw: Started | undefined;
  const streams: AbortController[] = [];

  afterEach(async () => {
    for (const controller of streams.splice(0)) controller.abort();
    await gw?.gateway.close();
    gw = undefined;
  });

  const refusals = (audit: string[]): Record<string, unknown>[] => audit.map((l) => JSON.parse(l) as Record<string, unknown>).filter((r) => r.event === 'request.refused');

  it('of either era are request.refused records: reason sessions, or listens', async () => {
    gw = await start({ auth: { apiKeys }, sessions: { max: 2, maxPerPrincipal: 1 }, upstreams: { probe }, audit: { sink: 'stdout' } });
    const { url } = gw;
    const list = (who: keyof typeof KEYS, id: number, requestId: string, client = 'client-one') =>
      sendStateless(url, statelessRequest(id, 'tools/list', {}, statelessMeta({}, client)), as(who, requestId, traceIdOf(id)));
    expect((await list('alice', 1, 'cap-alice-one')).status).toBe(200);
    // alice's second client would be a second session of hers: past maxPerPrincipal.
    const second = await callStateless(url, 2, 'probe__pid', {}, {}, as('alice', 'cap-alice-two', traceIdOf(2)), statelessMeta({}, 'client-two'));
    expect(second.status).toBe(429);
    expect((await list('bob', 3, 'cap-bob')).status).toBe(200);
    // carol's would be a third session: past sessions.max.
    expect((await list('carol', 4, 'cap-carol')).status).toBe(503);

    // alice's listens: one open (in her session), the next past her cap. The trace they carry
    // in `_meta` is the one their records name, not the HTTP header's.
    const listen = async (requestId: string): Promise<Response> => {
      const controller = new AbortController();
      streams.push(controller);
      const meta = { ...statelessMeta({}, 'client-one'), traceparent: `00-${traceIdOf(77)}-00f067aa0ba902b7-01` };
      const message = statelessRequest(requestId, 'subscriptions/listen', { notifications: { toolsListChanged: true } }, meta);
      return postRaw(url, message, { protocolVersion: V, headers: { ...as('alice', requestId, traceIdOf(78)), 'mcp-method': 'subscriptions/listen' }, signal: controller.signal });
    };
    const open = await listen('cap-listen-one');
    expect(open.status).toBe(200);
    await new SseReader(open).nextMessage(10_000, 'the acknowledgement');
    expect((await listen('cap-listen-two')).status).toBe(429);

    // A sessions-era initialize past the caps.
    const init = { jsonrpc: '2.0', id: 9, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'c', version: '1' } } };
    expect((await postRpc(url, init, { headers: as('bob', 'cap-initialize') })).status).toBe(503);

    await expect.poll(() => refusals(gw!.audit).length, { timeout: 10_000 }).toBeGreaterThanOrEqual(4);
    const records = refusals(gw.audit);
    const base = { endpoint: '/mcp', decision: 'deny', outcome: 'refused' };
    expect(records).toEqual([
      expect.objectContaining({ ...base, requestId: 'cap-alice-two', principal: 'apikey:alice', reason: 'sessions', traceId: traceIdOf(2) }),
      expect.objectContaining({ ...base, requestId: 'cap-carol', principal: 'apikey:carol', reason: 'sessions', traceId: traceIdOf(4) }),
      expect.objectContaining({ ...base, requestId: 'cap-listen-two', principal: 'apikey:alice', reason: 'listens', traceId: traceIdOf(77) }),
      expect.objectContaining({ ...base, requestId: 'cap-initialize', principal: 'apikey:bob', reason: 'sessions' }),
    ]);
  });
});

// A subscriptions/listen is accounted from its request to its acknowledgement (the stream's
// open; tracing.md), or to its refusal; so is every refusal of a 2026-07-28 request the edge
// answers before a session or the router sees it (validation, the caps).
describe('subscriptions/listen and the refusals of the 2026-07-28 edge', () => {
  let otlp: OtlpReceiver;
  let gw: Started;
  const streams: AbortController[] = [];

  beforeAll(async () => {
    otlp = await startOtlpReceiver();
    gw = await start({
      metrics: { enabled: true },
      auth: { apiKeys },
      teams: [{ name: 'crew', default: true }],
      sessions: { maxPerPrincipal: 1 },
      upstreams: { probe },
      tracing: { otlp: { endpoint: otlp.url }, sampleRatio: 1 },
    });
  });

  afterAll(async () => {
    for (const controller of streams.splice(0)) controller.abort();
    await gw?.gateway.close();
    await otlp?.close();
  });

  it('a listen when it opens, and each refusal: a SERVER span, a call line and a count', async () => {
    const { url } = gw;
    const listen = (who: keyof typeof KEYS, id: number, requestId: string, params: Record<string, unknown> = { notifications: { toolsListChanged: true } }): Promise<Response> => {
      const controller = new AbortController();
      streams.push(controller);
      const message = statelessRequest(id, 'subscriptions/listen', params, statelessMeta({}, 'client-one'));
      return postRaw(url, message, { protocolVersion: V, headers: { ...as(who, requestId, traceIdOf(id)), 'mcp-method': 'subscriptions/listen' }, signal: controller.signal });
    };
    const open = await listen('alice', 11, 'edge-listen');
    expect(open.status).toBe(200);
    await new SseReader(open).nextMessage(10_000, 'the acknowledgement');
    // alice's second listen: past her open streams (sessions.maxPerPrincipal).
    expect((await listen('alice', 12, 'edge-listen-cap')).status).toBe(429);
    // A listen without its notifications filter.
    expect((await listen('bob', 13, 'edge-listen-params', {})).status).toBe(400);
    // A method this revision does not have.
    const unknown = await sendStateless(url, statelessRequest(14, 'frobnicate/now', {}, statelessMeta({})), as('bob', 'edge-unknown', traceIdOf(14)));
    expect(unknown.status).toBe(404);
    // An Mcp-Name header naming another tool than the body does.
    const mismatch = await callStateless(url, 15, 'probe__pid', {}, {}, { ...as('bob', 'edge-mismatch', traceIdOf(15)), 'mcp-name': 'probe__other' }, statelessMeta({}));
    expect(mismatch.status).toBe(400);
    // alice's second client would be a second session of hers: past sessions.maxPerPrincipal.
    const second = await sendStateless(url, statelessRequest(16, 'tools/list', {}, statelessMeta({}, 'client-two')), as('alice', 'edge-session-cap', traceIdOf(16)));
    expect(second.status).toBe(429);

    const expected = [
      { trace: 11, name: 'subscriptions/listen', requestId: 'edge-listen', method: 'subscriptions/listen', outcome: 'ok', principal: 'apikey:alice' },
      { trace: 12, name: 'subscriptions/listen', requestId: 'edge-listen-cap', method: 'subscriptions/listen', outcome: 'error', principal: 'apikey:alice' },
      { trace: 13, name: 'subscriptions/listen', requestId: 'edge-listen-params', method: 'subscriptions/listen', outcome: 'error', principal: 'apikey:bob' },
      { trace: 14, name: 'frobnicate/now', requestId: 'edge-unknown', method: 'frobnicate/now', outcome: 'error', principal: 'apikey:bob' },
      { trace: 15, name: 'tools/call probe__pid', requestId: 'edge-mismatch', method: 'tools/call', outcome: 'error', principal: 'apikey:bob' },
      { trace: 16, name: 'tools/list', requestId: 'edge-session-cap', method: 'tools/list', outcome: 'error', principal: 'apikey:alice' },
    ];
    const serverSpan = (trace: number) => otlp.spans.find((s) => s.kind === SERVER && s.traceId === traceIdOf(trace));
    // The listen's span ends with its acknowledgement, while its stream stays open.
    await otlp.waitFor(() => expected.every((e) => serverSpan(e.trace) !== undefined), 'a SERVER span of each', 10_000);
    for (const e of expected) {
      const span = serverSpan(e.trace)!;
      expect(span.name).toBe(e.name);
      expect(span.parentSpanId).toBe('00f067aa0ba902b7');
      expect(span.attributes).toMatchObject({ 'mcp.method.name': e.method, 'mcp.protocol.version': V });
      expect(span.status.code, e.requestId).toBe(e.outcome === 'ok' ? 0 : 2);
    }
    expect(otlp.spans.filter((s) => s.kind === SERVER && s.traceId === traceIdOf(11))).toHaveLength(1);

    const lines = callLines(gw.logs);
    for (const e of expected) {
      expect(lines.filter((l) => l.requestId === e.requestId), e.requestId).toEqual([
        expect.objectContaining({ method: e.method, outcome: e.outcome, principal: e.principal, durationMs: expect.any(Number) }),
      ]);
    }
    expect(lines.find((l) => l.requestId === 'edge-listen-cap')?.error).toMatch(/subscriptions\/listen streams/);

    const series = await scrape(new URL('/metrics', url));
    expect(series.get('switchyard_requests_total{method="subscriptions/listen",upstream="none",outcome="ok"}')).toBe(1);
    expect(series.get('switchyard_requests_total{method="subscriptions/listen",upstream="none",outcome="error"}')).toBe(2);
    expect(series.get('switchyard_requests_total{method="other",upstream="none",outcome="error"}')).toBe(1);
    expect(series.get('switchyard_requests_total{method="tools/call",upstream="none",outcome="error"}')).toBe(1);
    expect(series.get('switchyard_requests_total{method="tools/list",upstream="none",outcome="error"}')).toBe(1);
    expect(series.get('switchyard_endpoint_requests_total{endpoint="/mcp",method="subscriptions/listen",outcome="ok"}')).toBe(1);
    expect(series.get('switchyard_team_requests_total{team="crew",method="subscriptions/listen",outcome="ok"}')).toBe(1);
    expect(series.get('switchyard_team_requests_total{team="crew",method="subscriptions/listen",outcome="error"}')).toBe(2);
  });
});
