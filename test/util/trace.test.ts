// W3C Trace Context validation: what the gateway forwards as a header is valid syntax, and a
// value with CR/LF or control characters (header injection) never gets through.
import { describe, expect, it } from 'vitest';
import { childTraceparent, continuedTraceparent, MAX_TRACESTATE_LENGTH, MAX_TRACESTATE_MEMBERS, parseTraceparent, parseTracestate, traceIdOf } from '../../src/util/trace.js';

const PARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

describe('the trace a request continues (forwarded upstream and named in its audit record)', () => {
  const HEADER = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
  it("is the request's own _meta.traceparent when valid, normalized", () => {
    expect(traceIdOf(continuedTraceparent(PARENT.toUpperCase(), HEADER))).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
  });
  it("is the header's when _meta's is not valid W3C syntax (garbage, an all-zero trace id)", () => {
    expect(continuedTraceparent('garbage', HEADER)).toBe(HEADER);
    expect(continuedTraceparent('00-00000000000000000000000000000000-00f067aa0ba902b7-01', HEADER)).toBe(HEADER);
    expect(traceIdOf(continuedTraceparent(undefined, 'garbage'))).toBeUndefined();
  });
});

describe('parseTracestate', () => {
  it('accepts the examples of the W3C spec', () => {
    expect(parseTracestate('congo=t61rcWkgMzE')).toBe('congo=t61rcWkgMzE');
    expect(parseTracestate('rojo=00f067aa0ba902b7,congo=t61rcWkgMzE')).toBe('rojo=00f067aa0ba902b7,congo=t61rcWkgMzE');
    expect(parseTracestate('fw529a3039@dt=ZmY=')).toBeUndefined(); // '=' is not allowed in a value
    expect(parseTracestate('fw529a3039@dt=ZmY')).toBe('fw529a3039@dt=ZmY');
  });

  it('drops optional whitespace around members and empty members', () => {
    expect(parseTracestate(' a=1 ,\tb=2\t,, ,c=3 ')).toBe('a=1,b=2,c=3');
  });

  it('keeps spaces inside a value, but not a trailing one', () => {
    expect(parseTracestate('a=x y')).toBe('a=x y');
    // A trailing space is optional whitespace of the list, so it is stripped, not kept.
    expect(parseTracestate('a=x ')).toBe('a=x');
    expect(parseTracestate('a= ')).toBeUndefined();
  });

  it('accepts keys of the simple and multi-tenant grammars', () => {
    expect(parseTracestate('a_b-c*d/e=1')).toBe('a_b-c*d/e=1');
    expect(parseTracestate('0vendor=1')).toBe('0vendor=1');
    expect(parseTracestate('tenant1@sys_2=1')).toBe('tenant1@sys_2=1');
    expect(parseTracestate(`${'k'.repeat(256)}=1`)).toBe(`${'k'.repeat(256)}=1`);
  });

  it('refuses keys outside the grammar', () => {
    for (const key of ['Upper', '_lead', '', 'a b', 'a@', '@b', 'a@1sys', `a@${'s'.repeat(15)}`, 'a@b@c', `${'k'.repeat(257)}`, 'ké']) {
      expect(parseTracestate(`${key}=1`), key).toBeUndefined();
    }
  });

  it('refuses values outside printable ASCII, with , or =, or longer than 256', () => {
    for (const value of ['', 'a=b', 'é', 'a\u007f', `${'v'.repeat(257)}`]) {
      expect(parseTracestate(`k=${value}`), JSON.stringify(value)).toBeUndefined();
    }
    expect(parseTracestate(`k=${'v'.repeat(256)}`)).toBe(`k=${'v'.repeat(256)}`);
  });

  it('refuses CR, LF and every other control character anywhere', () => {
    for (let code = 0; code < 0x20; code++) {
      if (code === 0x09) continue; // a tab is optional whitespace around a member, stripped
      const c = String.fromCharCode(code);
      expect(parseTracestate(`k=v${c}x`), `0x${code.toString(16)}`).toBeUndefined();
      expect(parseTracestate(`k=v${c}`), `0x${code.toString(16)} at the end`).toBeUndefined();
      expect(parseTracestate(`k${c}=v`), `0x${code.toString(16)} in a key`).toBeUndefined();
    }
    expect(parseTracestate('k=v\r\nx: y')).toBeUndefined();
    expect(parseTracestate('k=v\tx')).toBeUndefined();
  });

  it('refuses a member without =, and duplicate keys', () => {
    expect(parseTracestate('a=1,b')).toBeUndefined();
    expect(parseTracestate('a=1,a=2')).toBeUndefined();
  });

  it(`takes at most ${MAX_TRACESTATE_MEMBERS} members`, () => {
    const members = (n: number): string => Array.from({ length: n }, (_, i) => `k${i}=v`).join(',');
    expect(parseTracestate(members(MAX_TRACESTATE_MEMBERS))).toBe(members(MAX_TRACESTATE_MEMBERS));
    expect(parseTracestate(members(MAX_TRACESTATE_MEMBERS + 1))).toBeUndefined();
  });

  it(`bounds the whole value to ${MAX_TRACESTATE_LENGTH} characters`, () => {
    const atLimit = `a=${'v'.repeat(254)},b=${'v'.repeat(MAX_TRACESTATE_LENGTH - 256 - 3)}`;
    expect(atLimit).toHaveLength(MAX_TRACESTATE_LENGTH);
    expect(parseTracestate(atLimit)).toBe(atLimit);
    expect(parseTracestate(`${atLimit}v`)).toBeUndefined();
    expect(parseTracestate(`k=v${' '.repeat(100_000)}`)).toBeUndefined();
  });

  it('refuses what is not a non-empty string', () => {
    for (const value of [undefined, null, 1, {}, ['a=1'], '', ' , ']) expect(parseTracestate(value)).toBeUndefined();
  });
});

describe('parseTraceparent', () => {
  it('accepts a valid one and refuses injection', () => {
    expect(parseTraceparent(PARENT)).toBe(PARENT);
    expect(parseTraceparent(`${PARENT}\r\nx: y`)).toBeUndefined();
    expect(parseTraceparent(`x: y\r\n${PARENT}`)).toBeUndefined();
    expect(parseTraceparent('00-00000000000000000000000000000000-00f067aa0ba902b7-01')).toBeUndefined();
  });

  it('makes a child span with the same trace id and flags', () => {
    expect(childTraceparent(PARENT)).toMatch(/^00-4bf92f3577b34da6a3ce929d0e0e4736-[0-9a-f]{16}-01$/);
  });
});
