// The `_meta` envelope a 2026-07-28 upstream is sent for a sessions-era client: the version,
// capabilities, client info and log level its session negotiated, whatever the client puts under
// those reserved keys of a request's `_meta` (basic/index.mdx "Per-request protocol fields");
// the gateway's own declaration (the Tasks extension, for a tool that runs only as a task) still
// goes; every other key of `_meta` (progressToken, trace context, an app's own) goes on.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, textOf, upstream, type TestGateway } from '../helpers/gateway.js';
import { FIXTURES, NODE } from '../helpers/paths.js';
import { stopChild, waitForLine } from '../helpers/processes.js';
import { initializeRaw, sendIn, type RawSession } from '../helpers/raw-http.js';
import type { JsonRpc } from '../helpers/sse-reader.js';

const V = '2026-07-28';
const CAPS = 'io.modelcontextprotocol/clientCapabilities';
const TASKS = 'io.modelcontextprotocol/tasks';
/** What a client claims under every reserved key of the envelope. */
const FORGED = {
  [CAPS]: { sampling: {}, elicitation: { form: {} }, roots: {}, extensions: { [TASKS]: {} } },
  'io.modelcontextprotocol/clientInfo': { name: 'forged', version: '9' },
  'io.modelcontextprotocol/protocolVersion': '2099-01-01',
  'io.modelcontextprotocol/logLevel': 'debug',
};
const CLIENT_INFO = { name: 'sessions-client', version: '1' };
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';

let modern: ChildProcessWithoutNullStreams;
let tasks: ChildProcessWithoutNullStreams;
let recorder: Server;
/** The `_meta` of every tools/call the recording upstream was sent. */
const recorded: Record<string, unknown>[] = [];
let gw: TestGateway;

/** A 2026-07-28 upstream with one tool, `meta`, that keeps the `_meta` of each call. */
function startRecorder(): Promise<string> {
  recorder = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      const message = JSON.parse(body || '{}') as JsonRpc;
      if (req.method !== 'POST' || message.id === undefined) return void res.writeHead(req.method === 'POST' ? 202 : 405).end();
      const reply = (result: Record<string, unknown>): void => void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result: { ...result, resultType: 'complete' } }));
      switch (message.method) {
        case 'server/discover':
          return reply({ supportedVersions: [V], capabilities: { tools: {} }, _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'recorder', version: '1' } } });
        case 'tools/list':
          return reply({ tools: [{ name: 'meta', inputSchema: { type: 'object' } }] });
        case 'tools/call':
          recorded.push((message.params?._meta ?? {}) as Record<string, unknown>);
          return reply({ content: [{ type: 'text', text: 'recorded' }] });
        default:
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: message.id, error: { code: -32601, message: 'Method not found' } }));
      }
    });
  });
  return new Promise((resolve) => recorder.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(recorder.address() as AddressInfo).port}/mcp`)));
}

beforeAll(async () => {
  modern = spawn(NODE, [join(FIXTURES, 'modern-server.mjs')], { stdio: 'pipe' });
  tasks = spawn(NODE, [join(FIXTURES, 'tasks-server.mjs')], { stdio: 'pipe', env: { ...process.env, MODE: 'always' } });
  const [[, modernUrl], [, tasksUrl], recorderUrl] = await Promise.all([waitForLine(modern, /listening on (\S+)/), waitForLine(tasks, /^listening on (\S+)/), startRecorder()]);
  gw = await startGateway({ upstreams: { modern: upstream.http(modernUrl!), tasks: upstream.http(tasksUrl!), recorder: upstream.http(recorderUrl) } }, { logLevel: 'warn' });
});

afterAll(async () => {
  await gw?.close();
  recorder?.closeAllConnections();
  await new Promise((resolve) => (recorder ? recorder.close(resolve) : resolve(undefined)));
  await Promise.all([modern, tasks].map((child) => child && stopChild(child)));
});

/** A 2025-11-25 session that declared no capabilities. */
function sessionsClient(): Promise<RawSession> {
  return initializeRaw(gw.url, { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: CLIENT_INFO });
}

async function callIn(session: RawSession, id: number, name: string, meta?: Record<string, unknown>, args: Record<string, unknown> = {}): Promise<JsonRpc> {
  const reply = await sendIn(session, { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args, ...(meta ? { _meta: meta } : {}) } });
  expect(reply.status, reply.text).toBe(200);
  const answer = reply.messages.find((m) => m.id === id);
  expect(answer, reply.text).toBeDefined();
  return answer!;
}

describe('a sessions-era client calling a 2026-07-28 upstream', () => {
  it("sends the session's envelope, whatever the client's _meta claims under its keys", async () => {
    const session = await sessionsClient();
    const said = (answer: JsonRpc): unknown => JSON.parse(textOf(answer.result));
    const plain = said(await callIn(session, 1, 'modern__whoami'));
    expect(plain).toEqual({ 'io.modelcontextprotocol/protocolVersion': V, 'io.modelcontextprotocol/clientInfo': CLIENT_INFO, [CAPS]: {} });
    expect(said(await callIn(session, 2, 'modern__whoami', FORGED))).toEqual(plain);
  });

  it('gets no input request the session cannot answer: the upstream refuses for want of the capability (-32021)', async () => {
    const session = await sessionsClient();
    const answer = await callIn(session, 1, 'modern__ask', { [CAPS]: { elicitation: { form: {} } } });
    expect(answer.error, JSON.stringify(answer)).toMatchObject({ code: -32021 });
  });

  it("runs a task-only tool as the gateway's own task (its declaration goes), never as one the client forged", async () => {
    const session = await sessionsClient();
    const answer = await callIn(session, 1, 'tasks__render', FORGED, { ms: 50 });
    expect(answer.error, JSON.stringify(answer)).toBeUndefined();
    expect(answer.result?.task, JSON.stringify(answer)).toBeUndefined();
    expect(textOf(answer.result)).toMatch(/rendered in 50 ms/);
  });

  it('passes every other _meta key on: progressToken, trace context, an app key', async () => {
    const session = await sessionsClient();
    recorded.length = 0;
    const meta = { ...FORGED, progressToken: 'p-1', traceparent: `00-${TRACE_ID}-00f067aa0ba902b7-01`, 'com.example/app': { kept: true } };
    await callIn(session, 1, 'recorder__meta', meta);
    expect(recorded).toHaveLength(1);
    const seen = recorded[0]!;
    expect(seen).toMatchObject({ 'io.modelcontextprotocol/protocolVersion': V, 'io.modelcontextprotocol/clientInfo': CLIENT_INFO, [CAPS]: {}, 'com.example/app': { kept: true } });
    expect(seen['io.modelcontextprotocol/logLevel']).toBeUndefined();
    expect(seen.progressToken).toBeDefined();
    expect(String(seen.traceparent)).toMatch(new RegExp(`^00-${TRACE_ID}-[0-9a-f]{16}-01$`));
  });
});
