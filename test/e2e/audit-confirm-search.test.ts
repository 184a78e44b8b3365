// Two kinds of call the observers used to misname. A destructive tool the user declined (or a
// client that cannot ask the user) is refused by the gateway itself: a deny with reason
// `confirmation` and the span event `switchyard.confirmation.refused`, not a tool that ran and
// failed. On a search endpoint, `call_tool` is exactly the tools/call it names: its audit record,
// its SERVER span and its call log line name that tool and its arguments, allowed or denied.
// Every call is made first; closing the gateway then flushes the audit sink and the spans.
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ElicitRequestSchema, type ClientCapabilities } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configFromObject } from '../../src/config/load.js';
import { createGateway, type Gateway } from '../../src/gateway.js';
import { createLogger } from '../../src/util/log.js';
import { Redactor } from '../../src/util/redact.js';
import { connectClient, upstream } from '../helpers/gateway.js';
import { SERVER, startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.js';
import { FIXTURES, NODE, ROOT } from '../helpers/paths.js';

type AuditRecord = Record<string, unknown>;

let receiver: OtlpReceiver;
let dir: string;
const logs: string[] = [];
/** Each scenario's answer (a result, or the error's message), by its number. */
const answers = new Map<number, unknown>();
let records: AuditRecord[] = [];

/** A traceparent of its own per scenario, so each call's SERVER span and record are found by its trace id. */
const traceId = (n: number): string => n.toString(16).padStart(32, 'a');
const traceparent = (n: number): string => `00-${traceId(n)}-00f067aa0ba902b7-01`;

const elicits = (action: 'accept' | 'decline') => (c: Client) => c.setRequestHandler(ElicitRequestSchema, async () => (action === 'accept' ? { action, content: { confirm: true } } : { action }));

/** Runs one tools/call from a client of its own, keeping its answer under `n`. */
async function scenario(n: number, at: URL, name: string, args: Record<string, unknown>, capabilities: ClientCapabilities = {}, prepare?: (c: Client) => void): Promise<void> {
  const client = await connectClient(at, capabilities, prepare, { traceparent: traceparent(n) });
  try {
    answers.set(n, await client.callTool({ name, arguments: args }).catch((err: Error) => err.message));
  } finally {
    await client.close();
  }
}

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  dir = await mkdtemp(join(tmpdir(), 'audit-confirm-search-'));
  const config = configFromObject(
    {
      listen: { port: 0 },
      health: { probeInterval: 0 },
      teams: [{ name: 'all', default: true, confirm: true, deny: ['everything__get-sum'] }],
      upstreams: { everything: upstream.everything(), annotated: { stdio: { command: NODE, args: [join(FIXTURES, 'annotated-server.mjs')] } } },
      endpoints: [{ path: '/search/mcp', discovery: 'search' }],
      tracing: { otlp: { endpoint: receiver.url }, sampleRatio: 1 },
      audit: { sink: { file: { path: 'audit.jsonl' } } },
    },
    { file: join(ROOT, 'gateway.test.yaml'), env: {} },
  );
  const redactor = new Redactor();
  const logger = createLogger({ level: 'info', write: (line) => logs.push(line), redact: (line) => redactor.redact(line) });
  const gw: Gateway = createGateway(config, { logger, redactor, configDir: dir, baseEnv: { PATH: process.env.PATH, HOME: process.env.HOME } });
  try {
    const url = await gw.start();
    const search = new URL('/search/mcp', url);
    await scenario(1, url, 'annotated__contradiction', {});
    await scenario(2, url, 'annotated__contradiction', {}, { elicitation: {} }, elicits('decline'));
    await scenario(3, url, 'annotated__contradiction', {}, { elicitation: {} }, elicits('accept'));
    await scenario(4, search, 'call_tool', { name: 'everything__echo', arguments: { message: 'hi' } });
    await scenario(5, search, 'call_tool', { name: 'everything__get-sum', arguments: { a: 1, b: 2 } });
    await scenario(6, search, 'call_tool', { arguments: {} });
    await scenario(7, search, 'call_tool', { name: 'call_tool', arguments: { name: 'everything__echo', arguments: { message: 'x' } } });
  } finally {
    // Closing drains the audit queue to the file and exports the spans still buffered.
    await gw.close();
  }
  records = (await readFile(join(dir, 'audit.jsonl'), 'utf8')).split('\n').filter(Boolean).map((line) => JSON.parse(line) as AuditRecord);
}, 60_000);

afterAll(async () => {
  await receiver?.close();
});

/** The tool.call record of scenario `n`. */
function recordOf(n: number): AuditRecord | undefined {
  return records.find((r) => r.event === 'tool.call' && r.traceId === traceId(n));
}

/** The tools/call SERVER span of scenario `n`. */
function spanOf(n: number): ReceivedSpan | undefined {
  return receiver.spans.find((s) => s.kind === SERVER && s.traceId === traceId(n) && s.attributes['mcp.method.name'] === 'tools/call');
}

/** The call log line of the tools/call whose request id the audit record names. */
function callLine(requestId: unknown): Record<string, unknown> | undefined {
  return logs.map((line) => JSON.parse(line) as Record<string, unknown>).find((l) => l.msg === 'call' && l.requestId === requestId && l.method === 'tools/call');
}

describe('a destructive call the user did not confirm', () => {
  it('is a deny with reason confirmation when the client cannot ask the user', () => {
    expect(answers.get(1)).toMatchObject({ isError: true, content: [{ text: expect.stringMatching(/no elicitation support/) }] });
    const record = recordOf(1);
    expect(record).toMatchObject({ name: 'annotated__contradiction', upstream: 'annotated', decision: 'deny', reason: 'confirmation', outcome: 'refused' });
    expect(record?.errorKind).toBeUndefined();
    expect(spanOf(1)?.events.map((e) => e.name)).toContain('switchyard.confirmation.refused');
  });

  it('is a deny with reason confirmation when the user declines', () => {
    expect(answers.get(2)).toMatchObject({ isError: true, content: [{ text: expect.stringMatching(/declined/) }] });
    expect(recordOf(2)).toMatchObject({ name: 'annotated__contradiction', decision: 'deny', reason: 'confirmation', outcome: 'refused' });
    expect(spanOf(2)?.events.map((e) => e.name)).toContain('switchyard.confirmation.refused');
  });

  it('a confirmed one is allowed and ran', () => {
    expect(answers.get(3)).toMatchObject({ content: [{ text: 'ran contradiction' }] });
    const record = recordOf(3);
    expect(record).toMatchObject({ name: 'annotated__contradiction', decision: 'allow', outcome: 'ok' });
    expect(record?.reason).toBeUndefined();
    expect(spanOf(3)?.events.map((e) => e.name)).not.toContain('switchyard.confirmation.refused');
  });
});

describe('call_tool on a search endpoint is observed as the tool it runs', () => {
  it('an allowed call: record, span and call log name the tool and its arguments', () => {
    expect(answers.get(4)).toMatchObject({ content: [{ text: 'Echo: hi' }] });
    const record = recordOf(4);
    expect(record).toMatchObject({ endpoint: '/search/mcp', upstream: 'everything', name: 'everything__echo', upstreamName: 'echo', decision: 'allow', outcome: 'ok' });
    const span = spanOf(4);
    expect(span?.name).toBe('tools/call everything__echo');
    expect(span?.attributes['gen_ai.tool.name']).toBe('everything__echo');
    expect(callLine(record?.requestId)).toMatchObject({ upstream: 'everything', tool: 'echo', arguments: { message: 'string' } });
  });

  it('a denied call names the tool attempted', () => {
    expect(answers.get(5)).toMatch(/Unknown tool: everything__get-sum/);
    const record = recordOf(5);
    expect(record).toMatchObject({ endpoint: '/search/mcp', upstream: 'everything', name: 'everything__get-sum', decision: 'deny', reason: 'policy', outcome: 'refused' });
    const span = spanOf(5);
    expect(span?.name).toBe('tools/call everything__get-sum');
    expect(span?.attributes['gen_ai.tool.name']).toBe('everything__get-sum');
    expect(span?.events.map((e) => e.name)).toContain('switchyard.policy.denied');
    expect(callLine(record?.requestId)).toMatchObject({ arguments: { a: 'number', b: 'number' } });
  });

  it('a call_tool with arguments it cannot run is observed as call_tool', () => {
    expect(answers.get(6)).toMatchObject({ isError: true, content: [{ text: expect.stringMatching(/\/name must be a tool name/) }] });
    expect(recordOf(6)).toMatchObject({ name: 'call_tool', decision: 'allow', outcome: 'error' });
    expect(spanOf(6)?.name).toBe('tools/call call_tool');
  });

  it('a call_tool naming call_tool is an unknown tool, not unwrapped twice', () => {
    expect(answers.get(7)).toMatch(/Unknown tool: call_tool/);
    expect(recordOf(7)).toMatchObject({ name: 'call_tool', outcome: 'error', errorKind: 'unknown_name' });
  });
});
