import { describe, expect, it } from 'vitest';
import { Cancellation } from '../../src/util/cancel.js';

describe('Cancellation', () => {
  it('runs each listener once, in order, with the reason set before they run', () => {
    const c = new Cancellation();
    const seen: string[] = [];
    c.addEventListener('abort', () => seen.push(`a:${String(c.reason)}`));
    c.addEventListener('abort', () => seen.push(`b:${String(c.aborted)}`));
    c.abort('stop');
    c.abort('again');
    expect(seen).toEqual(['a:stop', 'b:true']);
    expect(c.reason).toBe('stop');
  });

  it('does not run a removed listener, nor one added after the abort', () => {
    const c = new Cancellation();
    let calls = 0;
    const listener = (): void => {
      calls++;
    };
    c.addEventListener('abort', listener);
    c.removeEventListener('abort', listener);
    c.abort();
    c.addEventListener('abort', listener);
    expect(calls).toBe(0);
    expect(c.aborted).toBe(true);
    expect(c.reason).toBeInstanceOf(Error);
  });

  it('aborts an undici request it is given as the signal', async () => {
    const { createServer } = await import('node:http');
    const { Agent } = await import('undici');
    let arrived!: () => void;
    const reached = new Promise<void>((resolve) => (arrived = resolve));
    const server = createServer(() => arrived()); // never answers
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const agent = new Agent();
    try {
      const { port } = server.address() as { port: number };
      const c = new Cancellation();
      const pending = agent.request({ origin: `http://127.0.0.1:${port}`, path: '/', method: 'GET', signal: c as unknown as AbortSignal });
      await reached;
      c.abort(new Error('given up'));
      await expect(pending).rejects.toThrow('given up');
    } finally {
      await agent.close().catch(() => {});
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
