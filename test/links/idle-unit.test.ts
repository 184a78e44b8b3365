// The idle sweep on its own (fake clock, real session records, fake upstream clients): an own
// upstream session is closed only when consecutive sweeps saw it with nothing in flight and no
// new request for its upstream's idleTimeout; a request in flight, a subscription, a task, a
// server-initiated request waiting for the client, `stateful`, a shared lease or no timeout
// keep it; without an idleTimeout only a stdio upstream said to be stateless (`stateful: false`)
// goes, after 5 min; catalog sessions keep the 5 min stdio default.
import { describe, expect, it } from 'vitest';
import { configSchema } from '../../src/config/schema.js';
import { catalogIdleTimeoutOf, idleTimeoutOf, sweepIdle, type IdleSweepDeps } from '../../src/links/idle.js';
import { UpstreamRecords } from '../../src/session/upstreams.js';
import { silentLogger } from '../../src/util/log.js';

const upstreamConfig = (extra: Record<string, unknown>) => configSchema.parse({ upstreams: { u: { stdio: { command: 'x' }, ...extra } } }).upstreams.u!;

function setup(extra: Record<string, unknown> = { idleTimeout: 1_000 }) {
  const client = { closed: false, pendingCount: 0, requests: 0, close: async () => void (client.closed = true) };
  const links = new UpstreamRecords<typeof client>();
  links.attach('u', client);
  const waiting = new Map<number, { upstream: string }>();
  const session = { id: 'session-1', links, clientRequests: { values: () => [...waiting].values() } };
  const config = upstreamConfig(extra);
  const deps = {
    pool: { config: () => config },
    sessions: { all: () => [session] },
    catalogs: { sweep: () => {} },
    logger: silentLogger,
  } as unknown as IdleSweepDeps;
  return { client, links, waiting, deps };
}

describe('idleTimeoutOf', () => {
  it('is off unless the config says the upstream is stateless (5 min for stdio) or sets idleTimeout; 0 is off; never for stateful or shared upstreams', () => {
    expect(idleTimeoutOf(upstreamConfig({}))).toBeUndefined();
    expect(idleTimeoutOf(upstreamConfig({ stateful: false }))).toBe(300_000);
    expect(idleTimeoutOf(upstreamConfig({ idleTimeout: '2s' }))).toBe(2_000);
    expect(idleTimeoutOf(upstreamConfig({ stateful: true, idleTimeout: '2s' }))).toBeUndefined();
    expect(idleTimeoutOf(configSchema.parse({ upstreams: { u: { http: { url: 'http://127.0.0.1:1/mcp' }, stateful: false } } }).upstreams.u)).toBeUndefined();
    expect(idleTimeoutOf(configSchema.parse({ upstreams: { u: { http: { url: 'http://127.0.0.1:1/mcp' } } } }).upstreams.u)).toBeUndefined();
    expect(idleTimeoutOf(configSchema.parse({ upstreams: { u: { http: { url: 'http://127.0.0.1:1/mcp' }, idleTimeout: '2s' } } }).upstreams.u)).toBe(2_000);
    expect(idleTimeoutOf(upstreamConfig({ idleTimeout: 0 }))).toBeUndefined();
    expect(idleTimeoutOf(upstreamConfig({ stateful: true }))).toBeUndefined();
    expect(idleTimeoutOf(upstreamConfig({ sharing: 'shared' }))).toBeUndefined();
  });

  it("never reaps a principal's own link to a userAuth or tokenExchange upstream, whatever its idleTimeout", () => {
    const http = (extra: Record<string, unknown>) => configSchema.parse({ auth: { oauth: { issuer: 'https://idp.example', jwksUri: 'https://idp.example/keys', resource: 'https://mcp.example/mcp', login: { clientId: 'c', clientSecret: 's' } } }, credentials: { key: 'k'.repeat(40) }, listen: { publicUrl: 'https://mcp.example/mcp' }, upstreams: { u: { http: { url: 'http://127.0.0.1:1/mcp', ...extra }, idleTimeout: '2s' } } }).upstreams.u;
    expect(idleTimeoutOf(http({}))).toBe(2_000);
    expect(idleTimeoutOf(http({ tokenExchange: { audience: 'api://u' } }))).toBeUndefined();
    expect(idleTimeoutOf(http({ userAuth: { type: 'secret' } }))).toBeUndefined();
  });

  it('leaves catalog sessions (lists only) at 5 min for stdio by default', () => {
    expect(catalogIdleTimeoutOf(upstreamConfig({}))).toBe(300_000);
    expect(catalogIdleTimeoutOf(upstreamConfig({ idleTimeout: '2s' }))).toBe(2_000);
    expect(catalogIdleTimeoutOf(upstreamConfig({ stateful: true }))).toBeUndefined();
  });
});

describe('sweepIdle', () => {
  it('closes an own session seen idle for the timeout, and the session lists from the catalog again', () => {
    const { client, links, deps } = setup();
    sweepIdle(deps, 0);
    sweepIdle(deps, 999);
    expect(client.closed).toBe(false);
    sweepIdle(deps, 1_000);
    expect(client.closed).toBe(true);
    expect(links.get('u')).toMatchObject({ client: undefined, deferred: true });
  });

  it("never ends an upstream session a portable session's id carries: other replicas use it", () => {
    const { client, deps } = setup();
    Object.assign(client, { upstreamSessionId: 'up-1' });
    const [session] = (deps.sessions as unknown as { all: () => Array<{ portable?: boolean }> }).all();
    session!.portable = true;
    sweepIdle(deps, 0);
    sweepIdle(deps, 10_000);
    expect(client.closed).toBe(false);
    // A session of this replica alone (no self-describing id) lets it go as before.
    session!.portable = false;
    sweepIdle(deps, 20_000);
    sweepIdle(deps, 30_000);
    expect(client.closed).toBe(true);
  });

  it('starts counting again after a request, however short', () => {
    const { client, deps } = setup();
    sweepIdle(deps, 0);
    client.requests++;
    sweepIdle(deps, 900);
    sweepIdle(deps, 1_800);
    expect(client.closed).toBe(false);
    sweepIdle(deps, 1_900);
    expect(client.closed).toBe(true);
  });

  it.each([
    ['a request in flight', (s: ReturnType<typeof setup>) => void (s.client.pendingCount = 1)],
    ['a subscription', (s: ReturnType<typeof setup>) => void s.links.get('u')!.subscriptions.add('file:///a')],
    ['a task', (s: ReturnType<typeof setup>) => void s.links.get('u')!.keepForTask()],
    ['a server-initiated request waiting for the client', (s: ReturnType<typeof setup>) => void s.waiting.set(1, { upstream: 'u' })],
  ])('keeps a session with %s', (_label, hold) => {
    const s = setup();
    hold(s);
    for (const at of [0, 1_000, 5_000, 60_000]) sweepIdle(s.deps, at);
    expect(s.client.closed).toBe(false);
  });

  it('keeps a stateful upstream, and a shared lease', () => {
    const stateful = setup({ idleTimeout: 1_000, stateful: true });
    for (const at of [0, 1_000, 5_000]) sweepIdle(stateful.deps, at);
    expect(stateful.client.closed).toBe(false);
    const shared = setup();
    shared.links.attach('u', shared.client, () => {});
    for (const at of [0, 1_000, 5_000]) sweepIdle(shared.deps, at);
    expect(shared.client.closed).toBe(false);
  });

  it('ignores a server request of another upstream', () => {
    const s = setup();
    s.waiting.set(1, { upstream: 'other' });
    sweepIdle(s.deps, 0);
    sweepIdle(s.deps, 1_000);
    expect(s.client.closed).toBe(true);
  });
});
