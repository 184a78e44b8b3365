// The log redactor: literal secrets of some length anywhere, and values substituted from the
// environment whatever their length; short ones of those only as whole tokens.
import { describe, expect, it } from 'vitest';
import { Redactor } from '../../src/util/redact.js';

describe('Redactor', () => {
  it('a long secret is redacted wherever it appears, also JSON-escaped', () => {
    const redactor = new Redactor(['s3cr3t"value']);
    expect(redactor.redact('a s3cr3t"value b')).toBe('a [redacted] b');
    expect(redactor.redact(JSON.stringify({ v: 'xs3cr3t"valuex' }))).toBe('{"v":"x[redacted]x"}');
  });

  it('a short literal value is no secret (a port, "true")', () => {
    expect(new Redactor(['true', '8080']).redact('{"ok":true,"port":8080}')).toBe('{"ok":true,"port":8080}');
  });

  it('a short value from the environment is redacted as a whole token', () => {
    const redactor = new Redactor([{ value: 'k9x', fromEnv: true }]);
    expect(redactor.redact('url=http://h/mcp?key=k9x&a=1')).toBe('url=http://h/mcp?key=[redacted]&a=1');
    expect(redactor.redact('{"key":"k9x"}')).toBe('{"key":"[redacted]"}');
    expect(redactor.redact('user:k9x@host')).toBe('user:[redacted]@host');
  });

  it('a short value from the environment is left alone inside a longer word', () => {
    const redactor = new Redactor([{ value: 'pass', fromEnv: true }]);
    expect(redactor.redact('password passes bypass pass_word')).toBe('password passes bypass pass_word');
    expect(redactor.redact('the pass is pass.')).toBe('the [redacted] is [redacted].');
  });

  it('short values with regex characters match literally', () => {
    const redactor = new Redactor([{ value: 'a.b', fromEnv: true }, { value: '(x', fromEnv: true }]);
    expect(redactor.redact('a.b axb (x')).toBe('[redacted] axb [redacted]');
  });

  it('a long value from the environment is redacted anywhere, even inside a word', () => {
    expect(new Redactor([{ value: 'urlsecret42', fromEnv: true }]).redact('xurlsecret42x')).toBe('x[redacted]x');
  });

  it('an update replaces the short secrets too', () => {
    const redactor = new Redactor([{ value: 'k9x', fromEnv: true }]);
    redactor.update([]);
    expect(redactor.redact('key=k9x')).toBe('key=k9x');
  });
});
