// Per-team policy end to end, with real signed JWTs and API keys: what each team is shown of
// every list, that calls agree with lists (a hidden item answers exactly like one that does not
// exist), capabilities and upstream sessions limited to what a team can see, notifications
// about hidden items dropped, the default team, views with pinned arguments, confirmation of
// destructive tools, policy reload in a running CLI and `switchyard check`.
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, type ClientCapabilities, type ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import type { JWTPayload } from 'jose';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/auth/api-keys.js';
import { poll, startCli, type CliProcess } from '../helpers/cli.js';
import { connectClient, endSessions, recordNotifications, startGateway, textOf, upstream, type NotificationLog, type TestGateway } from '../helpers/gateway.js';
import { startAuthServer, type AuthServer } from '../helpers/oauth.js';
import { FIXTURES, NODE, ROOT } from '../helpers/paths.js';
import {
  attempt,
  delta,
  expectNames,
  failureOf,
  itemsThatDidNotAnswer,
  listAll,
  named,
  namesOf,
  notAnsweredAsUnknown,
  sorted,
  toolsThatDidNotRun,
  upstreamSessions,
  without,
  type Names,
  type RpcFailure,
} from '../helpers/policy.js';

const RESOURCE = 'https://mcp.example.test/mcp';
const OPS_KEY = 'sk-switchyard-ops-3f9a0c7e51b24d68';
const LOOSE_KEY = 'sk-switchyard-loose-8e2d4b6a0c1f9375';
const CAREFUL_KEY = 'sk-switchyard-careful-71c0e9a3b5d24f86';
const BOLD_KEY = 'sk-switchyard-bold-0b6f2e8d4a9c1357';
/** Bounds every wait for something that should happen soon. */
const PROMPT_MS = 10_000;
const TOOLS_CHANGED = 'notifications/tools/list_changed';

// What the upstreams list (the fixtures in test/fixtures and server-everything 2026.8.31).
const range = (n: number, name: (i: string) => string): string[] => Array.from({ length: n }, (_, i) => name(String(i).padStart(2, '0')));
/** paged's odd names, as the namespace shortens them (deterministic: a hash of the original). */
const PAGED_SHORTENED = ['paged__a_tool_whose_name_is_far_too_long_for_the_strict_d4a56774', 'paged__admin_tools_list_ce33de31', 'paged__has_space_47b5c36f'];
const PAGED_TOOLS = [...['echo', 'pid', 'sleep', 'unhandled'].map((n) => `paged__${n}`), ...PAGED_SHORTENED, ...range(25, (i) => `paged__tool-${i}`)];
const PAGED_PROMPTS = range(12, (i) => `paged__prompt-${i}`);
const PAGED_RESOURCES = Array.from({ length: 12 }, (_, i) => `paged+fixture://item/${i}`);
const PAGED_TEMPLATE = 'paged+fixture://item/{id}';
const ROGUE_TOOLS = ['slow', 'progress', 'journal', 'ask', 'notify', 'garbage', 'unknown-id', 'stderr', 'huge', 'crash', 'pid', 'fail'].map((n) => `rogue__${n}`);
const EVERYTHING_TOOLS = [
  'echo', 'get-annotated-message', 'get-env', 'get-resource-links', 'get-resource-reference', 'get-structured-content', 'get-sum', 'get-tiny-image',
  'gzip-file-as-resource', 'toggle-simulated-logging', 'toggle-subscriber-updates', 'trigger-long-running-operation', 'simulate-research-query',
].map((n) => `everything__${n}`);
const EVERYTHING_PROMPTS = ['simple-prompt', 'args-prompt', 'completable-prompt', 'resource-prompt'].map((n) => `everything__${n}`);
const EVERYTHING_RESOURCES = ['architecture', 'extension', 'features', 'how-it-works', 'instructions', 'startup', 'structure'].map((n) => `everything+demo://resource/static/document/${n}.md`);
const EVERYTHING_TEXT_TEMPLATE = 'everything+demo://resource/dynamic/text/{resourceId}';
const EVERYTHING_BLOB_TEMPLATE = 'everything+demo://resource/dynamic/blob/{resourceId}';

/** What each team of the main gateway must be shown, spelt out from its rules. */
const PAYMENTS: Names = {
  // paged__* and upstream:rogue, minus *__tool-0*; paged__echo is shown as its view, pay_echo.
  tools: ['pay_echo', ...without(PAGED_TOOLS, ['paged__echo', ...range(10, (i) => `paged__tool-${i}`)]), ...ROGUE_TOOLS],
  prompts: without(PAGED_PROMPTS, ['paged__prompt-10', 'paged__prompt-11']),
  resources: without(PAGED_RESOURCES, ['paged+fixture://item/10', 'paged+fixture://item/11']),
  templates: [PAGED_TEMPLATE],
};
const SUPPORT: Names = {
  tools: without(EVERYTHING_TOOLS, ['everything__get-env']),
  prompts: without(EVERYTHING_PROMPTS, ['everything__args-prompt']),
  resources: without(EVERYTHING_RESOURCES, named('everything+demo://resource/static/document/s', EVERYTHING_RESOURCES)),
  templates: [EVERYTHING_TEXT_TEMPLATE],
};
const OPS: Names = { tools: ROGUE_TOOLS, prompts: [], resources: [], templates: [] };
const ALL_ITEMS: Names = {
  tools: [...EVERYTHING_TOOLS, ...PAGED_TOOLS, ...ROGUE_TOOLS],
  prompts: [...EVERYTHING_PROMPTS, ...PAGED_PROMPTS],
  resources: [...EVERYTHING_RESOURCES, ...PAGED_RESOURCES],
  templates: [EVERYTHING_TEXT_TEMPLATE, EVERYTHING_BLOB_TEMPLATE, PAGED_TEMPLATE],
};
const NOTHING: Names = { tools: [], prompts: [], resources: [], templates: [] };

const PAY_ECHO_VIEW = { name: 'pay_echo', title: 'Payments echo', description: 'Echoes a message; payments always send the pinned one.', pin: { message: 'pinned' } };

let as: AuthServer;
let dir: string;
/** Sessions the current test opened: ended (DELETE) and closed after it, whatever happened. */
const opened: Client[] = [];

beforeAll(async () => {
  as = await startAuthServer();
  dir = await mkdtemp(join(tmpdir(), 'switchyard-policy-'));
});

afterEach(() => endSessions(opened));

afterAll(async () => {
  await as?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** A token for the gateways' resource, signed by the local authorization server (RS256). */
async function tokenFor(sub: string, extra: Record<string, unknown> = {}): Promise<Record<string, string>> {
  const now = Math.floor(Date.now() / 1_000);
  const claims: JWTPayload = { iss: as.issuer, aud: RESOURCE, sub, iat: now, exp: now + 600, ...extra };
  return { authorization: `Bearer ${await as.sign(claims)}` };
}

const apiKey = (key: string): Record<string, string> => ({ 'x-api-key': key });

const oauthConfig = () => ({ issuer: as.issuer, jwksUri: as.jwksUri, algorithms: ['RS256', 'ES256'] });

interface Session {
  client: Client;
  notes: NotificationLog;
}

/** An SDK client session with `headers` on every request; notifications recorded; closed after the test. */
async function open(gw: { url: URL }, headers: Record<string, string>, capabilities: ClientCapabilities = {}, prepare?: (client: Client) => void): Promise<Session> {
  let notes: NotificationLog | undefined;
  const client = await connectClient(
    gw.url,
    capabilities,
    (c) => {
      notes = recordNotifications(c);
      prepare?.(c);
    },
    headers,
  );
  opened.push(client);
  return { client, notes: notes! };
}

function sessionId(client: Client): string | undefined {
  return (client.transport as StreamableHTTPClientTransport).sessionId;
}

describe('two teams on one gateway', () => {
  let gw: TestGateway;
  let recordFile: string;

  const teams = () => [
    {
      name: 'payments',
      match: { claim: 'groups', value: 'payments' },
      allow: ['paged__*', 'paged+*', 'upstream:rogue'],
      deny: ['*__tool-0*', 'paged__prompt-1?', 'paged+fixture://item/1?', 'rogue+secret://*'],
      views: { paged__echo: PAY_ECHO_VIEW },
    },
    {
      name: 'support',
      // Either the groups array or a nested claim (dotted path) puts a principal in support.
      match: [
        { claim: 'groups', value: 'support' },
        { claim: 'org.desk', value: 'helpdesk' },
      ],
      allow: ['everything__*', 'everything+*'],
      deny: ['everything__get-env', 'everything__args-prompt', 'everything+demo://resource/static/document/s*', 'everything+demo://resource/dynamic/blob/*'],
    },
    // Reached only through the API key mapped to it.
    { name: 'ops', allow: ['upstream:rogue'] },
    // One principal by id; allow defaults to everything.
    { name: 'root', match: { principal: `${as.issuer}|root` } },
  ];

  beforeAll(async () => {
    recordFile = join(dir, 'rogue-main.jsonl');
    gw = await startGateway(
      {
        listen: { port: 0, publicUrl: RESOURCE },
        auth: { oauth: oauthConfig(), apiKeys: [{ id: 'ops', hash: hashApiKey(OPS_KEY), team: 'ops' }] },
        teams: teams(),
        upstreams: { everything: upstream.everything(), paged: upstream.paged(), rogue: upstream.rogue({ RECORD_FILE: recordFile }) },
      },
      { logLevel: 'warn' },
    );
  });

  afterAll(async () => {
    await gw?.close();
  });

  const payments = () => tokenFor('pat', { groups: ['payments', 'staff'] });
  const support = () => tokenFor('sam', { groups: ['support'] });
  const root = () => tokenFor('root');
  const nobody = () => tokenFor('nina', { groups: ['marketing'], org: { desk: 'sales' } });

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

  describe('calls agree with lists', () => {
    it('every tool a team lists can be called', async () => {
      for (const [headers, names] of [
        [await payments(), PAYMENTS],
        [await support(), SUPPORT],
        [apiKey(OPS_KEY), OPS],
      ] as const) {
        const { client } = await open(gw, headers);
        const listed = (await namesOf(client)).tools;
        expect(sorted(listed)).toEqual(sorted(names.tools));
        expect(await toolsThatDidNotRun(client, listed)).toEqual([]);
      }
    });

    it('every prompt a team lists can be got, and every resource and template instance it lists read', async () => {
      for (const headers of [await payments(), await support(), apiKey(OPS_KEY)]) {
        const { client } = await open(gw, headers);
        expect(await itemsThatDidNotAnswer(client)).toEqual([]);
      }
    });

    it('a tool a team does not list, on an upstream it sees, answers exactly like a tool that does not exist', async () => {
      const pay = (await open(gw, await payments())).client;
      // Denied by glob, renamed away by a view, and made up (on paged, on rogue, on no upstream).
      const payHidden = [...range(10, (i) => `paged__tool-${i}`), 'paged__echo', 'paged__no-such-tool', 'rogue__no-such-tool', 'pay_echo2', 'nosuch__tool', 'plain'];
      expect(await notAnsweredAsUnknown(pay, 'tool', payHidden)).toEqual([]);
      // The same answer, name for name, for a hidden real tool and a nonexistent one.
      const hidden = await failureOf(attempt(pay, 'tool', 'paged__tool-03'));
      const missing = await failureOf(attempt(pay, 'tool', 'paged__tool-99'));
      expect(hidden).toEqual({ code: -32602, message: 'Unknown tool: paged__tool-03' });
      expect(missing).toEqual({ code: -32602, message: 'Unknown tool: paged__tool-99' });

      const sup = (await open(gw, await support())).client;
      expect(await notAnsweredAsUnknown(sup, 'tool', ['everything__get-env', 'everything__no-such-tool', 'pay_echo'])).toEqual([]);
    });

    it('a tool, prompt, resource or completion of an upstream a team cannot see answers exactly like one that does not exist', async () => {
      // payments cannot see `everything`, support neither `paged` nor `rogue`: their items, real
      // or made up, must get the unknown-name answer, not a word about the upstream.
      const pay = (await open(gw, await payments())).client;
      const sup = (await open(gw, await support())).client;
      const wrong = {
        paymentsTools: await notAnsweredAsUnknown(pay, 'tool', ['everything__echo', 'everything__get-env', 'everything__no-such-tool']),
        paymentsPrompts: await notAnsweredAsUnknown(pay, 'prompt', ['everything__simple-prompt', 'everything__no-such-prompt']),
        paymentsResources: await notAnsweredAsUnknown(pay, 'resource', [EVERYTHING_RESOURCES[0]!, 'everything+demo://resource/dynamic/text/1']),
        paymentsCompletions: [
          ...(await notAnsweredAsUnknown(pay, 'complete-prompt', ['everything__completable-prompt'])),
          ...(await notAnsweredAsUnknown(pay, 'complete-resource', [EVERYTHING_TEXT_TEMPLATE])),
        ],
        supportTools: await notAnsweredAsUnknown(sup, 'tool', ['paged__echo', 'paged__tool-12', PAGED_SHORTENED[2]!, 'rogue__pid', 'rogue__no-such-tool']),
        supportPrompts: await notAnsweredAsUnknown(sup, 'prompt', ['paged__prompt-00']),
        supportResources: await notAnsweredAsUnknown(sup, 'resource', ['paged+fixture://item/0']),
        supportCompletions: [...(await notAnsweredAsUnknown(sup, 'complete-prompt', ['paged__prompt-00'])), ...(await notAnsweredAsUnknown(sup, 'complete-resource', [PAGED_TEMPLATE]))],
      };
      expect(wrong).toEqual({
        paymentsTools: [],
        paymentsPrompts: [],
        paymentsResources: [],
        paymentsCompletions: [],
        supportTools: [],
        supportPrompts: [],
        supportResources: [],
        supportCompletions: [],
      });
    });

    it('a prompt or resource a team does not list, on an upstream it sees, answers Unknown prompt / Unknown resource', async () => {
      const pay = (await open(gw, await payments())).client;
      expect(await notAnsweredAsUnknown(pay, 'prompt', ['paged__prompt-10', 'paged__prompt-11', 'nosuch__prompt'])).toEqual([]);
      expect(await notAnsweredAsUnknown(pay, 'resource', ['paged+fixture://item/10', 'paged+fixture://item/11', 'rogue+secret://vault', 'nosuch://item'])).toEqual([]);

      const sup = (await open(gw, await support())).client;
      const deniedDocs = named('everything+demo://resource/static/document/s', EVERYTHING_RESOURCES);
      expect(await notAnsweredAsUnknown(sup, 'prompt', ['everything__args-prompt'])).toEqual([]);
      expect(await notAnsweredAsUnknown(sup, 'resource', [...deniedDocs, 'everything+demo://resource/dynamic/blob/1'])).toEqual([]);
      expect(await notAnsweredAsUnknown(sup, 'subscribe', deniedDocs)).toEqual([]);
    });

    it('a prompt or resource that does not exist, on an upstream the team sees, answers like a hidden one', async () => {
      // The hidden real item and a missing one on the same upstream (server-everything, which
      // really checks names) must be told apart by nothing.
      const sup = (await open(gw, await support())).client;
      const generic = (got: RpcFailure | 'answered', name: string) =>
        got === 'answered' ? got : { ...got, message: got.message.replace(name, '<name>'), ...(got.data === undefined ? {} : { data: JSON.parse(JSON.stringify(got.data).replaceAll(name, '<name>')) as unknown }) };
      const pairs = [
        ['prompt', 'everything__args-prompt', 'everything__no-such-prompt'],
        ['resource', 'everything+demo://resource/static/document/startup.md', 'everything+demo://resource/static/document/no-such.md'],
      ] as const;
      const answers = [];
      for (const [kind, hidden, missing] of pairs) {
        answers.push({
          kind,
          hidden: generic(await failureOf(attempt(sup, kind, hidden)), hidden),
          missing: generic(await failureOf(attempt(sup, kind, missing)), missing),
        });
      }
      expect(answers).toEqual([
        { kind: 'prompt', hidden: { code: -32602, message: 'Unknown prompt: <name>' }, missing: { code: -32602, message: 'Unknown prompt: <name>' } },
        { kind: 'resource', hidden: { code: -32602, message: 'Unknown resource: <name>', data: { uri: '<name>' } }, missing: { code: -32602, message: 'Unknown resource: <name>', data: { uri: '<name>' } } },
      ]);
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
      const initializes = async () => (await readFile(recordFile, 'utf8').catch(() => '')).split('\n').filter((line) => line.includes('"method":"initialize"')).length;
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

/** Writes a config; JSON is YAML, so the file is the object as JSON. */
async function writeConfig(file: string, config: Record<string, unknown>): Promise<void> {
  await writeFile(file, `${JSON.stringify(config, null, 2)}\n`);
}

const fixture = (name: string) => ({ stdio: { command: NODE, args: [join(FIXTURES, name)] } });

describe('policy reload in the running CLI', () => {
  let cli: CliProcess | undefined;

  afterEach(async () => {
    await cli?.stop();
    cli = undefined;
  });

  it('tells a running session list_changed and shows it the new rules in the same session', async () => {
    const caseDir = await mkdtemp(join(dir, 'reload-'));
    const file = join(caseDir, 'gateway.yaml');
    const config = (payments: Record<string, unknown>) => ({
      listen: { publicUrl: RESOURCE },
      auth: { oauth: oauthConfig() },
      health: { probeInterval: 0 },
      logging: { level: 'warn' },
      teams: [{ name: 'payments', match: { claim: 'groups', value: 'payments' }, ...payments }],
      upstreams: { paged: fixture('paged-server.mjs'), rogue: fixture('rogue-server.mjs') },
    });
    await writeConfig(file, config({ allow: ['paged__*'], deny: ['*__tool-0*'] }));
    cli = await startCli(file);
    const { client, notes } = await open({ url: cli.url }, await tokenFor('pat', { groups: ['payments'] }));
    const session = sessionId(client);
    const toolNames = async () => sorted((await namesOf(client)).tools);
    const changes = () => notes.all.filter((n) => n.method === TOOLS_CHANGED).length;
    expect(await toolNames()).toEqual(sorted(without(PAGED_TOOLS, range(10, (i) => `paged__tool-${i}`))));

    // Granted: the denied tools and a whole upstream.
    await writeConfig(file, config({ allow: ['paged__*', 'upstream:rogue'] }));
    await notes.waitFor((n) => n.method === TOOLS_CHANGED, 'tools/list_changed after granting', PROMPT_MS);
    expect(await toolNames()).toEqual(sorted([...PAGED_TOOLS, ...ROGUE_TOOLS]));
    expect(textOf(await client.callTool({ name: 'paged__tool-03', arguments: {} }))).toBe('tool-03 {}');
    expect(sessionId(client)).toBe(session);

    // Narrowed: one paged tool stays; the others are hidden, and a call answers as for an unknown tool.
    let heard = changes();
    await writeConfig(file, config({ allow: ['upstream:rogue', 'paged__pid'] }));
    await poll(() => (changes() > heard ? true : undefined), 'tools/list_changed after narrowing', PROMPT_MS);
    expect(await toolNames()).toEqual(sorted(['paged__pid', ...ROGUE_TOOLS]));
    expect(await failureOf(client.callTool({ name: 'paged__tool-03', arguments: {} }))).toEqual({ code: -32602, message: 'Unknown tool: paged__tool-03' });
    expect(sessionId(client)).toBe(session);

    // Revoked: paged goes, and the session's upstream session of it with it (paged's catalog
    // stays until it idles: it is the gateway's, not the session's).
    const health = async () => ((await (await fetch(new URL('/healthz', cli!.url))).json()) as { upstreams: Record<string, { sessions: number }> }).upstreams;
    const pagedBefore = (await health()).paged!.sessions;
    heard = changes();
    await writeConfig(file, config({ allow: ['upstream:rogue'] }));
    await poll(() => (changes() > heard ? true : undefined), 'tools/list_changed after revoking', PROMPT_MS);
    expect(await toolNames()).toEqual(sorted(ROGUE_TOOLS));
    expect(await failureOf(client.callTool({ name: 'paged__pid', arguments: {} }))).not.toBe('answered');
    expect(sessionId(client)).toBe(session);
    await poll(async () => ((await health()).paged?.sessions === pagedBefore - 1 ? true : undefined), 'the session\'s own upstream session of paged to close', PROMPT_MS);
    // rogue's catalog: the session listed rogue's tools and never called one.
    expect((await health()).rogue?.sessions).toBe(1);
  });
});

describe('switchyard check', () => {
  /** `npm run check -- ...args`, to its end (bounded). */
  async function runCheck(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
    const child = spawn('npm', ['run', 'check', '--', ...args], { cwd: ROOT, stdio: 'pipe' });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    try {
      const code = await new Promise<number | null>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`check did not finish in time; stdout: ${stdout.slice(-500)} stderr: ${stderr.slice(-500)}`)), 25_000);
        child.once('close', (exitCode) => {
          clearTimeout(timer);
          resolve(exitCode);
        });
      });
      return { code, stdout, stderr };
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  }

  /** The item lines printed under `team <name>:`. */
  function section(stdout: string, team: string): string[] {
    const lines = stdout.split('\n');
    const start = lines.indexOf(`team ${team}:`);
    expect(start, `no section for team ${team} in:\n${stdout}`).toBeGreaterThanOrEqual(0);
    const body: string[] = [];
    for (const line of lines.slice(start + 1)) {
      if (!line.startsWith('  ')) break;
      body.push(line);
    }
    return body;
  }

  const itemNames = (lines: string[]) => lines.map((l) => /^ {2}(?:tool|prompt|resource|template) (\S+)/.exec(l)?.[1]).filter((n): n is string => n !== undefined);

  const checkConfig = (echoName: string) => ({
    teams: [
      { name: 'payments', allow: ['paged__*', 'paged+*', 'upstream:rogue'], deny: ['*__tool-0*'], views: { paged__echo: { name: echoName } } },
      { name: 'ops', allow: ['upstream:rogue'] },
    ],
    upstreams: { paged: fixture('paged-server.mjs'), rogue: fixture('rogue-server.mjs') },
  });

  const paymentsNames = (echoName: string) => [
    echoName,
    ...without(PAGED_TOOLS, ['paged__echo', ...range(10, (i) => `paged__tool-${i}`)]),
    ...PAGED_PROMPTS,
    ...PAGED_RESOURCES,
    PAGED_TEMPLATE,
    ...ROGUE_TOOLS,
  ];

  it('prints each team\'s names, marks shortened ones, reports a view\'s collision and exits 1', async () => {
    const file = join(await mkdtemp(join(dir, 'check-')), 'collide.yaml');
    await writeConfig(file, checkConfig('paged__pid'));
    const { code, stdout, stderr } = await runCheck([file, '--connect']);
    expect(stderr).toBe('');
    expect(code).toBe(1);
    expect(stdout.split('\n')[0]).toBe(`config ${file}: valid`);
    const payments = section(stdout, 'payments');
    expect(sorted(itemNames(payments))).toEqual(sorted(paymentsNames('paged__pid')));
    expect(payments).toContain('  COLLISION: tool paged__pid is both paged: echo and paged: pid');
    expect(payments.filter((l) => l.includes('COLLISION'))).toHaveLength(1);
    expect(payments).toContain('  tool paged__has_space_47b5c36f   (shortened from has space)');
    expect(payments).toContain('  tool paged__admin_tools_list_ce33de31   (shortened from admin.tools.list)');
    expect(payments).toContain('  tool paged__a_tool_whose_name_is_far_too_long_for_the_strict_d4a56774   (shortened from a_tool_whose_name_is_far_too_long_for_the_strictest_clients_to_accept_as_is)');
    expect(payments.filter((l) => l.includes('shortened'))).toHaveLength(3);
    expect(sorted(itemNames(section(stdout, 'ops')))).toEqual(sorted(ROGUE_TOOLS));
    expect(stdout.trimEnd().split('\n').at(-1)).toBe('1 collision(s), 0 upstream(s) that could not be listed');
  });

  it('prints per endpoint and team what tools/list lists, what search covers, and the bytes of tools/list in list and search mode', async () => {
    const file = join(await mkdtemp(join(dir, 'check-')), 'endpoints.yaml');
    const config = checkConfig('pay_echo');
    await writeConfig(file, { ...config, endpoints: [{ path: '/ops/mcp', teams: ['ops'], discovery: 'search', pinned: ['rogue__pid'] }] });
    const { code, stdout, stderr } = await runCheck([file, '--connect']);
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    const lines = stdout.split('\n');
    const at = lines.indexOf('endpoint /ops/mcp, team ops: discovery search');
    expect(at, stdout).toBeGreaterThanOrEqual(0);
    expect(lines[at + 1]).toBe('  lists 3 tool(s): rogue__pid, search_tools, call_tool');
    expect(lines[at + 2]).toMatch(new RegExp(`^ {2}search covers ${ROGUE_TOOLS.length} tool\\(s\\): `));
    expect(sorted(lines[at + 2]!.split(': ')[1]!.split(', '))).toEqual(sorted(ROGUE_TOOLS));
    const bytes = /^ {2}tools\/list bytes: list mode (\d+), search mode (\d+) \((\d+\.\d+)×\)$/.exec(lines[at + 3]!);
    expect(bytes, lines[at + 3]).not.toBeNull();
    expect(Number(bytes![1])).toBeGreaterThan(0);
    // The main endpoint lists in list mode for each team; the ops endpoint is for ops only.
    expect(lines).toContain('endpoint /mcp, team payments: discovery list');
    expect(lines).toContain('endpoint /mcp, team ops: discovery list');
    expect(lines.some((l) => l.startsWith('endpoint /ops/mcp, team payments'))).toBe(false);
  });

  it('exits 0 when no names collide', async () => {
    const file = join(await mkdtemp(join(dir, 'check-')), 'clean.yaml');
    await writeConfig(file, checkConfig('pay_echo'));
    const { code, stdout, stderr } = await runCheck([file, '--connect']);
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    expect(sorted(itemNames(section(stdout, 'payments')))).toEqual(sorted(paymentsNames('pay_echo')));
    expect(stdout).not.toContain('COLLISION');
    expect(stdout.trimEnd().split('\n').at(-1)).toBe('0 collision(s), 0 upstream(s) that could not be listed');
  });

  it('exits 1 with one line for an invalid config', async () => {
    const file = join(await mkdtemp(join(dir, 'check-')), 'invalid.yaml');
    const config = checkConfig('pay_echo');
    await writeConfig(file, { ...config, teams: config.teams.map((t) => ({ ...t, default: true })) });
    const { code, stdout, stderr } = await runCheck([file, '--connect']);
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(stderr).toBe(`switchyard: invalid config ${file}: teams: only one team may be the default (payments, ops)\n`);
  });
});
