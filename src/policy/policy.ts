// Per-team policy, compiled once at load (pure: no I/O). A principal maps to teams (JWT claims,
// an API key's team, or the default team); each team allows and denies globs over namespaced
// tool and prompt names and resource URIs, or whole upstreams (`upstream:<name>`). One
// decision, Access.canSee, both filters every list and guards every call.
import type { TeamConfig } from '../config/schema.js';
import { globToRegExp } from '../util/glob.js';

export type ItemKind = 'tool' | 'prompt' | 'resource';

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
  const rules: CompiledRules = { globs: [], upstreams: new Set(), literals: [] };
  for (const entry of entries) {
    if (entry.startsWith('upstream:')) {
      rules.upstreams.add(entry.slice('upstream:'.length));
      continue;
    }
    rules.globs.push(globToRegExp(entry));
    rules.literals.push(entry.split(/[*?]/, 1)[0]!);
  }
  return rules;
}

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

  constructor(teams: readonly TeamConfig[] | undefined, naming: PolicyNaming) {
    this.#naming = naming;
    this.#teams = (teams ?? []).map((config) => ({ name: config.name, config, allow: compileRules(config.allow), deny: compileRules(config.deny) }));
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

  /** The decision for one principal. */
  access(principal: Subject | undefined): Access {
    if (!this.enabled) return new Access(undefined, [], this.#naming);
    return this.accessOfTeams(this.teamsOf(principal));
  }

  /** The decision for members of exactly these teams (for `switchyard check`). */
  accessOfTeams(teams: readonly string[]): Access {
    const names = new Set(teams);
    return new Access(this.#teams.filter((t) => names.has(t.name)), [...names], this.#naming);
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

  constructor(teams: CompiledTeam[] | undefined, names: string[], naming: PolicyNaming) {
    this.#teams = teams;
    this.teams = names;
    this.#naming = naming;
    for (const team of teams ?? []) {
      for (const [tool, view] of Object.entries(team.config.views)) {
        if (view.name !== undefined && !this.#viewNames.has(view.name)) this.#viewNames.set(view.name, tool);
      }
    }
  }

  /** Whether policy decides what this principal sees (lists then differ between principals). */
  get shaped(): boolean {
    return this.#teams !== undefined;
  }

  /** Whether this principal may see (and so use) anything of `upstream`. */
  canSeeUpstream(upstream: string): boolean {
    if (!this.#teams) return true;
    return this.#teams.some((team) => !team.deny.upstreams.has(upstream) && (team.allow.upstreams.has(upstream) || this.#couldMatch(team.allow, upstream)));
  }

  /** The one decision: may this principal see the item (and so call, read or get it)? */
  canSee(_kind: ItemKind, exposed: string, upstream: string): boolean {
    if (!this.#teams) return true;
    return this.#teams.some((team) => {
      if (team.deny.upstreams.has(upstream) || team.deny.globs.some((g) => g.test(exposed))) return false;
      return team.allow.upstreams.has(upstream) || team.allow.globs.some((g) => g.test(exposed));
    });
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
