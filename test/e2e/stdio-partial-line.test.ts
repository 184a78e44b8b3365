// A stdio child's unfinished stdout line costs memory in proportion to its bytes, however small
// the reads it arrives in (a child writing one byte at a time, with no newline), and a line that
// arrives that way is still one message.
import { describe, expect, it } from 'vitest';
import type { JsonRpcMessage } from '../../src/mcp/jsonrpc.js';
import { StdioTransport } from '../../src/transport/stdio.js';
import type { Logger } from '../../src/util/log.js';
import { silentLogger } from '../../src/util/log.js';
import { until } from '../helpers/gateway.js';
import { heapInUseMb } from '../helpers/heap.js';

/**
 * Writes its first argument, repeated as many times as its second says, to stdout one byte per
 * write, a few writes per turn of its event loop (so the gateway reads it in tiny chunks), then
 * "done" on stderr, and waits for stdin to end.
 */
const DRIP = `
const fs = require('node:fs');
const text = process.argv[1];
const length = text.length * Number(process.argv[2]);
let at = 0;
(function burst() {
  for (let i = 0; i < 20 && at < length; i++, at++) fs.writeSync(1, text[at % text.length]);
  if (at < length) return setImmediate(burst);
  process.stderr.write('done\\n');
  process.stdin.resume();
  process.stdin.on('end', () => process.exit(0));
})();
`;

/** A logger that hears the child's stderr lines (logged at info). */
function stderrLogger(onLine: (line: string) => void): Logger {
  const logger: Logger = {
    ...silentLogger,
    info: (message: string, fields?: Record<string, unknown>) => {
      if (message === 'upstream stderr' && typeof fields?.stderr === 'string') onLine(fields.stderr);
    },
    child: () => logger,
  };
  return logger;
}

async function drip(text: string, times: number, onMessage: (message: JsonRpcMessage) => void = () => {}): Promise<{ t: StdioTransport; done: Promise<void> }> {
  let finished = false;
  let wake = (): void => {};
  const logger = stderrLogger((line) => {
    if (line === 'done') finished = true;
    wake();
  });
  const t = new StdioTransport({ command: process.execPath, args: ['-e', DRIP, text, String(times)], env: { PATH: process.env.PATH ?? '' }, cwd: '.', logger });
  t.onmessage = onMessage;
  await t.start();
  const done = until(() => finished, (w) => (wake = w), 60_000, 'the child to write everything');
  return { t, done };
}

/** Two turns of the event loop: stdout the child wrote before its stderr line is read by then. */
const turns = async (): Promise<void> => {
  for (let i = 0; i < 2; i++) await new Promise<void>((resolve) => setImmediate(resolve));
};

describe('a stdio child writing an unfinished line a byte at a time', () => {
  it('costs heap in proportion to the bytes held, not to the reads they came in', async () => {
    const bytes = 500_000;
    const before = heapInUseMb();
    const buffersBefore = process.memoryUsage().arrayBuffers;
    const { t, done } = await drip('x', bytes);
    try {
      await done;
      await turns();
      const grown = (heapInUseMb() - before) * 1e6;
      const buffers = process.memoryUsage().arrayBuffers - buffersBefore;
      // A Buffer object per read held 13-30 bytes of heap per byte; one growing buffer holds
      // none on the heap, and at most twice the bytes outside it.
      expect(grown / bytes).toBeLessThan(2);
      expect(buffers / bytes).toBeLessThan(3);
    } finally {
      await t.close();
    }
  }, 90_000);

  it('still reads a message that came a byte at a time as one message', async () => {
    const message = { jsonrpc: '2.0' as const, method: 'notifications/message', params: { level: 'info', data: 'y'.repeat(5_000) } };
    const got: JsonRpcMessage[] = [];
    let wake = (): void => {};
    const { t, done } = await drip(`${JSON.stringify(message)}\n`, 1, (m) => {
      got.push(m);
      wake();
    });
    try {
      await done;
      await until(() => got.length > 0, (w) => (wake = w), 10_000, 'the message');
      await turns();
      expect(got).toEqual([message]);
    } finally {
      await t.close();
    }
  });
});
