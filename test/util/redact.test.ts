// The log redactor: literal secrets of some length anywhere, and values substituted from the
// environment whatever their length; short ones of those only as whole tokens; JWT shapes after
// any non-alphanumeric character; and a client string redacted and cut reading a bounded prefix.
import { describe, expect, it } from 'vitest';
import { REDACT_LOOKAHEAD, redactCut, Redactor } from '../../src/util/redact.js';

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

const JWT = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLXZhbHVlLTEyMw';

describe('JWT shapes', () => {
  const redactor = new Redactor();

  it('a JWT right after a word character or a separator is redacted (a namespaced tool name)', () => {
    expect(redactor.redact(`everything__${JWT}`)).toBe('everything__[redacted]');
    expect(redactor.redact(`tool-${JWT}`)).toBe('tool-[redacted]');
    expect(redactor.redact(`a.${JWT}`)).toBe('a.[redacted]');
    expect(redactor.redact(`?t=${JWT}&x=1`)).toBe('?t=[redacted]&x=1');
    expect(redactor.redact(JWT)).toBe('[redacted]');
  });

  it('"eyJ" inside an unrelated word is left alone', () => {
    expect(redactor.redact('monkeyJohnDoe.Smith.Jr')).toBe('monkeyJohnDoe.Smith.Jr');
    expect(redactor.redact('key9eyJabcd.efgh.ijkl')).toBe('key9eyJabcd.efgh.ijkl');
  });
});

describe('redactCut: a client string redacted and cut at bounded cost', () => {
  const redactor = new Redactor(['configured-secret-0123']);
  const redact = (text: string): string => redactor.redact(text);

  it('a short string is redacted whole and not cut', () => {
    expect(redactCut(`x?key=configured-secret-0123&t=${JWT}`, 1024, redact)).toEqual({ text: 'x?key=[redacted]&t=[redacted]', cut: false });
  });

  it('a secret or JWT that begins before the cut is never left half', () => {
    const secretAcross = redactCut(`${'a'.repeat(1015)}configured-secret-0123${'b'.repeat(100)}`, 1024, redact);
    expect(secretAcross).toEqual({ text: `${'a'.repeat(1015)}[redacted]`.slice(0, 1024), cut: true });
    const jwtAcross = redactCut(`${'a'.repeat(1000)}_${JWT}${'b'.repeat(100)}`, 1024, redact);
    // The JWT's last part takes the letters after it; what is left fits.
    expect(jwtAcross).toEqual({ text: `${'a'.repeat(1000)}_[redacted]`, cut: false });
  });

  it('reads at most limit + REDACT_LOOKAHEAD characters, and a token running past them is redacted from where it begins', () => {
    const seen: number[] = [];
    const counting = (text: string): string => (seen.push(text.length), redact(text));
    const huge = `${'n'.repeat(1000)}__eyJ${'h'.repeat(3_000_000)}.${'p'.repeat(10)}.sig`;
    const { text, cut } = redactCut(huge, 1024, counting);
    expect(Math.max(...seen)).toBeLessThanOrEqual(1024 + REDACT_LOOKAHEAD);
    expect(text).toBe(`${'n'.repeat(1000)}__[redacted]`);
    expect(cut).toBe(true);
  });

  it('a configured secret longer than the lookahead that begins before the cut is never left half', () => {
    const long = `pem-${'k'.repeat(20_000)}`;
    const withLong = new Redactor([long]);
    const { text, cut } = redactCut(`${'a'.repeat(1000)}${long}${'b'.repeat(100)}`, 1024, withLong.asFunction());
    expect(text).toBe(`${'a'.repeat(1000)}[redacted]${'b'.repeat(14)}`);
    expect(cut).toBe(true);
    // A secret learned later widens the reach of the same function.
    const learned = new Redactor();
    const fn = learned.asFunction();
    learned.add(long);
    expect(redactCut(`${'a'.repeat(1000)}${long}`, 1024, fn).text).toBe(`${'a'.repeat(1000)}[redacted]`);
  });

  it('a long string without secrets is cut to the limit, as a copy', () => {
    const { text, cut } = redactCut('z'.repeat(100_000), 1024, redact);
    expect(text).toBe('z'.repeat(1024));
    expect(cut).toBe(true);
  });
});
