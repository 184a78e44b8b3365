// `switchyard pins list|diff|approve|reject --config FILE`: an operator reads and decides pinned
// definitions in the store the gateways use (the config's credential store). Approvals are
// announced on the store's channel: gateways sharing a Redis store apply them at once.
import { dirname, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { Config } from '../config/schema.js';
import { credentialStoreOpener } from '../credentials/opener.js';
import { CredentialKeyError } from '../credentials/store.js';
import { silentLogger } from '../util/log.js';
import type { PinRow } from './approval.js';
import type { PinKind } from './definition.js';
import { PinOperations } from './setup.js';
import { PinStore } from './store.js';

export const PINS_USAGE = `usage: switchyard pins list --config FILE [--upstream NAME]
       switchyard pins diff --config FILE [UPSTREAM [NAME]]
       switchyard pins approve|reject --config FILE UPSTREAM (NAME... | --all) [--prompt] [--digest SHA] [--by WHO]`;

export interface PinsCommandIo {
  /** Loads and validates the config (exits on a bad one, as the gateway does). */
  load: (file: string) => Promise<Config>;
  print: (line: string) => void;
  warn: (line: string) => void;
  /** Who decides when --by is not given. */
  user: string | undefined;
}

/** Runs one pins command; the exit code (0 done, 1 not done, 2 usage). */
export async function runPinsCommand(args: readonly string[], io: PinsCommandIo): Promise<number> {
  const [command, ...rest] = args;
  let parsed;
  try {
    parsed = parseArgs({
      args: rest,
      options: { config: { type: 'string', short: 'c' }, upstream: { type: 'string' }, prompt: { type: 'boolean' }, digest: { type: 'string' }, by: { type: 'string' }, all: { type: 'boolean' } },
      allowPositionals: true,
      strict: true,
    });
  } catch (err) {
    io.warn(`switchyard: ${(err as Error).message}\n${PINS_USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (!['list', 'diff', 'approve', 'reject'].includes(command ?? '') || values.config === undefined) {
    io.warn(PINS_USAGE);
    return 2;
  }
  const deciding = command === 'approve' || command === 'reject';
  const upstream = positionals[0];
  if (deciding && values.all && positionals.length > 1) {
    io.warn(`switchyard: give either names or --all, not both\n${PINS_USAGE}`);
    return 2;
  }
  if (deciding && (upstream === undefined || (positionals.length < 2 && !values.all))) {
    io.warn(PINS_USAGE);
    return 2;
  }
  const file = resolve(values.config);
  const config = await io.load(file);
  // As a decision on a name of it says (PinOperations.decide), and before --all lists nothing of it.
  if (deciding && !Object.hasOwn(config.upstreams, upstream!)) {
    io.warn(`switchyard: no upstream is named ${upstream}`);
    return 1;
  }
  const opener = credentialStoreOpener(config, silentLogger, (path) => resolve(dirname(file), path));
  if (!opener || opener.where === 'memory') {
    io.warn(`switchyard: ${file} keeps pins in each gateway's memory (no \`credentials.store\` file or Redis): decide them at the gateway's /admin/pins`);
    return 1;
  }
  if (!opener.where.startsWith('redis') && command !== 'list' && command !== 'diff') {
    io.warn(`switchyard: note: ${opener.where} is a file one gateway holds; a gateway running on it writes it whole and would undo this. Decide at its /admin/pins while it runs.`);
  }
  const by = values.by ?? `cli:${io.user ?? 'unknown'}`;
  try {
    // A key that opens nothing stored, a store that cannot be reached: one line, as the gateway says it.
    const store = await opener.open().catch((err: unknown) => {
      io.warn(`switchyard: ${err instanceof CredentialKeyError ? err.message : `cannot open the credential store (${opener.where}): ${(err as Error).message}`}`);
      return undefined;
    });
    if (!store) return 1;
    const operations = new PinOperations(new PinStore(store), () => Object.keys(config.upstreams), (entry) => io.warn(JSON.stringify({ event: 'audit', ...entry })));
    switch (command) {
      case 'list':
        return printRows(await operations.list(values.upstream), io);
      case 'diff': {
        const diffs = await operations.diffs(positionals[0], positionals[1]);
        if (diffs.length === 0) io.print('nothing waits for approval');
        for (const diff of diffs) {
          const row = (await operations.list(diff.upstream)).find((r) => r.kind === diff.kind && r.name === diff.name)!;
          io.print(`${diff.upstream} ${singular(diff.kind)} ${diff.name}: ${describe(row)}`);
          io.print(`--- pinned ${row.pinnedDigest ?? '(none: first sight)'}`);
          io.print(`+++ waiting ${row.pendingDigest}`);
          for (const line of diff.lines) io.print(line);
        }
        return 0;
      }
      default: {
        const kind: PinKind = values.prompt ? 'prompts' : 'tools';
        const names = values.all ? (await operations.list(upstream)).filter((r) => r.kind === kind && r.state === 'pending').map((r) => r.name) : positionals.slice(1);
        let failed = 0;
        for (const name of names) {
          const outcome = await operations.decide(upstream!, { kind, name, ...(values.digest ? { digest: values.digest } : {}) }, command as 'approve' | 'reject', by);
          if (typeof outcome === 'string') {
            io.warn(`switchyard: ${outcome}`);
            failed++;
          } else io.print(`${command === 'approve' ? 'approved' : 'rejected'} ${upstream} ${singular(kind)} ${name} (by ${by})`);
        }
        if (names.length === 0) io.print(`nothing of ${upstream} waits for approval`);
        return failed > 0 ? 1 : 0;
      }
    }
  } finally {
    await opener.close();
  }
}

function singular(kind: PinKind): string {
  return kind === 'tools' ? 'tool' : 'prompt';
}

function describe(row: PinRow): string {
  const hidden = row.hidden ? `, hidden text ${row.hidden.join(' ')}` : '';
  if (row.state === 'pinned') return `pinned ${row.pinnedDigest} (by ${row.by})`;
  return `${row.state === 'rejected' ? 'rejected' : 'waits for approval'} (${row.drift}${hidden}) since ${row.since}`;
}

function printRows(rows: PinRow[], io: PinsCommandIo): number {
  if (rows.length === 0) io.print('nothing is pinned yet');
  for (const row of rows) io.print(`${row.upstream} ${singular(row.kind)} ${row.name}: ${describe(row)}`);
  return 0;
}
