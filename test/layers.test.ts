// The floor plan of docs/architecture.md ("Layers"), held by reading every import in src/ (type
// imports and re-exports included): lower layers never import higher ones, folders of one layer
// never import each other, names/ below links/ below router/, none of them reaches transport/,
// http/ never reaches upstream/ or transport/; no module keeps mutable state at its top level; no
// code file is over 500 lines, in src/, test/ or bench/.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, dirname, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from './helpers/paths.js';

const SRC = join(ROOT, 'src');

/** Layer of each top-level folder (or root file), lowest first. */
const LAYERS: Record<string, number> = {
  mcp: 0,
  util: 0,
  'version.ts': 0,
  config: 1,
  metrics: 1,
  telemetry: 1,
  transport: 2,
  policy: 2,
  auth: 2,
  ratelimit: 2,
  credentials: 2,
  audit: 2,
  upstream: 3,
  session: 3,
  pinning: 3,
  frontdoor: 3,
  names: 4,
  links: 5,
  tasks: 5,
  router: 6,
  http: 7,
  'gateway.ts': 8,
  'check.ts': 8,
  'main.ts': 9,
};
/** Imports forbidden even though the layers would allow them. */
const FORBIDDEN: Array<[string, string]> = [
  ['names', 'transport'],
  ['links', 'transport'],
  ['router', 'transport'],
  ['http', 'upstream'],
  ['http', 'transport'],
];
/** mcp/ and util/ share the lowest layer; util may use mcp's types, never the reverse. */
const SAME_LAYER_ALLOWED: Array<[string, string]> = [['util', 'mcp']];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** Every code file under `dir` (documents and recorded data are not code). */
function codeFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return codeFiles(path);
    return /\.(?:ts|mjs|cjs|js|pl)$/.test(entry.name) ? [path] : [];
  });
}

/** The unit a file belongs to: its top-level folder under src/, or its own name at the root. */
function unitOf(path: string): string {
  return relative(SRC, path).split(/[\\/]/)[0]!;
}

/** Every relative module a file imports or re-exports, `import type` included. */
function importsOf(path: string): string[] {
  const text = readFileSync(path, 'utf8');
  const found: string[] = [];
  const pattern = /(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+['"](\.[^'"]+)['"]|import\(\s*['"](\.[^'"]+)['"]\s*\)/g;
  for (const match of text.matchAll(pattern)) {
    const spec = match[1] ?? match[2]!;
    found.push(resolve(dirname(path), spec.replace(/\.js$/, '.ts')));
  }
  return found;
}

const files = sourceFiles(SRC);

describe('the floor plan (docs/architecture.md)', () => {
  it('knows the layer of every folder in src/', () => {
    const unknown = [...new Set(files.map(unitOf))].filter((unit) => LAYERS[unit] === undefined);
    expect(unknown).toEqual([]);
  });

  it('imports only downwards, never across a layer, never router→transport or http→upstream/transport', () => {
    const violations: string[] = [];
    for (const file of files) {
      const from = unitOf(file);
      for (const target of importsOf(file)) {
        const to = unitOf(target);
        if (to === from) continue;
        const rel = `${relative(SRC, file)} → ${relative(SRC, target)}`;
        const [a, b] = [LAYERS[from]!, LAYERS[to]!];
        const allowedSame = SAME_LAYER_ALLOWED.some(([x, y]) => x === from && y === to);
        if (a < b || (a === b && !allowedSame)) violations.push(rel);
        else if (FORBIDDEN.some(([x, y]) => x === from && y === to)) violations.push(rel);
      }
    }
    expect(violations).toEqual([]);
  });

  it('has no import cycle between files', () => {
    const graph = new Map(files.map((file) => [file, importsOf(file).filter((t) => t.startsWith(SRC))]));
    const state = new Map<string, 'open' | 'done'>();
    const cycles: string[] = [];
    const visit = (file: string, trail: string[]): void => {
      if (state.get(file) === 'done') return;
      if (state.get(file) === 'open') {
        cycles.push([...trail.slice(trail.indexOf(file)), file].map((f) => relative(SRC, f)).join(' → '));
        return;
      }
      state.set(file, 'open');
      for (const next of graph.get(file) ?? []) visit(next, [...trail, file]);
      state.set(file, 'done');
    };
    for (const file of files) visit(file, []);
    expect(cycles).toEqual([]);
  });

  it('keeps no mutable state at a module’s top level', () => {
    const found: string[] = [];
    for (const file of files) {
      const text = readFileSync(file, 'utf8');
      for (const match of text.matchAll(/^(?:export )?let (\w+)/gm)) found.push(`${relative(SRC, file)}: let ${match[1]}`);
      for (const match of text.matchAll(/^(?:export )?const (\w+)(?::[^=]+)? = new (?:Map|Set|WeakMap|WeakSet)\b/gm)) {
        const name = match[1]!;
        if (new RegExp(`\\b${name}\\.(?:set|add|delete|clear)\\(`).test(text)) found.push(`${relative(SRC, file)}: ${name} is changed`);
      }
    }
    expect(found).toEqual([]);
  });

  // The tests and benchmarks too: a long test file is also a slow one, and the suite runs files
  // in parallel, so the slowest file sets its floor.
  it('has no file over 500 lines', () => {
    const long = ['src', 'test', 'bench']
      .flatMap((dir) => codeFiles(join(ROOT, dir)))
      .map((file) => ({ file: relative(ROOT, file), lines: readFileSync(file, 'utf8').split('\n').length }))
      .filter(({ lines }) => lines > 500);
    expect(long).toEqual([]);
  });
});
