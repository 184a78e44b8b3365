// A draining gateway and a 2026-07-28 call it parked on input_required: the client's retry (its
// requestState names the call, which only this replica holds) is taken and the call completes,
// so the drain ends with it rather than after shutdown.gracePeriod. Any other 2026-07-28
// request gets the drain's 503 unrun, also one of a principal whose gateway-held session is open
// here, and one whose requestState names no call parked here. (test/e2e/drain-busy-session.test.ts:
// the sessions era's counterpart.)
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/auth/api-keys.js';
import { startGateway, upstream, type TestGateway } from '../helpers/gateway.js';
import { callStateless, type Sent } from '../helpers/stateless-wire.js';

const KEY = 'k-drain-stateless-0123456789';
const OTHER_KEY = 'k-drain-stateless-other-0123';
const PRINCIPAL = { 'x-api-key': KEY };
const GRACE_MS = 20_000;
const ASK = { method: 'elicitation/create', params: { message: 'still there?', requestedSchema: { type: 'object', properties: { a: { type: 'string' } } } } };

let gw: TestGateway | undefined;
let dir: string | undefined;

afterEach(async () => {
  await gw?.close();
  gw = undefined;
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

/** The drain's 503: unread (id null), or read and refused unrun (with the request's id). */
function expectShuttingDown(sent: Sent, id: number): void {
  expect(sent.status, JSON.stringify(sent.body)).toBe(503);
  expect(sent.body).toMatchObject({ jsonrpc: '2.0', error: { code: -32603, message: 'Service Unavailable: the gateway is shutting down' } });
  expect([null, id]).toContain(sent.body!.id);
}

describe('a 2026-07-28 call parked here when the gateway drains', () => {
  it("takes the client's retry and completes the call, the drain ending with it; every other new request gets 503 unrun", async () => {
    dir = mkdtempSync(join(tmpdir(), 'switchyard-drain-stateless-'));
    const record = join(dir, 'rogue.jsonl');
    gw = await startGateway({
      shutdown: { gracePeriod: `${GRACE_MS}ms` },
      auth: { apiKeys: [{ id: 'drainer', hash: hashApiKey(KEY) }, { id: 'other', hash: hashApiKey(OTHER_KEY) }] },
      upstreams: { rogue: upstream.rogue({ RECORD_FILE: record }) },
    });
    const url = gw.url;
    const first = await callStateless(url, 1, 'rogue__ask', ASK, {}, PRINCIPAL);
    const parked = first.body?.result as { resultType: string; inputRequests: Record<string, unknown>; requestState: string };
    expect(parked.resultType).toBe('input_required');
    const key = Object.keys(parked.inputRequests)[0]!;

    const started = Date.now();
    const drained = gw.gateway.drain();
    // New requests start nothing: of the principal whose gateway-held session is open here, of
    // another principal (none open here), and a retry whose requestState names no call parked here.
    expectShuttingDown(await callStateless(url, 2, 'rogue__stderr', { text: 'ran-during-drain' }, {}, PRINCIPAL), 2);
    expectShuttingDown(await callStateless(url, 3, 'rogue__stderr', { text: 'ran-during-drain' }, {}, { 'x-api-key': OTHER_KEY }), 3);
    expectShuttingDown(await callStateless(url, 4, 'rogue__ask', ASK, { requestState: 'made-up.state', inputResponses: { [key]: { action: 'decline' } } }, PRINCIPAL), 4);

    // The retry of the parked call is taken and the call completes.
    const retry = await callStateless(url, 5, 'rogue__ask', ASK, { requestState: parked.requestState, inputResponses: { [key]: { action: 'accept', content: { a: 'yes' } } } }, PRINCIPAL);
    expect(retry.status).toBe(200);
    expect(retry.body).toMatchObject({ jsonrpc: '2.0', id: 5, result: { resultType: 'complete' } });
    expect(JSON.parse((retry.body!.result as { content: { text: string }[] }).content[0]!.text)).toEqual({ result: { action: 'accept', content: { a: 'yes' } } });

    // The drain ends once that call has: nothing was cancelled for the grace period running out.
    await drained;
    expect(Date.now() - started).toBeLessThan(GRACE_MS / 2);
    expect(gw.logs.filter((line) => line.includes('grace period over'))).toEqual([]);
    // None of the refused requests reached the upstream.
    expect(readFileSync(record, 'utf8')).not.toContain('ran-during-drain');
  }, 40_000);
});
