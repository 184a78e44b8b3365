// CLI entry: `switchyard [--config FILE] [--port N]`. The only file that touches process.*
// (argv, env, stdio, signals). Prints exactly one line on stdout, `listening on URL`, when ready
// (then only audit records, with `audit.sink: stdout`); logs go to stderr. A bad config exits 1 with one line naming the file, key path and problem.
// SIGTERM/SIGINT drain and exit 0; SIGHUP or a change of the config file reloads it.
import { createHash } from 'node:crypto';
import { watch } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { checkConfig } from './check.js';
import { runPinsCommand } from './pinning/cli.js';
import { ConfigError, loadConfig } from './config/load.js';
import type { Config } from './config/schema.js';
import { createGateway, ListenError } from './gateway.js';
import { createLogger } from './util/log.js';
import { Redactor } from './util/redact.js';
import { CredentialKeyError } from './credentials/store.js';

const USAGE = `usage: switchyard [--config FILE] [--port N]   (default config: the bundled gateway.yaml)
       switchyard check FILE [--connect]        (validate a config; --connect lists what each team sees)
       switchyard pins list|diff|approve|reject --config FILE ...   (pinned tool definitions; docs/pinning.md)`;
const DEFAULT_CONFIG = resolve(dirname(fileURLToPath(import.meta.url)), '..', 'gateway.yaml');

function fail(message: string, code: number): never {
  process.stderr.write(`switchyard: ${message}\n`);
  process.exit(code);
}

/** The config, or exit 1 with one line naming the file, the key path and the problem. */
async function loadOrExit(file: string): Promise<Config> {
  try {
    return await loadConfig(file, process.env);
  } catch (err) {
    if (err instanceof ConfigError) fail(`invalid config ${err.message}`, 1);
    throw err;
  }
}

async function check(args: string[]): Promise<void> {
  let parsed;
  try {
    parsed = parseArgs({ args, options: { connect: { type: 'boolean' } }, allowPositionals: true, strict: true });
  } catch (err) {
    fail(`${(err as Error).message}\n${USAGE}`, 2);
  }
  const file = resolve(parsed.positionals[0] ?? DEFAULT_CONFIG);
  const config = await loadOrExit(file);
  const code = await checkConfig(file, config, {
    connect: parsed.values.connect === true,
    baseEnv: { PATH: process.env.PATH, HOME: process.env.HOME },
    print: (line) => process.stdout.write(`${line}\n`),
  });
  process.exit(code);
}

async function pins(args: string[]): Promise<void> {
  const code = await runPinsCommand(args, {
    load: loadOrExit,
    print: (line) => process.stdout.write(`${line}\n`),
    warn: (line) => process.stderr.write(`${line}\n`),
    user: process.env.USER,
  });
  process.exit(code);
}

async function main(): Promise<void> {
  if (process.argv[2] === 'check') return check(process.argv.slice(3));
  if (process.argv[2] === 'pins') return pins(process.argv.slice(3));
  let values: { config?: string; port?: string; help?: boolean };
  try {
    ({ values } = parseArgs({
      args: process.argv.slice(2),
      options: { config: { type: 'string', short: 'c' }, port: { type: 'string', short: 'p' }, help: { type: 'boolean', short: 'h' } },
      strict: true,
    }));
  } catch (err) {
    fail(`${(err as Error).message}\n${USAGE}`, 2);
  }
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  let port: number | undefined;
  if (values.port !== undefined) {
    port = Number(values.port);
    if (!/^\d+$/.test(values.port) || port > 65_535) fail(`--port must be an integer from 0 to 65535, got ${values.port}\n${USAGE}`, 2);
  }

  const file = resolve(values.config ?? DEFAULT_CONFIG);
  // What the running config was read from (read first: a change while loading is seen below).
  const loadedText = await readFile(file, 'utf8').catch(() => '');
  const config = await loadOrExit(file);

  const redactor = new Redactor();
  const logger = createLogger({ level: config.logging.level, write: (line) => process.stderr.write(line), redact: (line) => redactor.redact(line) });
  process.on('unhandledRejection', (err) => logger.error('unhandled rejection', { err }));
  process.on('uncaughtException', (err) => logger.error('uncaught exception', { err }));

  // Tracing and the audit OTLP sink read the standard OTEL_* variables; audit's stdout sink writes here.
  const otelEnv = Object.fromEntries(Object.entries(process.env).filter(([key]) => key.startsWith('OTEL_')));
  const gateway = createGateway(config, { logger, redactor, configDir: dirname(file), baseEnv: { PATH: process.env.PATH, HOME: process.env.HOME }, otelEnv, stdout: process.stdout });
  let url: URL;
  try {
    url = await gateway.start(port);
  } catch (err) {
    await gateway.close();
    if (err instanceof CredentialKeyError || err instanceof ListenError) fail(err.message, 1);
    fail(`cannot start: ${(err as Error).message}`, 1);
  }
  process.stdout.write(`listening on ${url.href}\n`);

  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    logger.info('stopping', { signal });
    gateway.drain().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error('error while stopping', { err });
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));

  // Hot reload. The directory is watched, not the file: editors and Kubernetes ConfigMaps
  // replace files rather than write them; a reload happens only when the content changed.
  let applied = digest(loadedText);
  let timer: NodeJS.Timeout | undefined;
  const reload = async (why: string): Promise<void> => {
    const text = await readFile(file, 'utf8').catch(() => undefined);
    if (text === undefined || (why === 'file change' && digest(text) === applied)) return;
    try {
      const next = await loadConfig(file, process.env);
      applied = digest(text);
      const needRestart = gateway.reload(next);
      if (needRestart.length > 0) logger.warn('config keys that only apply after a restart changed', { keys: needRestart });
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      gateway.reloadRejected();
      logger.error(`config reload rejected, keeping the running config: ${err.message}`, { trigger: why });
    }
  };
  const schedule = (why: string): void => {
    clearTimeout(timer);
    timer = setTimeout(() => void reload(why).catch((err: unknown) => logger.error('config reload failed', { err })), 200);
  };
  process.on('SIGHUP', () => schedule('SIGHUP'));
  try {
    watch(dirname(file), { persistent: false }, (_event, name) => {
      if (name === null || name === basename(file) || name.startsWith('..')) schedule('file change');
    });
  } catch (err) {
    logger.warn('cannot watch the config file; reload with SIGHUP', { err });
  }
  // A change made while the gateway started, before the watch began, is not missed.
  schedule('file change');
}

function digest(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

await main();
