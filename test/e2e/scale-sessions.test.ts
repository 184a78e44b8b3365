// Self-describing session ids end to end (docs/deploy.md): another gateway process with the
// same session keys takes a session over, and key rotation, tampering and another principal
// presenting the id are refused.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/auth/api-keys.js';
import { descendantsOf, running } from '../helpers/children.js';
import { poll, startCli, type CliProcess } from '../helpers/cli.js';
import { connectClient, startGateway, textOf, upstream, type TestGateway } from '../helpers/gateway.js';
import { FIXTURES, NODE } from '../helpers/paths.js';
import { startEverythingHttp, type EverythingHttp } from '../helpers/processes.js';
import { expectUnknown, gone, health, openRaw, pidOf, request, resultOf, sessionKey, sessionOf, statusOf, trackProcesses, UNKNOWN_SESSION, WAIT_MS } from '../helpers/scale.js';

// Every descendant of this worker seen during the file must be gone at its end.
const noteDescendants = trackProcesses('every process the session-id tests started');

describe('two gateway processes with the same session keys', () => {
  let dir: string;
  let remote: EverythingHttp;
  let a: CliProcess | undefined;
  let b: CliProcess | undefined;
  const clients: Client[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'switchyard-scale-'));
    remote = await startEverythingHttp();
    const file = join(dir, 'gateway.yaml');
    const config = {
      // No probes: the upstream's initialize count is then the sessions' alone.
      health: { probeInterval: 0 },
      sessions: { keys: [sessionKey()] },
      upstreams: { remote: { http: { url: remote.url } }, rogue: { stdio: { command: NODE, args: [join(FIXTURES, 'rogue-server.mjs')] } } },
    };
    // JSON is YAML.
    await writeFile(file, `${JSON.stringify(config, null, 2)}\n`);
    const started = await Promise.allSettled([startCli(file), startCli(file)]);
    [a, b] = started.map((s) => (s.status === 'fulfilled' ? s.value : undefined));
    const failed = started.find((s) => s.status === 'rejected');
    if (failed) throw (failed as PromiseRejectedResult).reason;
  }, 60_000);

  afterAll(async () => {
    await Promise.allSettled(clients.splice(0).map((c) => c.close()));
    await noteDescendants();
    await Promise.allSettled([a?.stop(), b?.stop()]);
    await remote?.close();
    await rm(dir, { recursive: true, force: true });
  }, 30_000);

  it('continues a session opened on A through B: the HTTP upstream session taken over, stdio started afresh, DELETE ends it', async () => {
    const onA = await connectClient(a!.url);
    clients.push(onA);
    const session = sessionOf(onA);
    const childOnA = await pidOf(onA);
    expect(textOf(await onA.callTool({ name: 'remote__echo', arguments: { message: 'via A' } }))).toBe('Echo: via A');
    const before = await remote.stats();
    expect(before.sessions).toBe(1);

    // B never saw this session: it opens it from the id.
    const listed = resultOf(await request(b!.url, session, 1, 'tools/list'), 1);
    expect((listed.tools as { name: string }[]).map((t) => t.name)).toEqual(expect.arrayContaining(['remote__echo', 'remote__trigger-long-running-operation', 'rogue__pid']));
    await b!.waitForLog((line) => line.msg === 'session resumed from its id', 'the takeover');
    expect(textOf(resultOf(await request(b!.url, session, 2, 'tools/call', { name: 'remote__echo', arguments: { message: 'via B' } }), 2))).toBe('Echo: via B');
    const childOnB = Number(textOf(resultOf(await request(b!.url, session, 3, 'tools/call', { name: 'rogue__pid', arguments: {} }), 3)));
    expect(childOnB).not.toBe(childOnA);
    expect(await running(childOnB)).toBe(true);
    expect((await descendantsOf(b!.gatewayPid)).includes(childOnB)).toBe(true);

    const slow = await request(b!.url, session, 4, 'tools/call', {
      name: 'remote__trigger-long-running-operation',
      arguments: { duration: 0.6, steps: 3 },
      _meta: { progressToken: 'via-b' },
    });
    expect(textOf(resultOf(slow, 4))).toMatch(/Steps: 3/);
    expect(slow.messages.filter((m) => m.method === 'notifications/progress').map((m) => m.params)).toEqual(
      [1, 2, 3].map((progress) => ({ progressToken: 'via-b', progress, total: 3 })),
    );

    // The upstream session was continued, not opened again.
    const during = await remote.stats();
    expect(during.initializes).toBe(before.initializes);
    expect(during.sessions).toBe(before.sessions);
    // A still serves it too.
    expect(textOf(await onA.callTool({ name: 'remote__echo', arguments: { message: 'A again' } }))).toBe('Echo: A again');

    await noteDescendants();
    expect(await statusOf(b!.url, 'DELETE', session)).toBe(200);
    await poll(async () => ((await remote.stats()).deletes > before.deletes ? true : undefined), 'the upstream session to be deleted', WAIT_MS);
    await gone([childOnB], "B's child for the session");
    expect(await running(childOnA)).toBe(true);

    // Gone on B: it ended there and must not be opened again from its id.
    // Gone on B: it ended there and must not be opened again from its id (nor its upstream
    // session renewed for it).
    const afterDelete = await request(b!.url, session, 5, 'tools/list');
    expect.soft(afterDelete.status, 'B after DELETE').toBe(404);
    expect.soft(afterDelete.messages, 'B after DELETE').toEqual([UNKNOWN_SESSION]);
    expect.soft((await remote.stats()).initializes, 'upstream initializes after DELETE').toBe(before.initializes);
    expect.soft(b!.logs().filter((line) => line.msg === 'session resumed from its id'), 'takeovers on B').toHaveLength(1);
  }, 60_000);
});

describe('self-describing session ids', () => {
  const OLD = sessionKey();
  const NEW = sessionKey();
  const OTHER = sessionKey();
  const ALICE = `sk-alice-${randomBytes(12).toString('hex')}`;
  const BOB = `sk-bob-${randomBytes(12).toString('hex')}`;
  const asAlice = { 'x-api-key': ALICE };
  const asBob = { 'x-api-key': BOB };
  const upstreams = () => ({ rogue: upstream.rogue() });
  const auth = { apiKeys: [{ id: 'alice', hash: hashApiKey(ALICE) }, { id: 'bob', hash: hashApiKey(BOB) }] };

  /** keys [OLD]; one with [OTHER]; rotating: [NEW, OLD]; rotated: [NEW]; two with auth and [OLD]. */
  let sealer: TestGateway;
  let stranger: TestGateway;
  let rotating: TestGateway;
  let rotated: TestGateway;
  let alpha: TestGateway;
  let beta: TestGateway;

  beforeAll(async () => {
    const started = await Promise.allSettled([
      startGateway({ upstreams: upstreams(), sessions: { keys: [OLD] } }),
      startGateway({ upstreams: upstreams(), sessions: { keys: [OTHER] } }),
      startGateway({ upstreams: upstreams(), sessions: { keys: [NEW, OLD] } }),
      startGateway({ upstreams: upstreams(), sessions: { keys: [NEW] } }),
      startGateway({ upstreams: upstreams(), sessions: { keys: [OLD] }, auth }),
      startGateway({ upstreams: upstreams(), sessions: { keys: [OLD] }, auth }),
    ]);
    const [s, o, r, n, x, y] = started.map((p) => (p.status === 'fulfilled' ? p.value : undefined));
    [sealer, stranger, rotating, rotated, alpha, beta] = [s!, o!, r!, n!, x!, y!];
    const failed = started.find((p) => p.status === 'rejected');
    if (failed) throw (failed as PromiseRejectedResult).reason;
  });

  afterAll(async () => {
    await noteDescendants();
    await Promise.allSettled([sealer, stranger, rotating, rotated, alpha, beta].map((g) => g?.close()));
  });

  const pidVia = async (gw: TestGateway, session: string, id: number, extra?: Record<string, string>): Promise<number> =>
    Number(textOf(resultOf(await request(gw.url, session, id, 'tools/call', { name: 'rogue__pid', arguments: {} }, extra), id)));

  it('are visible ASCII; a tampered id is unknown, on the gateway that sealed it too', async () => {
    const id = await openRaw(sealer.url);
    expect(id).toMatch(/^[\x21-\x7e]+$/);
    expect(id.length).toBeGreaterThan(64);
    const middle = Math.floor(id.length / 2);
    const tampered = `${id.slice(0, middle)}${id[middle] === 'A' ? 'B' : 'A'}${id.slice(middle + 1)}`;
    for (const gw of [sealer, rotating]) {
      expectUnknown(await request(gw.url, tampered, 1, 'tools/list'), 'a tampered id');
      expect(await statusOf(gw.url, 'GET', tampered)).toBe(404);
      expect(await statusOf(gw.url, 'DELETE', tampered)).toBe(404);
    }
    // The real one still works.
    expect(await pidVia(sealer, id, 2)).toBeGreaterThan(0);
    expect(await statusOf(sealer.url, 'DELETE', id)).toBe(200);
  });

  it('is unknown to a gateway with another key', async () => {
    const id = await openRaw(sealer.url);
    expectUnknown(await request(stranger.url, id, 1, 'tools/list'), 'another key');
    expect(await statusOf(stranger.url, 'DELETE', id)).toBe(404);
    expect(await statusOf(sealer.url, 'DELETE', id)).toBe(200);
  });

  it('survives key rotation: [new, old] opens ids sealed under old, [new] alone does not', async () => {
    const id = await openRaw(sealer.url);
    const childOnSealer = await pidVia(sealer, id, 1);
    // Resumed on the rotating gateway: a child of its own for the session.
    const childOnRotating = await pidVia(rotating, id, 2);
    expect(childOnRotating).not.toBe(childOnSealer);
    expectUnknown(await request(rotated.url, id, 3, 'tools/list'), 'an old-key id on a new-key-only gateway');

    // What the rotating gateway seals uses the new key: the rotated gateway opens it, the old one not.
    const fresh = await openRaw(rotating.url);
    expect(await pidVia(rotated, fresh, 4)).toBeGreaterThan(0);
    expectUnknown(await request(sealer.url, fresh, 5, 'tools/list'), 'a new-key id on an old-key-only gateway');
    await Promise.allSettled([statusOf(sealer.url, 'DELETE', id), statusOf(rotating.url, 'DELETE', id), statusOf(rotating.url, 'DELETE', fresh), statusOf(rotated.url, 'DELETE', fresh)]);
  });

  it("is unknown to another principal, here and on another replica, while the owner keeps using it", async () => {
    const id = await openRaw(alpha.url, asAlice);
    for (const [name, gw] of [['alpha (the session\'s own)', alpha], ['beta (never saw it)', beta]] as const) {
      expectUnknown(await request(gw.url, id, 1, 'tools/call', { name: 'rogue__pid', arguments: {} }, asBob), `bob on ${name}`);
      expect(await statusOf(gw.url, 'GET', id, asBob), `bob's GET on ${name}`).toBe(404);
      expect(await statusOf(gw.url, 'DELETE', id, asBob), `bob's DELETE on ${name}`).toBe(404);
    }
    // The owner takes it over on beta, and beta still refuses bob now that it knows the session.
    const onBeta = await pidVia(beta, id, 2, asAlice);
    expect(onBeta).toBeGreaterThan(0);
    expectUnknown(await request(beta.url, id, 3, 'tools/list', {}, asBob), 'bob on beta after the takeover');
    expect(await pidVia(alpha, id, 4, asAlice)).not.toBe(onBeta);

    // An id of an unauthenticated session (same key) is nobody's: unknown to bob.
    const anonymous = await openRaw(sealer.url);
    expectUnknown(await request(beta.url, anonymous, 5, 'tools/list', {}, asBob), "an anonymous session's id presented by bob");
    await Promise.allSettled([
      statusOf(alpha.url, 'DELETE', id, asAlice),
      statusOf(beta.url, 'DELETE', id, asAlice),
      statusOf(sealer.url, 'DELETE', anonymous),
    ]);
  });
});
