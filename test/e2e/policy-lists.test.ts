// Per-team policy end to end on one gateway with two teams, real signed JWTs and an API key:
// what each team is shown of every list, completion, capabilities and upstream sessions limited
// to what a team can see, notifications about hidden items dropped, a principal of no team, and
// views with pinned arguments. That calls agree with lists is policy-calls.test.ts.
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { textOf } from '../helpers/gateway.js';
import { delta, expectNames, failureOf, listAll, namesOf, notAnsweredAsUnknown, upstreamSessions } from '../helpers/policy.js';
import { apiKey, PAGED_TEMPLATE, PROMPT_MS, usePolicyRig } from '../helpers/policy-rig.js';
import {
  ALL_ITEMS,
  EVERYTHING_BLOB_TEMPLATE,
  EVERYTHING_RESOURCES,
  EVERYTHING_TEXT_TEMPLATE,
  NOTHING,
  OPS,
  OPS_KEY,
  PAYMENTS,
  SUPPORT,
  useTwoTeams,
} from '../helpers/policy-teams.js';

const rig = usePolicyRig();
const { open, tokenFor } = rig;

describe('two teams on one gateway', () => {
  const { gw, recordFile, payments, support, root, nobody } = useTwoTeams(rig);

  describe('lists', () => {
    it('show each team exactly what its rules allow, deny winning over allow, for every kind of list', async () => {
      expectNames(await namesOf((await open(gw, await payments())).client), PAYMENTS);
      expectNames(await namesOf((await open(gw, await support())).client), SUPPORT);
      expectNames(await namesOf((await open(gw, apiKey(OPS_KEY))).client), OPS);
      expectNames(await namesOf((await open(gw, await root())).client), ALL_ITEMS);
    });

    it('match a nested claim by dotted path, and a scalar claim exactly', async () => {
      expectNames(await namesOf((await open(gw, await tokenFor('dana', { org: { desk: 'helpdesk' } }))).client), SUPPORT);
      // A scalar claim equal to the value matches too; a string merely containing it does not.
      expectNames(await namesOf((await open(gw, await tokenFor('gus', { groups: 'support' }))).client), SUPPORT);
      expectNames(await namesOf((await open(gw, await tokenFor('ola', { groups: 'support-eu' }))).client), NOTHING);
    });

    it('show a member of two teams the union, each team\'s denials applying to its own allowances only', async () => {
      const both = await namesOf((await open(gw, await tokenFor('bo', { groups: ['payments', 'support'] }))).client);
      expectNames(both, {
        tools: [...PAYMENTS.tools, ...SUPPORT.tools],
        prompts: [...PAYMENTS.prompts, ...SUPPORT.prompts],
        resources: [...PAYMENTS.resources, ...SUPPORT.resources],
        templates: [...PAYMENTS.templates, ...SUPPORT.templates],
      });
    });
  });

  describe('completion', () => {
    it('completes a visible prompt and template, and refuses a hidden one on a visible upstream like an unknown one', async () => {
      const pay = (await open(gw, await payments())).client;
      const argument = { name: 'id', value: '7' };
      expect((await pay.complete({ ref: { type: 'ref/prompt', name: 'paged__prompt-00' }, argument })).completion.values).toEqual(['ref/prompt:prompt-00:7']);
      expect((await pay.complete({ ref: { type: 'ref/resource', uri: PAGED_TEMPLATE }, argument })).completion.values).toEqual(['ref/resource:fixture://item/{id}:7']);
      expect(await notAnsweredAsUnknown(pay, 'complete-prompt', ['paged__prompt-10', 'nosuch__prompt'])).toEqual([]);
      expect(await notAnsweredAsUnknown(pay, 'complete-resource', ['paged+fixture://item/11', 'nosuch://{id}'])).toEqual([]);

      const sup = (await open(gw, await support())).client;
      const department = await sup.complete({ ref: { type: 'ref/prompt', name: 'everything__completable-prompt' }, argument: { name: 'department', value: 'E' } });
      expect(department.completion.values).toEqual(['Engineering']);
      expect((await sup.complete({ ref: { type: 'ref/resource', uri: EVERYTHING_TEXT_TEMPLATE }, argument: { name: 'resourceId', value: '1' } })).completion.values).toEqual(['1']);
      expect(await notAnsweredAsUnknown(sup, 'complete-prompt', ['everything__args-prompt'])).toEqual([]);
      expect(await notAnsweredAsUnknown(sup, 'complete-resource', [EVERYTHING_BLOB_TEMPLATE])).toEqual([]);
    });
  });

  describe('capabilities and upstream sessions', () => {
    it('advertise at initialize only what the upstreams a team can see offer', async () => {
      // paged: tools, prompts, resources (no subscribe), completions; rogue: tools, logging;
      // everything: all of those plus resources.subscribe and tasks.
      const caps = async (headers: Record<string, string>) => (await open(gw, headers)).client.getServerCapabilities();
      expect(await caps(await payments())).toEqual({ tools: { listChanged: true }, prompts: { listChanged: true }, resources: { listChanged: true }, completions: {}, logging: {} });
      expect(await caps(apiKey(OPS_KEY))).toEqual({ tools: { listChanged: true }, logging: {} });
      expect(await caps(await nobody())).toEqual({});
      expect(await caps(await support())).toEqual({
        tools: { listChanged: true },
        prompts: { listChanged: true },
        resources: { subscribe: true, listChanged: true },
        completions: {},
        logging: {},
        tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } },
      });
    });

    it('never start an upstream a team cannot see for its sessions', async () => {
      const initializes = async () => (await readFile(recordFile(), 'utf8').catch(() => '')).split('\n').filter((line) => line.includes('"method":"initialize"')).length;
      // Each session declares capabilities no earlier session did, so the catalogs it lists
      // from are opened for it (catalogs.ts): only those of upstreams its teams can see.
      let n = 0;
      const opens = async (headers: Record<string, string>): Promise<Record<string, number>> => {
        const before = await upstreamSessions(gw);
        await open(gw, headers, { experimental: { [`policy-probe-${++n}`]: {} } });
        return delta(await upstreamSessions(gw), before);
      };
      const rogueStartsBefore = await initializes();
      expect(await opens(await support())).toEqual({ everything: 1, paged: 0, rogue: 0 });
      expect(await opens(await nobody())).toEqual({ everything: 0, paged: 0, rogue: 0 });
      expect(await opens(await payments())).toEqual({ everything: 0, paged: 1, rogue: 1 });
      expect(await opens(apiKey(OPS_KEY))).toEqual({ everything: 0, paged: 0, rogue: 1 });
      // rogue itself saw exactly two handshakes since: payments' and ops', none for support or nobody.
      expect(await initializes()).toBe(rogueStartsBefore + 2);
    });
  });

  describe('notifications', () => {
    it('drop resources/updated for a URI the team cannot see, while each team gets its own', async () => {
      const pay = await open(gw, await payments());
      const sup = await open(gw, await support());

      const doc = EVERYTHING_RESOURCES[0]!;
      await sup.client.subscribeResource({ uri: doc });
      await sup.client.callTool({ name: 'everything__toggle-subscriber-updates', arguments: {} });
      await sup.notes.waitFor((n) => n.method === 'notifications/resources/updated' && n.params?.uri === doc, 'support\'s own resource update', PROMPT_MS);

      // rogue (visible to payments) announces a URI payments' deny hides, then one it may see.
      const updated = (uri: string) => ({ method: 'notifications/resources/updated', params: { uri } });
      await pay.client.callTool({ name: 'rogue__notify', arguments: updated('secret://vault') });
      await pay.client.callTool({ name: 'rogue__notify', arguments: updated('public://board') });
      await pay.notes.waitFor((n) => n.method === 'notifications/resources/updated' && n.params?.uri === 'rogue+public://board', 'payments\' visible update', PROMPT_MS);
      expect(pay.notes.all.filter((n) => n.method === 'notifications/resources/updated')).toEqual([{ method: 'notifications/resources/updated', params: { uri: 'rogue+public://board' } }]);
      expect(sup.notes.all.filter((n) => n.method === 'notifications/resources/updated').every((n) => n.params?.uri === doc)).toBe(true);
      await sup.client.callTool({ name: 'everything__toggle-subscriber-updates', arguments: {} });
    });

    it('never relay log messages or list_changed from an upstream a team cannot see', async () => {
      const pay = await open(gw, await payments());
      const sup = await open(gw, await support());
      await pay.client.setLoggingLevel('debug');
      await sup.client.setLoggingLevel('debug');
      // everything logs to support's session, and announces its list at startup.
      await sup.client.callTool({ name: 'everything__toggle-simulated-logging', arguments: {} });
      await sup.notes.waitFor((n) => n.method === 'notifications/message' && n.params?.logger === 'everything', 'a log message from everything', PROMPT_MS);
      // payments hears its own marker from rogue, and nothing else at all came before it.
      await pay.client.callTool({ name: 'rogue__notify', arguments: { method: 'notifications/message', params: { level: 'info', data: 'payments marker' } } });
      await pay.notes.waitFor((n) => n.params?.data === 'payments marker', 'payments\' marker', PROMPT_MS);
      expect(pay.notes.all).toEqual([{ method: 'notifications/message', params: { level: 'info', logger: 'rogue', data: 'payments marker' } }]);
      const foreign = sup.notes.all.filter((n) => n.method === 'notifications/message' && n.params?.logger !== 'everything' && !String(n.params?.logger).startsWith('everything/'));
      expect(foreign).toEqual([]);
      await sup.client.callTool({ name: 'everything__toggle-simulated-logging', arguments: {} });
    });
  });

  describe('a principal that matches no team', () => {
    it('sees nothing: every list is empty', async () => {
      const { client } = await open(gw, await nobody());
      expectNames(await namesOf(client), NOTHING);
    });

    it('gets the unknown-name answer for every call', async () => {
      const { client } = await open(gw, await nobody());
      expect({
        tools: await notAnsweredAsUnknown(client, 'tool', ['paged__echo', 'rogue__pid', 'everything__echo', 'pay_echo', 'nosuch__tool']),
        prompts: await notAnsweredAsUnknown(client, 'prompt', ['paged__prompt-00', 'everything__simple-prompt']),
        resources: await notAnsweredAsUnknown(client, 'resource', ['paged+fixture://item/0', EVERYTHING_RESOURCES[0]!]),
      }).toEqual({ tools: [], prompts: [], resources: [] });
    });
  });

  describe('views', () => {
    it('list the tool under its view name, with the view\'s title and description and no pinned argument', async () => {
      const { tools } = await listAll((await open(gw, await payments())).client);
      expect(tools.map((t) => t.name)).not.toContain('paged__echo');
      const view = tools.find((t) => t.name === 'pay_echo');
      expect(view).toEqual({
        name: 'pay_echo',
        title: 'Payments echo',
        description: 'Echoes a message; payments always send the pinned one.',
        inputSchema: { type: 'object', properties: { ms: { type: 'number' } } },
      });
      // A team without the view sees the tool as the upstream lists it.
      const original = (await listAll((await open(gw, await root())).client)).tools.find((t) => t.name === 'paged__echo');
      expect(original).toEqual({ name: 'paged__echo', description: 'fixture tool echo', inputSchema: { type: 'object', properties: { message: { type: 'string' }, ms: { type: 'number' } } } });
    });

    it('run the tool with the pinned value whatever the client sends', async () => {
      const { client } = await open(gw, await payments());
      const echoed = async (args: Record<string, unknown>) => {
        const text = textOf(await client.callTool({ name: 'pay_echo', arguments: args }));
        expect(text.startsWith('echo ')).toBe(true);
        return JSON.parse(text.slice('echo '.length)) as unknown;
      };
      expect(await echoed({ message: 'overridden', ms: 5 })).toEqual({ message: 'pinned', ms: 5 });
      expect(await echoed({})).toEqual({ message: 'pinned' });
    });

    it('know the tool by its old name only for teams without the view', async () => {
      const pay = (await open(gw, await payments())).client;
      expect(await failureOf(pay.callTool({ name: 'paged__echo', arguments: { message: 'x' } }))).toEqual({ code: -32602, message: 'Unknown tool: paged__echo' });
      const other = (await open(gw, await root())).client;
      expect(textOf(await other.callTool({ name: 'paged__echo', arguments: { message: 'free' } }))).toBe('echo {"message":"free"}');
      expect(await failureOf(other.callTool({ name: 'pay_echo', arguments: {} }))).toEqual({ code: -32602, message: 'Unknown tool: pay_echo' });
    });
  });
});
