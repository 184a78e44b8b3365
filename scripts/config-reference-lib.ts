// Renders docs/configuration.md from the zod schema of gateway.yaml (src/config/schema.ts), so
// the reference cannot drift from what the loader accepts: every key's dotted path, type,
// default, whether it is required, and the description attached to it with `.describe()`.
// Structure, optionality and defaults come from walking the schema's definitions (a default on a
// duration is lost in JSON Schema, where a transform has no input-side default); a leaf's type
// and bounds come from zod's own JSON Schema of that leaf (`z.toJSONSchema(leaf, { io: 'input' })`).
import { z } from 'zod';
import { configSchema } from '../src/config/schema.js';

export const GENERATED_PATH = 'docs/configuration.md';
export const GENERATE_COMMAND = 'npm run docs:config';

/** One configuration key as the reference lists it. */
export interface ConfigKey {
  /** Dotted path: `upstreams.<name>.http.url`; `[]` marks the items of a list. */
  path: string;
  type: string;
  /** The default as YAML would spell it, or undefined when there is none. */
  default: string | undefined;
  /** Required within its parent (a key of an optional section is required only when the section is there). */
  required: boolean;
  description: string | undefined;
}

type Schema = z.core.$ZodType;

/** The parts of zod 4's definitions this walker reads; everything else is left alone. */
interface Def {
  type: string;
  innerType?: Schema;
  defaultValue?: unknown;
  shape?: Record<string, Schema>;
  element?: Schema;
  keyType?: Schema;
  valueType?: Schema;
  options?: readonly Schema[];
  in?: Schema;
  out?: Schema;
  entries?: Record<string, string | number>;
  values?: readonly unknown[];
  protocol?: RegExp;
}

const defOf = (schema: Schema): Def => schema._zod.def as unknown as Def;

/** Placeholders for the keys of maps whose values are sections; any other map's keys are `<key>`. */
const PLACEHOLDERS: Record<string, string> = {
  upstreams: '<name>',
  'rateLimits.perTool': '<tool>',
  'teams[].views': '<tool>',
};

interface Unwrapped {
  core: Schema;
  optional: boolean;
  defaulted: { value: unknown } | undefined;
  description: string | undefined;
}

/** Peels optional, default and prefault wrappers, keeping the outermost description. */
function unwrap(schema: Schema): Unwrapped {
  let current = schema;
  let optional = false;
  let defaulted: { value: unknown } | undefined;
  let description: string | undefined;
  for (;;) {
    description ??= z.globalRegistry.get(current)?.description;
    const def = defOf(current);
    if (def.type === 'optional' && def.innerType) {
      optional = true;
      current = def.innerType;
    } else if ((def.type === 'default' || def.type === 'prefault') && def.innerType) {
      defaulted ??= { value: def.defaultValue };
      current = def.innerType;
    } else {
      return { core: current, optional, defaulted, description };
    }
  }
}

/** The config's durations: a number of milliseconds or a string such as 30s, parsed by a transform. */
function isDuration(schema: Schema): boolean {
  const def = defOf(schema);
  if (def.type !== 'pipe' || !def.in || !def.out || defOf(def.out).type !== 'transform') return false;
  const input = defOf(def.in);
  const kinds = (input.options ?? []).map((option) => defOf(option).type).sort();
  return input.type === 'union' && kinds.join(',') === 'number,string';
}

const SAFE_INTEGER = Number.MAX_SAFE_INTEGER;

function code(text: string): string {
  return '`' + text + '`';
}

/** A leaf's type with its bounds, from zod's JSON Schema of it. */
function leafType(schema: Schema): string {
  const def = defOf(schema);
  const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  if (def.type === 'enum' || Array.isArray(json.enum)) {
    const values = (json.enum as unknown[] | undefined) ?? Object.values(def.entries ?? {});
    return 'one of ' + values.map((value) => code(String(value))).join(', ');
  }
  if (def.type === 'literal' || 'const' in json) return code(JSON.stringify(json.const ?? def.values?.[0]));
  switch (json.type) {
    case 'string': {
      if (json.format === 'uri' || json.format === 'url') {
        return def.protocol?.source === '^https?$' ? 'http(s) URL' : 'URL';
      }
      if (typeof json.pattern === 'string') return 'string matching ' + code(json.pattern);
      const min = json.minLength as number | undefined;
      if (min === 1) return 'non-empty string';
      if (min !== undefined) return `string of at least ${min} characters`;
      return 'string';
    }
    case 'integer':
    case 'number': {
      const kind = json.type;
      const min = json.minimum as number | undefined;
      const max = json.maximum as number | undefined;
      const above = json.exclusiveMinimum as number | undefined;
      const upper = max !== undefined && max < SAFE_INTEGER ? max : undefined;
      if (min !== undefined && upper !== undefined) return `${kind} ${min}–${upper}`;
      const bounds = [
        min !== undefined ? `≥ ${min}` : undefined,
        above !== undefined ? `> ${above}` : undefined,
        upper !== undefined ? `≤ ${upper}` : undefined,
      ].filter((bound) => bound !== undefined);
      return bounds.length > 0 ? `${kind} ${bounds.join(', ')}` : kind;
    }
    case 'boolean':
      return 'boolean';
    case undefined:
      return 'any value';
    default:
      return String(json.type);
  }
}

/** A readable type for any schema, wrappers included. */
function typeOf(schema: Schema): string {
  const { core } = unwrap(schema);
  if (isDuration(core)) return 'duration';
  const def = defOf(core);
  switch (def.type) {
    case 'object':
      return 'object';
    case 'array': {
      const json = z.toJSONSchema(core, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
      const min = json.minItems as number | undefined;
      const element = def.element ? typeOf(def.element) : 'any value';
      return `list of ${element}` + (min !== undefined ? ` (at least ${min})` : '');
    }
    case 'record': {
      const key = def.keyType ? typeOf(def.keyType) : 'string';
      const value = def.valueType ? typeOf(def.valueType) : 'any value';
      const keyText = key === 'string' || key === 'non-empty string' ? key : `name (${key})`;
      return `map of ${keyText} to ${value}`;
    }
    case 'union': {
      // Forms of the same type read once: `X | X[]` of two object forms is "object or list of object".
      const forms = (option: Schema): string[] => {
        const optionDef = defOf(unwrap(option).core);
        return optionDef.type === 'union' ? (optionDef.options ?? []).flatMap(forms) : [typeOf(option)];
      };
      return [...new Set(forms(core))].join(' or ');
    }
    default:
      return leafType(core);
  }
}

/** Durations as the config spells them: 65000 → 65s. */
function formatDuration(ms: number): string {
  if (ms === 0) return '0';
  for (const [unit, size] of [['h', 3_600_000], ['m', 60_000], ['s', 1_000]] as const) {
    if (ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}

function formatBytes(bytes: number): string | undefined {
  for (const [unit, size] of [['GiB', 1024 ** 3], ['MiB', 1024 ** 2], ['KiB', 1024]] as const) {
    if (bytes >= size && bytes % size === 0) return `${bytes / size} ${unit}`;
  }
  return undefined;
}

function formatDefault(path: string, core: Schema, value: unknown): string {
  if (isDuration(core) && typeof value === 'number') return code(formatDuration(value));
  if (defOf(core).type === 'object' && isEmptyObject(value)) return 'its keys’ defaults';
  const text = code(JSON.stringify(value));
  if (typeof value === 'number' && /Bytes$/.test(path)) {
    const size = formatBytes(value);
    if (size) return `${text} (${size})`;
  }
  return text;
}

function isEmptyObject(value: unknown): boolean {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && Object.keys(value).length === 0;
}

/** Every key of the schema, depth first in the schema's own order. */
export function configKeys(schema: Schema = configSchema): ConfigKey[] {
  const keys: ConfigKey[] = [];
  const seen = new Set<string>();
  const add = (key: ConfigKey): void => {
    if (seen.has(key.path)) return;
    seen.add(key.path);
    keys.push(key);
  };

  const field = (child: Schema, path: string): void => {
    const unwrapped = unwrap(child);
    add({
      path,
      type: typeOf(child),
      default: unwrapped.defaulted ? formatDefault(path, unwrapped.core, unwrapped.defaulted.value) : undefined,
      required: !unwrapped.optional && !unwrapped.defaulted,
      description: unwrapped.description,
    });
    inside(unwrapped.core, path);
  };

  // The keys inside a value: an object's fields, a section map's entries, a list's items, and
  // each object form of a union, under the same path.
  const inside = (schema: Schema, path: string): void => {
    const { core } = unwrap(schema);
    if (isDuration(core)) return;
    const def = defOf(core);
    if (def.type === 'object') {
      for (const [key, child] of Object.entries(def.shape ?? {})) field(child, path === '' ? key : `${path}.${key}`);
    } else if (def.type === 'record' && def.valueType) {
      inside(def.valueType, `${path}.${PLACEHOLDERS[path] ?? '<key>'}`);
    } else if (def.type === 'array' && def.element) {
      inside(def.element, `${path}[]`);
    } else if (def.type === 'union') {
      // A list of the same forms (`match: X | X[]`) shares the forms' keys rather than adding `[]`.
      for (const option of def.options ?? []) {
        const optionDef = defOf(unwrap(option).core);
        if (optionDef.type === 'array' && optionDef.element) inside(optionDef.element, path);
        else inside(option, path);
      }
    }
  };

  inside(schema, '');
  return keys;
}

function cell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\s*\n\s*/g, ' ');
}

/** docs/configuration.md, as the script writes it. */
export function renderConfigReference(keys: ConfigKey[] = configKeys()): string {
  const lines: string[] = [
    '# Configuration reference (`gateway.yaml`)',
    '',
    `<!-- Generated by \`${GENERATE_COMMAND}\` (scripts/config-reference.ts) from src/config/schema.ts. Do not edit by hand. -->`,
    '',
    `Generated from the config schema (\`src/config/schema.ts\`) by \`${GENERATE_COMMAND}\`; do not edit by hand.`,
    `\`npm run docs:config -- --check\` fails when this file differs from what the schema gives, and`,
    '`test/docs/config-reference.test.ts` runs that check with the suite. To change a description, edit',
    'the `.describe()` of the key in the schema and run the command again.',
    '',
    'An annotated example of a whole file, and what the settings do together, is in',
    '[configuration-guide.md](configuration-guide.md).',
    '',
    '- **Key**: the dotted path of the key. `<name>` stands for an upstream name, `<tool>` for a',
    '  namespaced tool name (or glob), `<key>` for any key; `[]` marks the items of a list.',
    '- **Type**: a *duration* is a number of milliseconds or a string such as `500ms`, `30s`, `5m`, `1h`, `30d`.',
    '  Strings anywhere may use `${VAR}` (an error when VAR is unset or empty), `${VAR:-default}`, and',
    '  `$${` for a literal `${`.',
    '- **Default**: what applies when the key is left out; a section with "its keys’ defaults" may be',
    '  left out whole.',
    '- **Required**: required within its parent; a key of an optional section is needed only when the',
    '  section is there. Every other key is optional, and unknown keys are errors.',
  ];
  const sections = new Map<string, ConfigKey[]>();
  for (const key of keys) {
    const top = key.path.split(/[.[]/)[0]!;
    let section = sections.get(top);
    if (!section) sections.set(top, (section = []));
    section.push(key);
  }
  for (const [top, section] of sections) {
    lines.push('', `## ${top}`, '', '| Key | Type | Default | Required | Description |', '| --- | --- | --- | --- | --- |');
    for (const key of section) {
      lines.push(`| ${cell(code(key.path))} | ${cell(key.type)} | ${cell(key.default ?? '')} | ${key.required ? 'yes' : 'no'} | ${cell(key.description ?? '')} |`);
    }
  }
  return lines.join('\n') + '\n';
}
