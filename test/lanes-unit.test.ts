// The pure lane (`npm run test:unit`, vitest.unit.config.ts) stays pure: none of its files
// imports what opens a socket, starts a process, or needs Redis or Chromium, nor a test helper or
// a part of the gateway that does. A test that needs one of them lives under test/e2e/.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { configDefaults } from 'vitest/config';
import wholeConfig from '../vitest.config.js';
import unitConfig, { NOT_PURE_FOLDERS } from '../vitest.unit.config.js';
import { ROOT } from './helpers/paths.js';

const TEST = join(ROOT, 'test');

/** Modules whose use opens a socket or a process, or reaches Redis or Chromium. */
const FORBIDDEN = /^(node:)?(net|http|https|http2|tls|dgram|child_process|cluster)$|^(ioredis|undici|playwright|playwright-core)$/;
/** Parts of the gateway that listen or start a whole gateway when used. */
const STARTERS = ['src/gateway.ts', 'src/main.ts', 'src/http/listener.ts'];

/** What a source loads at run time: its imports and re-exports (not `import type`), dynamic imports, require. */
function runtimeImports(source: string): string[] {
  const code = source.replace(/^\s*\/\*[\s\S]*?\*\//gm, '').replace(/^\s*\/\/.*$/gm, '');
  const found: string[] = [];
  for (const m of code.matchAll(/^\s*(?:import|export)\s+(type\s+)?(?:[^'";]*?\s+from\s+)?['"]([^'"]+)['"]/gm)) if (m[1] === undefined) found.push(m[2]!);
  for (const m of code.matchAll(/\b(?:import|require)\s*\(\s*['"]([^'"]+)['"]\s*\)/g)) found.push(m[1]!);
  return found;
}

/** The file a relative specifier names (TypeScript sources are imported as .js). */
function resolveFile(from: string, specifier: string): string {
  const path = resolve(dirname(from), specifier);
  const ts = path.replace(/\.js$/, '.ts');
  return existsSync(ts) ? ts : path;
}

/**
 * Why `file` is not pure (the chain of imports to what is forbidden), or undefined. Test helpers
 * are followed through; the gateway's own modules only matter when they are a starter.
 */
function impurity(file: string, read: (file: string) => string, seen = new Set<string>()): string | undefined {
  if (seen.has(file)) return undefined;
  seen.add(file);
  for (const specifier of runtimeImports(read(file))) {
    if (FORBIDDEN.test(specifier)) return specifier;
    if (!specifier.startsWith('.')) continue;
    const target = resolveFile(file, specifier);
    const name = relative(ROOT, target);
    if (STARTERS.includes(name)) return name;
    if (name.startsWith('test/')) {
      const why = impurity(target, read, seen);
      if (why !== undefined) return `${name} → ${why}`;
    }
  }
  return undefined;
}

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return testFiles(path);
    return entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

const readSource = (file: string): string => readFileSync(file, 'utf8');
const inPureLane = (file: string): boolean => !NOT_PURE_FOLDERS.includes(relative(TEST, file).split('/')[0]!);

describe('the pure lane', () => {
  it('holds no file that imports a socket, a process, Redis, Chromium, or a helper or part that starts one', () => {
    const lane = testFiles(TEST).filter(inPureLane);
    expect(lane.length).toBeGreaterThan(0);
    const impure = lane.flatMap((file) => {
      const why = impurity(file, readSource);
      return why === undefined ? [] : [`${relative(ROOT, file)} → ${why}`];
    });
    expect(impure).toEqual([]);
  });

  it('is every test file outside the folders that are not pure, while npm test runs every file but the benchmark\'s', () => {
    for (const folder of NOT_PURE_FOLDERS) expect(existsSync(join(TEST, folder)), folder).toBe(true);
    expect(unitConfig.test?.include).toEqual(['test/**/*.test.ts']);
    expect(unitConfig.test?.exclude?.filter((glob) => !configDefaults.exclude.includes(glob))).toEqual(NOT_PURE_FOLDERS.map((folder) => `test/${folder}/**`));
    // The benchmark's smoke run is `npm run test:bench`.
    expect(wholeConfig.test?.include).toEqual(['test/**/*.test.ts']);
    expect(wholeConfig.test?.exclude?.filter((glob) => !configDefaults.exclude.includes(glob))).toEqual(['test/bench/**']);
  });

  it('finds the helpers that start gateways, processes, servers, Redis and Chromium', () => {
    for (const helper of ['gateway', 'cli', 'processes', 'redis', 'browser', 'oidc', 'oauth', 'front-door', 'nginx', 'raw-http', 'tls']) {
      expect({ helper, why: impurity(join(TEST, 'helpers', `${helper}.ts`), readSource) }).toEqual({ helper, why: expect.any(String) });
    }
    for (const helper of ['paths', 'memory-transport', 'sse-reader']) expect({ helper, why: impurity(join(TEST, 'helpers', `${helper}.ts`), readSource) }).toEqual({ helper, why: undefined });
  });

  it('tells each kind of import apart', () => {
    const file = join(TEST, 'x', 'sample.test.ts');
    const why = (source: string): string | undefined => impurity(file, (f) => (f === file ? source : readSource(f)));
    // Spelled through variables so that this file's own text imports none of them.
    const http = ['node', 'http'].join(':');
    const net = ['node', 'net'].join(':');
    expect(why(`import { createServer } from '${http}';`)).toBe(http);
    expect(why(`import {\n  spawn,\n} from 'child_process';`)).toBe('child_process');
    expect(why(`const { connect } = await import('${net}');`)).toBe(net);
    expect(why(`import { Redis } from 'ioredis';`)).toBe('ioredis');
    expect(why(`import { chromium } from 'playwright-core';`)).toBe('playwright-core');
    expect(why(`import { startGateway } from '../helpers/gateway.js';`)).toMatch(/^test\/helpers\/gateway\.ts → src\/gateway\.ts$/);
    expect(why(`import { alive } from '../helpers/processes.js';`)).toBe('test/helpers/processes.ts → node:child_process');
    expect(why(`import { startListener } from '../../src/http/listener.js';`)).toBe('src/http/listener.ts');
    // What is only a type, a comment, or a pure module is no impurity.
    expect(why(`import type { IncomingMessage } from '${http}';\n// import { x } from '${net}';\nimport { join } from 'node:path';\nimport { flush } from '../helpers/memory-transport.js';`)).toBeUndefined();
  });
});
