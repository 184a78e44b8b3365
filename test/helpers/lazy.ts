// What the lazy-session tests (test/e2e/lazy-*.test.ts) share: the lazy-probe fixture and the
// children it started, the gateway's log lines as they are written, SDK clients, and the rig of
// a file: each test's gateways and clients closed after it, and every process it started gone.
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateMessageRequestSchema, type ClientCapabilities } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, beforeAll } from 'vitest';
import { descendantsOf, gone } from './children.js';
import { connectClient, startGateway, terminateSession, textOf, type TestGateway } from './gateway.js';
import { FIXTURES, NODE } from './paths.js';
import { useScratch } from './scratch.js';

/** Bounds every single wait for something that should happen soon. */
export const WAIT_MS = 10_000;
const PROBE = join(FIXTURES, 'lazy-probe-server.mjs');

export interface Probe {
  /** An argument no other test's children carry, so their command lines name it. */
  tag: string;
  /** The file each of its children appends its pid to when it starts. */
  startLog: string;
}

/** The lazy-probe fixture as an upstream entry; `env` is added to its own. */
export const probeUpstream = (probe: Probe, env: Record<string, string> = {}) => ({ stdio: { command: NODE, args: [PROBE, probe.tag], env: { START_LOG: probe.startLog, ...env } } });

/** The pids of every child of this probe started so far, in order. */
export async function starts(probe: Probe): Promise<number[]> {
  const text = await readFile(probe.startLog, 'utf8').catch(() => '');
  return text.split('\n').filter((line) => line !== '').map(Number);
}

export interface LogLine {
  level: string;
  msg: string;
  upstream?: string;
  session?: string;
}

export const logLines = (gw: TestGateway, predicate: (line: LogLine) => boolean): LogLine[] => gw.logs.map((line) => JSON.parse(line) as LogLine).filter(predicate);

export const sessionOf = (client: Client): string => (client.transport as StreamableHTTPClientTransport).sessionId!;

/** The log line's session field names this client's session (the whole id or its start). */
export const aboutSession = (client: Client) => (line: LogLine): boolean => typeof line.session === 'string' && line.session !== '' && sessionOf(client).startsWith(line.session);

export const reaped = (name: string, client?: Client) => (line: LogLine): boolean =>
  line.msg === 'idle upstream session closed' && line.upstream === name && (client === undefined || aboutSession(client)(line));

export async function call(client: Client, name: string, args: Record<string, unknown> = {}): Promise<string> {
  return textOf(await client.callTool({ name, arguments: args }));
}

export const pidOf = async (client: Client, tool = 'probe__pid'): Promise<number> => Number(await call(client, tool));

export const toolNames = async (client: Client): Promise<string[]> => (await client.listTools()).tools.map((tool) => tool.name);

export interface LazyRig {
  /** A probe of this test's own: its tag and its start log in the file's temp directory. */
  newProbe(name: string): Probe;
  /** A gateway over `upstreams`, closed after the test, whose log lines can be waited for. */
  start(upstreams: Record<string, unknown>): Promise<TestGateway>;
  /** Resolves with the `nth` (1-based) log line matching `predicate`, once it is written; bounded. */
  logLine(gw: TestGateway, predicate: (line: LogLine) => boolean, what: string, nth?: number): Promise<LogLine>;
  /** An SDK client, its session ended and closed after the test. */
  open(gw: TestGateway, capabilities?: ClientCapabilities, prepare?: (client: Client) => void): Promise<Client>;
  /** A client that answers sampling with `reply` and records the prompts it was asked. */
  samplingClient(gw: TestGateway, reply: string): Promise<{ client: Client; prompts: string[] }>;
}

/** Registers the rig's hooks (call it at a file's top level) and returns its parts. */
export function useLazyRig(): LazyRig {
  const dir = useScratch('switchyard-lazy-');
  let baseline = new Set<number>();
  const gateways: TestGateway[] = [];
  const clients: Client[] = [];
  const watchers = new WeakMap<TestGateway, Set<(line: LogLine) => void>>();

  beforeAll(async () => {
    baseline = new Set(await descendantsOf());
  });

  // Each test's gateway and clients go, and every process it started with them.
  afterEach(async () => {
    await Promise.allSettled(clients.splice(0).map(async (client) => {
      await terminateSession(client).catch(() => {});
      await client.close();
    }));
    await Promise.allSettled(gateways.splice(0).map((gw) => gw.close()));
    await gone((await descendantsOf()).filter((pid) => !baseline.has(pid)), 'the processes this test started');
  });

  const open = async (gw: TestGateway, capabilities: ClientCapabilities = {}, prepare?: (client: Client) => void): Promise<Client> => {
    const client = await connectClient(gw.url, capabilities, prepare);
    clients.push(client);
    return client;
  };

  return {
    newProbe(name) {
      const id = `${name}-${randomUUID().slice(0, 8)}`;
      return { tag: `--tag=${id}`, startLog: join(dir(), `${id}.starts`) };
    },
    async start(upstreams) {
      const gw = await startGateway({ upstreams });
      gateways.push(gw);
      // Every log line wakes the waiters: the logger writes through logs.push.
      const wakers = new Set<(line: LogLine) => void>();
      const push = gw.logs.push.bind(gw.logs);
      gw.logs.push = (...lines: string[]): number => {
        const length = push(...lines);
        for (const line of lines) for (const wake of [...wakers]) wake(JSON.parse(line) as LogLine);
        return length;
      };
      watchers.set(gw, wakers);
      return gw;
    },
    logLine(gw, predicate, what, nth = 1) {
      const already = logLines(gw, predicate);
      if (already.length >= nth) return Promise.resolve(already[nth - 1]!);
      let count = already.length;
      const wakers = watchers.get(gw)!;
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          wakers.delete(wake);
          reject(new Error(`timed out after ${WAIT_MS} ms waiting for the log line: ${what}`));
        }, WAIT_MS);
        function wake(line: LogLine): void {
          if (!predicate(line) || ++count < nth) return;
          clearTimeout(timer);
          wakers.delete(wake);
          resolve(line);
        }
        wakers.add(wake);
      });
    },
    open,
    async samplingClient(gw, reply) {
      const prompts: string[] = [];
      const client = await open(gw, { sampling: {} }, (c) =>
        c.setRequestHandler(CreateMessageRequestSchema, async (request) => {
          prompts.push(JSON.stringify(request.params.messages));
          return { model: 'test-model', role: 'assistant', content: { type: 'text', text: reply } };
        }),
      );
      return { client, prompts };
    },
  };
}
