// The canonical form of resource URIs (src/names/uri.ts) and the codec's use of it: what team
// rules decide on and what an upstream is sent, however a client spelled the URI
// (docs/security.md "Teams and limits").
import { describe, expect, it } from 'vitest';
import { NamespaceCodec } from '../../src/names/namespace.js';
import { canonicalUri, canonicalUriTemplate } from '../../src/names/uri.js';

const codec = (unprefixed = false) =>
  new NamespaceCodec({ separator: '__', maxNameLength: 64 }, [{ upstream: 'everything', prefix: 'everything' }, { upstream: 'github', prefix: 'gh' }, ...(unprefixed ? [{ upstream: 'single', prefix: '' }] : [])]);

describe('canonicalUri', () => {
  it('resolves dot segments, lowercases the scheme and drops tabs and newlines, as the SDK server does', () => {
    const startup = 'demo://resource/static/document/startup.md';
    for (const spelling of [
      'demo://resource/static/document/./startup.md',
      'demo://resource/static/x/../document/startup.md',
      'demo://resource/static/document/%2e/startup.md',
      'demo://resource/static/document/x/%2E%2e/startup.md',
      'DEMO://resource/static/document/startup.md',
      'Demo://resource/static/document/start\tup.md',
      'demo://resource/static/document/\r\nstartup.md',
      ' demo://resource/static/document/startup.md\n',
    ]) {
      expect(canonicalUri(spelling), JSON.stringify(spelling)).toBe(startup);
      expect(new URL(spelling).href).toBe(startup);
    }
    expect(canonicalUri('file:///a/../b')).toBe('file:///b');
  });

  it('leaves a canonical URI as it is, percent-encoding and the case of a path and a non-special host included', () => {
    for (const uri of ['demo://resource/static/document/startup.md', 'file:///tmp/a+b', 'ui://app.html', 'urn:isbn:0451450523', 'demo://RES/Path/a%2Fb%2e', 'https://example.com/A?q=%7B#f', 'git+ssh://host/repo']) {
      expect(canonicalUri(uri), uri).toBe(uri);
    }
  });

  it('is the WHATWG serialisation, so a special scheme\'s host is lowercased and what must be encoded is', () => {
    expect(canonicalUri('HTTPS://EXAMPLE.com/A')).toBe('https://example.com/A');
    expect(canonicalUri('https://example.com')).toBe('https://example.com/');
    expect(canonicalUri('demo://x/a b')).toBe('demo://x/a%20b');
    expect(canonicalUri('demo://x/é')).toBe('demo://x/%C3%A9');
    expect(canonicalUri('demo://x/{id}')).toBe('demo://x/%7Bid%7D');
  });

  it('is its own canonical form', () => {
    for (const uri of ['DEMO://x/./a', 'demo://x/a b', 'HTTPS://EXAMPLE.com', 'web+demo:/.//p', 'demo:opaque/../x', 'file:///C:/a/../b']) {
      const once = canonicalUri(uri);
      expect(once, uri).toBeDefined();
      expect(canonicalUri(once!), uri).toBe(once);
    }
  });

  it('keeps a URI that does not parse as a URL as it is, unless a parser would drop some of it', () => {
    expect(canonicalUri('not a uri')).toBe('not a uri');
    expect(canonicalUri('relative/./path')).toBe('relative/./path');
    expect(canonicalUri('demo://x:{port}/')).toBe('demo://x:{port}/');
    for (const refused of ['not\ta uri', 'not a\nuri', 'bell\u0007', '\u0000x', ' not a uri', 'not a uri ']) expect(canonicalUri(refused), JSON.stringify(refused)).toBeUndefined();
  });
});

describe('canonicalUriTemplate', () => {
  it('keeps the expressions as written and canonicalises the rest', () => {
    expect(canonicalUriTemplate('demo://resource/dynamic/text/{resourceId}')).toBe('demo://resource/dynamic/text/{resourceId}');
    expect(canonicalUriTemplate('demo://resource/dynamic/./text/{resourceId}')).toBe('demo://resource/dynamic/text/{resourceId}');
    expect(canonicalUriTemplate('DEMO://x/y/../{+path}{?q,lang}')).toBe('demo://x/{+path}{?q,lang}');
    expect(canonicalUriTemplate('HTTPS://{host}/A/{id}')).toBe('https://{host}/A/{id}');
    expect(canonicalUriTemplate('demo://x/\t{id}')).toBe('demo://x/{id}');
    expect(canonicalUriTemplate('{scheme}://x/./{id}')).toBe('{scheme}://x/{id}');
  });

  it('is canonicalUri for a template without expressions', () => {
    expect(canonicalUriTemplate('DEMO://x/./a')).toBe('demo://x/a');
    expect(canonicalUriTemplate('not\ta uri')).toBeUndefined();
  });

  it('keeps a template that does not parse as it is, unless a parser would drop some of it', () => {
    expect(canonicalUriTemplate('demo://x:{port}/{id}')).toBe('demo://x:{port}/{id}');
    expect(canonicalUriTemplate('{a} {b}')).toBe('{a} {b}');
    expect(canonicalUriTemplate('{a}\t{b}')).toBeUndefined();
  });

  it('refuses a template whose canonical form would lose an expression, or that spells the marker', () => {
    expect(canonicalUriTemplate('demo://x/{a}/../b')).toBeUndefined();
    expect(canonicalUriTemplate('demo://x/zzexpr0zz/{a}')).toBeUndefined();
    expect(canonicalUriTemplate('demo://ZZEXPR1ZZ/{a}')).toBeUndefined();
  });
});

describe('NamespaceCodec.canonicalUri', () => {
  it('canonicalises the upstream\'s part after the prefix, whatever case its scheme is in', () => {
    const names = codec();
    const startup = { upstream: 'everything', uri: 'demo://resource/static/document/startup.md', exposed: 'everything+demo://resource/static/document/startup.md' };
    expect(names.canonicalUri('everything+demo://resource/static/document/./startup.md')).toEqual(startup);
    expect(names.canonicalUri('everything+DEMO://resource/static/x/../document/startup.md')).toEqual(startup);
    expect(names.canonicalUri('everything+demo://resource/static/document/\tstartup.md')).toEqual(startup);
    expect(names.canonicalUri(startup.exposed)).toEqual(startup);
  });

  it('leaves the prefix to its one spelling', () => {
    expect(codec().canonicalUri('EVERYTHING+demo://resource/x')).toBeUndefined();
    expect(codec().canonicalUri('every\tthing+demo://resource/x')).toBeUndefined();
    // With an unprefixed upstream such a URI is that upstream's own, canonical in its turn.
    expect(codec(true).canonicalUri('EVERYTHING+demo://resource/x')).toEqual({ upstream: 'single', uri: 'everything+demo://resource/x', exposed: 'single+everything+demo://resource/x' });
    expect(codec(true).canonicalUri('FILE:///a/../secret')).toEqual({ upstream: 'single', uri: 'file:///secret', exposed: 'file:///secret' });
  });

  it('canonicalises an MCP Apps UI URI after its prefix', () => {
    expect(codec().canonicalUri('ui://gh/app/./x.html')).toEqual({ upstream: 'github', uri: 'ui://app/x.html', exposed: 'ui://gh/app/x.html' });
    expect(codec().canonicalUri('ui://gh/app/\tx.html')).toEqual({ upstream: 'github', uri: 'ui://app/x.html', exposed: 'ui://gh/app/x.html' });
  });

  it('keeps a template\'s expressions with `template`', () => {
    expect(codec().canonicalUri('everything+demo://resource/dynamic/./blob/{resourceId}', true)).toEqual({
      upstream: 'everything',
      uri: 'demo://resource/dynamic/blob/{resourceId}',
      exposed: 'everything+demo://resource/dynamic/blob/{resourceId}',
    });
    expect(codec().canonicalUri('everything+demo://resource/dynamic/blob/{resourceId}')?.uri).toBe('demo://resource/dynamic/blob/%7BresourceId%7D');
  });

  it('refuses what the upstream\'s part refuses', () => {
    expect(codec().canonicalUri('everything+not a\turi')).toBeUndefined();
    expect(codec().canonicalUri('everything+not a uri')).toEqual({ upstream: 'everything', uri: 'not a uri', exposed: 'everything+not a uri' });
  });
});

describe('NamespaceCodec.visibleUri', () => {
  const denied = (...globs: string[]) => (spelling: string) => !globs.some((glob) => spelling.startsWith(glob));

  it('is the canonical form when a rule lets both it and the spelling sent through', () => {
    const canSee = denied('everything+demo://resource/static/document/s');
    expect(codec().visibleUri('everything+demo://resource/static/document/./architecture.md', canSee)?.exposed).toBe('everything+demo://resource/static/document/architecture.md');
    for (const spelling of ['everything+demo://resource/static/document/./startup.md', 'everything+DEMO://resource/static/document/startup.md', 'everything+demo://resource/static/x/../document/startup.md', 'everything+demo://resource/static/document/\tstartup.md']) {
      expect(codec().visibleUri(spelling, canSee), JSON.stringify(spelling)).toBeUndefined();
    }
  });

  it('holds a rule written in a non-canonical spelling (as an upstream listed it) for that spelling, and decides the others on their canonical form', () => {
    const canSee = denied('everything+demo://x/a b');
    expect(codec().visibleUri('everything+demo://x/a b', canSee)).toBeUndefined();
    expect(codec().visibleUri('everything+demo://x/./a b', canSee)?.exposed).toBe('everything+demo://x/a%20b');
  });

  it('is undefined for a refused URI whatever the rules', () => {
    expect(codec().visibleUri('everything+not\ta uri', () => true)).toBeUndefined();
  });
});
