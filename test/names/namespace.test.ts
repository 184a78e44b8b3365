// The namespace codec of src/names/namespace.ts: how upstream names and URIs appear to clients
// and split back (docs/protocol.md).
import { describe, expect, it } from 'vitest';
import { NamespaceCodec, type UpstreamPrefix } from '../../src/names/namespace.js';

const DEFAULTS = { separator: '__', maxNameLength: 64 };
const CLIENT_RULE = /^[A-Za-z0-9_-]{1,64}$/;
const HASH_SUFFIX = /_[0-9a-f]{8}$/;

/** Upstreams prefixed by their own names unless a prefix is given as `name=prefix`. */
function codec(upstreams: readonly string[], options = DEFAULTS): NamespaceCodec {
  const prefixes: UpstreamPrefix[] = upstreams.map((entry) => {
    const [upstream, prefix] = entry.split('=') as [string, string | undefined];
    return { upstream, prefix: prefix ?? upstream };
  });
  return new NamespaceCodec(options, prefixes);
}

describe('NamespaceCodec tool and prompt names', () => {
  it('exposes a name as <prefix>__<name>', () => {
    expect(codec(['github', 'memory']).exposeName('github', 'search_issues')).toBe('github__search_issues');
  });

  it('splits an exposed name back into upstream and local name', () => {
    const names = codec(['github', 'memory']);
    expect(names.splitName(names.exposeName('memory', 'create_entities'))).toEqual({ upstream: 'memory', local: 'create_entities' });
  });

  it('splits on the first separator when the name itself contains the separator', () => {
    const names = codec(['github']);
    const exposed = names.exposeName('github', 'repo__list__all');
    expect(exposed).toBe('github__repo__list__all');
    expect(names.splitName(exposed)).toEqual({ upstream: 'github', local: 'repo__list__all' });
  });

  it('uses a custom prefix instead of the upstream name', () => {
    const names = codec(['github=gh']);
    expect(names.exposeName('github', 'search')).toBe('gh__search');
    expect(names.splitName('gh__search')).toEqual({ upstream: 'github', local: 'search' });
  });

  it('does not route by the upstream name when a custom prefix is set', () => {
    expect(codec(['github=gh']).splitName('github__search')).toBeUndefined();
  });

  it('returns undefined for a name no upstream owns when there is no unprefixed upstream', () => {
    const names = codec(['github', 'memory']);
    expect(names.splitName('jira__create')).toBeUndefined();
    expect(names.splitName('search')).toBeUndefined();
  });

  it('returns undefined for a name that starts with the separator when there is no unprefixed upstream', () => {
    expect(codec(['github']).splitName('__github')).toBeUndefined();
  });
});

describe('NamespaceCodec unprefixed upstream', () => {
  it('exposes names bare', () => {
    const names = codec(['single=', 'github']);
    expect(names.exposeName('single', 'echo')).toBe('echo');
  });

  it('owns every name no prefixed upstream claims', () => {
    const names = codec(['single=', 'github']);
    expect(names.splitName('echo')).toEqual({ upstream: 'single', local: 'echo' });
    expect(names.splitName('jira__create')).toEqual({ upstream: 'single', local: 'jira__create' });
  });

  it('falls back to <upstreamName>__<name> when the bare name starts with another upstream\'s prefix', () => {
    const names = codec(['single=', 'github=gh']);
    const exposed = names.exposeName('single', 'gh__search');
    expect(exposed).toBe('single__gh__search');
    expect(names.splitName(exposed)).toEqual({ upstream: 'single', local: 'gh__search' });
  });

  it('falls back to its own name when the bare name starts with that name and the separator', () => {
    const names = codec(['single=']);
    const exposed = names.exposeName('single', 'single__tool');
    expect(exposed).toBe('single__single__tool');
    expect(names.splitName(exposed)).toEqual({ upstream: 'single', local: 'single__tool' });
  });

  it('keeps a bare name whose first part is no prefix', () => {
    expect(codec(['single=', 'github']).exposeName('single', 'git__hub')).toBe('git__hub');
  });

  it('shortens a long name under its own upstream name', () => {
    const names = codec(['single=']);
    const exposed = names.exposeName('single', 'x'.repeat(80));
    expect(exposed).toMatch(/^single__x+_[0-9a-f]{8}$/);
    expect(exposed).toMatch(CLIENT_RULE);
    expect(names.splitName(exposed)?.upstream).toBe('single');
  });
});

describe('NamespaceCodec shortened names', () => {
  const long = `get_${'very_long_descriptive_name_'.repeat(4)}one`;

  it('shortens a name over maxNameLength to fit the client rule', () => {
    const exposed = codec(['github']).exposeName('github', long);
    expect(exposed).toMatch(CLIENT_RULE);
    expect(exposed.length).toBe(64);
    expect(exposed.startsWith('github__get_very_long')).toBe(true);
    expect(exposed).toMatch(HASH_SUFFIX);
  });

  it('keeps a name of exactly maxNameLength unshortened', () => {
    const name = 'a'.repeat(64 - 'github__'.length);
    expect(codec(['github']).exposeName('github', name)).toBe(`github__${name}`);
  });

  it('shortens a name with a dot', () => {
    const exposed = codec(['github']).exposeName('github', 'repos.list');
    expect(exposed).toMatch(CLIENT_RULE);
    expect(exposed).toMatch(/^github__repos_list_[0-9a-f]{8}$/);
  });

  it('shortens a name with a space', () => {
    const exposed = codec(['github']).exposeName('github', 'list repos');
    expect(exposed).toMatch(CLIENT_RULE);
    expect(exposed).toMatch(/^github__list_repos_[0-9a-f]{8}$/);
  });

  it('shortens a name with characters outside ASCII', () => {
    const exposed = codec(['github']).exposeName('github', 'caf\u00e9');
    expect(exposed).toMatch(CLIENT_RULE);
    expect(exposed).toMatch(HASH_SUFFIX);
  });

  it('shortens an empty name', () => {
    const exposed = codec(['github']).exposeName('github', '');
    expect(exposed).toMatch(/^github___[0-9a-f]{8}$/);
  });

  it('shortens an illegal name of the unprefixed upstream under its own name', () => {
    const exposed = codec(['single=']).exposeName('single', 'a.b');
    expect(exposed).toMatch(/^single__a_b_[0-9a-f]{8}$/);
  });

  it('gives the same shortened form for the same name, also across codec instances', () => {
    const first = codec(['github']).exposeName('github', long);
    expect(codec(['github']).exposeName('github', long)).toBe(first);
    expect(codec(['memory', 'github']).exposeName('github', long)).toBe(first);
  });

  it('gives different shortened forms to long names that share a long common prefix', () => {
    const names = codec(['github']);
    const a = names.exposeName('github', `${long}_alpha`);
    const b = names.exposeName('github', `${long}_beta`);
    expect(a).not.toBe(b);
    // The visible part is cut at the same place, so only the hash tells them apart.
    expect(a.slice(0, -9)).toBe(b.slice(0, -9));
  });

  it('gives different shortened forms to names that differ only in the replaced character', () => {
    const names = codec(['github']);
    expect(names.exposeName('github', 'a.b')).not.toBe(names.exposeName('github', 'a b'));
  });

  it('marks the local part of a shortened name as shortened', () => {
    const names = codec(['github']);
    const split = names.splitName(names.exposeName('github', long));
    expect(split?.upstream).toBe('github');
    expect(names.isShortened(split!.local)).toBe(true);
  });

  it('does not mark an ordinary name as shortened', () => {
    const names = codec(['github']);
    expect(names.isShortened('search_issues')).toBe(false);
    expect(names.isShortened('build_DEADBEEF')).toBe(false);
  });

  it('shortens an original name that already ends in _ and 8 hex digits', () => {
    const names = codec(['github']);
    const exposed = names.exposeName('github', 'fetch_deadbeef');
    expect(exposed).not.toBe('github__fetch_deadbeef');
    expect(exposed).toMatch(/^github__fetch_deadbeef_[0-9a-f]{8}$/);
  });

  it('never exposes an unprefixed upstream\'s name ending in _ and 8 hex digits bare', () => {
    expect(codec(['single=']).exposeName('single', 'fetch_0123abcd')).toMatch(/^single__fetch_0123abcd_[0-9a-f]{8}$/);
  });

  it('fits shortened names within a custom maxNameLength', () => {
    const exposed = codec(['github'], { separator: '__', maxNameLength: 32 }).exposeName('github', long);
    expect(exposed.length).toBe(32);
    expect(exposed).toMatch(HASH_SUFFIX);
  });
});

describe('NamespaceCodec resource URIs', () => {
  it('exposes a URI as <prefix>+<uri>', () => {
    expect(codec(['github=gh']).exposeUri('github', 'repo://octo/hello/README.md')).toBe('gh+repo://octo/hello/README.md');
  });

  it('splits an exposed URI back into upstream and original URI', () => {
    const names = codec(['github=gh', 'memory']);
    expect(names.splitUri('gh+repo://octo/hello')).toEqual({ upstream: 'github', uri: 'repo://octo/hello' });
    expect(names.splitUri(names.exposeUri('memory', 'file:///tmp/a+b'))).toEqual({ upstream: 'memory', uri: 'file:///tmp/a+b' });
  });

  it('leaves a URI template\'s braces alone', () => {
    const names = codec(['everything']);
    const exposed = names.exposeUri('everything', 'test://static/resource/{id}');
    expect(exposed).toBe('everything+test://static/resource/{id}');
    expect(names.splitUri(exposed)).toEqual({ upstream: 'everything', uri: 'test://static/resource/{id}' });
  });

  it('returns undefined for a URI no upstream owns when there is no unprefixed upstream', () => {
    const names = codec(['github']);
    expect(names.splitUri('jira+issue://1')).toBeUndefined();
    expect(names.splitUri('file:///etc/hosts')).toBeUndefined();
  });

  it('exposes the unprefixed upstream\'s URIs bare', () => {
    const names = codec(['single=', 'github']);
    expect(names.exposeUri('single', 'file:///data/a.txt')).toBe('file:///data/a.txt');
    expect(names.splitUri('file:///data/a.txt')).toEqual({ upstream: 'single', uri: 'file:///data/a.txt' });
  });

  it('prefixes the unprefixed upstream\'s URI that starts with another prefix and "+"', () => {
    const names = codec(['single=', 'github=gh']);
    const exposed = names.exposeUri('single', 'gh+repo://x');
    expect(exposed).toBe('single+gh+repo://x');
    expect(names.splitUri(exposed)).toEqual({ upstream: 'single', uri: 'gh+repo://x' });
  });

  it('keeps the unprefixed upstream\'s URI bare when its "+" scheme part is no prefix', () => {
    const names = codec(['single=', 'github=gh']);
    expect(names.exposeUri('single', 'git+ssh://host/repo')).toBe('git+ssh://host/repo');
    expect(names.splitUri('git+ssh://host/repo')).toEqual({ upstream: 'single', uri: 'git+ssh://host/repo' });
  });
});

describe('NamespaceCodec custom separators', () => {
  it('works with "." as separator', () => {
    const names = codec(['github', 'memory'], { separator: '.', maxNameLength: 64 });
    const exposed = names.exposeName('github', 'search_issues');
    expect(exposed).toBe('github.search_issues');
    expect(names.splitName(exposed)).toEqual({ upstream: 'github', local: 'search_issues' });
  });

  it('shortens a name containing the "." separator', () => {
    const names = codec(['github'], { separator: '.', maxNameLength: 64 });
    const exposed = names.exposeName('github', 'repos.list');
    expect(exposed).toMatch(/^github\.repos_list_[0-9a-f]{8}$/);
    expect(names.splitName(exposed)?.upstream).toBe('github');
  });

  it('works with "-x-" as separator', () => {
    const names = codec(['github', 'memory'], { separator: '-x-', maxNameLength: 64 });
    const exposed = names.exposeName('memory', 'read-x-graph');
    expect(exposed).toBe('memory-x-read-x-graph');
    expect(names.splitName(exposed)).toEqual({ upstream: 'memory', local: 'read-x-graph' });
  });

  it('falls back to the upstream name with a custom separator when a bare name starts with another prefix', () => {
    const names = codec(['single=', 'github'], { separator: '-x-', maxNameLength: 64 });
    expect(names.exposeName('single', 'tool')).toBe('tool');
    expect(names.exposeName('single', 'github-x-tool')).toBe('single-x-github-x-tool');
  });

  it('splits on the first separator, which is why config rejects prefixes that run into it', () => {
    // "gh-x" + "-x-" + "tool" holds the separator first right after "gh"; the config schema
    // refuses such a pair of upstreams (test/config/load.test.ts), so the codec never meets it.
    const names = codec(['gh', 'gh-x'], { separator: '-x-', maxNameLength: 64 });
    expect(names.splitName('gh-x-x-tool')).toEqual({ upstream: 'gh', local: 'x-tool' });
  });
});

// Policy, views and limits are keyed by the spelling clients are shown: another spelling of the
// same item must not split (it would be decided as a name no rule names).
describe('NamespaceCodec: one spelling per item', () => {
  it('does not split the prefixed form of an unprefixed upstream\'s name', () => {
    const names = codec(['single=', 'github=gh']);
    expect(names.splitName('delete_everything')).toEqual({ upstream: 'single', local: 'delete_everything' });
    expect(names.splitName('single__delete_everything')).toBeUndefined();
  });

  it('does not split the raw original of a shortened name', () => {
    const names = codec(['github=gh']);
    expect(names.exposeName('github', 'delete.repo')).toMatch(HASH_SUFFIX);
    expect(names.splitName('gh__delete.repo')).toBeUndefined();
    const long = 'x'.repeat(80);
    expect(names.splitName(`gh__${long}`)).toBeUndefined();
    expect(names.splitName(names.exposeName('github', long))?.upstream).toBe('github');
  });

  it('does not split an unprefixed upstream\'s raw original that it shows shortened', () => {
    const names = codec(['single=']);
    expect(names.splitName('delete.repo')).toBeUndefined();
  });

  it('does not split the prefixed form of an unprefixed upstream\'s URI', () => {
    const names = codec(['single=', 'github=gh']);
    expect(names.splitUri('file:///secret')).toEqual({ upstream: 'single', uri: 'file:///secret' });
    expect(names.splitUri('single+file:///secret')).toBeUndefined();
  });

  it('does not split a UI resource written with the prefix before its scheme', () => {
    const names = codec(['github=gh']);
    expect(names.splitUri('ui://gh/app.html')).toEqual({ upstream: 'github', uri: 'ui://app.html' });
    expect(names.splitUri('gh+ui://app.html')).toBeUndefined();
  });
});
