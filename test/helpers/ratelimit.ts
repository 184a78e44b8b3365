// What the rate-limit tests (test/e2e/ratelimit-*.test.ts) share: API keys and codes, raw
// sessions and the requests they send, what the rogue fixture recorded, the gateway's health,
// and the rig of a file: a temp directory and everything a test starts (gateways, clients,
// redis-servers), stopped after it.
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { Redis } from 'ioredis';
import { afterEach, expect } from 'vitest';
import { hashApiKey } from '../../src/auth/api-keys.js';
import { poll } from './cli.js';
import { connectClient, startGateway, textOf, type TestGateway } from './gateway.js';
import { stopChild, waitForLine } from './processes.js';
import { initializeRaw, messagesOf, postRaw, readReply, type RawSession } from './raw-http.js';
import { useScratch } from './scratch.js';

/** The last revision with JSON-RPC batches. */
export const BATCH_VERSION = '2025-03-26';
/** The gateway's JSON-RPC error code for a rate-limited request. */
export const RATE_LIMITED = -32003;
export const RETRY_AFTER_META = 'switchyard/retryAfterMs';
/** Bounds every single HTTP exchange; the test timeout bounds the whole test. */
export const REQUEST_TIMEOUT_MS = 10_000;
export const FALLBACK_LOG = 'Redis unreachable; rate limits use local buckets until it is back';
export const RECOVERED_LOG = 'Redis reachable again; rate limits are shared again';

export const KEY_ALICE = 'sk-ratelimit-alice-4f1c9a2e7b3d';
export const KEY_BOB = 'sk-ratelimit-bob-8e2d6c1a5f9b';
export const apiKeys = [
  { id: 'alice', hash: hashApiKey(KEY_ALICE) },
  { id: 'bob', hash: hashApiKey(KEY_BOB) },
];

export interface RateLimitRig {
  /** Everything the current test started, stopped after it (newest first) whatever happened. */
  cleanup: (() => Promise<unknown>)[];
  /** The file's temp directory. */
  scratch(): string;
  /** A fresh file the rogue fixture records every message it receives into (RECORD_FILE). */
  recordFile(): string;
  start(config: Record<string, unknown>): Promise<TestGateway>;
  connect(gw: TestGateway): Promise<Client>;
  /** A redis-server of this test's own on `port` (stopping it is part of some tests). */
  redisOn(port: number): Promise<{ url: string; stop: () => Promise<void> }>;
  /** A Redis client for the test to look at keys or disturb the server. */
  redisClient(url: string): Redis;
}

/** Registers the rig's hooks (call it at a file's top level) and returns its parts. */
export function useRateLimitRig(): RateLimitRig {
  const scratch = useScratch('switchyard-ratelimit-');
  const cleanup: (() => Promise<unknown>)[] = [];
  let files = 0;

  afterEach(async () => {
    // Newest first: clients before gateways, gateways before the Redis they use.
    for (const stop of cleanup.splice(0).reverse()) await stop().catch(() => undefined);
  });

  return {
    cleanup,
    scratch,
    recordFile: () => join(scratch(), `record-${++files}.jsonl`),
    async start(config) {
      const gw = await startGateway(config);
      cleanup.push(() => gw.close());
      return gw;
    },
    async connect(gw) {
      const client = await connectClient(gw.url);
      cleanup.push(() => client.close());
      return client;
    },
    async redisOn(port) {
      const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'pipe' });
      child.on('error', () => {});
      const stop = (): Promise<void> => stopChild(child);
      cleanup.push(stop);
      await waitForLine(child, /Ready to accept connections/, 10_000);
      return { url: `redis://127.0.0.1:${port}`, stop };
    },
    redisClient(url) {
      const redis = new Redis(url, { maxRetriesPerRequest: 1, lazyConnect: false });
      redis.on('error', () => {});
      cleanup.push(async () => redis.disconnect());
      return redis;
    },
  };
}

export interface RpcMessage {
  jsonrpc: '2.0';
  id?: string | number | null;
  method?: string;
  params?: Record<string, unknown>;
  result?: Record<string, unknown>;
  error?: { code: number; message: string };
}

export const rpc = (id: string | number, method: string, params: Record<string, unknown> = {}): RpcMessage => ({ jsonrpc: '2.0', id, method, params });
/** A counted request that reaches the rogue upstream, told apart in its journal by `n`. */
export const callPid = (id: string | number, n: number): RpcMessage => rpc(id, 'tools/call', { name: 'rogue__pid', arguments: { n } });
export const notification = (method: string): RpcMessage => ({ jsonrpc: '2.0', method, params: {} });

/** POSTs with the headers a conforming client sends and `headers`; the body unread. */
export function post(url: URL, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return postRaw(url, body, { headers, timeoutMs: REQUEST_TIMEOUT_MS });
}

/** A session opened by hand (initialize, then notifications/initialized; 2025-11-25 unless given), with `headers` on every request of it. */
export function openSession(url: URL, options: { version?: string; headers?: Record<string, string> } = {}): Promise<RawSession> {
  return initializeRaw(url, { protocolVersion: options.version, headers: options.headers });
}

export function send(session: RawSession, body: unknown): Promise<Response> {
  return post(session.url, body, session.headers);
}

/**
 * Sends a request that must be answered 200; its response (JSON, or SSE for a call that
 * outlasted STREAM_AFTER_MS, as a session's first call does while it opens its upstream session).
 */
export async function ok(session: RawSession, body: RpcMessage): Promise<RpcMessage> {
  const reply = await readReply(await send(session, body));
  expect(reply.status, `${body.method} ${String(body.id)}`).toBe(200);
  const answer = messagesOf<RpcMessage>(reply).find((message) => message.id === body.id);
  expect(answer, reply.text).toBeDefined();
  return answer!;
}

/** Sends a request that the per-client limit must refuse; the 429 response, body unread. */
export async function refused(session: RawSession, body: unknown): Promise<Response> {
  const res = await send(session, body);
  expect(res.status).toBe(429);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  return res;
}

/** The `n` of every rogue__pid call the upstream received, in order (all its processes). */
export async function pidCallsSeen(file: string): Promise<number[]> {
  return (await recorded(file)).filter((m) => m.method === 'tools/call' && m.params?.name === 'pid').map((m) => (m.params?.arguments as { n: number }).n);
}

export async function recorded(file: string): Promise<RpcMessage[]> {
  const text = await readFile(file, 'utf8').catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return '';
    throw err;
  });
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as RpcMessage);
}

export interface Health {
  rateLimits: { store: string; state?: string; since?: string };
  upstreams: Record<string, { pending: number }>;
}

export async function health(url: URL): Promise<Health> {
  const res = await fetch(new URL('/healthz', url), { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
  expect(res.status).toBe(200);
  return (await res.json()) as Health;
}

export function storeState(url: URL, state: 'connected' | 'fallback', timeoutMs = 10_000): Promise<true> {
  return poll(async () => ((await health(url)).rateLimits.state === state ? true : undefined), `the rate-limit store to be ${state}`, timeoutMs, 25);
}

/** Resolves once `upstream` has exactly `count` requests in flight. */
export function inFlight(url: URL, upstreamName: string, count: number): Promise<true> {
  return poll(async () => ((await health(url)).upstreams[upstreamName]?.pending === count ? true : undefined), `${count} calls in flight to ${upstreamName}`, 10_000, 25);
}

/** Log lines of the in-process gateway with this exact message. */
export function logged(gw: TestGateway, message: string): Record<string, unknown>[] {
  return gw.logs.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line.msg === message);
}

/** The isError result of a tools/call refused by a limit: its text and retry hint. */
export function limitResult(result: unknown): { text: string; retryAfterMs: unknown } {
  const r = result as { isError?: boolean; _meta?: Record<string, unknown> };
  expect(r.isError, JSON.stringify(result)).toBe(true);
  return { text: textOf(result), retryAfterMs: r._meta?.[RETRY_AFTER_META] };
}

