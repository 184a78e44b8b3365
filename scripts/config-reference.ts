// `npm run docs:config`: writes docs/configuration.md from the config schema
// (scripts/config-reference-lib.ts). With --check it writes nothing and exits 1 when the file
// differs from what it would write, so a schema change without its docs fails loudly.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { GENERATE_COMMAND, GENERATED_PATH, renderConfigReference } from './config-reference-lib.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const target = join(ROOT, GENERATED_PATH);
const args = process.argv.slice(2);
const unknown = args.filter((arg) => arg !== '--check');
if (unknown.length > 0) {
  process.stderr.write(`config-reference: unknown argument ${unknown[0]}; usage: ${GENERATE_COMMAND} [-- --check]\n`);
  process.exit(2);
}

const rendered = renderConfigReference();

if (args.includes('--check')) {
  let current: string | undefined;
  try {
    current = readFileSync(target, 'utf8');
  } catch {
    current = undefined;
  }
  if (current === rendered) {
    process.stdout.write(`${GENERATED_PATH} is up to date with src/config/schema.ts\n`);
  } else {
    const reason = current === undefined ? 'is missing' : `differs from the schema (first at line ${firstDifference(current, rendered)})`;
    process.stderr.write(`config-reference: ${GENERATED_PATH} ${reason}; run \`${GENERATE_COMMAND}\` and commit the result\n`);
    process.exitCode = 1;
  }
} else {
  writeFileSync(target, rendered);
  process.stdout.write(`wrote ${GENERATED_PATH}\n`);
}

function firstDifference(a: string, b: string): number {
  const left = a.split('\n');
  const right = b.split('\n');
  let line = 0;
  while (line < left.length && line < right.length && left[line] === right[line]) line++;
  return line + 1;
}
