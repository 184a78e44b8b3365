// An in-process gateway for tests, built from a config object the way main.ts builds one from
// gateway.yaml, listening on a free port. Logs are captured so tests can read them.
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { ClientCapabilities } from '@modelcontextprotocol/sdk/types.js';
import { configFromObject } from '../../src/config/load.js';
import type { Config } from '../../src/config/schema.js';
import { createGateway, type Gateway } from '../../src/gateway.js';
import { createLogger, type LogLevel } from '../../src/util/log.js';
import { Redactor } from '../../src/util/redact.js';
import { EVERYTHING_BIN, FIXTURES, MEMORY_BIN, NODE, ROOT } from './paths.js';

export interface TestGateway {
  url: URL;
  gateway: Gateway;
  config: Config;
  /** Every log line written so far. */
  logs: string[];
  close(): Promise<void>;
}

export interface StartOptions {
  baseEnv?: Record<string, string | undefined>;
  logLevel?: LogLevel;
  env?: Record<string, string | undefined>;
}

export async function startGateway(raw: Record<string, unknown>, options: StartOptions = {}): Promise<TestGateway> {
  // Probing off unless a test asks: probes spawn extra upstream sessions at unpredictable times.
  // Port 0 unless the test names one, whatever else of `listen` it sets (else 8080, shared by every file).
  const listen = { port: 0, ...(raw.listen as Record<string, unknown> | undefined) };
  const config = configFromObject({ health: { probeInterval: 0 }, ...raw, listen }, { file: join(ROOT, 'gateway.test.yaml'), env: options.env ?? {} });
  const logs: string[] = [];
  // As main.ts does: the redactor learns the config's secrets from the gateway.
  const redactor = new Redactor();
  const logger = createLogger({ level: options.logLevel ?? 'debug', write: (line) => logs.push(line), redact: (line) => redactor.redact(line) });
  const gateway = createGateway(config, { logger, redactor, baseEnv: options.baseEnv ?? { PATH: process.env.PATH, HOME: process.env.HOME } });
  const url = await gateway.start();
  return { url, gateway, config, logs, close: () => gateway.close() };
}

/** Upstream config entries for the real servers and fixtures. */
export const upstream = {
  everything: () => ({ stdio: { command: NODE, args: [EVERYTHING_BIN, 'stdio'] } }),
  memory: () => ({ stdio: { command: NODE, args: [MEMORY_BIN], env: { MEMORY_FILE_PATH: join(tmpdir(), `switchyard-memory-${process.pid}.jsonl`) } } }),
  paged: (env: Record<string, string> = {}) => ({ stdio: { command: NODE, args: [join(FIXTURES, 'paged-server.mjs')], env } }),
  rogue: (env: Record<string, string> = {}) => ({ stdio: { command: NODE, args: [join(FIXTURES, 'rogue-server.mjs')], env } }),
  http: (url: string, transport?: 'sse') => ({ http: transport ? { url, transport } : { url } }),
};

/**
 * The official SDK client over Streamable HTTP. `prepare` registers handlers before
 * connecting; `headers` go on every HTTP request it makes.
 */
export async function connectClient(url: URL, capabilities: ClientCapabilities = {}, prepare?: (client: Client) => void, headers?: Record<string, string>): Promise<Client> {
  const client = new Client({ name: 'switchyard-test', version: '1.0.0' }, { capabilities });
  prepare?.(client);
  const transport = new StreamableHTTPClientTransport(url, {
    reconnectionOptions: { initialReconnectionDelay: 50, maxReconnectionDelay: 500, reconnectionDelayGrowFactor: 1.5, maxRetries: 20 },
    ...(headers ? { requestInit: { headers } } : {}),
  });
  await client.connect(transport);
  return client;
}

/** The rogue fixture's journal: every message it received. */
export async function journal(client: Client, tool: string): Promise<{ id?: string | number; method?: string; params?: Record<string, unknown> }[]> {
  return JSON.parse(textOf(await client.callTool({ name: tool, arguments: {} }))) as { id?: string | number; method?: string; params?: Record<string, unknown> }[];
}

/** Resolves when `predicate` holds, checking after each event `subscribe` reports; rejects after `timeoutMs`. */
export function until(predicate: () => boolean, subscribe: (wake: () => void) => void, timeoutMs = 10_000, what = 'condition'): Promise<void> {
  if (predicate()) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)), timeoutMs);
    subscribe(() => {
      if (!predicate()) return;
      clearTimeout(timer);
      resolve();
    });
  });
}

/** The text of a tool result's first content block. */
export function textOf(result: unknown): string {
  const content = (result as { content?: { type: string; text?: string }[] }).content;
  const first = content?.[0];
  if (first?.type !== 'text' || typeof first.text !== 'string') throw new Error(`expected text content, got ${JSON.stringify(result)}`);
  return first.text;
}

/** Ends the client's session with an HTTP DELETE, as a host does when the user leaves. */
/** Ends (DELETE) and closes every client in `clients`, emptying it, whatever fails. */
export async function endSessions(clients: Client[]): Promise<void> {
  await Promise.allSettled(
    clients.splice(0).map(async (client) => {
      await terminateSession(client).catch(() => {});
      await client.close();
    }),
  );
}

export async function terminateSession(client: Client): Promise<void> {
  await (client.transport as unknown as StreamableHTTPClientTransport).terminateSession();
}

export interface NotificationLog {
  all: { method: string; params?: Record<string, unknown> }[];
  /** Resolves once a notification matching `predicate` has arrived (bounded). */
  waitFor(predicate: (n: { method: string; params?: Record<string, unknown> }) => boolean, what?: string, timeoutMs?: number): Promise<{ method: string; params?: Record<string, unknown> }>;
}

/** Records every notification the SDK client gets that no handler claimed (install before connect). */
export function recordNotifications(client: Client): NotificationLog {
  const all: NotificationLog['all'] = [];
  const waiters = new Set<() => void>();
  client.fallbackNotificationHandler = async (n) => {
    all.push(n.params === undefined ? { method: n.method } : { method: n.method, params: n.params as Record<string, unknown> });
    for (const wake of waiters) wake();
  };
  return {
    all,
    async waitFor(predicate, what = 'notification', timeoutMs = 10_000) {
      await until(() => all.some(predicate), (wake) => waiters.add(wake), timeoutMs, what);
      return all.find(predicate)!;
    },
  };
}
