// The lifecycle of the real CLI process (`npm start`): graceful drain on SIGTERM, the grace
// period, readiness, and hot reload of the config file by a file change or SIGHUP.
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { alive, poll, startCli, type CliProcess } from '../helpers/cli.js';
import { connectClient, recordNotifications, textOf, type NotificationLog } from '../helpers/gateway.js';
import { FIXTURES, NODE } from '../helpers/paths.js';
import { waitForExit } from '../helpers/processes.js';
import { initializeMessage, initializeRaw, openStream, postRaw } from '../helpers/raw-http.js';
import { SseReader } from '../helpers/sse-reader.js';

const LATEST = '2025-11-25';
const TOOLS_CHANGED = 'notifications/tools/list_changed';

const rogue = () => ({ stdio: { command: NODE, args: [join(FIXTURES, 'rogue-server.mjs')] } });
const broken = () => ({ stdio: { command: NODE, args: ['-e', 'process.exit(1)'] } });

let root: string;
/** What the current test started, stopped after it whatever happened. */
const running: CliProcess[] = [];
const clients: Client[] = [];

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'switchyard-lifecycle-'));
});

afterEach(async () => {
  await Promise.allSettled(clients.splice(0).map((c) => c.close()));
  await Promise.allSettled(running.splice(0).map((cli) => cli.stop()));
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

/** A directory of the test's own, so no other test's writes wake its config watcher. */
async function freshDir(): Promise<string> {
  return mkdtemp(join(root, 'case-'));
}

/** Writes a config; JSON is YAML, so the file is the object as JSON. */
async function writeConfig(file: string, config: Record<string, unknown>): Promise<void> {
  await writeFile(file, `${JSON.stringify(config, null, 2)}\n`);
}

async function start(file: string): Promise<CliProcess> {
  const cli = await startCli(file);
  running.push(cli);
  return cli;
}

async function connect(cli: CliProcess): Promise<{ client: Client; notes: NotificationLog }> {
  let notes: NotificationLog | undefined;
  const client = await connectClient(cli.url, {}, (c) => (notes = recordNotifications(c)));
  clients.push(client);
  return { client, notes: notes! };
}

function sessionId(client: Client): string | undefined {
  return (client.transport as StreamableHTTPClientTransport).sessionId;
}

async function toolNames(client: Client): Promise<string[]> {
  return (await client.listTools()).tools.map((t) => t.name);
}

async function pidOf(client: Client, tool: string): Promise<number> {
  return Number(textOf(await client.callTool({ name: tool, arguments: {} })));
}

interface Health {
  ready?: boolean;
  draining?: boolean;
  upstreamUp?: boolean;
  status?: string;
  upstreams: Record<string, { state: string; pending: number }>;
}

async function health(cli: CliProcess, path: '/readyz' | '/healthz'): Promise<{ status: number; body: Health }> {
  const res = await fetch(new URL(path, cli.url), { signal: AbortSignal.timeout(5_000) });
  return { status: res.status, body: (await res.json()) as Health };
}

/** Resolves once the gateway has the upstream's call in flight (it counts pending requests). */
async function inFlight(cli: CliProcess, upstream: string): Promise<void> {
  await poll(async () => ((await health(cli, '/healthz')).body.upstreams[upstream]?.pending ?? 0) > 0 || undefined, `a call in flight to ${upstream}`);
}

/** A raw initialize, its answer unread: what a new client sends first. */
function initialize(url: URL): Promise<Response> {
  return postRaw(url, initializeMessage({ protocolVersion: LATEST, id: 1 }), { timeoutMs: 5_000 });
}

/** A raw session with its standalone GET stream open, to read exactly what the stream carries. */
async function rawStream(url: URL): Promise<SseReader> {
  const session = await initializeRaw(url, { protocolVersion: LATEST, id: 1, timeoutMs: 5_000 });
  // Unbounded: the test holds the stream and reads it to its end.
  const stream = new SseReader(await openStream(url, { headers: session.headers, signal: null }));
  expect((await stream.next(5_000, 'the priming event'))?.retry).toBeDefined();
  return stream;
}

/** 'error' when the call was refused (a JSON-RPC error or an error result), else its text. */
async function outcome(call: Promise<unknown>): Promise<string> {
  try {
    const result = (await call) as { isError?: boolean };
    return result.isError ? 'error' : textOf(result);
  } catch {
    return 'error';
  }
}

/** How a promise settled, or 'pending' if it had not after `timeoutMs`. */
async function settledWithin(promise: Promise<unknown>, timeoutMs: number): Promise<'fulfilled' | 'rejected' | 'pending'> {
  let timer: NodeJS.Timeout | undefined;
  const pending = new Promise<'pending'>((resolve) => (timer = setTimeout(() => resolve('pending'), timeoutMs)));
  try {
    return await Promise.race([promise.then(() => 'fulfilled' as const, () => 'rejected' as const), pending]);
  } finally {
    clearTimeout(timer);
  }
}

describe('shutdown', () => {
  it('drains on SIGTERM: not ready at once, new sessions refused, the call in flight completes, exit 0', async () => {
    const file = join(await freshDir(), 'gateway.yaml');
    await writeConfig(file, { upstreams: { rogue: rogue() } });
    const cli = await start(file);
    const { client } = await connect(cli);
    const child = await pidOf(client, 'rogue__pid');
    const stream = await rawStream(cli.url);

    const call = client.callTool({ name: 'rogue__slow', arguments: { ms: 1_500 } }, CallToolResultSchema, { timeout: 20_000 });
    let callDoneAt = Infinity;
    void call.then(() => (callDoneAt = Date.now()), () => {});
    await inFlight(cli, 'rogue');

    // npm forwards SIGTERM to the gateway it `exec`ed (the same pid as the script's shell).
    expect(cli.child.kill('SIGTERM')).toBe(true);
    let streamEndedAt = Infinity;
    const rest = stream.rest(15_000).then((events) => ((streamEndedAt = Date.now()), events));

    const draining = await poll(async () => {
      const readyz = await health(cli, '/readyz');
      return readyz.body.draining ? readyz : undefined;
    }, '/readyz to report draining', 2_000, 20);
    expect(draining.status).toBe(503);
    expect(draining.body).toMatchObject({ ready: false, draining: true });
    const refused = await initialize(cli.url);
    expect(refused.status).toBe(503);
    await refused.body?.cancel();
    expect(callDoneAt).toBe(Infinity); // all that happened while the call was still running

    expect(textOf(await call)).toBe('slow done');
    // The open stream ends only after the call: with a retry hint (no id, no data), then EOF.
    const events = await rest;
    expect(events).toContainEqual({ retry: expect.any(Number) });
    expect(streamEndedAt).toBeGreaterThanOrEqual(callDoneAt);

    expect(await waitForExit(cli.child, 10_000)).toBe(0);
    expect(alive(cli.gatewayPid)).toBe(false);
    expect(alive(child)).toBe(false);
    expect(cli.stdout()).toBe(`listening on ${cli.url.href}\n`);
  });

  it('exits 0 soon after shutdown.gracePeriod when a call outlasts it, and the call fails', async () => {
    const file = join(await freshDir(), 'gateway.yaml');
    await writeConfig(file, { upstreams: { rogue: rogue() }, shutdown: { gracePeriod: '300ms' } });
    const cli = await start(file);
    const { client } = await connect(cli);
    const child = await pidOf(client, 'rogue__pid');
    const call = client.callTool({ name: 'rogue__slow', arguments: { ms: 10_000 } }, CallToolResultSchema, { timeout: 60_000 });
    call.catch(() => {});
    await inFlight(cli, 'rogue');

    const signalledAt = Date.now();
    cli.child.kill('SIGTERM');
    expect(await waitForExit(cli.child, 5_000)).toBe(0);
    expect(Date.now() - signalledAt).toBeLessThan(5_000);
    expect(alive(child)).toBe(false);
    // The gateway is gone: the client must learn that its call failed, not wait out its timeout.
    // Regression test: the drain aborts the call without answering it (router.ts handleRequest
    // owes no response to any aborted request) and hangs up with a retry hint, so the SDK keeps
    // trying to resume a stream of a gateway that no longer exists.
    expect(await settledWithin(call, 5_000), 'the call 5 s after the gateway exited').toBe('rejected');
  });
});

describe('readiness', () => {
  it('turns ready once a probe reached an upstream', async () => {
    const file = join(await freshDir(), 'gateway.yaml');
    await writeConfig(file, { upstreams: { rogue: rogue() }, health: { probeInterval: 500 } });
    const cli = await start(file);
    const ready = await poll(async () => {
      const readyz = await health(cli, '/readyz');
      return readyz.status === 200 ? readyz : undefined;
    }, '/readyz to answer 200');
    expect(ready.body).toMatchObject({ ready: true, listening: true, draining: false, upstreamUp: true, upstreams: { rogue: { state: 'up' } } });
  });

  it('stays unready with only a broken upstream, while /healthz answers 200', async () => {
    const file = join(await freshDir(), 'gateway.yaml');
    await writeConfig(file, { upstreams: { broken: broken() }, health: { probeInterval: 500 } });
    const cli = await start(file);
    await poll(async () => ((await health(cli, '/readyz')).body.upstreams.broken?.state === 'down' ? true : undefined), 'the broken upstream to be down', 15_000);
    // Several probe intervals later it is still down and the gateway still not ready.
    const until = Date.now() + 1_500;
    while (Date.now() < until) {
      const readyz = await health(cli, '/readyz');
      expect(readyz.status).toBe(503);
      expect(readyz.body).toMatchObject({ ready: false, listening: true, draining: false, upstreamUp: false, upstreams: { broken: { state: 'down' } } });
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const healthz = await health(cli, '/healthz');
    expect(healthz.status).toBe(200);
    expect(healthz.body.status).toBe('ok');
  });
});

describe('hot reload', () => {
  it('adds and removes upstreams in running sessions when the config file changes', async () => {
    const file = join(await freshDir(), 'gateway.yaml');
    await writeConfig(file, { upstreams: { a: rogue() } });
    const cli = await start(file);
    const { client, notes } = await connect(cli);
    const session = sessionId(client);
    expect(session).toBeDefined();
    expect(await toolNames(client)).toContain('a__pid');
    const childOfA = await pidOf(client, 'a__pid');

    await writeConfig(file, { upstreams: { a: rogue(), b: rogue() } });
    await notes.waitFor((n) => n.method === TOOLS_CHANGED, 'tools/list_changed after adding b');
    const names = await toolNames(client);
    expect(names).toEqual(expect.arrayContaining(['a__pid', 'a__slow', 'b__pid', 'b__slow']));
    // The same session, and `a` untouched: the very same child process answers.
    expect(sessionId(client)).toBe(session);
    expect(await pidOf(client, 'a__pid')).toBe(childOfA);
    const childOfB = await pidOf(client, 'b__pid');
    expect(childOfB).not.toBe(childOfA);

    const heard = notes.all.filter((n) => n.method === TOOLS_CHANGED).length;
    await writeConfig(file, { upstreams: { b: rogue() } });
    await poll(() => (notes.all.filter((n) => n.method === TOOLS_CHANGED).length > heard ? true : undefined), 'tools/list_changed after removing a');
    const after = await toolNames(client);
    expect(after.filter((n) => n.startsWith('a__'))).toEqual([]);
    expect(after).toContain('b__pid');
    expect(await outcome(client.callTool({ name: 'a__pid', arguments: {} }))).toBe('error');
    expect(await pidOf(client, 'b__pid')).toBe(childOfB);
    expect(sessionId(client)).toBe(session);
    await poll(() => (alive(childOfA) ? undefined : true), `a's child ${childOfA} to exit`);
    expect(Object.keys((await health(cli, '/healthz')).body.upstreams)).toEqual(['b']);
  });

  it('restarts a changed upstream inside running sessions and leaves the others alone', async () => {
    const file = join(await freshDir(), 'gateway.yaml');
    await writeConfig(file, { upstreams: { a: rogue(), b: rogue() } });
    const cli = await start(file);
    const { client, notes } = await connect(cli);
    const session = sessionId(client);
    const [childOfA, childOfB] = [await pidOf(client, 'a__pid'), await pidOf(client, 'b__pid')];

    await writeConfig(file, { upstreams: { a: { ...rogue(), timeoutMs: 30_000 }, b: rogue() } });
    await notes.waitFor((n) => n.method === TOOLS_CHANGED, 'tools/list_changed after changing a');
    const newChildOfA = await pidOf(client, 'a__pid');
    expect(newChildOfA).not.toBe(childOfA);
    expect(await pidOf(client, 'b__pid')).toBe(childOfB);
    expect(sessionId(client)).toBe(session);
    await poll(() => (alive(childOfA) ? undefined : true), `a's old child ${childOfA} to exit`);
  });

  it('rejects an invalid config with one error line and keeps serving the running one', async () => {
    const file = join(await freshDir(), 'gateway.yaml');
    await writeConfig(file, { upstreams: { a: rogue() } });
    const cli = await start(file);
    const { client } = await connect(cli);
    const childOfA = await pidOf(client, 'a__pid');
    const rejected = (line: { msg: string }): boolean => line.msg.includes('config reload rejected');

    await writeConfig(file, { upstreams: { a: rogue(), b: rogue() }, bogus: 1 });
    const line = await cli.waitForLog(rejected, 'config reload rejected');
    expect(line.level).toBe('error');
    expect(line.msg).toBe(`config reload rejected, keeping the running config: ${file}: bogus: unknown key`);
    expect(await toolNames(client)).not.toContain('b__pid');
    expect(await pidOf(client, 'a__pid')).toBe(childOfA);

    // A valid change afterwards applies; by then any repeat of the rejection would have shown.
    await writeConfig(file, { upstreams: { a: rogue(), b: rogue() } });
    await cli.waitForLog((l) => l.msg === 'config reloaded', 'config reloaded');
    expect(cli.logs().filter(rejected)).toHaveLength(1);
    expect(cli.stderr().split('\n').filter((l) => l.includes('config reload rejected'))).toHaveLength(1);
    expect(await poll(async () => ((await toolNames(client)).includes('b__pid') ? true : undefined), 'b in tools/list')).toBe(true);
    expect(await pidOf(client, 'a__pid')).toBe(childOfA);
  });

  it('reloads on SIGHUP a change the file watcher cannot see', async () => {
    // --config names a symlink; the watcher watches the symlink's directory, so writing the
    // target elsewhere wakes nothing: only SIGHUP can apply the change.
    const dir = await freshDir();
    const target = join(dir, 'elsewhere', 'real.yaml');
    await mkdir(join(dir, 'elsewhere'));
    await mkdir(join(dir, 'watched'));
    const file = join(dir, 'watched', 'gateway.yaml');
    await writeConfig(target, { upstreams: { a: rogue() } });
    await symlink(target, file);
    const cli = await start(file);
    const { client, notes } = await connect(cli);
    expect(await toolNames(client)).not.toContain('b__pid');

    await writeConfig(target, { upstreams: { a: rogue(), b: rogue() } });
    // npm does not forward SIGHUP (it would die of it): signal the gateway itself.
    process.kill(cli.gatewayPid, 'SIGHUP');
    await notes.waitFor((n) => n.method === TOOLS_CHANGED, 'tools/list_changed after SIGHUP');
    expect(await toolNames(client)).toContain('b__pid');
    expect(await outcome(client.callTool({ name: 'b__pid', arguments: {} }))).toMatch(/^\d+$/);
    expect(cli.child.exitCode).toBeNull();
  });

  it('keeps running on a change of listen alone and warns that it needs a restart', async () => {
    const file = join(await freshDir(), 'gateway.yaml');
    await writeConfig(file, { upstreams: { a: rogue() } });
    const cli = await start(file);
    const { client } = await connect(cli);
    const childOfA = await pidOf(client, 'a__pid');

    await writeConfig(file, { listen: { path: '/elsewhere' }, upstreams: { a: rogue() } });
    const warning = await cli.waitForLog((l) => l.msg.includes('restart'), 'the restart warning');
    expect(warning).toMatchObject({ level: 'warn', keys: ['listen'] });
    expect(cli.child.exitCode).toBeNull();
    // The old endpoint still serves the same session and child; the new path is not served.
    expect(await pidOf(client, 'a__pid')).toBe(childOfA);
    const moved = await initialize(new URL('/elsewhere', cli.url));
    expect(moved.status).toBe(404);
    await moved.body?.cancel();
    expect((await health(cli, '/healthz')).status).toBe(200);
  });
});
