// What a request given up on keeps held (src/upstream/lingering.ts through UpstreamClient's
// `onGiveUp`): an upstream's maxConcurrent slot stays taken after a cancel or a timeout while
// the upstream may still be working on it, until its late answer, its connection's end, or
// LINGER_MS; the caller hears the cancellation at once. Fake timers, an in-memory transport.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { GatewayError } from '../../src/mcp/errors.js';
import { ConcurrencySlots } from '../../src/upstream/concurrency.js';
import { Lingering, LINGER_MS } from '../../src/upstream/lingering.js';
import { Cancellation } from '../../src/util/cancel.js';
import { connectedClient, flush, watch } from '../helpers/memory-transport.js';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

/** A slot of `slots` (max 1) handed to the client as a tool call does (tool-call.ts). */
function slotFor(slots: ConcurrencySlots): { onGiveUp: () => (() => void) | undefined; released: () => boolean } {
  const slot = slots.acquire(1);
  if ('retryAfterMs' in slot) throw new Error('no slot');
  let held: { release: () => void } | undefined = slot;
  return {
    onGiveUp: () => {
      const given = held;
      held = undefined;
      return given && (() => given.release());
    },
    released: () => slots.inFlight === 0,
  };
}

describe('a request given up on', () => {
  it('is answered at once when cancelled, and keeps its slot until the upstream answers it late', async () => {
    const { client, server } = await connectedClient('up');
    const slots = new ConcurrencySlots();
    const { onGiveUp, released } = slotFor(slots);
    const signal = new Cancellation();
    const call = watch(client.request('tools/call', { name: 'slow' }, { signal, onGiveUp }));
    await flush();
    const held = server.take('tools/call');

    signal.abort('changed my mind');
    await flush();
    expect((call.outcome as GatewayError).code).toBe('cancelled');
    expect(server.notifications('notifications/cancelled')).toHaveLength(1);
    expect(released()).toBe(false);
    expect(slots.busy(1)).toBeDefined();

    await vi.advanceTimersByTimeAsync(LINGER_MS - 1_000);
    held.respond({ content: [] });
    await flush();
    expect(released()).toBe(true);
  });

  it('keeps it after a timeout too, and gives it back after LINGER_MS when the upstream never answers', async () => {
    const { client, server } = await connectedClient('up');
    const slots = new ConcurrencySlots();
    const { onGiveUp, released } = slotFor(slots);
    const call = watch(client.request('tools/call', { name: 'slow' }, { timeoutMs: 100, onGiveUp }));
    await flush();
    server.take('tools/call');
    await vi.advanceTimersByTimeAsync(100);
    expect((call.outcome as GatewayError).code).toBe('upstream_timeout');
    expect(released()).toBe(false);

    await vi.advanceTimersByTimeAsync(LINGER_MS - 1);
    expect(released()).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(released()).toBe(true);
  });

  it('gives it back when the connection ends (a crash) or the client closes', async () => {
    for (const end of ['drop', 'close'] as const) {
      const { client, server, transport } = await connectedClient('up');
      const slots = new ConcurrencySlots();
      const { onGiveUp, released } = slotFor(slots);
      const signal = new Cancellation();
      watch(client.request('tools/call', { name: 'slow' }, { signal, onGiveUp }));
      await flush();
      server.take('tools/call');
      signal.abort('cancelled');
      await flush();
      expect(released(), end).toBe(false);
      if (end === 'drop') transport.drop();
      else await client.close();
      await flush();
      expect(released(), end).toBe(true);
    }
  });

  it('holds nothing for a request answered in time', async () => {
    const { client, server } = await connectedClient('up');
    const onGiveUp = vi.fn(() => () => {});
    const call = watch(client.request('tools/call', { name: 'quick' }, { onGiveUp }));
    await flush();
    server.take('tools/call').respond({ content: [] });
    await flush();
    expect(call.outcome).toEqual({ content: [] });
    expect(onGiveUp).not.toHaveBeenCalled();
  });
});

describe('Lingering', () => {
  it('calls each done once: on end, or on its timer, or on endAll', async () => {
    const lingering = new Lingering(1_000);
    const calls: string[] = [];
    lingering.hold(1, () => calls.push('one'));
    lingering.hold(2, () => calls.push('two'));
    lingering.hold(3, () => calls.push('three'));
    expect(lingering.end(1)).toBe(true);
    expect(lingering.end(1)).toBe(false);
    await vi.advanceTimersByTimeAsync(1_000);
    lingering.endAll();
    expect(calls).toEqual(['one', 'two', 'three']);
    expect(lingering.size).toBe(0);
  });
});
