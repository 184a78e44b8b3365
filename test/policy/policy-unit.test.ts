// Policy decisions on their own, from teams parsed by the real config schema (so its defaults
// apply: allow ['*'], deny [], no views): which teams a principal is in, what a team may see
// (allow and deny globs, `upstream:` rules, deny winning within a team, teams adding up), which
// upstreams it may see at all (what decides whether an upstream is started for a session), and
// views. test/e2e/policy-*.test.ts check the same rules end to end through a running gateway.
import { describe, expect, it } from 'vitest';
import type { Principal } from '../../src/auth/principal.js';
import { configSchema } from '../../src/config/schema.js';
import { Policy } from '../../src/policy/policy.js';
import { globToRegExp } from '../../src/util/glob.js';

/** A Policy as the gateway builds it from a config with these teams and upstreams (name → prefix). */
function policyOf(teams: unknown[] | undefined, upstreams: Record<string, string> = { gh: 'gh', jira: 'jira' }): Policy {
  const config = configSchema.parse({
    upstreams: Object.fromEntries(Object.entries(upstreams).map(([name, prefix]) => [name, { stdio: { command: 'server' }, ...(prefix === name ? {} : { prefix }) }])),
    ...(teams === undefined ? {} : { teams }),
  });
  const prefixes = new Map(Object.entries(config.upstreams).map(([name, entry]) => [name, entry.prefix ?? name]));
  return new Policy(config.teams, { separator: config.namespacing.separator, prefixes });
}

const token = (claims: Record<string, unknown>, sub = 'alice'): Principal => ({ id: `https://idp.example|${sub}`, kind: 'oauth', scopes: [], claims: { sub, ...claims } });
const apiKey = (id: string, team?: string): Principal => ({ id: `apikey:${id}`, kind: 'apikey', scopes: [], claims: {}, ...(team === undefined ? {} : { team }) });

describe('globToRegExp', () => {
  it('matches * as any run, ? as exactly one character, the whole name only', () => {
    expect(globToRegExp('gh__*').test('gh__')).toBe(true);
    expect(globToRegExp('gh__*').test('gh__a/b c')).toBe(true);
    expect(globToRegExp('gh__get_?').test('gh__get_a')).toBe(true);
    expect(globToRegExp('gh__get_?').test('gh__get_ab')).toBe(false);
    expect(globToRegExp('gh__get_?').test('gh__get_')).toBe(false);
    expect(globToRegExp('gh__read').test('xgh__read')).toBe(false);
    expect(globToRegExp('gh__read').test('gh__readme')).toBe(false);
  });

  it('takes every other character literally, regular-expression syntax included', () => {
    expect(globToRegExp('gh+file:///docs/a.txt').test('gh+file:///docs/aXtxt')).toBe(false);
    expect(globToRegExp('gh+file:///docs/a.txt').test('gh+file:///docs/a.txt')).toBe(true);
    expect(globToRegExp('a+b').test('aab')).toBe(false);
    expect(globToRegExp('(x|y)[0]{1}$^\\').test('(x|y)[0]{1}$^\\')).toBe(true);
    expect(globToRegExp('(x|y)').test('x')).toBe(false);
  });

  it('lets * run across line breaks (names are arbitrary strings)', () => {
    expect(globToRegExp('gh__*').test('gh__a\nb')).toBe(true);
  });
});

describe('without teams', () => {
  it.each([['no teams key', undefined], ['an empty list', []]])('with %s, everyone sees everything and nothing is shaped or confirmed', (_label, teams) => {
    const policy = policyOf(teams);
    expect(policy.enabled).toBe(false);
    expect(policy.teamNames).toEqual([]);
    for (const principal of [undefined, token({ groups: ['x'] }), apiKey('k')]) {
      const access = policy.access(principal);
      expect(access.shaped).toBe(false);
      expect(access.teams).toEqual([]);
      expect(access.canSeeUpstream('gh')).toBe(true);
      expect(access.canSee('tool', 'gh__anything', 'gh')).toBe(true);
      expect(access.canSee('resource', 'jira+https://x', 'jira')).toBe(true);
      expect(access.confirmsDestructive).toBe(false);
      expect(access.view('gh__anything')).toBeUndefined();
    }
  });
});

describe('teamsOf: which teams a principal is in', () => {
  const policy = policyOf([
    { name: 'ops', match: { claim: 'groups', value: 'ops' } },
    { name: 'eng', match: [{ claim: 'org.dept', value: 'eng' }, { principal: 'https://idp.example|bob' }] },
    { name: 'admins', match: { claim: 'admin', value: true } },
    { name: 'level1', match: { claim: 'level', value: 1 } },
    { name: 'keys' },
    { name: 'everyone', default: true },
  ]);

  it('matches a claim that equals the value or is an array containing it', () => {
    expect(policy.teamsOf(token({ groups: 'ops' }))).toEqual(['ops']);
    expect(policy.teamsOf(token({ groups: ['dev', 'ops'] }))).toEqual(['ops']);
    expect(policy.teamsOf(token({ groups: ['dev'] }))).toEqual(['everyone']);
  });

  it('follows a dotted path into nested claims, and matches one principal by id', () => {
    expect(policy.teamsOf(token({ org: { dept: 'eng' } }))).toEqual(['eng']);
    expect(policy.teamsOf(token({ 'org.dept': 'eng' }))).toEqual(['everyone']);
    expect(policy.teamsOf(token({}, 'bob'))).toEqual(['eng']);
    expect(policy.teamsOf(token({}, 'bobby'))).toEqual(['everyone']);
  });

  it('compares values strictly: a string claim never matches a number or boolean value', () => {
    expect(policy.teamsOf(token({ admin: true }))).toEqual(['admins']);
    expect(policy.teamsOf(token({ admin: 'true' }))).toEqual(['everyone']);
    expect(policy.teamsOf(token({ level: 1 }))).toEqual(['level1']);
    expect(policy.teamsOf(token({ level: '1' }))).toEqual(['everyone']);
  });

  it("puts an API key in its own team, and a principal in every team it matches, in the config's order", () => {
    expect(policy.teamsOf(apiKey('ci', 'keys'))).toEqual(['keys']);
    expect(policy.teamsOf(token({ admin: true, groups: ['ops'], org: { dept: 'eng' } }))).toEqual(['ops', 'eng', 'admins']);
  });

  it('gives the default team only to a principal that matches no team, and to a request without auth', () => {
    expect(policy.teamsOf(apiKey('plain'))).toEqual(['everyone']);
    expect(policy.teamsOf(undefined)).toEqual(['everyone']);
    expect(policy.teamsOf(token({ groups: 'ops' }))).not.toContain('everyone');
  });

  it('leaves a principal that matches nothing in no team when there is no default team', () => {
    const strict = policyOf([{ name: 'ops', match: { claim: 'groups', value: 'ops' } }]);
    expect(strict.teamsOf(token({ groups: 'dev' }))).toEqual([]);
    const access = strict.access(token({ groups: 'dev' }));
    expect(access.shaped).toBe(true);
    expect(access.canSeeUpstream('gh')).toBe(false);
    expect(access.canSee('tool', 'gh__anything', 'gh')).toBe(false);
  });
});

describe('canSee: the one decision for lists and calls', () => {
  it('allows what an allow glob matches and nothing else', () => {
    const access = policyOf([{ name: 't', default: true, allow: ['gh__issue_*', 'gh__get_?'] }]).access(undefined);
    expect(access.canSee('tool', 'gh__issue_create', 'gh')).toBe(true);
    expect(access.canSee('tool', 'gh__get_a', 'gh')).toBe(true);
    expect(access.canSee('tool', 'gh__get_ab', 'gh')).toBe(false);
    expect(access.canSee('tool', 'gh__repo_delete', 'gh')).toBe(false);
    expect(access.canSee('tool', 'jira__issue_create', 'jira')).toBe(false);
  });

  it('lets a deny glob win over an allow glob of the same team', () => {
    const access = policyOf([{ name: 't', default: true, allow: ['*'], deny: ['gh__*_delete', 'jira+https://secret/*'] }]).access(undefined);
    expect(access.canSee('tool', 'gh__repo_delete', 'gh')).toBe(false);
    expect(access.canSee('tool', 'gh__repo_get', 'gh')).toBe(true);
    expect(access.canSee('resource', 'jira+https://secret/1', 'jira')).toBe(false);
    expect(access.canSee('resource', 'jira+https://public/1', 'jira')).toBe(true);
  });

  it('treats upstream:<name> as every item of that upstream, whatever its name', () => {
    const access = policyOf([{ name: 't', default: true, allow: ['upstream:jira'] }]).access(undefined);
    expect(access.canSee('tool', 'jira__anything', 'jira')).toBe(true);
    expect(access.canSee('prompt', 'jira__summary', 'jira')).toBe(true);
    expect(access.canSee('resource', 'jira+https://x/1', 'jira')).toBe(true);
    // The decision is by owner, not by how the name looks.
    expect(access.canSee('tool', 'jira__anything', 'gh')).toBe(false);
    expect(access.canSee('tool', 'gh__issue', 'gh')).toBe(false);
  });

  it('lets deny upstream:<name> hide an upstream whole, even from allow *', () => {
    const access = policyOf([{ name: 't', default: true, allow: ['*'], deny: ['upstream:gh'] }]).access(undefined);
    expect(access.canSee('tool', 'gh__issue', 'gh')).toBe(false);
    expect(access.canSee('resource', 'gh+file:///a', 'gh')).toBe(false);
    expect(access.canSee('tool', 'jira__issue', 'jira')).toBe(true);
  });

  it("adds teams up: one team's denial does not take away what another team allows", () => {
    const policy = policyOf([
      { name: 'a', match: { claim: 'groups', value: 'a' }, allow: ['gh__*'], deny: ['gh__admin_*'] },
      { name: 'b', match: { claim: 'groups', value: 'b' }, allow: ['gh__admin_read', 'jira__*'] },
    ]);
    const both = policy.access(token({ groups: ['a', 'b'] }));
    expect(both.teams).toEqual(['a', 'b']);
    expect(both.canSee('tool', 'gh__admin_read', 'gh')).toBe(true);
    expect(both.canSee('tool', 'gh__admin_write', 'gh')).toBe(false);
    expect(both.canSee('tool', 'jira__x', 'jira')).toBe(true);
    const onlyA = policy.access(token({ groups: ['a'] }));
    expect(onlyA.canSee('tool', 'gh__admin_read', 'gh')).toBe(false);
    expect(onlyA.canSee('tool', 'jira__x', 'jira')).toBe(false);
  });

  it('decides tools, prompts and resources by the same rules', () => {
    const access = policyOf([{ name: 't', default: true, allow: ['gh__read*', 'gh+file:///pub/*'] }]).access(undefined);
    for (const kind of ['tool', 'prompt', 'resource'] as const) {
      expect(access.canSee(kind, 'gh__readme', 'gh')).toBe(true);
      expect(access.canSee(kind, 'gh__write', 'gh')).toBe(false);
    }
    expect(access.canSee('resource', 'gh+file:///pub/a', 'gh')).toBe(true);
    expect(access.canSee('resource', 'gh+file:///private/a', 'gh')).toBe(false);
  });
});

describe('canSeeUpstream: whether an upstream is opened for the principal at all', () => {
  it('sees every upstream with allow *, and none that deny upstream: hides', () => {
    const access = policyOf([{ name: 't', default: true, deny: ['upstream:jira'] }]).access(undefined);
    expect(access.canSeeUpstream('gh')).toBe(true);
    expect(access.canSeeUpstream('jira')).toBe(false);
  });

  it("sees an upstream that an allow glob's literal start could reach, by name or resource URI", () => {
    const names = policyOf([{ name: 't', default: true, allow: ['gh__issue_*'] }]).access(undefined);
    expect(names.canSeeUpstream('gh')).toBe(true);
    expect(names.canSeeUpstream('jira')).toBe(false);
    const uris = policyOf([{ name: 't', default: true, allow: ['jira+https://*'] }]).access(undefined);
    expect(uris.canSeeUpstream('jira')).toBe(true);
    expect(uris.canSeeUpstream('gh')).toBe(false);
  });

  it('sees every upstream whose prefix a short glob could still become', () => {
    const access = policyOf([{ name: 't', default: true, allow: ['j*'] }]).access(undefined);
    expect(access.canSeeUpstream('jira')).toBe(true);
    expect(access.canSeeUpstream('gh')).toBe(false);
  });

  it("goes by the upstream's prefix, not its name", () => {
    const access = policyOf([{ name: 't', default: true, allow: ['gh__*'] }], { github: 'gh', jira: 'jira' }).access(undefined);
    expect(access.canSeeUpstream('github')).toBe(true);
    expect(access.canSeeUpstream('jira')).toBe(false);
  });

  it('sees an upstream named by allow upstream:, and no other', () => {
    const access = policyOf([{ name: 't', default: true, allow: ['upstream:gh'] }]).access(undefined);
    expect(access.canSeeUpstream('gh')).toBe(true);
    expect(access.canSeeUpstream('jira')).toBe(false);
  });

  it("sees an unprefixed upstream through its bare names and its fallback form, never through another upstream's prefix", () => {
    const upstreams = { mem: '', gh: 'gh' };
    const bare = policyOf([{ name: 't', default: true, allow: ['read_*'] }], upstreams).access(undefined);
    expect(bare.canSeeUpstream('mem')).toBe(true);
    expect(bare.canSeeUpstream('gh')).toBe(false);
    const fallback = policyOf([{ name: 't', default: true, allow: ['mem__*'] }], upstreams).access(undefined);
    expect(fallback.canSeeUpstream('mem')).toBe(true);
    const other = policyOf([{ name: 't', default: true, allow: ['gh__*'] }], upstreams).access(undefined);
    expect(other.canSeeUpstream('mem')).toBe(false);
    expect(other.canSeeUpstream('gh')).toBe(true);
  });

  it('never hides an upstream that canSee would show something of', () => {
    const policy = policyOf([{ name: 't', default: true, allow: ['gh__issue_*', 'jira+https://x/*'], deny: ['gh__issue_delete'] }]);
    const access = policy.access(undefined);
    const samples: [string, string][] = [['gh__issue_create', 'gh'], ['gh__issue_delete', 'gh'], ['jira+https://x/1', 'jira'], ['gh__repo', 'gh'], ['jira__x', 'jira']];
    const visible = samples.filter(([name, upstream]) => access.canSee('resource', name, upstream));
    expect(visible.map(([name]) => name)).toEqual(['gh__issue_create', 'jira+https://x/1']);
    for (const [name, upstream] of visible) expect(access.canSeeUpstream(upstream), name).toBe(true);
  });
});

describe('views and confirmation', () => {
  const policy = policyOf([
    {
      name: 'support',
      match: { claim: 'groups', value: 'support' },
      views: { gh__issue_create: { name: 'file_bug', description: 'File a bug', pin: { repo: 'acme/app' } }, gh__search: { title: 'Search' } },
      confirm: true,
    },
    { name: 'eng', match: { claim: 'groups', value: 'eng' }, views: { gh__issue_create: { name: 'new_issue' } } },
  ]);

  it("gives the view of the principal's first team that defines one, and maps its name back to the tool", () => {
    const both = policy.access(token({ groups: ['support', 'eng'] }));
    expect(both.view('gh__issue_create')).toEqual({ name: 'file_bug', description: 'File a bug', pin: { repo: 'acme/app' } });
    expect(both.toolOfView('file_bug')).toBe('gh__issue_create');
    expect(both.toolOfView('new_issue')).toBe('gh__issue_create');
    const eng = policy.access(token({ groups: ['eng'] }));
    expect(eng.view('gh__issue_create')?.name).toBe('new_issue');
    expect(eng.toolOfView('file_bug')).toBeUndefined();
    expect(eng.view('gh__search')).toBeUndefined();
  });

  it('knows no view name for a view that only retitles a tool', () => {
    const support = policy.access(token({ groups: ['support'] }));
    expect(support.view('gh__search')).toEqual({ title: 'Search', pin: {} });
    expect(support.toolOfView('gh__search')).toBeUndefined();
    expect(support.toolOfView('Search')).toBeUndefined();
  });

  it("confirms destructive tools when any of the principal's teams says confirm", () => {
    expect(policy.access(token({ groups: ['support'] })).confirmsDestructive).toBe(true);
    expect(policy.access(token({ groups: ['eng', 'support'] })).confirmsDestructive).toBe(true);
    expect(policy.access(token({ groups: ['eng'] })).confirmsDestructive).toBe(false);
  });

  it('decides for exactly the teams named by accessOfTeams (switchyard check)', () => {
    const checked = policyOf([
      { name: 'a', allow: ['gh__*'] },
      { name: 'b', allow: ['jira__*'] },
    ]);
    const a = checked.accessOfTeams(['a']);
    expect(a.canSee('tool', 'gh__x', 'gh')).toBe(true);
    expect(a.canSee('tool', 'jira__x', 'jira')).toBe(false);
    expect(checked.accessOfTeams(['nobody']).canSee('tool', 'gh__x', 'gh')).toBe(false);
  });
});
