// Regression for "one client cannot trip a circuit for everyone": a hostile W3C trace context
// in `_meta` used to reach undici as a header value with CR/LF, undici refused it locally, and
// the HTTP transport counted that as an upstream failure, opening the circuit shared by every
// session. Now trace context is validated before it is forwarded, and a request the gateway
// could not send never counts against the upstream.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CircuitBreaker } from '../../src/transport/circuit.js';
import { StreamableHttpTransport } from '../../src/transport/streamable-http.js';
import { TransportError } from '../../src/transport/types.js';
import { createLogger } from '../../src/util/log.js';
import { startFlakyHttp, type FlakyHttp } from '../helpers/flaky-http.js';
import { connectClient, startGateway, textOf, upstream, type TestGateway } from '../helpers/gateway.js';
import { startEverythingHttp, type EverythingHttp } from '../helpers/processes.js';

const PARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
/** What the issue reported, and worse: header injection, control characters, a bad traceparent. */
const HOSTILE_META: Record<string, unknown>[] = [
  { traceparent: PARENT, tracestate: 'k=v\r\nx: y' },
  { traceparent: PARENT, tracestate: 'k=v\nx-injected: 1' },
  { traceparent: PARENT, tracestate: 'k=v\u0000' },
  { traceparent: PARENT, tracestate: 'k=v,'.repeat(200) },
  { traceparent: `${PARENT}\r\nx: y`, tracestate: 'k=v' },
  { traceparent: 'garbage\r\nx: y', tracestate: 'k=v\r\nx: y' },
];

type Health = Record<string, { state: string; circuit?: string; pending: number }>;

async function health(gw: TestGateway): Promise<Health> {
  return ((await (await fetch(new URL('/healthz', gw.url))).json()) as { upstreams: Health }).upstreams;
}

function echo(client: Client, name: string, message: string, meta?: Record<string, unknown>): Promise<string> {
  return client.callTool({ name, arguments: { message }, ...(meta ? { _meta: meta } : {}) }).then(textOf);
}

describe('hostile trace context from one client', () => {
  let everything: EverythingHttp;
  let flaky: FlakyHttp;
  let gw: TestGateway;
  const clients: Client[] = [];

  beforeAll(async () => {
    [everything, flaky] = await Promise.all([startEverythingHttp(), startFlakyHttp()]);
    gw = await startGateway({
      upstreams: {
        // openFor far longer than the test: an opened circuit cannot close again before it is read.
        everything: { ...upstream.http(everything.url), circuit: { failures: 2, openFor: 60_000 } },
        flaky: { ...upstream.http(flaky.url), circuit: { failures: 2, openFor: 60_000 } },
      },
    });
  });

  afterAll(async () => {
    try {
      await Promise.allSettled(clients.map((c) => c.close()));
      await gw?.close();
    } finally {
      await Promise.allSettled([everything?.close(), flaky?.close()]);
    }
  });

  async function open(): Promise<Client> {
    const client = await connectClient(gw.url);
    clients.push(client);
    return client;
  }

  it('answers the hostile calls, and leaves the shared circuit closed for another session', async () => {
    const hostile = await open();
    for (const meta of HOSTILE_META) {
      // Invalid trace context is dropped, never an error for the client.
      expect(await echo(hostile, 'everything__echo', 'x', meta)).toBe('Echo: x');
      expect(await echo(hostile, 'flaky__echo', 'x', meta)).toBe('echo: x');
    }
    const upstreams = await health(gw);
    expect(upstreams.everything?.circuit).toBe('closed');
    expect(upstreams.flaky?.circuit).toBe('closed');

    const other = await open();
    expect(await echo(other, 'everything__echo', 'still here')).toBe('Echo: still here');
    expect((await health(gw)).everything?.circuit).toBe('closed');
  });

  it('forwards no invalid trace context, in headers or in _meta', async () => {
    const client = await open();
    for (const meta of HOSTILE_META) await echo(client, 'flaky__echo', 'y', meta);
    const seen = (await flaky.stats()).toolCalls.slice(-HOSTILE_META.length);
    expect(seen).toHaveLength(HOSTILE_META.length);
    for (const call of seen) {
      for (const value of [call.traceparent, call.tracestate, call.meta?.traceparent, call.meta?.tracestate]) {
        if (value !== null && value !== undefined) expect(String(value)).not.toMatch(/[\x00-\x1f\x7f]/);
      }
      // The hostile tracestates are all invalid: none is forwarded.
      expect(call.tracestate).toBeNull();
      expect(call.meta?.tracestate).toBeUndefined();
    }
    // A valid traceparent still continues the trace (a child span of the caller's).
    expect(seen[0]!.traceparent).toMatch(/^00-4bf92f3577b34da6a3ce929d0e0e4736-[0-9a-f]{16}-01$/);
  });

  it('still forwards a valid tracestate', async () => {
    const client = await open();
    await echo(client, 'flaky__echo', 'z', { traceparent: PARENT, tracestate: 'congo=t61rcWkgMzE, tenant@vendor=a b' });
    const last = (await flaky.stats()).toolCalls.at(-1)!;
    expect(last.tracestate).toBe('congo=t61rcWkgMzE,tenant@vendor=a b');
    expect(last.meta?.tracestate).toBe('congo=t61rcWkgMzE,tenant@vendor=a b');
  });
});

describe('a request over the upstream message limit, through the gateway', () => {
  let flaky: FlakyHttp;
  let gw: TestGateway;

  beforeAll(async () => {
    flaky = await startFlakyHttp();
    gw = await startGateway({ upstreams: { flaky: { ...upstream.http(flaky.url), maxMessageBytes: 4096, circuit: { failures: 1, openFor: 60_000 } } } });
  });

  afterAll(async () => {
    try {
      await gw?.close();
    } finally {
      await flaky?.close();
    }
  });

  it('gets invalid params naming the limit, and opens no circuit', async () => {
    const client = await connectClient(gw.url);
    try {
      const err = await echo(client, 'flaky__echo', 'x'.repeat(8192)).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(McpError);
      expect((err as McpError).code).toBe(ErrorCode.InvalidParams);
      expect((err as McpError).message).toContain('4096-byte message limit');
      expect((await health(gw)).flaky?.circuit).toBe('closed');
      expect(await echo(client, 'flaky__echo', 'small')).toBe('echo: small');
    } finally {
      await client.close();
    }
  });
});

describe('a request the gateway cannot send', () => {
  let everything: EverythingHttp;
  const dispatcher = new Agent();
  const logger = createLogger({ level: 'error', write: () => {} });

  beforeAll(async () => {
    everything = await startEverythingHttp();
  });

  afterAll(async () => {
    await dispatcher.close();
    await everything?.close();
  });

  const ping = (id: number) => ({ jsonrpc: '2.0' as const, id, method: 'ping' });

  it('is not an upstream failure when undici refuses a header locally', async () => {
    const breaker = new CircuitBreaker({ failures: 1, openMs: 60_000 });
    // A header value no HTTP/1.1 request may carry: undici throws InvalidArgumentError before any byte leaves.
    const transport = new StreamableHttpTransport({ url: everything.url, headers: { 'x-bad': 'a\r\nb' }, dispatcher, logger, breaker });
    try {
      for (let id = 1; id <= 3; id++) {
        const err = await transport.send(ping(id)).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(err).toBeInstanceOf(TransportError);
        expect((err as TransportError).code).toBe('unsendable');
        // Nothing internal in the message a client may see.
        expect((err as TransportError).message).not.toMatch(/x-bad|invalid/i);
      }
      expect(breaker.state).toBe('closed');
    } finally {
      await transport.close();
    }
  });

  it('is not an upstream failure when the body exceeds the message limit', async () => {
    const breaker = new CircuitBreaker({ failures: 1, openMs: 60_000 });
    const transport = new StreamableHttpTransport({ url: everything.url, headers: {}, dispatcher, logger, breaker, maxMessageBytes: 1024 });
    try {
      const big = { jsonrpc: '2.0' as const, id: 1, method: 'tools/call', params: { name: 'echo', arguments: { message: 'x'.repeat(4096) } } };
      const err = await transport.send(big).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(TransportError);
      expect((err as TransportError).code).toBe('request_too_large');
      expect(breaker.state).toBe('closed');
    } finally {
      await transport.close();
    }
  });

  it('releases a half-open probe it could not send, so the next request may probe', async () => {
    let now = 0;
    const breaker = new CircuitBreaker({ failures: 1, openMs: 10, now: () => now });
    breaker.failure();
    now = 100; // past openFor: the next request is the probe
    const transport = new StreamableHttpTransport({ url: everything.url, headers: { 'x-bad': 'a\r\nb' }, dispatcher, logger, breaker });
    try {
      await expect(transport.send(ping(1))).rejects.toBeInstanceOf(TransportError);
      expect(breaker.state).toBe('half-open');
      // The probe was released, not left taken (which would refuse every request) nor failed.
      expect(breaker.allow()).toBe(true);
    } finally {
      await transport.close();
    }
  });
});
