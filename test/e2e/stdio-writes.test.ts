// The stdio transport's writes: messages sent in one round of the event loop go to the child in
// a single write, in order, each send settling once it is written.
import { describe, expect, it } from 'vitest';
import { StdioTransport } from '../../src/transport/stdio.js';
import type { JsonRpcMessage } from '../../src/mcp/jsonrpc.js';
import { silentLogger } from '../../src/util/log.js';
import { until } from '../helpers/gateway.js';

// Reports each chunk it reads from stdin: how many lines it held, and the ids in them.
const CHILD = `
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  const ids = chunk.split('\\n').filter(Boolean).map((line) => JSON.parse(line).id);
  process.stdout.write(JSON.stringify({ jsonrpc: '2.0', method: 'chunk', params: { ids } }) + '\\n');
});
`;

function transport(): StdioTransport {
  return new StdioTransport({ command: process.execPath, args: ['-e', CHILD], env: { PATH: process.env.PATH ?? '' }, cwd: '.', logger: silentLogger });
}

describe('StdioTransport writes', () => {
  it('sends the messages of one event-loop round in one write, in order', async () => {
    const t = transport();
    const chunks: number[][] = [];
    let wake = (): void => {};
    t.onmessage = (message: JsonRpcMessage) => {
      if ('method' in message && message.method === 'chunk') chunks.push((message.params as { ids: number[] }).ids);
      wake();
    };
    const subscribe = (w: () => void): void => {
      wake = w;
    };
    await t.start();
    try {
      const sent = Array.from({ length: 40 }, (_, i) => t.send({ jsonrpc: '2.0', id: i, method: 'ping' }));
      await Promise.all(sent);
      await until(() => chunks.flat().length === 40, subscribe, 10_000, 'the child to read all 40 lines');
      // 40 short lines are one write of well under PIPE_BUF bytes, which a pipe delivers whole.
      expect(chunks).toEqual([Array.from({ length: 40 }, (_, i) => i)]);

      // A later round is a later write.
      await t.send({ jsonrpc: '2.0', id: 40, method: 'ping' });
      await until(() => chunks.length === 2, subscribe, 10_000, 'the second write');
      expect(chunks[1]).toEqual([40]);
    } finally {
      await t.close();
    }
  });

  it('writes what was queued before close, and refuses sends after it', async () => {
    const t = transport();
    await t.start();
    const queued = t.send({ jsonrpc: '2.0', id: 1, method: 'ping' });
    const closed = t.close();
    // Settles only once written: flushed before stdin ended, not refused by a later flush.
    await expect(queued).resolves.toBeUndefined();
    await closed;
    await expect(t.send({ jsonrpc: '2.0', id: 2, method: 'ping' })).rejects.toThrow('not running');
  });
});
