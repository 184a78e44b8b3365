// The circuit breaker of an HTTP upstream, with fake timers: closed until `failures` consecutive
// failures, then open (refusing) for `openMs`, then half-open with one probe at a time whose
// outcome closes or reopens it. Then the same breaker in front of a Streamable HTTP transport
// over a scripted dispatcher (no socket): an open circuit refuses before anything is dispatched.
import type { Dispatcher } from 'undici';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { JsonRpcMessage } from '../../src/mcp/jsonrpc.js';
import { CircuitBreaker, type CircuitState } from '../../src/transport/circuit.js';
import { StreamableHttpTransport } from '../../src/transport/streamable-http.js';
import { TransportError } from '../../src/transport/types.js';
import { silentLogger } from '../../src/util/log.js';
import { settlesNow } from '../helpers/memory-transport.js';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

/** A breaker (on the fake clock) and every state change it announced. */
function breaker(failures = 3, openMs = 10_000): { circuit: CircuitBreaker; changes: CircuitState[] } {
  const circuit = new CircuitBreaker({ failures, openMs });
  const changes: CircuitState[] = [];
  circuit.onchange = (state) => changes.push(state);
  return { circuit, changes };
}

/** Fails `n` requests the way the transport does: asks, then reports the failure. */
function fail(circuit: CircuitBreaker, n: number): void {
  for (let i = 0; i < n; i++) {
    expect(circuit.allow()).toBe(true);
    circuit.failure();
  }
}

describe('CircuitBreaker', () => {
  it('stays closed and lets everything through below the failure threshold', () => {
    const { circuit, changes } = breaker(3);
    fail(circuit, 2);
    expect(circuit.state).toBe('closed');
    for (let i = 0; i < 10; i++) expect(circuit.allow()).toBe(true);
    expect(changes).toEqual([]);
  });

  it('opens on the Nth consecutive failure and then refuses', () => {
    const { circuit, changes } = breaker(3);
    fail(circuit, 3);
    expect(circuit.state).toBe('open');
    expect(changes).toEqual(['open']);
    expect(circuit.allow()).toBe(false);
    expect(circuit.allow()).toBe(false);
  });

  it('counts consecutive failures only: a success in between starts the count again', () => {
    const { circuit } = breaker(3);
    fail(circuit, 2);
    expect(circuit.allow()).toBe(true);
    circuit.success();
    fail(circuit, 2);
    expect(circuit.state).toBe('closed');
    fail(circuit, 1);
    expect(circuit.state).toBe('open');
  });

  it('refuses for the whole cool-down, then lets exactly one probe through (half-open)', () => {
    const { circuit, changes } = breaker(1, 10_000);
    fail(circuit, 1);
    vi.advanceTimersByTime(9_999);
    expect(circuit.allow()).toBe(false);
    expect(circuit.state).toBe('open');
    vi.advanceTimersByTime(1);
    expect(circuit.allow()).toBe(true);
    expect(circuit.state).toBe('half-open');
    // The probe is in flight: nobody else goes.
    expect(circuit.allow()).toBe(false);
    expect(circuit.allow()).toBe(false);
    expect(changes).toEqual(['open', 'half-open']);
  });

  it('closes when the probe succeeds, and then needs the full threshold of failures to open again', () => {
    const { circuit, changes } = breaker(3, 1_000);
    fail(circuit, 3);
    vi.advanceTimersByTime(1_000);
    expect(circuit.allow()).toBe(true);
    circuit.success();
    expect(circuit.state).toBe('closed');
    expect(circuit.allow()).toBe(true);
    expect(circuit.allow()).toBe(true);
    fail(circuit, 2);
    expect(circuit.state).toBe('closed');
    expect(changes).toEqual(['open', 'half-open', 'closed']);
  });

  it('reopens when the probe fails, with a fresh cool-down counted from the probe', () => {
    const { circuit, changes } = breaker(3, 1_000);
    fail(circuit, 3);
    vi.advanceTimersByTime(5_000); // long past the first cool-down
    expect(circuit.allow()).toBe(true);
    circuit.failure(); // one failure is enough in half-open
    expect(circuit.state).toBe('open');
    expect(circuit.allow()).toBe(false);
    vi.advanceTimersByTime(999);
    expect(circuit.allow()).toBe(false);
    vi.advanceTimersByTime(1);
    expect(circuit.allow()).toBe(true);
    expect(changes).toEqual(['open', 'half-open', 'open', 'half-open']);
  });

  it('frees the probe slot when the probe was abandoned (release), deciding nothing', () => {
    const { circuit } = breaker(1, 1_000);
    fail(circuit, 1);
    vi.advanceTimersByTime(1_000);
    expect(circuit.allow()).toBe(true);
    circuit.release();
    expect(circuit.state).toBe('half-open');
    expect(circuit.allow()).toBe(true);
    expect(circuit.allow()).toBe(false);
  });
});

/**
 * A dispatcher that answers each request with the next status of `statuses` (empty body), or
 * fails it before any response when the status is 0 (connection refused). Counts dispatches.
 */
function scriptedDispatcher(statuses: number[]): { dispatcher: Dispatcher; dispatched: () => number } {
  let count = 0;
  // The handler's callbacks in the order undici's client calls them (its raw-header form).
  const fake = {
    dispatch(_request: unknown, handler: Dispatcher.DispatchHandler): boolean {
      const status = statuses[count++] ?? 200;
      queueMicrotask(() => {
        handler.onConnect?.(() => {});
        if (status === 0) return handler.onError?.(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }));
        handler.onHeaders?.(status, [], () => {}, '');
        handler.onComplete?.([]);
      });
      return true;
    },
  };
  return { dispatcher: fake as unknown as Dispatcher, dispatched: () => count };
}

const NOTE: JsonRpcMessage = { jsonrpc: '2.0', method: 'notifications/roots/list_changed' };

/** Posts a notification; what its `done` heard (undefined: sent). Bounded: settles on microtasks or fails. */
function post(transport: StreamableHttpTransport): Promise<unknown> {
  return settlesNow(new Promise((resolve) => transport.post(NOTE, undefined, (err) => resolve(err))), 'post');
}

describe('the breaker in front of a Streamable HTTP transport', () => {
  it('opens after consecutive 5xx and connection failures, then refuses with circuit_open without dispatching, until a probe succeeds', async () => {
    const circuit = new CircuitBreaker({ failures: 3, openMs: 2_000 });
    const { dispatcher, dispatched } = scriptedDispatcher([503, 0, 502, 202, 202]);
    // Two sessions of one upstream share the breaker.
    const a = new StreamableHttpTransport({ url: 'http://upstream.invalid/mcp', headers: {}, dispatcher, logger: silentLogger, breaker: circuit });
    const b = new StreamableHttpTransport({ url: 'http://upstream.invalid/mcp', headers: {}, dispatcher, logger: silentLogger, breaker: circuit });

    expect((await post(a)) as TransportError).toMatchObject({ code: 'http_status', status: 503 });
    expect((await post(b)) as TransportError).toMatchObject({ code: 'network' });
    expect(circuit.state).toBe('closed');
    expect((await post(a)) as TransportError).toMatchObject({ code: 'http_status', status: 502 });
    expect(circuit.state).toBe('open');

    const refused = await post(b);
    expect(refused).toBeInstanceOf(TransportError);
    expect((refused as TransportError).code).toBe('circuit_open');
    expect(dispatched()).toBe(3);

    await vi.advanceTimersByTimeAsync(2_000);
    expect(await post(a)).toBeUndefined(); // the probe, answered 202
    expect(circuit.state).toBe('closed');
    expect(await post(b)).toBeUndefined();
    expect(dispatched()).toBe(5);
    await Promise.all([a.close(), b.close()]);
  });

  it('counts a 4xx answer as the upstream working: it never opens the circuit', async () => {
    const circuit = new CircuitBreaker({ failures: 2, openMs: 2_000 });
    const { dispatcher } = scriptedDispatcher([400, 401, 429, 400]);
    const transport = new StreamableHttpTransport({ url: 'http://upstream.invalid/mcp', headers: {}, dispatcher, logger: silentLogger, breaker: circuit });
    for (let i = 0; i < 4; i++) expect(await post(transport)).toMatchObject({ code: 'http_status' });
    expect(circuit.state).toBe('closed');
    await transport.close();
  });
});
