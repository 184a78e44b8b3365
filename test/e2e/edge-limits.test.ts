// Edge limits over real sockets: request limits (body, JSON depth, headers) against the CLI
// process, sessions.max and maxPerPrincipal, tools/call arguments checked before they reach an
// upstream, and the refusal to listen unauthenticated on a non-loopback address.
import { spawn } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { alive, startCli, type CliProcess } from '../helpers/cli.js';
import { deleteSession, initializeRequest, INVALID_REQUEST, openSession, ping } from '../helpers/edge.js';
import { connectClient, startGateway, textOf, upstream, type TestGateway } from '../helpers/gateway.js';
import { FIXTURES, NODE, ROOT } from '../helpers/paths.js';
import { stopChild, waitForExit, waitForLine } from '../helpers/processes.js';
import { expectRpcError, httpExchange as exchange, httpPost as post, POST_HEADERS, REQUEST_TIMEOUT_MS } from '../helpers/raw-http.js';
import { useScratch } from '../helpers/scratch.js';
import { makeTestPki } from '../helpers/tls.js';

const MiB = 1024 * 1024;

const strict = () => ({ stdio: { command: NODE, args: [join(FIXTURES, 'strict-server.mjs')] } });

const scratch = useScratch('switchyard-edge-limits-');

// ---------------------------------------------------------------------------------------------
// Request limits, against the real CLI process so its memory can be read from /proc.

interface StreamOutcome {
  /** Body bytes handed to the socket in all. */
  sent: number;
  /** Body bytes handed to the socket when the answer's head arrived (undefined: no answer). */
  sentAtAnswer?: number;
  status?: number;
  text: string;
  /** The connection error, if the gateway cut the connection. */
  error?: string;
}

/**
 * POSTs a body of `total` bytes in 64 KiB chunks, its length declared or chunked. With
 * `pauseAfter`, sending stops after that many bytes until the answer arrives (then the request
 * is dropped): a gateway that waits for the whole body never answers. Without it, everything is
 * sent whatever the gateway says, until it cuts the connection (a hostile client).
 */
function streamBody(url: URL, options: { declared: boolean; total: number; pauseAfter?: number }): Promise<StreamOutcome> {
  const { declared, total, pauseAfter } = options;
  const chunk = Buffer.alloc(64 * 1024, 0x20);
  const headers: Record<string, string> = { ...POST_HEADERS, ...(declared ? { 'content-length': String(total) } : {}) };
  return new Promise((resolve) => {
    const outcome: StreamOutcome = { sent: 0, text: '' };
    const req = httpRequest(url, { method: 'POST', headers, agent: false, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    req.on('response', (res) => {
      outcome.sentAtAnswer = outcome.sent;
      outcome.status = res.statusCode!;
      res.setEncoding('utf8');
      res.on('data', (text: string) => (outcome.text += text));
      res.on('end', () => {
        if (pauseAfter !== undefined) req.destroy();
      });
      res.on('error', () => undefined);
    });
    req.on('error', (err: NodeJS.ErrnoException) => (outcome.error = err.code ?? err.message));
    req.on('close', () => resolve(outcome));
    req.flushHeaders();
    const pump = (): void => {
      while (outcome.sent < Math.min(total, pauseAfter ?? total) && !req.destroyed) {
        outcome.sent += chunk.length;
        if (!req.write(chunk)) return void req.once('drain', pump);
      }
      if (outcome.sent >= total && !req.destroyed) req.end();
    };
    pump();
  });
}

async function rssBytes(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kib = /^VmRSS:\s+(\d+)\s+kB$/m.exec(status)?.[1];
  if (kib === undefined) throw new Error(`no VmRSS in /proc/${pid}/status`);
  return Number(kib) * 1024;
}

describe('request limits (the CLI process)', () => {
  let cli: CliProcess;
  const BODY = 64 * MiB;

  beforeAll(async () => {
    const file = join(scratch(), 'limits.yaml');
    await writeFile(file, `${JSON.stringify({ listen: { maxBodyBytes: MiB }, upstreams: {} }, null, 2)}\n`);
    cli = await startCli(file);
  });

  afterAll(async () => {
    await cli?.stop();
  });

  /** The process is up and still answers MCP. */
  async function expectServing(id: number): Promise<void> {
    expect(alive(cli.gatewayPid)).toBe(true);
    const reply = await post(cli.url, ping(id));
    expect(reply.status).toBe(200);
    expect(reply.json).toEqual({ jsonrpc: '2.0', id, result: {} });
  }

  it('answers 413 to a declared 64 MiB body before any of it is sent', async () => {
    const outcome = await streamBody(cli.url, { declared: true, total: BODY, pauseAfter: 0 });
    expect(outcome.sentAtAnswer).toBe(0);
    expect(outcome.status).toBe(413);
    expect(JSON.parse(outcome.text)).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: INVALID_REQUEST, message: expect.stringMatching(/1048576/) } });
  });

  it('answers 413 to a chunked 64 MiB body once the limit is passed, without waiting for the rest', async () => {
    const outcome = await streamBody(cli.url, { declared: false, total: BODY, pauseAfter: MiB + 64 * 1024 });
    expect(outcome.sentAtAnswer).toBe(MiB + 64 * 1024);
    expect(outcome.status).toBe(413);
    expect(JSON.parse(outcome.text)).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: INVALID_REQUEST } });
  });

  it('cuts off a client that keeps sending a 64 MiB body, declared or chunked, and its memory stays flat', async () => {
    // Warm up the paths once so the baseline includes their code and buffers.
    // The client pauses past the limit and waits for the answer (sending on could meet the
    // connection's reset before the 413 is read).
    expect((await streamBody(cli.url, { declared: false, total: 2 * MiB, pauseAfter: MiB + 64 * 1024 })).status).toBe(413);
    const before = await rssBytes(cli.gatewayPid);

    for (const declared of [true, false, true, false]) {
      const outcome = await streamBody(cli.url, { declared, total: BODY });
      const what = `${declared ? 'declared' : 'chunked'}: ${JSON.stringify({ ...outcome, text: outcome.text.slice(0, 80) })}`;
      // The gateway answered and closed the connection (a client still writing may see only
      // the reset) with most of the body unsent; socket buffers hold a few MiB.
      expect(outcome.sent, what).toBeLessThan(16 * MiB);
      if (outcome.status !== undefined) expect(outcome.status, what).toBe(413);
      else expect(outcome.error, what).toMatch(/^(EPIPE|ECONNRESET)$/);
    }

    const growth = (await rssBytes(cli.gatewayPid)) - before;
    expect(growth, `RSS grew by ${(growth / MiB).toFixed(1)} MiB`).toBeLessThan(20 * MiB);
    await expectServing(1);
  });

  it('refuses JSON nested 100,000 deep with 400 and a JSON-RPC error, and keeps serving', async () => {
    const deep = '['.repeat(100_000) + ']'.repeat(100_000);
    const bare = await post(cli.url, deep);
    expectRpcError(bare, 400, INVALID_REQUEST);
    expect(bare.text).toMatch(/nested deeper than 64/);

    const inParams = await post(cli.url, `{"jsonrpc":"2.0","id":5,"method":"ping","params":{"deep":${deep}}}`);
    expectRpcError(inParams, 400, INVALID_REQUEST);

    const objects = await post(cli.url, '{"a":'.repeat(100_000) + '1' + '}'.repeat(100_000));
    expectRpcError(objects, 400, INVALID_REQUEST);
    await expectServing(2);
  });

  it('does not count brackets inside strings as nesting', async () => {
    const reply = await post(cli.url, { ...ping(6), params: { text: '['.repeat(100_000) } });
    expect(reply.status).toBe(200);
    expect(reply.json).toEqual({ jsonrpc: '2.0', id: 6, result: {} });
  });

  it('refuses a 64 KiB header with 431 (or a closed connection) and keeps serving', async () => {
    const outcome = await post(cli.url, ping(7), { headers: { 'x-padding': 'a'.repeat(64 * 1024) } }).then(
      (reply) => reply.status,
      (err: NodeJS.ErrnoException) => err.code,
    );
    expect([431, 'ECONNRESET', 'EPIPE']).toContain(outcome);
    await expectServing(3);
  });
});

describe('configured header limit', () => {
  it('applies listen.maxHeaderBytes', async () => {
    const gw = await startGateway({ listen: { port: 0, maxHeaderBytes: 4096 }, upstreams: {} });
    try {
      expect((await post(gw.url, ping(1), { headers: { 'x-padding': 'a'.repeat(2048) } })).status).toBe(200);
      const outcome = await post(gw.url, ping(2), { headers: { 'x-padding': 'a'.repeat(8192) } }).then(
        (reply) => reply.status,
        (err: NodeJS.ErrnoException) => err.code,
      );
      expect([431, 'ECONNRESET', 'EPIPE']).toContain(outcome);
    } finally {
      await gw.close();
    }
  });
});

describe('session limits', () => {
  let gw: TestGateway | undefined;

  afterEach(async () => {
    await gw?.close();
    gw = undefined;
  });

  it('answers the initialize beyond sessions.max with 503 and Retry-After, and accepts one again after a DELETE', async () => {
    gw = await startGateway({ sessions: { max: 3 }, upstreams: {} });
    const open = [await openSession(gw.url), await openSession(gw.url), await openSession(gw.url)];
    const refused = await post(gw.url, initializeRequest(4));
    expectRpcError(refused, 503, -32603, 4);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect(refused.headers['mcp-session-id']).toBeUndefined();

    expect((await deleteSession(gw.url, open[0]!)).status).toBe(200);
    expect(await openSession(gw.url)).toBeTruthy();
  });

  it('holds sessions.max under concurrent initializes', async () => {
    gw = await startGateway({ sessions: { max: 3 }, upstreams: { paged: upstream.paged() } });
    const url = gw.url;
    const replies = await Promise.all(Array.from({ length: 10 }, (_, i) => post(url, initializeRequest(i))));
    const statuses = replies.map((r) => r.status).sort();
    expect(statuses).toEqual([200, 200, 200, 503, 503, 503, 503, 503, 503, 503]);
    const health = await exchange(url, { method: 'GET', path: '/healthz' });
    expect(health.json).toMatchObject({ sessions: 3 });
  });

  it('answers the initialize beyond sessions.maxPerPrincipal with 429 and Retry-After (anonymous clients are one principal)', async () => {
    gw = await startGateway({ sessions: { maxPerPrincipal: 2 }, upstreams: {} });
    const open = [await openSession(gw.url), await openSession(gw.url)];
    const refused = await post(gw.url, initializeRequest(3));
    expectRpcError(refused, 429, INVALID_REQUEST, 3);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect(refused.text).toMatch(/DELETE/);

    expect((await deleteSession(gw.url, open[1]!)).status).toBe(200);
    expect(await openSession(gw.url)).toBeTruthy();
    expectRpcError(await post(gw.url, initializeRequest(5)), 429, INVALID_REQUEST, 5);
  });
});

describe('tools/call arguments checked at the edge', () => {
  const clients: Client[] = [];
  const gateways: TestGateway[] = [];

  afterAll(async () => {
    await Promise.allSettled(clients.map((c) => c.close()));
    await Promise.allSettled(gateways.map((g) => g.close()));
  });

  async function connectTo(upstreams: Record<string, unknown>): Promise<Client> {
    const gw = await startGateway({ upstreams });
    gateways.push(gw);
    const client = await connectClient(gw.url);
    clients.push(client);
    return client;
  }

  /** The tools/call requests the strict fixture received, without the `calls` calls themselves. */
  async function received(client: Client): Promise<{ name: string; arguments?: Record<string, unknown> }[]> {
    const calls = JSON.parse(textOf(await client.callTool({ name: 'strict__calls', arguments: {} }))) as { name: string; arguments?: Record<string, unknown> }[];
    return calls.filter((c) => c.name !== 'calls');
  }

  it('answers a wrongly typed argument with an isError result naming the field', async () => {
    const client = await connectTo({ paged: upstream.paged() });
    const result = await client.callTool({ name: 'paged__echo', arguments: { message: 5 } });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/\/message/);
    expect(textOf(result)).toMatch(/paged__echo/);
    // What the fixture would have answered had the call reached it.
    expect(textOf(result)).not.toMatch(/^echo /);
  });

  it('never forwards invalid arguments, names a missing required field, and forwards valid ones', async () => {
    const client = await connectTo({ strict: strict() });
    const wrongType = await client.callTool({ name: 'strict__echo', arguments: { message: 5 } });
    expect(wrongType.isError).toBe(true);
    expect(textOf(wrongType)).toMatch(/\/message/);

    const missing = await client.callTool({ name: 'strict__echo', arguments: { count: 1 } });
    expect(missing.isError).toBe(true);
    expect(textOf(missing)).toMatch(/\/message is required/);

    const outOfRange = await client.callTool({ name: 'strict__echo', arguments: { message: 'x', count: -1 } });
    expect(outOfRange.isError).toBe(true);
    expect(textOf(outOfRange)).toMatch(/\/count/);

    const noArguments = await client.callTool({ name: 'strict__echo' });
    expect(noArguments.isError).toBe(true);
    expect(textOf(noArguments)).toMatch(/\/message is required/);

    expect(await received(client)).toEqual([]);

    const valid = await client.callTool({ name: 'strict__echo', arguments: { message: 'fine', count: 2 } });
    expect(valid.isError).toBeFalsy();
    expect(textOf(valid)).toBe('echo {"message":"fine","count":2}');
    expect(await received(client)).toEqual([{ name: 'echo', arguments: { message: 'fine', count: 2 } }]);
  });

  it('forwards arguments unchecked to an upstream with validateArguments: false', async () => {
    const client = await connectTo({ strict: { ...strict(), validateArguments: false }, paged: { ...upstream.paged(), validateArguments: false } });
    const wrongType = await client.callTool({ name: 'strict__echo', arguments: { message: 5 } });
    expect(wrongType.isError).toBeFalsy();
    expect(textOf(wrongType)).toBe('echo {"message":5}');
    expect(await received(client)).toEqual([{ name: 'echo', arguments: { message: 5 } }]);
    expect(textOf(await client.callTool({ name: 'paged__echo', arguments: { message: 5 } }))).toBe('echo {"message":5}');
  });
});

// ---------------------------------------------------------------------------------------------
// The CLI refuses to listen unauthenticated beyond loopback.

function npmStart(args: string[]) {
  const child = spawn('npm', ['start', '--', ...args], { cwd: ROOT, stdio: 'pipe' });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return { child, output: () => ({ stdout, stderr }) };
}

describe('listening beyond loopback', () => {
  it.each(['0.0.0.0', '::', '192.0.2.10'])('exits 1 with one line naming listen.host when %s has no auth', async (host) => {
    const file = join(scratch(), `open-${host.replace(/\W/g, '_')}.yaml`);
    await writeFile(file, `${JSON.stringify({ listen: { host }, upstreams: {} })}\n`);
    const { child, output } = npmStart(['--config', file, '--port', '0']);
    try {
      expect(await waitForExit(child, 20_000)).toBe(1);
      const { stdout, stderr } = output();
      expect(stdout).toBe('');
      expect(stderr.trimEnd().split('\n')).toHaveLength(1);
      expect(stderr).toMatch(/listen\.host/);
      expect(stderr).toContain(host);
      expect(stderr).not.toMatch(/\n\s+at /);
    } finally {
      await stopChild(child);
    }
  });

  it('starts on 0.0.0.0 without auth when listen.allowUnauthenticated is true', async () => {
    const file = join(scratch(), 'open-allowed.yaml');
    await writeFile(file, `${JSON.stringify({ listen: { host: '0.0.0.0', allowUnauthenticated: true }, upstreams: {} })}\n`);
    const { child, output } = npmStart(['--config', file, '--port', '0']);
    try {
      const [, port] = await waitForLine(child, /^listening on http:\/\/0\.0\.0\.0:(\d+)\/mcp$/, 20_000);
      const reply = await post(new URL(`http://127.0.0.1:${port}/mcp`), ping(1));
      expect(reply.status).toBe(200);
      child.kill('SIGTERM');
      expect(await waitForExit(child)).toBe(0);
      expect(output().stdout.trimEnd().split('\n')).toHaveLength(1);
    } finally {
      await stopChild(child);
    }
  });

  it('prints an https URL when listen.tls is set', async () => {
    const pki = await makeTestPki();
    const file = join(scratch(), 'tls.yaml');
    await writeFile(file, `${JSON.stringify({ listen: { tls: { cert: pki.server.certFile, key: pki.server.keyFile } }, upstreams: {} })}\n`);
    const { child } = npmStart(['--config', file, '--port', '0']);
    try {
      const [, url] = await waitForLine(child, /^listening on (https:\/\/127\.0\.0\.1:\d+\/mcp)$/, 20_000);
      const reply = await exchange(new URL(url!), { method: 'GET', path: '/healthz', tls: { ca: pki.server.certPem } });
      expect(reply.status).toBe(200);
    } finally {
      await stopChild(child);
      await pki.remove();
    }
  });
});
