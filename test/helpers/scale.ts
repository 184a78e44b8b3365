// What the scale tests (test/e2e/scale-*.test.ts) share: session keys, the check that every
// process a file started is gone at its end, raw HTTP exchanges on a session, and SDK clients
// with the gateway state they read.
import { randomBytes } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import { descendantsOf, gone as goneWithin } from './children.js';
import { connectClient, recordNotifications, terminateSession, textOf, type NotificationLog } from './gateway.js';
import { initializeRaw, messagesOf, postRpc, rawFetch } from './raw-http.js';

export const LATEST = '2025-11-25';
/** Bounds every single wait for something that should happen soon. */
export const WAIT_MS = 10_000;
/** What the gateway answers for a session id it does not know (or will not honour). */
export const UNKNOWN_SESSION = { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Session not found' } };

/** A session key as the config wants one: at least 32 characters of secret (48 here). */
export const sessionKey = (): string => randomBytes(36).toString('base64url');

// ---------------------------------------------------------------------------------------------
// Processes: every descendant of this worker seen during the file must be gone at its end.

/** Resolves once none of `pids` runs; bounded. */
export const gone = (pids: Iterable<number>, what: string): Promise<void> => goneWithin(pids, what, WAIT_MS);

/**
 * Registers hooks (call it at a file's top level) that learn every process the file starts,
 * after each test, and fail the file if one still runs once every describe block's own afterAll
 * is done. Returns the step that learns them, for a test or afterAll to run before a shutdown.
 */
export function trackProcesses(what: string): () => Promise<void> {
  /** Processes that were already there before this file started anything. */
  let baseline = new Set<number>();
  /** Every process this file started, learned after each test and before each shutdown. */
  const seen = new Set<number>();

  async function noteDescendants(): Promise<void> {
    for (const pid of await descendantsOf(process.pid)) if (!baseline.has(pid)) seen.add(pid);
  }

  beforeAll(async () => {
    baseline = new Set(await descendantsOf(process.pid));
  });

  afterEach(async () => {
    await noteDescendants();
  });

  // Runs after every describe block's own afterAll: by then nothing may be left.
  afterAll(async () => {
    await gone(seen, what);
  });

  return noteDescendants;
}

// ---------------------------------------------------------------------------------------------
// Raw HTTP.

export interface Message {
  jsonrpc?: string;
  id?: string | number | null;
  method?: string;
  params?: Record<string, unknown>;
  result?: Record<string, unknown>;
  error?: { code: number; message: string };
}

/** initialize and notifications/initialized over raw HTTP, `extra` on both; the session id. */
export async function openRaw(url: URL, extra: Record<string, string> = {}): Promise<string> {
  return (await initializeRaw(url, { protocolVersion: LATEST, clientInfo: { name: 'scale-test', version: '1' }, headers: extra, timeoutMs: 2 * WAIT_MS })).id;
}

export interface Exchange {
  status: number;
  messages: Message[];
}

/** One request on a session: the HTTP status and every message of the answer. */
export async function request(url: URL, session: string, id: number, method: string, params: Record<string, unknown> = {}, extra?: Record<string, string>): Promise<Exchange> {
  const reply = await postRpc(url, { jsonrpc: '2.0', id, method, params }, { session, protocolVersion: LATEST, headers: extra, timeoutMs: 2 * WAIT_MS });
  return { status: reply.status, messages: messagesOf<Message>(reply) };
}

/** The result of request `id` in an exchange that must have succeeded. */
export function resultOf(exchange: Exchange, id: number): Record<string, unknown> {
  expect(exchange.status).toBe(200);
  const answer = exchange.messages.find((m) => m.id === id);
  expect(answer?.error).toBeUndefined();
  expect(answer?.result).toBeDefined();
  return answer!.result!;
}

export function expectUnknown(exchange: Exchange, what: string): void {
  expect(exchange.status, what).toBe(404);
  expect(exchange.messages, what).toEqual([UNKNOWN_SESSION]);
}

export async function statusOf(url: URL, method: 'GET' | 'DELETE', session: string, extra: Record<string, string> = {}): Promise<number> {
  const defaults: Record<string, string> = method === 'GET' ? { accept: 'text/event-stream' } : {};
  const res = await rawFetch(url, { method, defaults, session, protocolVersion: LATEST, headers: extra, timeoutMs: WAIT_MS });
  await res.body?.cancel();
  return res.status;
}

// ---------------------------------------------------------------------------------------------
// SDK clients and gateway state.

export function sessionOf(client: Client): string {
  return (client.transport as StreamableHTTPClientTransport).sessionId!;
}

export async function pidOf(client: Client, tool = 'rogue__pid'): Promise<number> {
  return Number(textOf(await client.callTool({ name: tool, arguments: {} })));
}

export interface Health {
  sessions: number;
  upstreams: Record<string, { state: string; sessions: number; lastError?: string }>;
}

export async function health(url: URL): Promise<Health> {
  const res = await fetch(new URL('/healthz', url), { signal: AbortSignal.timeout(WAIT_MS) });
  expect(res.status).toBe(200);
  return (await res.json()) as Health;
}

export interface Recording {
  client: Client;
  log: NotificationLog;
}

export async function recording(url: URL): Promise<Recording> {
  let log!: NotificationLog;
  const client = await connectClient(url, {}, (c) => (log = recordNotifications(c)));
  return { client, log };
}

/** Ends SDK sessions the way a host does (DELETE, then close), ignoring ones already gone. */
export async function endAll(clients: Client[]): Promise<void> {
  await Promise.allSettled(clients.splice(0).map(async (client) => {
    await terminateSession(client).catch(() => {});
    await client.close();
  }));
}
