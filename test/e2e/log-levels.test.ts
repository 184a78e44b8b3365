// Each session hears an upstream's log lines at or above the level it set with logging/setLevel
// (a session that set none hears them all), whichever upstream sent them: a shared child (one
// level for every session it serves, so the gateway filters) or the session's own upstream
// session (one that ignores the level it was told). A level that is not one of MCP's is refused
// with -32602 and kept nowhere (logging.mdx, "Error Handling").
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { EmptyResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/auth/api-keys.js';
import { connectClient, endSessions, recordNotifications, startGateway, textOf, type NotificationLog, type TestGateway } from '../helpers/gateway.js';
import { FIXTURES, NODE } from '../helpers/paths.js';
import { failureOf } from '../helpers/policy.js';

/** RFC 5424's severities as MCP lists them, least severe first. */
const LEVELS = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'];
const KEYS = { alpha: 'log-levels-alpha-key-0123456789', beta: 'log-levels-beta-key-0123456789', gamma: 'log-levels-gamma-key-0123456789' };
const logLevels = () => ({ stdio: { command: NODE, args: [join(FIXTURES, 'log-levels-server.mjs')] } });

interface Session {
  client: Client;
  log: NotificationLog;
}

let gw: TestGateway;
const opened: Client[] = [];

beforeAll(async () => {
  gw = await startGateway({
    auth: { apiKeys: Object.entries(KEYS).map(([team, key]) => ({ id: team, hash: hashApiKey(key), team })) },
    // gamma's teams cannot see the shared child at all.
    teams: [{ name: 'alpha' }, { name: 'beta' }, { name: 'gamma', allow: ['solo__*'] }],
    upstreams: { shared: { ...logLevels(), sharing: 'shared' }, solo: logLevels() },
  });
});

afterEach(() => endSessions(opened));

afterAll(async () => {
  await gw?.close();
});

async function open(key: string): Promise<Session> {
  let log!: NotificationLog;
  const client = await connectClient(gw.url, {}, (c) => (log = recordNotifications(c)), { 'x-api-key': key });
  opened.push(client);
  return { client, log };
}

/** Has `upstream` log `<tag> <level>` at each of `levels` (the call answers after the lines). */
async function logAt(session: Session, upstream: string, tag: string, levels: readonly string[] = LEVELS): Promise<void> {
  expect(textOf(await session.client.callTool({ name: `${upstream}__log`, arguments: { tag, levels } }))).toBe('"logged"');
}

/** Waits for the `<tag> emergency` line of `upstream` (every level passes it): what `tag` logged before it has arrived. */
async function heard(session: Session, upstream: string, tag: string): Promise<void> {
  await session.log.waitFor((n) => n.method === 'notifications/message' && n.params?.logger === upstream && n.params?.data === `${tag} emergency`, `${upstream}'s "${tag} emergency"`);
}

/** The levels of the lines `tag` brought the session from `upstream`, in order. */
function levelsOf(session: Session, upstream: string, tag: string): unknown[] {
  return session.log.all.filter((n) => n.method === 'notifications/message' && n.params?.logger === upstream && String(n.params?.data).startsWith(`${tag} `)).map((n) => n.params?.level);
}

/** The levels logging/setLevel brought a session's own `solo` child. */
async function toldSolo(session: Session): Promise<unknown> {
  return JSON.parse(textOf(await session.client.callTool({ name: 'solo__levels', arguments: {} }))) as unknown;
}

describe('log levels per session', () => {
  it("delivers a shared child's log lines to each session at or above its own level, and none to a session whose teams cannot see it", async () => {
    const a = await open(KEYS.alpha);
    const b = await open(KEYS.beta);
    const c = await open(KEYS.gamma);
    // b asks for emergencies only; a never sets a level.
    expect(await b.client.setLoggingLevel('emergency')).toEqual({});
    await logAt(a, 'shared', 'one');
    await heard(a, 'shared', 'one');
    await heard(b, 'shared', 'one');
    expect(levelsOf(a, 'shared', 'one')).toEqual(LEVELS);
    expect(levelsOf(b, 'shared', 'one')).toEqual(['emergency']);

    // b lowers its level: from warning up, while a still hears everything.
    expect(await b.client.setLoggingLevel('warning')).toEqual({});
    await logAt(a, 'shared', 'two');
    await heard(a, 'shared', 'two');
    await heard(b, 'shared', 'two');
    expect(levelsOf(a, 'shared', 'two')).toEqual(LEVELS);
    expect(levelsOf(b, 'shared', 'two')).toEqual(['warning', 'error', 'critical', 'alert', 'emergency']);

    // c's marker comes on the same stream after anything the shared child's lines brought it.
    await logAt(c, 'solo', 'c-marker', ['emergency']);
    await heard(c, 'solo', 'c-marker');
    expect(c.log.all.filter((n) => n.method === 'notifications/message' && String(n.params?.logger).startsWith('shared'))).toEqual([]);
  });

  it("drops a session's own upstream's log lines below the level it set, when the upstream sends them anyway", async () => {
    const s = await open(KEYS.alpha);
    expect(await s.client.setLoggingLevel('error')).toEqual({});
    await logAt(s, 'solo', 'own');
    await heard(s, 'solo', 'own');
    expect(levelsOf(s, 'solo', 'own')).toEqual(['error', 'critical', 'alert', 'emergency']);
    // The upstream session was told the level when it opened.
    expect(await toldSolo(s)).toEqual(['error']);
  });

  it('refuses a level that is not one of MCP\'s with -32602, and keeps the one set before', async () => {
    const s = await open(KEYS.alpha);
    const setLevel = (params: Record<string, unknown>) => failureOf(s.client.request({ method: 'logging/setLevel', params } as never, EmptyResultSchema));
    for (const params of [{ level: 'bogus' }, { level: 42 }, { level: 'DEBUG' }, {}]) {
      expect(await setLevel(params), JSON.stringify(params)).toMatchObject({ code: -32602 });
    }
    // Nothing was kept: the own upstream session, opened by this call, is told no level, and the session hears every line.
    await logAt(s, 'solo', 'none');
    await heard(s, 'solo', 'none');
    expect(levelsOf(s, 'solo', 'none')).toEqual(LEVELS);
    expect(await toldSolo(s)).toEqual([]);

    expect(await s.client.setLoggingLevel('warning')).toEqual({});
    expect(await setLevel({ level: 'nope' })).toMatchObject({ code: -32602 });
    await logAt(s, 'solo', 'kept');
    await heard(s, 'solo', 'kept');
    expect(levelsOf(s, 'solo', 'kept')).toEqual(['warning', 'error', 'critical', 'alert', 'emergency']);
    expect(await toldSolo(s)).toEqual(['warning']);
  });
});
