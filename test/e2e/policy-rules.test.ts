// Per-team policy rules beyond the lists of two teams, end to end: the default team (for a
// principal of no team), an unprefixed upstream not started for globs that can only match
// another's names, and destructive tools that a team with confirm: true runs only once the
// user confirms.
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ElicitRequestSchema, type ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/auth/api-keys.js';
import { poll } from '../helpers/cli.js';
import { startGateway, textOf, upstream, type TestGateway } from '../helpers/gateway.js';
import { FIXTURES, NODE } from '../helpers/paths.js';
import { delta, expectNames, listAll, namesOf, notAnsweredAsUnknown, upstreamSessions, type Names } from '../helpers/policy.js';
import { apiKey, PAGED_PROMPTS, PAGED_TOOLS, PROMPT_MS, RESOURCE, usePolicyRig } from '../helpers/policy-rig.js';

const LOOSE_KEY = 'sk-switchyard-loose-8e2d4b6a0c1f9375';
const CAREFUL_KEY = 'sk-switchyard-careful-71c0e9a3b5d24f86';
const BOLD_KEY = 'sk-switchyard-bold-0b6f2e8d4a9c1357';

const { tokenFor, oauthConfig, open } = usePolicyRig();

describe('the default team', () => {
  let gw: TestGateway;

  beforeAll(async () => {
    gw = await startGateway(
      {
        listen: { port: 0, publicUrl: RESOURCE },
        auth: { oauth: oauthConfig(), apiKeys: [{ id: 'loose', hash: hashApiKey(LOOSE_KEY) }] },
        teams: [
          { name: 'payments', match: { claim: 'groups', value: 'payments' }, allow: ['paged__*'] },
          { name: 'guests', default: true, allow: ['paged__echo', 'paged__pid', 'paged+fixture://item/0'] },
        ],
        upstreams: { paged: upstream.paged(), rogue: upstream.rogue() },
      },
      { logLevel: 'warn' },
    );
  });

  afterAll(async () => {
    await gw?.close();
  });

  const GUESTS: Names = { tools: ['paged__echo', 'paged__pid'], prompts: [], resources: ['paged+fixture://item/0'], templates: [] };

  it('gives a token that matches no team, and an API key without a team, the default team\'s view', async () => {
    let n = 0;
    for (const headers of [await tokenFor('nina', { groups: ['marketing'] }), apiKey(LOOSE_KEY)]) {
      const before = await upstreamSessions(gw);
      // Capabilities no session declared before: its catalog of paged is its own to open.
      const { client } = await open(gw, headers, { experimental: { [`default-team-${++n}`]: {} } });
      expectNames(await namesOf(client), GUESTS);
      expect(textOf(await client.callTool({ name: 'paged__echo', arguments: { message: 'hi' } }))).toBe('echo {"message":"hi"}');
      // paged's catalog and the session's own upstream session; nothing of rogue.
      expect(delta(await upstreamSessions(gw), before)).toEqual({ paged: 2, rogue: 0 });
      expect((await client.readResource({ uri: 'paged+fixture://item/0' })).contents).toHaveLength(1);
      expect(await notAnsweredAsUnknown(client, 'tool', ['paged__sleep', 'paged__tool-00'])).toEqual([]);
      expect(await notAnsweredAsUnknown(client, 'prompt', ['paged__prompt-00'])).toEqual([]);
      expect(await notAnsweredAsUnknown(client, 'resource', ['paged+fixture://item/1'])).toEqual([]);
    }
  });

  it('does not apply to a principal that matches a team', async () => {
    const { client } = await open(gw, await tokenFor('pat', { groups: ['payments'] }));
    // payments' own rules (paged__* covers paged's tools and prompts), not the guests' ones.
    expectNames(await namesOf(client), { tools: PAGED_TOOLS, prompts: PAGED_PROMPTS, resources: [], templates: [] });
  });
});

describe('an unprefixed upstream', () => {
  let gw: TestGateway;

  beforeAll(async () => {
    // rogue's names go bare; a name that starts with another upstream's prefix would be shown
    // under rogue's own, so no name of rogue's can ever match `paged__*` or `paged+*`.
    gw = await startGateway(
      {
        teams: [{ name: 'payments', default: true, allow: ['paged__*', 'paged+*'] }],
        upstreams: { paged: upstream.paged(), rogue: { ...upstream.rogue(), prefix: '' } },
      },
      { logLevel: 'warn' },
    );
  });

  afterAll(async () => {
    await gw?.close();
  });

  it('is not started for a team whose globs can only match another upstream\'s names', async () => {
    await poll(async () => (Object.values(await upstreamSessions(gw)).every((n) => n === 0) ? true : undefined), 'no upstream sessions', PROMPT_MS);
    const before = await upstreamSessions(gw);
    const { client } = await open(gw, {});
    expect((await namesOf(client)).tools.filter((n) => !n.startsWith('paged__'))).toEqual([]);
    expect({ sessions: delta(await upstreamSessions(gw), before), capabilities: client.getServerCapabilities() }).toEqual({
      sessions: { paged: 1, rogue: 0 },
      // paged's capabilities only: no logging, which only rogue offers.
      capabilities: { tools: { listChanged: true }, prompts: { listChanged: true }, resources: { listChanged: true }, completions: {} },
    });
  });
});

describe('destructive tools with confirm: true', () => {
  let gw: TestGateway;
  const guarded = () => ({ stdio: { command: NODE, args: [join(FIXTURES, 'guarded-server.mjs')] } });

  beforeAll(async () => {
    gw = await startGateway(
      {
        auth: {
          apiKeys: [
            { id: 'careful', hash: hashApiKey(CAREFUL_KEY), team: 'careful' },
            { id: 'bold', hash: hashApiKey(BOLD_KEY), team: 'bold' },
          ],
        },
        teams: [
          { name: 'careful', confirm: true, views: { guarded__note: { pin: { channel: 'ops' } } } },
          { name: 'bold' },
        ],
        upstreams: { guarded: guarded() },
      },
      { logLevel: 'warn' },
    );
  });

  afterAll(async () => {
    await gw?.close();
  });

  /** What the fixture received (its own record, per upstream session). */
  async function received(client: Client): Promise<{ name: string; arguments: Record<string, unknown> }[]> {
    return JSON.parse(textOf(await client.callTool({ name: 'guarded__calls', arguments: {} }))) as { name: string; arguments: Record<string, unknown> }[];
  }

  /** A careful session whose user answers every confirmation with `answer`; the requests it got. */
  async function carefulWith(answer: ElicitResult): Promise<{ client: Client; asked: Record<string, unknown>[] }> {
    const asked: Record<string, unknown>[] = [];
    const { client } = await open(gw, apiKey(CAREFUL_KEY), { elicitation: {} }, (c) =>
      c.setRequestHandler(ElicitRequestSchema, async (request) => {
        asked.push(request.params as Record<string, unknown>);
        return answer;
      }),
    );
    return { client, asked };
  }

  it('refuses to run a destructive tool for a client that cannot ask its user, and the upstream never gets the call', async () => {
    // Called before any tools/list: the gateway must learn the tool is destructive by itself.
    const { client } = await open(gw, apiKey(CAREFUL_KEY));
    const result = await client.callTool({ name: 'guarded__wipe', arguments: { target: 'prod' } });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toBe("guarded__wipe is destructive and needs the user's confirmation, but this client cannot ask the user (no elicitation support). It was not run.");
    expect(await received(client)).toEqual([]);
  });

  it('asks the user with elicitation/create and runs the tool when they accept', async () => {
    const { client, asked } = await carefulWith({ action: 'accept', content: { confirm: true } });
    const result = await client.callTool({ name: 'guarded__wipe', arguments: { target: 'staging' } });
    expect(result.isError).not.toBe(true);
    expect(textOf(result)).toBe('wiped staging');
    expect(asked).toHaveLength(1);
    expect(asked[0]).toMatchObject({ message: expect.stringContaining('guarded__wipe'), requestedSchema: { type: 'object', properties: { confirm: { type: 'boolean' } } } });
    expect(await received(client)).toEqual([{ name: 'wipe', arguments: { target: 'staging' } }]);
  });

  it.each([
    ['declines', { action: 'decline' }],
    ['cancels', { action: 'cancel' }],
    ['accepts with confirm: false', { action: 'accept', content: { confirm: false } }],
  ] as const)('returns an isError result and never calls the upstream when the user %s', async (_, answer) => {
    const { client, asked } = await carefulWith(answer as ElicitResult);
    const result = await client.callTool({ name: 'guarded__wipe', arguments: { target: 'prod' } });
    expect(asked).toHaveLength(1);
    expect(result.isError).toBe(true);
    expect(textOf(result)).toBe('The user declined to run guarded__wipe. It was not run.');
    expect(await received(client)).toEqual([]);
  });

  it('does not ask before a tool that is not destructive, and not for a team without confirm', async () => {
    const { client, asked } = await carefulWith({ action: 'decline' });
    expect(textOf(await client.callTool({ name: 'guarded__note', arguments: { message: 'hi', channel: 'general' } }))).toBe('note {"message":"hi","channel":"ops"}');
    expect(asked).toEqual([]);

    const bold = (await open(gw, apiKey(BOLD_KEY))).client;
    expect(textOf(await bold.callTool({ name: 'guarded__wipe', arguments: { target: 'scratch' } }))).toBe('wiped scratch');
    expect(await received(bold)).toEqual([{ name: 'wipe', arguments: { target: 'scratch' } }]);
  });

  it('removes a pinned argument from the schema\'s properties and required list', async () => {
    const careful = (await listAll((await open(gw, apiKey(CAREFUL_KEY))).client)).tools.find((t) => t.name === 'guarded__note');
    expect(careful?.inputSchema).toEqual({ type: 'object', properties: { message: { type: 'string' } }, required: ['message'] });
    const bold = (await listAll((await open(gw, apiKey(BOLD_KEY))).client)).tools.find((t) => t.name === 'guarded__note');
    expect(bold?.inputSchema).toEqual({ type: 'object', properties: { message: { type: 'string' }, channel: { type: 'string' } }, required: ['message', 'channel'] });
  });
});
