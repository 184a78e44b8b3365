// Regression for "a child that stops reading stdin cannot grow the gateway's memory": writes to
// a stdio child honour backpressure within a bound (bytes and messages), a send past it fails at
// once with a clear error while the child stays up, and a request given up on (cancelled, timed
// out) while its line still waits is never written. The child is a real process that stops
// reading after initialize (test/fixtures/no-read-stdin.mjs) and reads again on SIGUSR1.
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterEach, describe, expect, it } from 'vitest';
import { GatewayError } from '../../src/mcp/errors.js';
import { isResponse, type JsonRpcMessage, type JsonRpcRequest } from '../../src/mcp/jsonrpc.js';
import { StdioTransport, type StdioTransportOptions } from '../../src/transport/stdio.js';
import { TransportError } from '../../src/transport/types.js';
import { UpstreamClient } from '../../src/upstream/client.js';
import { Cancellation } from '../../src/util/cancel.js';
import { silentLogger } from '../../src/util/log.js';
import { until } from '../helpers/gateway.js';
import { FIXTURES, NODE } from '../helpers/paths.js';
import { alive } from '../helpers/processes.js';
import { SESSIONS_ONLY } from '../../src/upstream/stateless-protocol.js';

const FIXTURE = join(FIXTURES, 'no-read-stdin.mjs');
const MIB = 1024 * 1024;
/** The flood: this many tools/call of 1 MiB each, 300 MiB in all. */
const FLOOD = 300;
/**
 * Retained growth allowed over the flood. With the bound (16 MiB queued) it stays near 20 MiB;
 * without it every line is kept and joined into one write of FLOOD MiB (300 MiB retained).
 */
const GROWTH_BOUND = 100 * MIB;
const WAIT_MS = 30_000;

/** The collector, on demand: memory is measured after garbage from refused sends is gone. */
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

function retained(): number {
  gc();
  const usage = process.memoryUsage();
  return usage.heapUsed + usage.external;
}

/** One event-loop turn: the transport's scheduled flush (setImmediate) has run. */
function turn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** `promise`, or a failure naming `what` once WAIT_MS have passed. */
async function within<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${WAIT_MS} ms waiting for ${what}`)), WAIT_MS);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

function call(id: number, blob: string): JsonRpcRequest {
  return { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'big', arguments: { blob } } };
}

/** A transport to the fixture, collecting the ids of the responses it gets. */
class Child {
  readonly transport: StdioTransport;
  readonly answered = new Set<number>();
  /** What the child reported of the notifications/cancelled it read. */
  readonly cancellations: string[] = [];
  #wake: () => void = () => {};

  constructor(options: Partial<StdioTransportOptions> = {}) {
    // A wedged child ignores stdin closing: a short grace before SIGTERM keeps teardown quick.
    this.transport = new StdioTransport({ command: NODE, args: [FIXTURE], env: { PATH: process.env.PATH ?? '' }, cwd: '.', logger: silentLogger, stopGraceMs: 200, ...options });
    this.transport.onmessage = (message: JsonRpcMessage) => {
      if (isResponse(message) && typeof message.id === 'number') this.answered.add(message.id);
      if ('method' in message && message.method === 'notifications/message') this.cancellations.push(String(message.params?.data));
      this.#wake();
    };
  }

  readonly subscribe = (wake: () => void): void => {
    this.#wake = wake;
  };

  /** Starts the child and initializes it; it stops reading stdin once it has answered. */
  async start(): Promise<void> {
    await this.transport.start();
    void this.transport.send({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } });
    await this.answer(0);
  }

  answer(id: number): Promise<void> {
    return until(() => this.answered.has(id), this.subscribe, WAIT_MS, `the answer to ${id}`);
  }

  /** Makes the child read stdin again. */
  resume(): void {
    process.kill(this.transport.pid!, 'SIGUSR1');
  }
}

const children: Child[] = [];

function child(options?: Partial<StdioTransportOptions>): Child {
  const c = new Child(options);
  children.push(c);
  return c;
}

afterEach(async () => {
  await Promise.allSettled(children.splice(0).map((c) => c.transport.close()));
});

type Outcome = 'pending' | 'sent' | TransportError;

describe('writes to a stdio child that stops reading', () => {
  it(`keep memory bounded over a flood of ${FLOOD} x 1 MiB, refusing the excess at once`, async () => {
    const c = child();
    await c.start();
    const blob = 'x'.repeat(MIB);
    const before = retained();
    const outcomes: Outcome[] = Array.from({ length: FLOOD }, () => 'pending');
    const sends = Array.from({ length: FLOOD }, (_, i) =>
      c.transport.send(call(i + 1, blob)).then(
        () => {
          outcomes[i] = 'sent';
        },
        (err: unknown) => {
          outcomes[i] = err as TransportError;
        },
      ),
    );
    await turn();
    await turn();
    const growth = retained() - before;
    expect(growth, `retained ${Math.round(growth / MIB)} MiB`).toBeLessThan(GROWTH_BOUND);

    // Refused sends failed at once, with a clear error; the rest wait for the child.
    const refused = outcomes.filter((o): o is TransportError => o instanceof TransportError);
    const waiting = outcomes.filter((o) => o === 'pending').length;
    expect(refused.length + waiting).toBe(FLOOD);
    expect(waiting).toBeGreaterThan(0);
    expect(waiting).toBeLessThanOrEqual(17); // 16 MiB of 1 MiB lines, the one stdin holds included
    for (const err of refused) {
      expect(err.code).toBe('queue_full');
      expect(err.message).toMatch(/not reading its input.*try again later/);
    }
    // Nothing after the first refusal got in: the bound is a wall, not a sieve.
    const firstRefused = outcomes.findIndex((o) => o instanceof TransportError);
    expect(outcomes.slice(firstRefused).every((o) => o instanceof TransportError)).toBe(true);

    // The child is still up, and once it reads again it gets (and answers) what was accepted.
    expect(alive(c.transport.pid!)).toBe(true);
    c.resume();
    await within(Promise.all(sends), 'the queued sends to be written');
    await c.answer(firstRefused);
    for (let id = 1; id <= firstRefused; id++) expect(c.answered.has(id), `answer ${id}`).toBe(true);
    for (let id = firstRefused + 1; id <= FLOOD; id++) expect(c.answered.has(id), `refused ${id} answered`).toBe(false);
    // And it takes new requests.
    await c.transport.send(call(FLOOD + 1, 'small'));
    await c.answer(FLOOD + 1);
  });

  it('bounds the number of queued messages too', async () => {
    const c = child({ maxQueuedMessages: 5 });
    await c.start();
    const sends = Array.from({ length: 10 }, (_, i) =>
      c.transport.send(call(i + 1, 'small')).then(
        () => 'sent',
        (err: unknown) => (err instanceof TransportError ? err.code : String(err)),
      ),
    );
    const outcomes = await within(Promise.all(sends), 'the sends to settle');
    // Small lines fit the pipe: the five queued are written even though the child is not reading.
    expect(outcomes).toEqual([...Array(5).fill('sent'), ...Array(5).fill('queue_full')]);
  });

  it('never writes a line whose request was cancelled while it waited', async () => {
    const c = child();
    await c.start();
    const blob = 'x'.repeat(MIB);
    // Four 1 MiB lines: the first fills stdin's buffer (the child is not reading), three wait.
    const fillers = [1, 2, 3, 4].map((id) => c.transport.send(call(id, blob)));
    await turn();
    const cancellation = new Cancellation();
    const cancelled = c.transport.send(call(100, 'cancel me'), { cancel: cancellation }).then(
      () => 'sent',
      (err: unknown) => err,
    );
    const kept = c.transport.send(call(101, 'keep me'), { cancel: new Cancellation() });
    cancellation.abort();
    const outcome = await within(cancelled, 'the cancelled send to fail');
    expect(outcome).toBeInstanceOf(TransportError);
    expect((outcome as TransportError).code).toBe('closed');
    // The cancellation of a request the child never saw is not written either; another's is.
    const cancelledDropped = c.transport.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 100, reason: 'cancelled' } });
    const cancelledKept = c.transport.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 101, reason: 'cancelled' } });
    const last = c.transport.send(call(102, 'last'));

    c.resume();
    await within(Promise.all([...fillers, kept, cancelledDropped, cancelledKept, last]), 'the other sends to be written');
    // The child reads in order: had 100 or its cancellation been written, they would have
    // reached it before 102.
    await c.answer(102);
    expect([...c.answered].sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 101, 102]);
    expect(c.cancellations).toEqual(['cancelled 101']);
  });

  it('never writes a line given up on before its turn to be written, nor its cancellation, while the child reads', async () => {
    const c = child();
    await c.start();
    c.resume();
    // Not blocked: the line waits only for the next flush, with no abort listener of its own.
    const cancellation = new Cancellation();
    const given = c.transport.send(call(200, 'given up'), { cancel: cancellation }).then(
      () => 'sent',
      (err: unknown) => err,
    );
    cancellation.abort();
    const cancelNote = c.transport.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 200, reason: 'cancelled' } });
    const after = c.transport.send(call(201, 'after'));
    const outcome = await within(given, 'the given-up send to fail');
    expect(outcome).toBeInstanceOf(TransportError);
    expect((outcome as TransportError).code).toBe('closed');
    await within(Promise.all([cancelNote, after]), 'the other sends');
    await c.answer(201);
    expect([...c.answered].sort((a, b) => a - b)).toEqual([0, 201]);
    expect(c.cancellations).toEqual([]);
  });

  it('never writes a request that timed out while queued, and tells the caller', async () => {
    const c = child();
    const transport = c.transport;
    const client = new UpstreamClient('wedged', transport, { timeoutMs: 60_000, maxTotalTimeoutMs: 60_000, logger: silentLogger });
    const cancellations: string[] = [];
    client.onnotification = (message) => cancellations.push(String(message.params?.data));
    await client.connect({ protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } }, 10_000, SESSIONS_ONLY);
    const blob = 'x'.repeat(MIB);
    const fillers = [1, 2, 3, 4].map(() => client.request('tools/call', { name: 'big', arguments: { blob } }));
    await turn();
    const timedOut = await client.request('tools/call', { name: 'small', arguments: {} }, { timeoutMs: 200, maxTotalMs: 200 }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(timedOut).toBeInstanceOf(GatewayError);
    expect((timedOut as GatewayError).code).toBe('upstream_timeout');

    process.kill(transport.pid!, 'SIGUSR1');
    await within(Promise.all(fillers), 'the queued requests to be answered');
    await client.request('tools/call', { name: 'after', arguments: {} }, { timeoutMs: WAIT_MS });
    // Had the timed-out request been written, the child would have answered it: an unknown response.
    expect(client.unknownResponses).toBe(0);
    expect(client.pendingCount).toBe(0);
    // Nor was its notifications/cancelled: the child never saw the request it names.
    expect(cancellations).toEqual([]);
    await client.close();
  });
});
