// Audit records from a running gateway: one per tool call, prompt get and resource read, with
// who (principal, team), where (endpoint, upstream, both names), the decision (a team's policy,
// a rate limit) and outcome, the request id the client got back and the trace id; config
// reloads; the OTLP logs sink; and a flood of calls into a sink that never drains: every call
// is answered and every record dropped is counted.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/auth/api-keys.js';
import { configFromObject } from '../../src/config/load.js';
import { createGateway, type Gateway } from '../../src/gateway.js';
import { createLogger } from '../../src/util/log.js';
import { Redactor } from '../../src/util/redact.js';
import type { WritableLike } from '../../src/audit/audit.js';
import { connectClient, textOf, upstream } from '../helpers/gateway.js';
import { scrape } from '../helpers/metrics.js';
import { startOtlpReceiver, type OtlpReceiver } from '../helpers/otlp-receiver.js';
import { ROOT } from '../helpers/paths.js';

const KEY = 'audit-test-key-0123456789';
/** A secret of the config (an upstream's environment): the redactor hides it wherever it lands. */
const SECRET = 'configured-secret-0123';
const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

async function start(raw: Record<string, unknown>, extra: { stdout?: WritableLike; auditQueueLimit?: number; configDir?: string } = {}): Promise<{ gateway: Gateway; url: URL }> {
  const config = configFromObject({ listen: { port: 0 }, health: { probeInterval: 0 }, ...raw }, { file: join(ROOT, 'gateway.test.yaml'), env: {} });
  // As main.ts does: the redactor learns the config's secrets from the gateway.
  const redactor = new Redactor();
  const logger = createLogger({ level: 'silent', write: () => {}, redact: (line) => redactor.redact(line) });
  const gateway = createGateway(config, { logger, redactor, baseEnv: { PATH: process.env.PATH, HOME: process.env.HOME }, ...extra });
  return { gateway, url: await gateway.start() };
}

type Record_ = Record<string, unknown>;

describe('audit records of a running gateway (file sink)', () => {
  let dir: string;
  let gw: Gateway;
  let url: URL;
  let client: Client;
  let records: Record_[];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'switchyard-audit-e2e-'));
    ({ gateway: gw, url } = await start(
      {
        auth: { apiKeys: [{ id: 'ci', hash: hashApiKey(KEY), team: 'ci' }] },
        listen: { port: 0, allowUnauthenticated: true },
        teams: [{ name: 'ci', deny: ['everything__get-sum'] }],
        rateLimits: { perTool: { 'everything__echo': { rate: 2, per: '1m' } } },
        upstreams: { everything: { stdio: { ...upstream.everything().stdio, env: { AUDIT_SECRET: SECRET } } } },
        audit: { sink: { file: { path: 'audit.jsonl' } }, arguments: true },
      },
      { configDir: dir },
    ));
    // The file sink's path is relative to the config file's directory.
    client = await connectClient(url, {}, undefined, { authorization: `Bearer ${KEY}`, traceparent: TRACEPARENT });
    await client.callTool({ name: 'everything__echo', arguments: { message: 'one' } });
    await client.callTool({ name: 'everything__echo', arguments: { message: `secret ${SECRET}, token Bearer abc.def-ghi` } });
    const limited = await client.callTool({ name: 'everything__echo', arguments: { message: 'three' } });
    expect(textOf(limited)).toMatch(/^Rate limit for everything__echo/);
    await expect(client.callTool({ name: 'everything__get-sum', arguments: { a: 1, b: 2 } })).rejects.toMatchObject({ code: -32602 });
    await client.getPrompt({ name: 'everything__simple-prompt' });
    await client.readResource({ uri: 'everything+demo://resource/static/document/architecture.md' }).catch(() => undefined);
    const refused = await fetch(url, { method: 'POST', headers: { authorization: 'Bearer not-a-key-of-ours', 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }) });
    expect(refused.status).toBe(401);
    await client.close();
    await gw.close();
    records = (await readFile(join(dir, 'audit.jsonl'), 'utf8')).trim().split('\n').map((line) => JSON.parse(line) as Record_);
  });

  afterAll(async () => {
    await gw?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('one record per tool call: who, where, both names, outcome, request and trace ids', () => {
    const calls = records.filter((r) => r.event === 'tool.call');
    expect(calls).toHaveLength(4);
    const [first] = calls;
    expect(first).toMatchObject({
      schema: 'switchyard.audit/1',
      principal: 'apikey:ci',
      team: 'ci',
      endpoint: '/mcp',
      upstream: 'everything',
      name: 'everything__echo',
      upstreamName: 'echo',
      decision: 'allow',
      outcome: 'ok',
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
      arguments: { message: 'one' },
    });
    expect(first!.requestId).toEqual(expect.any(String));
    expect(first!.durationMs).toEqual(expect.any(Number));
    expect(Date.parse(first!.time as string)).not.toBeNaN();
  });

  it('arguments are redacted like log lines (a configured secret or a bearer token never lands in a record)', () => {
    const second = records.filter((r) => r.event === 'tool.call')[1]!;
    expect(second.arguments).toEqual({ message: 'secret [redacted], token Bearer [redacted]' });
  });

  it('a rate-limited call and a call the team may not make are denies, with the reason', () => {
    const calls = records.filter((r) => r.event === 'tool.call');
    expect(calls[2]).toMatchObject({ name: 'everything__echo', decision: 'deny', reason: 'rate_limit', outcome: 'refused' });
    expect(calls[3]).toMatchObject({ name: 'everything__get-sum', decision: 'deny', reason: 'policy', outcome: 'refused', errorKind: 'unknown_name' });
  });

  it('a request refused at the edge (a wrong credential) is a request.refused record', () => {
    expect(records.find((r) => r.event === 'request.refused')).toMatchObject({ endpoint: '/mcp', decision: 'deny', reason: 'authentication', outcome: 'refused', errorKind: expect.any(String) });
  });

  it('prompt gets and resource reads are recorded too', () => {
    expect(records.find((r) => r.event === 'prompt.get')).toMatchObject({ name: 'everything__simple-prompt', upstream: 'everything', decision: 'allow', outcome: 'ok' });
    expect(records.find((r) => r.event === 'resource.read')).toMatchObject({ name: 'everything+demo://resource/static/document/architecture.md', decision: 'allow' });
  });
});

describe('audit records: reloads and the OTLP logs sink', () => {
  let receiver: OtlpReceiver;
  beforeAll(async () => {
    receiver = await startOtlpReceiver();
  });
  afterAll(async () => {
    await receiver?.close();
  });

  it('records reach an OTLP receiver as log records, reloads included', async () => {
    const raw = { upstreams: { everything: upstream.everything() }, tracing: { otlp: { endpoint: receiver.url } }, audit: { sink: { otlp: true } } };
    const { gateway, url } = await start(raw);
    try {
      const client = await connectClient(url);
      await client.callTool({ name: 'everything__echo', arguments: { message: 'hi' } });
      await client.close();
      gateway.reload(configFromObject({ listen: { port: 0 }, health: { probeInterval: 0 }, ...raw, upstreams: {} }, { file: join(ROOT, 'gateway.test.yaml'), env: {} }));
      gateway.reloadRejected();
    } finally {
      await gateway.close();
    }
    await receiver.waitFor(() => receiver.logs.length >= 3, 'three audit log records');
    const bodies = receiver.logs.map((l) => l.body as Record_);
    expect(receiver.logs.every((l) => l.service === 'switchyard')).toBe(true);
    const call = bodies.find((b) => b.event === 'tool.call');
    expect(call).toMatchObject({ schema: 'switchyard.audit/1', name: 'everything__echo', upstream: 'everything', decision: 'allow', outcome: 'ok' });
    // The record's trace id is the one its SERVER span was exported with.
    await receiver.waitFor(() => receiver.spans.some((s) => s.name === 'tools/call everything__echo'), 'the call span');
    expect(receiver.spans.find((s) => s.name === 'tools/call everything__echo')!.traceId).toBe(call!.traceId);
    expect(bodies.filter((b) => b.event === 'config.reload').map((b) => [b.decision, b.outcome])).toEqual([
      ['allow', 'applied'],
      ['deny', 'rejected'],
    ]);
    expect(receiver.logs.find((l) => (l.body as Record_).event === 'tool.call')!.eventName).toBe('switchyard.audit.tool.call');
  });
});

describe('a flood of calls into a sink that never drains', () => {
  it('answers every call and counts every record dropped', async () => {
    // stdout that takes one write and never finishes it.
    const writes: string[] = [];
    const stalled: WritableLike = { write: (chunk) => (writes.push(chunk), false) };
    const { gateway, url } = await start({ upstreams: { everything: upstream.everything() }, metrics: { enabled: true }, audit: { sink: 'stdout' } }, { stdout: stalled, auditQueueLimit: 50 });
    const calls = 300;
    try {
      const client = await connectClient(url);
      for (let i = 0; i < calls; i++) expect(textOf(await client.callTool({ name: 'everything__echo', arguments: { message: String(i) } }))).toBe(`Echo: ${i}`);
      await client.close();
      const m = await scrape(new URL('/metrics', url));
      // One batch went to the sink and never came back; 50 wait; the rest were dropped and counted.
      expect(writes).toHaveLength(1);
      const taken = m.get('switchyard_audit_records_total{event="tool.call"}')!;
      const dropped = m.get('switchyard_audit_dropped_total{sink="stdout"}')!;
      expect(taken + dropped).toBe(calls);
      expect(taken).toBe(writes[0]!.trim().split('\n').length + 50);
      expect(m.get('switchyard_requests_total{method="tools/call",upstream="everything",outcome="ok"}')).toBe(calls);
    } finally {
      await gateway.close();
    }
  });
});
