// Audit records of the calls the gateway refuses itself: each is a deny with its reason and
// names the upstream the call would have gone to; a concurrency refusal found only when the
// call takes its slot (after an asynchronous step, here a per-tool rate limit) is one too.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WritableLike } from '../../src/audit/audit.js';
import { configFromObject } from '../../src/config/load.js';
import { createGateway, type Gateway } from '../../src/gateway.js';
import { createLogger } from '../../src/util/log.js';
import { Redactor } from '../../src/util/redact.js';
import { upstream } from '../helpers/gateway.js';
import { ROOT } from '../helpers/paths.js';
import { initializeRaw, messagesOf, sendIn } from '../helpers/raw-http.js';
import { join } from 'node:path';

type AuditRecord = Record<string, unknown>;

let gw: Gateway;
let url: URL;
const lines: string[] = [];

beforeAll(async () => {
  const stdout: WritableLike = { write: (chunk, done) => (lines.push(...chunk.trim().split('\n')), done(), true) };
  const config = configFromObject(
    {
      listen: { port: 0, allowUnauthenticated: true },
      health: { probeInterval: 0 },
      teams: [{ name: 'all', default: true, deny: ['everything__get-sum'] }],
      upstreams: { everything: { ...upstream.everything(), maxConcurrent: 1 } },
      rateLimits: { perTool: { everything__echo: { rate: 100, per: '1m' } } },
      audit: { sink: 'stdout' },
    },
    { file: join(ROOT, 'gateway.test.yaml'), env: {} },
  );
  const redactor = new Redactor();
  gw = createGateway(config, { logger: createLogger({ level: 'silent', write: () => {} }), redactor, baseEnv: { PATH: process.env.PATH, HOME: process.env.HOME }, stdout });
  url = await gw.start();
});

afterAll(async () => {
  await gw?.close();
});

const call = (id: number, name: string, args: Record<string, unknown> = {}) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });

/** The tool.call records written so far, once `count` are there (the queue writes in the background). */
async function toolCalls(count: number): Promise<AuditRecord[]> {
  const records = () => lines.map((line) => JSON.parse(line) as AuditRecord).filter((r) => r.event === 'tool.call');
  await expect.poll(() => records().length, { timeout: 10_000 }).toBeGreaterThanOrEqual(count);
  return records();
}

describe('audit records of refused calls', () => {
  it('a concurrency refusal at the slot is a deny with its reason; refusals name the upstream', async () => {
    // A 2025-03-26 session: a batch's two calls race for the upstream's one slot.
    const session = await initializeRaw(url, { protocolVersion: '2025-03-26' });
    const batch = await sendIn(session, [call(2, 'everything__echo', { message: 'a' }), call(3, 'everything__echo', { message: 'b' })]);
    const answers = messagesOf<{ id: number; result?: { isError?: boolean; content: { text: string }[] } }>(batch);
    const refusedAnswer = answers.find((a) => a.result?.isError === true);
    expect(refusedAnswer?.result?.content[0]?.text).toMatch(/in flight/);
    const denied = await sendIn(session, call(4, 'everything__get-sum', { a: 1, b: 2 }));
    expect(messagesOf(denied)[0]).toMatchObject({ error: { code: -32602 } });
    const records = await toolCalls(3);
    expect(records.filter((r) => r.decision === 'deny')).toEqual([
      expect.objectContaining({ name: 'everything__echo', reason: 'concurrency', outcome: 'refused', upstream: 'everything' }),
      expect.objectContaining({ name: 'everything__get-sum', reason: 'policy', outcome: 'refused', upstream: 'everything' }),
    ]);
    expect(records.filter((r) => r.decision === 'allow')).toEqual([expect.objectContaining({ name: 'everything__echo', outcome: 'ok', upstream: 'everything' })]);
  });
});
