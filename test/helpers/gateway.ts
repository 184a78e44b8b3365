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
  const config = configFromObject({ listen: { port: 0 }, ...raw }, { file: join(ROOT, 'gateway.test.yaml'), env: options.env ?? {} });
  const logs: string[] = [];
  const logger = createLogger({ level: options.logLevel ?? 'debug', write: (line) => logs.push(line) });
  const gateway = createGateway(config, { logger, baseEnv: options.baseEnv ?? { PATH: process.env.PATH, HOME: process.env.HOME } });
  const url = await gateway.start();
  return { url, gateway, config, logs, close: () => gateway.close() };
}

/** Upstream config entries for the real servers and fixtures. */
export const upstream = {
  everything: () => ({ stdio: { command: NODE, args: [EVERYTHING_BIN, 'stdio'] } }),
  memory: () => ({ stdio: { command: NODE, args: [MEMORY_BIN], env: { MEMORY_FILE_PATH: join(tmpdir(), `switchyard-memory-${process.pid}.jsonl`) } } }),
  paged: (env: Record<string, string> = {}) => ({ stdio: { command: NODE, args: [join(FIXTURES, 'paged-server.mjs')], env } }),
  http: (url: string, transport?: 'sse') => ({ http: transport ? { url, transport } : { url } }),
};

/** The official SDK client over Streamable HTTP. */
export async function connectClient(url: URL, capabilities: ClientCapabilities = {}, protocolVersion?: string): Promise<Client> {
  const client = new Client({ name: 'switchyard-test', version: '1.0.0' }, { capabilities });
  const transport = new StreamableHTTPClientTransport(url);
  if (protocolVersion) transport.setProtocolVersion(protocolVersion);
  await client.connect(transport);
  return client;
}

/** The text of a tool result's first content block. */
export function textOf(result: unknown): string {
  const content = (result as { content?: { type: string; text?: string }[] }).content;
  const first = content?.[0];
  if (first?.type !== 'text' || typeof first.text !== 'string') throw new Error(`expected text content, got ${JSON.stringify(result)}`);
  return first.text;
}

/** Ends the client's session with an HTTP DELETE, as a host does when the user leaves. */
export async function terminateSession(client: Client): Promise<void> {
  await (client.transport as unknown as StreamableHTTPClientTransport).terminateSession();
}
