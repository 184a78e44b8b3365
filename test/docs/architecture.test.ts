// docs/architecture.md holds itself true the way the config reference does: every folder of src/
// is named in its table of where things are, every `src/…` path it names exists, every layer the
// floor plan test knows is in its table of layers, and nothing in the repository cites a document
// outside it.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/paths.js';

const SRC = join(ROOT, 'src');
const doc = (): string => readFileSync(join(ROOT, 'docs', 'architecture.md'), 'utf8');

function folders(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .flatMap((entry) => {
      const path = join(dir, entry.name);
      return [relative(ROOT, path), ...folders(path)];
    });
}

function files(dir: string, keep: (name: string) => boolean): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (entry.name === 'node_modules' || entry.name.startsWith('.')) return [];
    const path = join(dir, entry.name);
    return entry.isDirectory() ? files(path, keep) : keep(entry.name) ? [path] : [];
  });
}

describe('docs/architecture.md', () => {
  it('names every folder of src/ as `src/<folder>/`', () => {
    const text = doc();
    const missing = folders(SRC).filter((folder) => !text.includes(`\`${folder}/`));
    expect(missing).toEqual([]);
  });

  it('names only paths of src/ that exist', () => {
    const named = [...doc().matchAll(/`(src\/[A-Za-z0-9_./-]+)`/g)].map((match) => match[1]!.replace(/\/$/, ''));
    expect(named.length).toBeGreaterThan(0);
    expect(named.filter((path) => !existsSync(join(ROOT, path)))).toEqual([]);
  });

  it('has every layer of the floor plan test in its table of layers', () => {
    const layersTest = readFileSync(join(ROOT, 'test', 'layers.test.ts'), 'utf8');
    const table = layersTest.slice(layersTest.indexOf('const LAYERS'), layersTest.indexOf('};', layersTest.indexOf('const LAYERS')));
    const units = [...table.matchAll(/^\s+'?([a-z.-]+)'?: \d+,/gm)].map((match) => match[1]!);
    expect(units.length).toBeGreaterThan(5);
    const layers = doc().slice(doc().indexOf('## Layers'));
    const missing = units.filter((unit) => !layers.includes(unit.endsWith('.ts') ? `\`${unit}\`` : `\`${unit}/\``));
    expect(missing).toEqual([]);
  });

  it('is the only kind of document code cites: no comment in src/, test/, bench/ or scripts/ cites one outside the repository', () => {
    const cited = ['src', 'test', 'bench', 'scripts']
      .flatMap((dir) => files(join(ROOT, dir), (name) => /\.(ts|mjs|js)$/.test(name)))
      .filter((path) => /DESIGN\.md|STYLE\.md|\.\.\/shared\/spec/.test(readFileSync(path, 'utf8')))
      .map((path) => relative(ROOT, path));
    expect(cited).toEqual([]);
  });
});
