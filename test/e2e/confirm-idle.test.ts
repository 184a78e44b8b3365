// A destructive tool's confirmation keeps its upstream open: while the user decides (here,
// until the idle sweep has closed another upstream of the session that idled as long), the
// session's own upstream session of the tool is not closed for idleness, and the tool runs
// once the user agrees.
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { connectClient, startGateway, textOf } from '../helpers/gateway.js';
import { FIXTURES, NODE } from '../helpers/paths.js';

const annotated = () => ({ stdio: { command: NODE, args: [join(FIXTURES, 'annotated-server.mjs')] }, idleTimeout: '1s' });

describe('a confirmation the user takes a while over', () => {
  it('keeps the upstream of the tool open, and the tool runs once the user agrees', async () => {
    const gw = await startGateway({
      teams: [{ name: 'all', default: true, confirm: true }],
      upstreams: { a: annotated(), b: annotated() },
    });
    try {
      const closed = (upstream: string) => gw.logs.some((line) => line.includes('idle upstream session closed') && JSON.parse(line).upstream === upstream);
      const client = await connectClient(gw.url, { elicitation: {} }, (c) =>
        c.setRequestHandler(ElicitRequestSchema, async () => {
          // The user answers once a sweep has closed b, used after a was last (so a idled longer).
          await expect.poll(() => closed('b'), { timeout: 20_000 }).toBe(true);
          return { action: 'accept', content: { confirm: true } };
        }),
      );
      try {
        // a, then b: a's last request to its upstream comes before b's.
        expect(textOf(await client.callTool({ name: 'a__bare', arguments: {} }))).toBe('ran bare');
        expect(textOf(await client.callTool({ name: 'b__bare', arguments: {} }))).toBe('ran bare');
        expect(textOf(await client.callTool({ name: 'a__contradiction', arguments: {} }))).toBe('ran contradiction');
        expect(closed('a')).toBe(false);
      } finally {
        await client.close();
      }
    } finally {
      await gw.close();
    }
  });
});
