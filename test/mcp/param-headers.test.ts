// Tool parameters mirrored into Mcp-Param-* headers (src/mcp/param-headers.ts; 2026-07-28
// basic/transports/streamable-http.mdx "Custom Headers from Tool Parameters"): which annotations
// are valid, how values are encoded, and how a request's headers are checked against its body.
import { describe, expect, it } from 'vitest';
import { checkParamHeaders, paramHeadersOf, paramHeaderValues, type ParamHeader } from '../../src/mcp/param-headers.js';

const SCHEMA = {
  type: 'object',
  properties: {
    region: { type: 'string', 'x-mcp-header': 'Region' },
    query: { type: 'string' },
    options: { type: 'object', properties: { dryRun: { type: 'boolean', 'x-mcp-header': 'Dry-Run' }, limit: { type: 'integer', 'x-mcp-header': 'Limit' } } },
  },
};
const params = paramHeadersOf(SCHEMA) as readonly ParamHeader[];

describe('paramHeadersOf', () => {
  it('finds every annotated property reachable through properties alone, with its path', () => {
    expect(params).toEqual([
      { name: 'Region', path: ['region'] },
      { name: 'Dry-Run', path: ['options', 'dryRun'] },
      { name: 'Limit', path: ['options', 'limit'] },
    ]);
    expect(paramHeadersOf({ type: 'object', properties: { a: { type: 'string' } } })).toEqual([]);
    expect(paramHeadersOf(undefined)).toEqual([]);
  });

  it.each([
    ['under items', { type: 'object', properties: { list: { type: 'array', items: { type: 'string', 'x-mcp-header': 'X' } } } }],
    ['under a composition keyword', { type: 'object', anyOf: [{ properties: { a: { type: 'string', 'x-mcp-header': 'A' } } }] }],
    ['on a number', { type: 'object', properties: { n: { type: 'number', 'x-mcp-header': 'N' } } }],
    ['with a name that is no token', { type: 'object', properties: { a: { type: 'string', 'x-mcp-header': 'Bad Name' } } }],
    ['empty', { type: 'object', properties: { a: { type: 'string', 'x-mcp-header': '' } } }],
    ['twice, case-insensitively', { type: 'object', properties: { a: { type: 'string', 'x-mcp-header': 'Same' }, b: { type: 'string', 'x-mcp-header': 'same' } } }],
  ])('refuses an annotation %s', (_what, schema) => {
    expect(typeof paramHeadersOf(schema)).toBe('string');
  });
});

describe('paramHeaderValues', () => {
  it('encodes strings, integers and booleans, Base64 where a plain value is unsafe, and omits absent values', () => {
    expect(paramHeaderValues(params, { region: 'us-west1', options: { dryRun: false, limit: 42 } })).toEqual({ 'mcp-param-region': 'us-west1', 'mcp-param-dry-run': 'false', 'mcp-param-limit': '42' });
    expect(paramHeaderValues(params, { region: 'Hello, 世界' })).toEqual({ 'mcp-param-region': '=?base64?SGVsbG8sIOS4lueVjA==?=' });
    expect(paramHeaderValues(params, { region: ' padded ' })).toEqual({ 'mcp-param-region': '=?base64?IHBhZGRlZCA=?=' });
    expect(paramHeaderValues(params, { region: '=?base64?literal?=' })).toEqual({ 'mcp-param-region': '=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=' });
    expect(paramHeaderValues(params, { query: 'x' })).toEqual({});
  });
});

describe('checkParamHeaders', () => {
  const args = { region: 'Hello', options: { limit: 7 } };

  it('accepts headers that match the body, plain or Base64, and ignores headers of no parameter', () => {
    expect(checkParamHeaders(params, args, { 'mcp-param-region': 'Hello', 'mcp-param-limit': '7', 'mcp-param-other': 'x' })).toBeUndefined();
    expect(checkParamHeaders(params, args, { 'mcp-param-region': '=?base64?SGVsbG8=?=', 'mcp-param-limit': '7' })).toBeUndefined();
  });

  it.each([
    ['a header missing for a value in the body', { 'mcp-param-limit': '7' }, 'missing'],
    ['a header that differs from the body', { 'mcp-param-region': 'World', 'mcp-param-limit': '7' }, 'does not match'],
    ['Base64 with its padding cut', { 'mcp-param-region': '=?base64?SGVsbG8?=', 'mcp-param-limit': '7' }, 'malformed'],
    ['Base64 with characters outside its alphabet', { 'mcp-param-region': '=?base64?!!!?=', 'mcp-param-limit': '7' }, 'malformed'],
    ['a header for a value the body does not carry', { 'mcp-param-region': 'Hello', 'mcp-param-limit': '7', 'mcp-param-dry-run': 'true' }, 'carries no'],
  ])('refuses %s', (_what, headers, reason) => {
    expect(checkParamHeaders(params, args, headers)).toContain(reason);
  });
});
