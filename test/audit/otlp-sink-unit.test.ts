// The audit OTLP sink without a collector (a stand-in exporter): every record lost is counted,
// whether refused, in an export that failed, or still held when close() stops waiting for a
// collector that never answers, which it does after its timeout; and a record keeps only the
// cut of a long client string, not the whole string.
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import type { LogRecordExporter, ReadableLogRecord } from '@opentelemetry/sdk-logs';
import { describe, expect, it } from 'vitest';
import { OtlpSink } from '../../src/audit/otlp-sink.js';
import { auditRecord, FIELD_LIMIT } from '../../src/audit/record.js';
import { heapInUseMb } from '../helpers/heap.js';

const TIME = new Date('2026-07-28T12:00:00.000Z');
const record = { event: 'tool.call', decision: 'allow', outcome: 'ok' };

/** An exporter answering every export with `code`, or never (`undefined`). */
function exporter(code: ExportResultCode | undefined): LogRecordExporter & { received: number } {
  const stand = {
    received: 0,
    export(records: ReadableLogRecord[], done: (result: ExportResult) => void) {
      stand.received += records.length;
      if (code !== undefined) done(code === ExportResultCode.SUCCESS ? { code } : { code, error: new Error('collector down') });
    },
    shutdown: () => Promise.resolve(),
  };
  return stand;
}

function sink(code: ExportResultCode | undefined, limit = 100): { sink: OtlpSink; dropped: () => number; stand: ReturnType<typeof exporter> } {
  let dropped = 0;
  const stand = exporter(code);
  const made = new OtlpSink({ url: undefined, limit, ondrop: (count) => (dropped += count), serviceName: 't', serviceVersion: 't', exporter: stand, closeTimeoutMs: 100 });
  return { sink: made, dropped: () => dropped, stand };
}

describe('the audit OTLP sink', () => {
  it('counts nothing dropped when every export succeeds', async () => {
    const { sink: otlp, dropped, stand } = sink(ExportResultCode.SUCCESS);
    for (let i = 0; i < 10; i++) expect(otlp.offer(record, TIME)).toBe(true);
    await otlp.close();
    expect([stand.received, dropped()]).toEqual([10, 0]);
  });

  it('counts every record of a failed export as dropped', async () => {
    const { sink: otlp, dropped, stand } = sink(ExportResultCode.FAILED);
    for (let i = 0; i < 10; i++) otlp.offer(record, TIME);
    await otlp.flush();
    expect([stand.received, dropped()]).toEqual([10, 10]);
    // Failed exports no longer count as held: new records are taken.
    expect(otlp.offer(record, TIME)).toBe(true);
    await otlp.close();
    expect(dropped()).toBe(11);
  });

  it('gives up on a collector that never answers after its close timeout, counting what it held; takes nothing after', async () => {
    const { sink: otlp, dropped } = sink(undefined, 5);
    for (let i = 0; i < 7; i++) otlp.offer(record, TIME);
    expect(dropped()).toBe(2); // past the limit of 5
    let timer: NodeJS.Timeout | undefined;
    const stillWaiting = new Promise<string>((resolve) => (timer = setTimeout(() => resolve('still waiting after 2 s'), 2_000)));
    try {
      expect(await Promise.race([otlp.close().then(() => 'closed'), stillWaiting])).toBe('closed');
    } finally {
      clearTimeout(timer);
    }
    expect(dropped()).toBe(7);
    expect(otlp.offer(record, TIME)).toBe(false);
    expect(dropped()).toBe(8);
  });
});

describe('an audit record of a long client string', () => {
  it('holds its cut, not the string: 20 records of 3 MB names keep well under 20 MB', () => {
    const before = heapInUseMb();
    const held = Array.from({ length: 20 }, (_, i) => {
      const long = String(i).padEnd(3_000_000, 'x');
      return auditRecord({ event: 'tool.call', name: long, clientId: long, decision: 'allow', outcome: 'ok' }, { time: TIME, arguments: false, redact: (text) => text });
    });
    expect(held[0]!.name).toHaveLength(FIELD_LIMIT + 1);
    expect(heapInUseMb() - before).toBeLessThan(20);
  });
});
