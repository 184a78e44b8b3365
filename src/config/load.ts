// Loads gateway.yaml: YAML parse, ${VAR} substitution from the given environment, schema
// validation, path resolution, deep freeze. Every failure is a ConfigError that names the file,
// the key path and what is wrong, so the CLI prints one line and no stack trace.
import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { parseDocument } from 'yaml';
import type { z } from 'zod';
import { configSchema, type Config } from './schema.js';

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(
    readonly file: string,
    readonly keyPath: string,
    readonly problem: string,
  ) {
    super(keyPath ? `${file}: ${keyPath}: ${problem}` : `${file}: ${problem}`);
  }
}

export type Env = Readonly<Record<string, string | undefined>>;

/** A value taken from the environment by ${VAR}, and the key path it went into. */
export interface Substitution {
  readonly path: readonly (string | number)[];
  readonly value: string;
}

/** Where a loaded config keeps its substitutions: not enumerable, so it is no part of comparing or printing configs. */
const SUBSTITUTIONS = Symbol('substitutions');

/** The environment values substituted into `config` (empty for a config not made by this loader). */
export function substitutionsOf(config: Config): readonly Substitution[] {
  return (config as Config & { [SUBSTITUTIONS]?: readonly Substitution[] })[SUBSTITUTIONS] ?? [];
}

export async function loadConfig(file: string, env: Env): Promise<Config> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    const code = (err as { code?: string }).code;
    throw new ConfigError(file, '', code === 'ENOENT' ? 'file not found' : `cannot read (${code ?? 'error'})`);
  }
  return parseConfig(text, { file: resolve(file), env });
}

export function parseConfig(text: string, options: { file: string; env: Env }): Config {
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  const yamlError = doc.errors[0];
  if (yamlError) {
    const where = yamlError.linePos?.[0];
    const at = where ? `line ${where.line}, column ${where.col}: ` : '';
    const message = yamlError.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '');
    throw new ConfigError(options.file, '', `invalid YAML: ${at}${message}`);
  }
  // An alias to no anchor, or one expanding past the library's alias count (a "billion laughs"
  // document), fails only here.
  let raw: unknown;
  try {
    raw = doc.toJS();
  } catch (err) {
    throw new ConfigError(options.file, '', `invalid YAML: ${(err as Error).message}`);
  }
  return configFromObject(raw ?? {}, { file: options.file, env: options.env });
}

/** Validates an already-parsed config object (what tests and embedders pass). */
export function configFromObject(raw: unknown, options: { file: string; env: Env }): Config {
  const substitutions: Substitution[] = [];
  const substituted = substitute(raw, [], options, substitutions);
  const parsed = configSchema.safeParse(substituted, { reportInput: true });
  if (!parsed.success) throw fromZod(options.file, parsed.error);
  const baseDir = dirname(options.file);
  for (const upstream of Object.values(parsed.data.upstreams)) {
    if (upstream.stdio) upstream.stdio.cwd = resolve(baseDir, upstream.stdio.cwd ?? '.');
  }
  const tls = parsed.data.listen.tls;
  if (tls) {
    tls.cert = resolve(baseDir, tls.cert);
    tls.key = resolve(baseDir, tls.key);
    if (tls.ca) tls.ca = resolve(baseDir, tls.ca);
  }
  // The redactor needs them (config/secrets.ts): a secret's value is known only here.
  Object.defineProperty(parsed.data, SUBSTITUTIONS, { value: Object.freeze(substitutions), enumerable: false });
  return deepFreeze(parsed.data);
}

/** A key path of one or two keys: a top-level section, or one key of it. */
export type ConfigPart = readonly [string] | readonly [string, string];

/**
 * What runs after a reload: `next`, with the parts at `kept` as they are in `running` (they apply
 * only at a restart, and the running gateway still reads them). A part in a section `next` lacks
 * stays as `next` has it. Each substitution goes with its part, so the secrets in use stay known.
 */
export function keepParts(running: Config, next: Config, kept: readonly ConfigPart[]): Config {
  const merged: Record<string, unknown> = { ...next };
  const from = running as unknown as Record<string, unknown>;
  const carried: ConfigPart[] = [];
  for (const part of kept) {
    const [section, key] = part;
    const old = from[section];
    if (key === undefined) {
      if (old === undefined) delete merged[section];
      else merged[section] = old;
      carried.push(part);
    } else if (isRecord(merged[section]) && isRecord(old)) {
      merged[section] = Object.freeze({ ...merged[section], [key]: old[key] });
      carried.push(part);
    }
  }
  const inCarried = ({ path }: Substitution): boolean => carried.some((part) => part.every((key, i) => path[i] === key));
  const substitutions = [...substitutionsOf(next).filter((s) => !inCarried(s)), ...substitutionsOf(running).filter(inCarried)];
  Object.defineProperty(merged, SUBSTITUTIONS, { value: Object.freeze(substitutions), enumerable: false });
  return Object.freeze(merged) as unknown as Config;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

// ${NAME} and ${NAME:-default}; "$${" is a literal "${".
const reference = /\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

/** Replaces ${VAR} references; each value taken from the environment is recorded in `found` (a fallback is the file's own text). */
function substitute(value: unknown, path: (string | number)[], options: { file: string; env: Env }, found: Substitution[]): unknown {
  if (typeof value === 'string') {
    return value.replace(reference, (match, name: string | undefined, fallback: string | undefined) => {
      if (name === undefined) return '${';
      // ${VAR:-default} replaces unset or empty; a bare ${VAR} must be set and not empty (a
      // blank secret or URL is a mistake, and `${VAR:-}` says an empty value is meant).
      const given = options.env[name];
      if (fallback !== undefined && (given === undefined || given === '')) return fallback;
      if (given === undefined) throw new ConfigError(options.file, formatPath(path), `environment variable ${name} is not set`);
      if (given === '') throw new ConfigError(options.file, formatPath(path), `environment variable ${name} is empty (write \${${name}:-} if an empty value is meant)`);
      found.push({ path, value: given });
      return given;
    });
  }
  if (Array.isArray(value)) return value.map((item, i) => substitute(item, [...path, i], options, found));
  if (typeof value === 'object' && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) {
      // Assigned, "__proto__" would set the object's prototype: its keys would be inherited, past the unknown-key check.
      if (key === '__proto__') throw new ConfigError(options.file, formatPath([...path, key]), 'this key is not allowed');
      out[key] = substitute(item, [...path, key], options, found);
    }
    return out;
  }
  return value;
}

function fromZod(file: string, error: z.ZodError): ConfigError {
  // A misspelt key usually explains the other problems (a "required" sibling), so say it first.
  const issue = error.issues.find((i) => i.code === 'unrecognized_keys') ?? error.issues[0]!;
  const path = [...issue.path] as (string | number)[];
  let problem = issue.message;
  if (issue.code === 'unrecognized_keys') {
    const [key, ...rest] = issue.keys;
    path.push(key!);
    problem = rest.length > 0 ? `unknown key (also unknown: ${rest.join(', ')})` : 'unknown key';
  } else if (issue.code === 'invalid_key') {
    problem = `invalid key: ${issue.issues[0]?.message ?? issue.message}`;
  } else if (issue.code === 'invalid_type' && issue.input === undefined) {
    problem = 'required';
  }
  const more = error.issues.length - 1;
  return new ConfigError(file, formatPath(path), more > 0 ? `${problem} (and ${more} more problem${more > 1 ? 's' : ''})` : problem);
}

function formatPath(path: readonly PropertyKey[]): string {
  return path.map((part) => (typeof part === 'number' ? `[${part}]` : String(part))).join('.').replaceAll('.[', '[');
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    for (const item of Object.values(value)) deepFreeze(item);
    Object.freeze(value);
  }
  return value;
}
