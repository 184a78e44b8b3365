// Annotation selectors and endpoint scopes on their own, from configs parsed by the real schema:
// `annotation:<hint>` matches a tool only when its upstream set the hint to true (never a
// prompt or resource, never a tool without the hint), a view cannot grant one, an endpoint's
// own allow/deny narrows what a principal's teams see (the intersection, for lists and calls
// alike), its `teams` decide who may use it at all, and an endpoint a reload removed is closed.
import { describe, expect, it } from 'vitest';
import type { Principal } from '../../src/auth/principal.js';
import { configSchema } from '../../src/config/schema.js';
import { hintsOf, Policy } from '../../src/policy/policy.js';

function policyOf(raw: { teams?: unknown[]; endpoints?: unknown[] }): Policy {
  const config = configSchema.parse({ upstreams: { gh: { stdio: { command: 'server' } }, jira: { stdio: { command: 'server' } } }, ...raw });
  const prefixes = new Map(Object.entries(config.upstreams).map(([name, entry]) => [name, entry.prefix ?? name]));
  return new Policy(config.teams, { separator: config.namespacing.separator, prefixes }, config.endpoints);
}

const apiKey = (id: string, team?: string): Principal => ({ id: `apikey:${id}`, kind: 'apikey', scopes: [], claims: {}, ...(team === undefined ? {} : { team }) });
const READ_ONLY = hintsOf({ annotations: { readOnlyHint: true, destructiveHint: false } });
const DESTRUCTIVE = hintsOf({ annotations: { readOnlyHint: false, destructiveHint: true } });
const BOTH = hintsOf({ annotations: { readOnlyHint: true, destructiveHint: true } });
const NONE = hintsOf({});

describe('hintsOf', () => {
  it('keeps only the hints set to true (false, strings, non-hints ignored)', () => {
    expect(hintsOf({ annotations: { readOnlyHint: true, destructiveHint: false, openWorldHint: 'true', title: 'x', idempotentHint: true } })).toEqual(['readOnlyHint', 'idempotentHint']);
    expect(hintsOf({ annotations: null })).toEqual([]);
    expect(hintsOf({})).toEqual([]);
  });
});

describe('annotation selectors', () => {
  const readers = policyOf({ teams: [{ name: 'readers', default: true, allow: ['annotation:readOnlyHint'], deny: ['annotation:destructiveHint'] }] });
  const access = readers.access(undefined);

  it('allow tools whose upstream says readOnlyHint, deny those that say destructiveHint (deny wins)', () => {
    expect(access.canSee('tool', 'gh__get', 'gh', READ_ONLY)).toBe(true);
    expect(access.canSee('tool', 'gh__drop', 'gh', DESTRUCTIVE)).toBe(false);
    expect(access.canSee('tool', 'gh__odd', 'gh', BOTH)).toBe(false);
  });

  it('do not match a tool without the annotation, nor prompts or resources', () => {
    expect(access.canSee('tool', 'gh__plain', 'gh', NONE)).toBe(false);
    expect(access.canSee('tool', 'gh__plain', 'gh')).toBe(false);
    expect(access.canSee('prompt', 'gh__prompt', 'gh')).toBe(false);
    expect(access.canSee('resource', 'gh+file:///a', 'gh')).toBe(false);
  });

  it('let a call go on to its facts only when some annotations could make the tool visible', () => {
    expect(access.readsHints).toBe(true);
    expect(access.mayCall('gh__anything', 'gh')).toBe(true);
    const denyByName = policyOf({ teams: [{ name: 't', default: true, allow: ['annotation:readOnlyHint'], deny: ['gh__*'] }] }).access(undefined);
    expect(denyByName.mayCall('gh__get', 'gh')).toBe(false);
    expect(denyByName.mayCall('jira__get', 'jira')).toBe(true);
  });

  it('open every upstream that could hold a matching tool, but not one denied whole', () => {
    expect(access.canSeeUpstream('gh')).toBe(true);
    const denied = policyOf({ teams: [{ name: 't', default: true, allow: ['annotation:readOnlyHint'], deny: ['upstream:jira'] }] }).access(undefined);
    expect(denied.canSeeUpstream('jira')).toBe(false);
  });

  it('are refused at load when they name no known hint', () => {
    expect(() => policyOf({ teams: [{ name: 't', allow: ['annotation:readonly'] }] })).toThrow(/annotation selectors name one of/);
  });

  it('leave a policy without them reading no hints (calls decide on names at once)', () => {
    expect(policyOf({ teams: [{ name: 't', default: true, allow: ['gh__*'] }] }).access(undefined).readsHints).toBe(false);
  });
});

describe('endpoint scopes', () => {
  const policy = policyOf({
    teams: [
      { name: 'payments', match: { principal: 'apikey:pay' }, allow: ['gh__*', 'jira__*'] },
      { name: 'ops', match: { principal: 'apikey:ops' } },
    ],
    endpoints: [
      { path: '/payments/mcp', teams: ['payments'], allow: ['gh__*', 'jira__search_*'], deny: ['*__delete_*'], discovery: 'search', pinned: ['gh__create'], instructions: 'Payments only' },
      { path: '/open/mcp', allow: ['annotation:readOnlyHint'] },
    ],
  });

  it('show the intersection of the teams and the endpoint rules', () => {
    const access = policy.access(apiKey('pay'), '/payments/mcp');
    expect(access.canSee('tool', 'gh__create', 'gh')).toBe(true);
    expect(access.canSee('tool', 'gh__delete_repo', 'gh')).toBe(false);
    expect(access.canSee('tool', 'jira__search_issues', 'jira')).toBe(true);
    expect(access.canSee('tool', 'jira__create_issue', 'jira')).toBe(false);
    expect(access.shaped).toBe(true);
    // The same principal on the main endpoint sees what its team sees.
    const main = policy.access(apiKey('pay'));
    expect(main.canSee('tool', 'jira__create_issue', 'jira')).toBe(true);
    expect(main.endpoint).toBeUndefined();
  });

  it('carry their discovery mode, pins and instructions', () => {
    expect(policy.access(apiKey('pay'), '/payments/mcp').endpoint).toMatchObject({ discovery: 'search', pinned: ['gh__create'], instructions: 'Payments only' });
    expect(policy.access(apiKey('ops'), '/open/mcp').endpoint).toMatchObject({ discovery: 'list', pinned: [] });
  });

  it('admit only principals of their teams; without teams, anyone', () => {
    expect(policy.admits(apiKey('pay'), '/payments/mcp')).toBe(true);
    expect(policy.admits(apiKey('ops'), '/payments/mcp')).toBe(false);
    expect(policy.admits(undefined, '/payments/mcp')).toBe(false);
    expect(policy.admits(apiKey('ops'), '/open/mcp')).toBe(true);
    expect(policy.admits(apiKey('ops'), undefined)).toBe(true);
  });

  it('narrow by annotations too', () => {
    const access = policy.access(apiKey('ops'), '/open/mcp');
    expect(access.canSee('tool', 'gh__get', 'gh', READ_ONLY)).toBe(true);
    expect(access.canSee('tool', 'gh__get', 'gh', NONE)).toBe(false);
    expect(access.readsHints).toBe(true);
  });

  it('of an upstream the endpoint cannot see open nothing of it', () => {
    expect(policy.access(apiKey('pay'), '/payments/mcp').canSeeUpstream('gh')).toBe(true);
    const narrow = policyOf({ endpoints: [{ path: '/gh/mcp', allow: ['upstream:gh'] }] });
    expect(narrow.access(undefined, '/gh/mcp').canSeeUpstream('jira')).toBe(false);
    expect(narrow.access(undefined, '/gh/mcp').canSeeUpstream('gh')).toBe(true);
  });

  it('close an endpoint no longer configured: nothing shown, nobody admitted', () => {
    const access = policy.access(apiKey('ops'), '/gone/mcp');
    expect(access.canSee('tool', 'gh__get', 'gh', READ_ONLY)).toBe(false);
    expect(access.canSeeUpstream('gh')).toBe(false);
    expect(policy.admits(apiKey('ops'), '/gone/mcp')).toBe(false);
  });

  it('are refused at load when they repeat a path, take a reserved one, or name an unknown team', () => {
    expect(() => policyOf({ endpoints: [{ path: '/mcp' }] })).toThrow(/already served/);
    expect(() => policyOf({ endpoints: [{ path: '/a/mcp' }, { path: '/a/mcp' }] })).toThrow(/already served/);
    expect(() => policyOf({ endpoints: [{ path: '/healthz' }] })).toThrow(/reserved/);
    expect(() => policyOf({ endpoints: [{ path: '/.well-known/x' }] })).toThrow(/reserved/);
    expect(() => policyOf({ endpoints: [{ path: '/a/mcp', teams: ['nobody'] }] })).toThrow(/no team is named/);
    expect(() => policyOf({ endpoints: [{ path: 'relative' }] })).toThrow();
  });
});
