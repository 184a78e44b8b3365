// The audit log without a gateway: the switchyard.audit/1 format held by a golden file (one
// record of every event, every field), arguments redacted and cut, the file sink's rotation by
// size, and a flood into a stalled sink: every write returns at once, memory stays bounded,
// and what was dropped is counted exactly.
import { mkdtemp, readFile, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AuditLog, type AuditEntry, type WritableLike } from '../../src/audit/audit.js';
import { AUDIT_EVENTS, ARGUMENTS_LIMIT, FIELD_LIMIT } from '../../src/audit/record.js';
import { Metrics } from '../../src/metrics/metrics.js';
import { Redactor } from '../../src/util/redact.js';
import { ROOT } from '../helpers/paths.js';

const GOLDEN = join(ROOT, 'test/audit/golden.jsonl');
const TIME = new Date('2026-07-28T12:00:00.000Z');

/** One entry of every event, with every field the event can carry. */
const ENTRIES: AuditEntry[] = [
  {
    event: 'tool.call',
    requestId: 'req-1',
    traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
    principal: 'https://login.example.com/|alice',
    team: 'platform',
    clientId: 'https://client.example.com/metadata.json',
    endpoint: '/mcp',
    upstream: 'everything',
    name: 'everything__echo',
    upstreamName: 'echo',
    decision: 'allow',
    outcome: 'ok',
    durationMs: 12.5,
    arguments: { message: 'hello', token: 'Bearer abc.def-ghi' },
  },
  { event: 'tool.call', requestId: 'req-2', principal: 'apikey:ci', team: 'ci', endpoint: '/mcp', upstream: 'tickets', name: 'tickets__delete', decision: 'deny', reason: 'policy', outcome: 'refused', errorKind: 'unknown_name', durationMs: 0.2 },
  { event: 'tool.call', requestId: 'req-3', principal: 'apikey:ci', endpoint: '/mcp', upstream: 'tickets', name: 'tickets__search', upstreamName: 'search', decision: 'deny', reason: 'rate_limit', outcome: 'refused', durationMs: 0.1 },
  { event: 'tool.call', requestId: 'req-4', endpoint: '/mcp', upstream: 'everything', name: 'everything__fail', upstreamName: 'fail', decision: 'allow', outcome: 'error', errorKind: 'tool_error', durationMs: 3 },
  { event: 'prompt.get', requestId: 'req-5', principal: 'apikey:ci', endpoint: '/team/mcp', upstream: 'everything', name: 'everything__simple_prompt', decision: 'allow', outcome: 'timeout', errorKind: 'upstream_timeout', durationMs: 30000 },
  { event: 'resource.read', requestId: 'req-6', traceId: '0af7651916cd43dd8448eb211c80319c', endpoint: '/mcp', upstream: 'everything', name: 'everything+test://static/resource/1', decision: 'allow', outcome: 'ok', durationMs: 1.25 },
  { event: 'request.refused', requestId: 'req-7', principal: 'apikey:ci', endpoint: '/mcp', decision: 'deny', reason: 'rate_limit', outcome: 'refused' },
  { event: 'sign_in', principal: 'https://login.example.com/|alice', upstream: 'github', decision: 'allow', outcome: 'ok' },
  { event: 'token.issued', principal: 'https://login.example.com/|alice', clientId: 'dcr-3f2a', decision: 'allow', outcome: 'ok', detail: { grantType: 'authorization_code', resource: 'https://mcp.example.com/mcp' } },
  { event: 'token.refused', clientId: 'dcr-3f2a', decision: 'deny', reason: 'invalid_grant', outcome: 'refused', detail: { grantType: 'refresh_token' } },
  { event: 'token.exchange', principal: 'https://login.example.com/|alice', upstream: 'tickets', decision: 'allow', outcome: 'ok' },
  { event: 'pin.approved', principal: 'https://login.example.com/|bob', upstream: 'tickets', name: 'search', decision: 'allow', outcome: 'ok', detail: { kind: 'tool', digest: 'sha256:9f2c' } },
  { event: 'config.reload', decision: 'allow', outcome: 'applied', detail: { added: ['tickets'], changed: [], removed: [], needRestart: [] } },
  { event: 'task.created', requestId: 'req-8', principal: 'apikey:ci', team: 'ci', endpoint: '/mcp', upstream: 'render', name: 'render__video', task: 'tsk_AbC123', decision: 'allow', outcome: 'ok' },
  { event: 'task.cancel_requested', requestId: 'req-9', principal: 'apikey:ci', team: 'ci', endpoint: '/mcp', upstream: 'render', name: 'render__video', task: 'tsk_AbC123', decision: 'allow', outcome: 'ok' },
  { event: 'task.ended', requestId: 'req-8', principal: 'apikey:ci', team: 'ci', endpoint: '/mcp', upstream: 'render', name: 'render__video', task: 'tsk_AbC123', decision: 'allow', outcome: 'failed', errorKind: 'task_result_too_large', durationMs: 93000 },
  { event: 'task.lost', requestId: 'req-10', principal: 'apikey:ci', team: 'ci', endpoint: '/mcp', upstream: 'render', name: 'render__video', task: 'tsk_XyZ789', decision: 'allow', reason: 'replica_lost', outcome: 'failed' },
];

/** A stream that hands every chunk to `chunks` at once (or never settles a write: stalled). */
function capture(stalled = false): WritableLike & { chunks: string[] } {
  const chunks: string[] = [];
  return {
    chunks,
    write(chunk, done) {
      chunks.push(chunk);
      if (!stalled) done();
      return true;
    },
  };
}

function sample(metrics: Metrics, name: string, labels: string): Promise<number | undefined> {
  return metrics.registry.getSingleMetric(name)!.get().then((m) => m.values.find((v) => Object.entries(v.labels).map(([k, x]) => `${k}=${String(x)}`).join(',') === labels)?.value);
}

describe('audit records (switchyard.audit/1)', () => {
  it('every event and field, as the golden file holds them', async () => {
    const out = capture();
    const redactor = new Redactor(['super-secret-value']);
    const audit = new AuditLog({ sink: 'stdout', arguments: true }, { metrics: new Metrics([]), stdout: out, resolvePath: (p) => p, redact: (t) => redactor.redact(t), env: {}, serviceVersion: 'test', now: () => TIME });
    for (const entry of ENTRIES) audit.write(entry);
    await audit.close();
    const written = out.chunks.join('');
    expect(written).toBe(await readFile(GOLDEN, 'utf8'));
    // Every event of the format has a line there.
    const events = new Set(written.trim().split('\n').map((line) => (JSON.parse(line) as { event: string }).event));
    expect([...events].sort()).toEqual([...AUDIT_EVENTS].sort());
  });

  it('records arguments only when configured, redacted, and cut to 4 KiB', async () => {
    const out = capture();
    const redactor = new Redactor(['super-secret-value']);
    const deps = { metrics: new Metrics([]), stdout: out, resolvePath: (p: string) => p, redact: (t: string) => redactor.redact(t), env: {}, serviceVersion: 'test', now: () => TIME };
    const off = new AuditLog({ sink: 'stdout', arguments: false }, deps);
    off.write({ event: 'tool.call', decision: 'allow', outcome: 'ok', arguments: { key: 'super-secret-value' } });
    await off.close();
    expect(out.chunks.join('')).not.toContain('arguments');
    out.chunks.length = 0;
    const on = new AuditLog({ sink: 'stdout', arguments: true }, deps);
    on.write({ event: 'tool.call', decision: 'allow', outcome: 'ok', arguments: { key: 'super-secret-value', note: 'fine' } });
    on.write({ event: 'tool.call', decision: 'allow', outcome: 'ok', arguments: { blob: 'x'.repeat(10_000) } });
    await on.close();
    const [small, large] = out.chunks.join('').trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(small!.arguments).toEqual({ key: '[redacted]', note: 'fine' });
    expect(large!.argumentsTruncated).toBe(true);
    expect(Buffer.byteLength(large!.arguments as string)).toBe(ARGUMENTS_LIMIT);
  });

  it('cuts every field a client can make long, so the queue holds records, not bodies', async () => {
    // A 3 MB tool name (the body limit allows 4 MiB), refused as unknown, is still audited.
    const out = capture();
    const audit = new AuditLog({ sink: 'stdout', arguments: false }, { metrics: new Metrics([]), stdout: out, resolvePath: (p) => p, env: {}, serviceVersion: 'test', now: () => TIME });
    const long = 'n'.repeat(3_000_000);
    audit.write({ event: 'tool.call', decision: 'allow', outcome: 'error', name: long, upstreamName: long, reason: long, clientId: long, detail: { resource: long, grantType: 'x' } });
    await audit.close();
    const line = out.chunks.join('');
    expect(line.length).toBeLessThan(5 * (FIELD_LIMIT + 16) + 300);
    const record = JSON.parse(line) as Record<string, unknown> & { detail: Record<string, string> };
    expect(record.name).toBe(`${'n'.repeat(FIELD_LIMIT)}…`);
    expect(record.detail.resource).toBe(`${'n'.repeat(FIELD_LIMIT)}…`);
    expect(record.detail.grantType).toBe('x');
    expect(record.fieldsTruncated).toBe(true);
  });
});

describe('the file sink', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'switchyard-audit-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('rotates by size, keeps `keep` files, and never splits a record', async () => {
    const path = join(dir, 'audit.jsonl');
    const audit = new AuditLog({ sink: { file: { path: 'audit.jsonl', maxBytes: 2048, keep: 2 } }, arguments: false }, { metrics: new Metrics([]), resolvePath: (p) => join(dir, p), env: {}, serviceVersion: 'test', now: () => TIME });
    // Written over many turns, so rotation happens inside and between batches.
    for (let i = 0; i < 200; i++) {
      audit.write({ event: 'tool.call', requestId: `req-${String(i).padStart(4, '0')}`, decision: 'allow', outcome: 'ok' });
      if (i % 7 === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    await audit.close();
    expect((await readdir(dir)).sort()).toEqual(['audit.jsonl', 'audit.jsonl.1', 'audit.jsonl.2']);
    const files = [`${path}.2`, `${path}.1`, path];
    const ids: number[] = [];
    for (const file of files) {
      expect((await stat(file)).size).toBeLessThanOrEqual(2048);
      const text = await readFile(file, 'utf8');
      expect(text.endsWith('\n')).toBe(true);
      for (const line of text.trim().split('\n')) ids.push(Number((JSON.parse(line) as { requestId: string }).requestId.slice(4)));
    }
    // Oldest file first: the kept records are the newest ones, in order, with no gap.
    expect(ids.at(-1)).toBe(199);
    expect(ids).toEqual(Array.from({ length: ids.length }, (_, i) => 200 - ids.length + i));
    expect(ids.length).toBeLessThan(200);
  });

  it('appends to the file a restart finds', async () => {
    const deps = { metrics: new Metrics([]), resolvePath: (p: string) => join(dir, p), env: {}, serviceVersion: 'test', now: () => TIME };
    for (const requestId of ['first', 'second']) {
      const audit = new AuditLog({ sink: { file: { path: 'a.jsonl', maxBytes: 1 << 20, keep: 1 } }, arguments: false }, deps);
      audit.write({ event: 'config.reload', requestId, decision: 'allow', outcome: 'applied' });
      await audit.close();
    }
    const lines = (await readFile(join(dir, 'a.jsonl'), 'utf8')).trim().split('\n');
    expect(lines.map((l) => (JSON.parse(l) as { requestId: string }).requestId)).toEqual(['first', 'second']);
  });
});

describe('a stalled sink', () => {
  it('takes a flood of 100,000 records without waiting: the queue stays bounded and every drop is counted', async () => {
    const out = capture(true);
    const metrics = new Metrics([]);
    const audit = new AuditLog({ sink: 'stdout', arguments: true }, { metrics, stdout: out, resolvePath: (p) => p, env: {}, serviceVersion: 'test', limit: 10_000, closeTimeoutMs: 50 });
    const entry: AuditEntry = { event: 'tool.call', requestId: 'r', decision: 'allow', outcome: 'ok', arguments: { n: 1 } };
    // All in one turn: nothing here can wait for the sink.
    for (let i = 0; i < 100_000; i++) audit.write(entry);
    expect(audit.queued).toBe(10_000);
    expect(await sample(metrics, 'switchyard_audit_dropped_total', 'sink=stdout')).toBe(90_000);
    expect(await sample(metrics, 'switchyard_audit_records_total', 'event=tool.call')).toBe(10_000);
    // The sink takes one batch and never finishes it; the queue refills to its bound only.
    await new Promise((resolve) => setImmediate(resolve));
    expect(out.chunks).toHaveLength(1);
    expect(audit.queued).toBe(0);
    for (let i = 0; i < 100_000; i++) audit.write(entry);
    expect(audit.queued).toBe(10_000);
    expect(await sample(metrics, 'switchyard_audit_dropped_total', 'sink=stdout')).toBe(180_000);
    expect(out.chunks).toHaveLength(1);
    // Closing gives up on the stalled sink (bounded) and counts what it never took.
    await audit.close();
    expect(await sample(metrics, 'switchyard_audit_dropped_total', 'sink=stdout')).toBe(190_000);
    audit.write(entry);
    expect(await sample(metrics, 'switchyard_audit_dropped_total', 'sink=stdout')).toBe(190_001);
  });
});
