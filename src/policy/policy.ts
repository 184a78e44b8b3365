// Per-team policy, compiled once at load (pure: no I/O). A principal maps to teams (JWT claims,
// an API key's team, or the default team); each team allows and denies globs over namespaced
// tool and prompt names and resource URIs, whole upstreams (`upstream:<name>`), or tools by
// their upstream's annotations (`annotation:<hint>`). An endpoint beside the main one narrows
// that further with rules of its own. One decision, Access.canSee, both filters every list and
// guards every call.
import type { EndpointConfig, TeamConfig } from '../config/schema.js';
import { globToRegExp } from '../util/glob.js';

export type ItemKind = 'tool' | 'prompt' | 'resource';

/** The annotation hints a tool's upstream set to true (readOnlyHint, destructiveHint …). */
export type ToolHints = readonly string[];

/** The hints of a tool definition as its upstream listed it (only `true` counts). */
export function hintsOf(tool: Readonly<Record<string, unknown>>): ToolHints {
  const annotations = tool.annotations;
  if (typeof annotations !== 'object' || annotations === null) return NO_HINTS;
  const hints: string[] = [];
  for (const [name, value] of Object.entries(annotations)) if (value === true && name.endsWith('Hint')) hints.push(name);
  return hints.length === 0 ? NO_HINTS : hints;
}

const NO_HINTS: ToolHints = [];

/** What team rules read of a principal (auth/principal.ts has the whole of it). */
export interface Subject {
  /** Stable identity (`match: { principal }` names it). */
  readonly id: string;
  /** The team an API key is mapped to, when configured. */
  readonly team?: string;
  /** Token claims (for team rules); empty for API keys. */
  readonly claims: Readonly<Record<string, unknown>>;
}

export interface ToolView {
  name?: string;
  title?: string;
  description?: string;
  pin: Readonly<Record<string, unknown>>;
}

export interface PolicyNaming {
  separator: string;
  /** upstream → the prefix its names carry ("" for an unprefixed upstream). */
  prefixes: ReadonlyMap<string, string>;
}

interface CompiledRules {
  globs: RegExp[];
  upstreams: Set<string>;
  /** `annotation:<hint>`: tools whose upstream sets the hint. */
  hints: string[];
  /** Literal starts of the globs, to tell whether a glob can match any name of an upstream. */
  literals: string[];
}

interface CompiledTeam {
  name: string;
  config: TeamConfig;
  allow: CompiledRules;
  deny: CompiledRules;
}

function compileRules(entries: readonly string[]): CompiledRules {
  const rules: CompiledRules = { globs: [], upstreams: new Set(), hints: [], literals: [] };
  for (const entry of entries) {
    if (entry.startsWith('upstream:')) {
      rules.upstreams.add(entry.slice('upstream:'.length));
      continue;
    }
    if (entry.startsWith('annotation:')) {
      rules.hints.push(entry.slice('annotation:'.length));
      continue;
    }
    rules.globs.push(globToRegExp(entry));
    rules.literals.push(entry.split(/[*?]/, 1)[0]!);
  }
  return rules;
}

/** Whether `rules` select the item; `hints` undefined: a tool whose annotations are not known (matches any hint rule when `assume`). */
function selects(rules: CompiledRules, kind: ItemKind, exposed: string, upstream: string, hints: ToolHints | undefined, assume = false): boolean {
  if (rules.upstreams.has(upstream) || rules.globs.some((g) => g.test(exposed))) return true;
  if (kind !== 'tool' || rules.hints.length === 0) return false;
  return hints === undefined ? assume : rules.hints.some((hint) => hints.includes(hint));
}

/** Whether a team's or endpoint's rules let the item through (unknown hints: allowed if some hint would allow it, denied only by what denies regardless). */
function admits(rules: { allow: CompiledRules; deny: CompiledRules }, kind: ItemKind, exposed: string, upstream: string, hints: ToolHints | undefined): boolean {
  return !selects(rules.deny, kind, exposed, upstream, hints, false) && selects(rules.allow, kind, exposed, upstream, hints, true);
}

/** An endpoint beside the main one: who may use it, what it narrows, how its tools are found. */
export interface EndpointScope {
  readonly path: string;
  /** Only principals of these teams may use it. */
  readonly teams: readonly string[] | undefined;
  readonly discovery: 'list' | 'search';
  readonly pinned: readonly string[];
  readonly instructions: string | undefined;
}

interface CompiledEndpoint extends EndpointScope {
  allow: CompiledRules;
  deny: CompiledRules;
}

function compileEndpoint(config: EndpointConfig): CompiledEndpoint {
  return {
    path: config.path,
    teams: config.teams,
    discovery: config.discovery,
    pinned: config.pinned,
    instructions: config.instructions,
    allow: compileRules(config.allow),
    deny: compileRules(config.deny),
  };
}

/** What an endpoint no longer configured (removed by a reload) shows, and to whom: nothing, nobody. */
const CLOSED: CompiledEndpoint = { path: '', teams: [], discovery: 'list', pinned: [], instructions: undefined, allow: compileRules([]), deny: compileRules([]) };

function claimAt(claims: Readonly<Record<string, unknown>>, path: string): unknown {
  let value: unknown = claims;
  for (const part of path.split('.')) {
    if (typeof value !== 'object' || value === null) return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

export class Policy {
  readonly #teams: CompiledTeam[];
  readonly #naming: PolicyNaming;
  /** By path: the endpoints beside the main one. */
  readonly #endpoints: Map<string, CompiledEndpoint>;

  constructor(teams: readonly TeamConfig[] | undefined, naming: PolicyNaming, endpoints: readonly EndpointConfig[] = []) {
    this.#naming = naming;
    this.#teams = (teams ?? []).map((config) => ({ name: config.name, config, allow: compileRules(config.allow), deny: compileRules(config.deny) }));
    this.#endpoints = new Map(endpoints.map((config) => [config.path, compileEndpoint(config)]));
  }

  /** The endpoint served at `path` beside the main one (undefined: the main endpoint; one no longer configured is closed). */
  endpoint(path: string | undefined): EndpointScope | undefined {
    return this.#scope(path);
  }

  #scope(path: string | undefined): CompiledEndpoint | undefined {
    return path === undefined ? undefined : (this.#endpoints.get(path) ?? CLOSED);
  }

  get endpoints(): EndpointScope[] {
    return [...this.#endpoints.values()];
  }

  /** Whether the principal may use the endpoint at `path` at all (its `teams`). */
  admits(principal: Subject | undefined, path: string | undefined): boolean {
    const allowed = this.endpoint(path)?.teams;
    if (allowed === undefined) return true;
    return this.teamsOf(principal).some((team) => allowed.includes(team));
  }

  /** Teams are configured: without them every principal sees everything. */
  get enabled(): boolean {
    return this.#teams.length > 0;
  }

  get teamNames(): string[] {
    return this.#teams.map((t) => t.name);
  }

  /** The teams of a principal: those it matches, its API key's team, else the default team. */
  teamsOf(principal: Subject | undefined): string[] {
    const names = new Set<string>();
    if (principal?.team !== undefined) names.add(principal.team);
    for (const team of this.#teams) {
      const matches = team.config.match === undefined ? [] : ([] as NonNullable<TeamConfig['match']>[]).concat(team.config.match).flat();
      for (const match of matches) {
        if ('principal' in match) {
          if (principal?.id === match.principal) names.add(team.name);
        } else if (principal) {
          const claim = claimAt(principal.claims, match.claim);
          if (claim === match.value || (Array.isArray(claim) && claim.includes(match.value))) names.add(team.name);
        }
      }
    }
    if (names.size === 0) {
      const fallback = this.#teams.find((t) => t.config.default);
      if (fallback) names.add(fallback.name);
    }
    return this.#teams.filter((t) => names.has(t.name)).map((t) => t.name);
  }

  /** The decision for one principal, on the endpoint at `path` (undefined: the main one). */
  access(principal: Subject | undefined, path?: string): Access {
    if (!this.enabled) return new Access(undefined, [], this.#naming, this.#scope(path));
    return this.accessOfTeams(this.teamsOf(principal), path);
  }

  /** The decision for members of exactly these teams (for `switchyard check`). */
  accessOfTeams(teams: readonly string[], path?: string): Access {
    const names = new Set(teams);
    return new Access(this.#teams.filter((t) => names.has(t.name)), [...names], this.#naming, this.#scope(path));
  }
}

/** What one principal may see and call. Built per session; cheap to query. */
export class Access {
  /** undefined: no policy, everything visible. */
  readonly #teams: CompiledTeam[] | undefined;
  readonly #naming: PolicyNaming;
  readonly teams: readonly string[];
  /** view name → the namespaced tool it shows. */
  readonly #viewNames = new Map<string, string>();
  /** The endpoint beside the main one this access is for, narrowing what the teams see. */
  readonly #endpoint: CompiledEndpoint | undefined;
  readonly #readsHints: boolean;

  constructor(teams: CompiledTeam[] | undefined, names: string[], naming: PolicyNaming, endpoint?: CompiledEndpoint) {
    this.#teams = teams;
    this.teams = names;
    this.#naming = naming;
    this.#endpoint = endpoint;
    const reads = (rules: { allow: CompiledRules; deny: CompiledRules }): boolean => rules.allow.hints.length + rules.deny.hints.length > 0;
    this.#readsHints = (endpoint !== undefined && reads(endpoint)) || (teams?.some(reads) ?? false);
    for (const team of teams ?? []) {
      for (const [tool, view] of Object.entries(team.config.views)) {
        if (view.name !== undefined && !this.#viewNames.has(view.name)) this.#viewNames.set(view.name, tool);
      }
    }
  }

  /** Whether policy decides what this principal sees (lists then differ between principals). */
  get shaped(): boolean {
    return this.#teams !== undefined || this.#endpoint !== undefined;
  }

  /** The endpoint this access is for, when it is not the main one. */
  get endpoint(): EndpointScope | undefined {
    return this.#endpoint;
  }

  /** Whether this principal may see (and so use) anything of `upstream`. */
  canSeeUpstream(upstream: string): boolean {
    const opens = (rules: { allow: CompiledRules; deny: CompiledRules }): boolean =>
      !rules.deny.upstreams.has(upstream) && (rules.allow.upstreams.has(upstream) || rules.allow.hints.length > 0 || this.#couldMatch(rules.allow, upstream));
    if (this.#endpoint && !opens(this.#endpoint)) return false;
    return !this.#teams || this.#teams.some(opens);
  }

  /**
   * The one decision: may this principal see the item (and so call, read or get it)? `hints`
   * are a tool's annotations as its upstream listed them; without them no annotation rule
   * matches the tool.
   */
  canSee(kind: ItemKind, exposed: string, upstream: string, hints: ToolHints = NO_HINTS): boolean {
    return this.#decide(kind, exposed, upstream, hints);
  }

  /**
   * Whether a tool whose annotations are not known yet could be visible (some annotations
   * would make it so): the early check of a call, before its facts are read.
   */
  mayCall(exposed: string, upstream: string): boolean {
    return this.#decide('tool', exposed, upstream, undefined);
  }

  /** Whether any rule looks at tools' annotations (a call's decision then waits for its facts). */
  get readsHints(): boolean {
    return this.#readsHints;
  }

  #decide(kind: ItemKind, exposed: string, upstream: string, hints: ToolHints | undefined): boolean {
    // Every call's path: no closure, no policy at all is one check.
    if (this.#endpoint && !admits(this.#endpoint, kind, exposed, upstream, hints)) return false;
    if (!this.#teams) return true;
    for (const team of this.#teams) if (admits(team, kind, exposed, upstream, hints)) return true;
    return false;
  }

  /** The first of this principal's teams that defines a view of the tool. */
  view(exposedTool: string): ToolView | undefined {
    for (const team of this.#teams ?? []) {
      const view = team.config.views[exposedTool];
      if (view) return view;
    }
    return undefined;
  }

  /** The namespaced tool a view name stands for, if it is one. */
  toolOfView(name: string): string | undefined {
    return this.#viewNames.get(name);
  }

  /** Destructive tools need the user's confirmation. */
  get confirmsDestructive(): boolean {
    return this.#teams?.some((team) => team.config.confirm) ?? false;
  }

  /** Could any glob of `rules` match a name or URI of `upstream`? (By the glob's literal start.) */
  #couldMatch(rules: CompiledRules, upstream: string): boolean {
    const { prefixes, separator } = this.#naming;
    const prefix = prefixes.get(upstream);
    if (prefix === undefined) return false;
    const compatible = (literal: string, start: string): boolean => literal.startsWith(start) || start.startsWith(literal);
    return rules.literals.some((literal) => {
      if (prefix !== '') return compatible(literal, `${prefix}${separator}`) || compatible(literal, `${prefix}+`);
      // An unprefixed upstream: its fallback form carries its name; its bare names never start
      // with another upstream's prefix (those are shown in the fallback form instead).
      if (compatible(literal, `${upstream}${separator}`) || compatible(literal, `${upstream}+`)) return true;
      return ![...prefixes].some(([other, p]) => other !== upstream && p !== '' && (literal.startsWith(`${p}${separator}`) || literal.startsWith(`${p}+`)));
    });
  }
}
