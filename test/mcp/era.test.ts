// The 2026-07-28 request metadata and header helpers.
import { describe, expect, it } from 'vitest';
import { ALL_VERSIONS, META, decodeHeaderValue, declaredVersion, encodeHeaderValue, isStatelessVersion, requestMetaOf } from '../../src/mcp/era.js';
import { mirroredName } from '../../src/mcp/methods.js';

describe('requestMetaOf', () => {
  it('reads the version, capabilities, info and log level', () => {
    const meta = { [META.protocolVersion]: '2026-07-28', [META.clientCapabilities]: { sampling: {} }, [META.clientInfo]: { name: 'c', version: '1' }, [META.logLevel]: 'info', progressToken: 5 };
    expect(requestMetaOf({ _meta: meta })).toEqual({ protocolVersion: '2026-07-28', clientCapabilities: { sampling: {} }, clientInfo: { name: 'c', version: '1' }, logLevel: 'info' });
  });

  it.each([
    [undefined, 'params._meta is required'],
    [{}, 'params._meta is required'],
    [{ _meta: {} }, META.protocolVersion],
    [{ _meta: { [META.protocolVersion]: '2026-07-28' } }, META.clientCapabilities],
    [{ _meta: { [META.protocolVersion]: '2026-07-28', [META.clientCapabilities]: 'all' } }, META.clientCapabilities],
  ])('names what is missing in %j', (params, missing) => {
    expect(requestMetaOf(params as never)).toEqual(expect.stringContaining(missing));
  });
});

describe('versions', () => {
  it('lists 2026-07-28 first, then every sessions-era revision', () => {
    expect(ALL_VERSIONS).toEqual(['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05']);
    expect(isStatelessVersion('2026-07-28')).toBe(true);
    expect(isStatelessVersion('2025-11-25')).toBe(false);
    expect(declaredVersion({ _meta: { [META.protocolVersion]: '2026-07-28' } })).toBe('2026-07-28');
    expect(declaredVersion({ _meta: {} })).toBeUndefined();
    expect(declaredVersion('x')).toBeUndefined();
  });
});

describe('mirrored headers', () => {
  it('mirrors the name for tools/call and prompts/get, the URI for resources/read, nothing else', () => {
    expect(mirroredName({ method: 'tools/call', params: { name: 'a' } })).toBe('a');
    expect(mirroredName({ method: 'prompts/get', params: { name: 'p' } })).toBe('p');
    expect(mirroredName({ method: 'resources/read', params: { uri: 'file:///x' } })).toBe('file:///x');
    expect(mirroredName({ method: 'tools/list', params: { name: 'a' } })).toBeUndefined();
  });

  it.each(['get_weather', 'file:///projects/app/config.json', 'héllo wörld', ' leading space', 'trailing ', 'line\nbreak', '=?base64?looks-encoded?=', '工具'])(
    'round-trips %j through a header value that is plain visible ASCII',
    (value) => {
      const header = encodeHeaderValue(value);
      expect(header).toMatch(/^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$/);
      expect(decodeHeaderValue(header)).toBe(value);
    },
  );

  it('keeps plain values plain and refuses raw non-ASCII header values', () => {
    expect(encodeHeaderValue('get_weather')).toBe('get_weather');
    expect(decodeHeaderValue('caf\u00e9')).toBeUndefined();
  });
});
