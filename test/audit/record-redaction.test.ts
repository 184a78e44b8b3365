// An audit record keeps no secret the log line of the same request hides: every string field
// (a resource URI or tool name the client sent, `detail`'s values) goes through the log
// redactor before it is cut, reading a bounded prefix of it however long it is.
import { describe, expect, it } from 'vitest';
import { auditLine, auditRecord, FIELD_LIMIT, type AuditEntry } from '../../src/audit/record.js';
import { Redactor } from '../../src/util/redact.js';

const SECRET = 'configured-secret-0123';
const JWT = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLXZhbHVlLTEyMw';
const TIME = new Date('2026-07-28T12:00:00.000Z');
const redactor = new Redactor([SECRET]);
const options = { time: TIME, arguments: false, redact: (text: string) => redactor.redact(text) };

describe('audit record redaction', () => {
  it('a configured secret and a JWT in a resource URI or a tool name are redacted, as on the log line', () => {
    const read: AuditEntry = { event: 'resource.read', upstream: 'everything', name: `everything+demo://resource/x?key=${SECRET}&t=${JWT}`, decision: 'allow', outcome: 'error', errorKind: 'unknown_name' };
    expect(auditRecord(read, options).name).toBe('everything+demo://resource/x?key=[redacted]&t=[redacted]');
    const call: AuditEntry = { event: 'tool.call', name: `everything__${JWT}`, upstreamName: JWT, decision: 'allow', outcome: 'error' };
    const record = auditRecord(call, options);
    expect(record.name).toBe('everything__[redacted]');
    expect(record.upstreamName).toBe('[redacted]');
    expect(record.fieldsTruncated).toBeUndefined();
    expect(auditLine(call, options)).not.toContain('eyJ');
  });

  it('every string field and detail value is redacted', () => {
    const entry: AuditEntry = { event: 'token.refused', clientId: `https://c.example/?s=${SECRET}`, principal: `p|${JWT}`, decision: 'deny', reason: 'invalid_grant', outcome: 'refused', detail: { resource: `https://x/?k=${SECRET}`, list: ['Bearer abc.def-ghi'] } };
    const line = auditLine(entry, options);
    expect(line).not.toContain(SECRET);
    expect(line).not.toContain('eyJ');
    expect(JSON.parse(line).detail).toEqual({ resource: 'https://x/?k=[redacted]', list: ['Bearer [redacted]'] });
  });

  it('a secret straddling the cut is not left half, and a huge name is read only in part', () => {
    const seen: number[] = [];
    const counting = { ...options, redact: (text: string) => (seen.push(text.length), redactor.redact(text)) };
    const across = auditRecord({ event: 'tool.call', name: `${'a'.repeat(FIELD_LIMIT - 5)}${SECRET}`, decision: 'allow', outcome: 'ok' }, counting);
    expect(across.name).not.toMatch(/configu/);
    expect(across.fieldsTruncated).toBe(true);
    const huge = auditRecord({ event: 'tool.call', name: `everything__${JWT}${'x'.repeat(5_000_000)}`, decision: 'allow', outcome: 'ok' }, counting);
    expect(huge.name).toBe('everything__[redacted]…');
    expect(Math.max(...seen)).toBeLessThan(64 * 1024);
  });
});
