// Cancellation as the signal of a real undici request, against a listener that never answers
// (its pure behaviour is in test/util/cancel.test.ts).
import { describe, expect, it } from 'vitest';
import { Cancellation } from '../../src/util/cancel.js';

describe('Cancellation', () => {
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
