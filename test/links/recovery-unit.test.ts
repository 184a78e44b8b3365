// A session's resource subscriptions (links/recovery.ts), over real session records and fake
// upstream clients: at most MAX_SUBSCRIPTIONS across the session's upstreams, a place taken
// before the upstream answers (so concurrent subscribes cannot pass the cap together) and given
// back when it refuses; after an upstream restart, every subscription renewed, RENEWALS_AT_ONCE
// at a time.
import { describe, expect, it } from 'vitest';
import { GatewayError, toJsonRpcError } from '../../src/mcp/errors.js';
import type { JsonObject } from '../../src/mcp/jsonrpc.js';
import { afterRestart, claimSubscription, MAX_SUBSCRIPTIONS, RENEWALS_AT_ONCE, renewBounded } from '../../src/links/recovery.js';
import type { DownstreamSession } from '../../src/links/session.js';
import type { Catalog } from '../../src/names/lists.js';
import { UpstreamRecords } from '../../src/session/upstreams.js';
import type { UpstreamClient } from '../../src/upstream/client.js';
import { silentLogger } from '../../src/util/log.js';

/** An upstream client whose requests wait until released, counting how many were in flight at once. */
function slowClient(name: string) {
  const waiting: (() => void)[] = [];
  const seen: JsonObject[] = [];
  let inFlight = 0;
  let most = 0;
  const client = {
    name,
    closed: false,
    capabilities: { resources: { subscribe: true } },
    request(_method: string, params: JsonObject): Promise<JsonObject> {
      seen.push(params);
      most = Math.max(most, ++inFlight);
      return new Promise((resolve) =>
        waiting.push(() => {
          inFlight--;
          resolve({});
        }),
      );
    },
  };
  /** Answers what waits, round after round, until `done` settles. */
  const drain = async (done: Promise<unknown>): Promise<void> => {
    let settled = false;
    void done.finally(() => (settled = true));
    while (!settled) {
      for (const answer of waiting.splice(0)) answer();
      await new Promise((resolve) => setImmediate(resolve));
    }
  };
  return { client, seen, drain, most: () => most };
}

function sessionWith(...upstreams: string[]) {
  const links = new UpstreamRecords<UpstreamClient>();
  for (const name of upstreams) links.defer(name);
  const delivered: unknown[] = [];
  const session = { links, logLevel: undefined, deliver: (message: unknown) => void delivered.push(message) } as unknown as DownstreamSession;
  return { session, links, delivered };
}

describe('the subscription cap of a session', () => {
  it(`refuses the subscription past ${MAX_SUBSCRIPTIONS} across the session's upstreams with -32600, and takes one again once a place is given back`, () => {
    const { session, links } = sessionWith('a', 'b');
    for (let i = 0; i < MAX_SUBSCRIPTIONS / 2; i++) {
      claimSubscription(session, 'a', `file:///a/${i}`);
      claimSubscription(session, 'b', `file:///b/${i}`);
    }
    expect(links.get('a')!.subscriptions.size + links.get('b')!.subscriptions.size).toBe(MAX_SUBSCRIPTIONS);
    let refused: unknown;
    try {
      claimSubscription(session, 'b', 'file:///one-more');
    } catch (err) {
      refused = err;
    }
    expect(refused).toBeInstanceOf(GatewayError);
    expect(toJsonRpcError(refused)).toEqual({ code: -32600, message: `Too many resource subscriptions: at most ${MAX_SUBSCRIPTIONS} per session; unsubscribe from one first` });
    // A URI already subscribed takes no new place (a repeat subscribe is answered upstream as before).
    expect(() => claimSubscription(session, 'a', 'file:///a/0')).not.toThrow();
    links.get('a')!.subscriptions.delete('file:///a/0');
    const giveBack = claimSubscription(session, 'b', 'file:///one-more');
    expect(links.get('b')!.subscriptions.has('file:///one-more')).toBe(true);
    giveBack();
    expect(links.get('b')!.subscriptions.has('file:///one-more')).toBe(false);
  });
});

describe('renewing subscriptions after a restart', () => {
  it(`runs at most ${RENEWALS_AT_ONCE} at once, and counts the ones that failed`, async () => {
    let inFlight = 0;
    let most = 0;
    const done: number[] = [];
    const failed = await renewBounded(
      Array.from({ length: 100 }, (_, i) => i),
      async (i) => {
        most = Math.max(most, ++inFlight);
        await new Promise((resolve) => setImmediate(resolve));
        inFlight--;
        done.push(i);
        if (i % 10 === 0) throw new Error('refused');
      },
    );
    expect(most).toBe(RENEWALS_AT_ONCE);
    expect(done.sort((x, y) => x - y)).toEqual(Array.from({ length: 100 }, (_, i) => i));
    expect(failed).toBe(10);
  });

  it("renews every one of a session's subscriptions on the restarted upstream session, a few at a time", async () => {
    const { session, links } = sessionWith('up');
    const uris = Array.from({ length: MAX_SUBSCRIPTIONS }, (_, i) => `file:///x/${i}`);
    for (const uri of uris) links.get('up')!.subscriptions.add(uri);
    const up = slowClient('up');
    const catalog = { fingerprint: async () => undefined } as unknown as Catalog;
    await up.drain(afterRestart(session, up.client as unknown as UpstreamClient, catalog, silentLogger));
    expect(up.seen.map((params) => params.uri)).toEqual(uris);
    expect(up.most()).toBeLessThanOrEqual(RENEWALS_AT_ONCE);
  });
});
