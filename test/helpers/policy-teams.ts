// The gateway of the two-teams policy tests (test/e2e/policy-lists.test.ts and
// policy-calls.test.ts): payments, support, ops (by API key) and root over server-everything
// and the paged and rogue fixtures, what each team must be shown, spelt out from its rules, and
// a token per kind of principal.
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { hashApiKey } from '../../src/auth/api-keys.js';
import { startGateway, upstream, type TestGateway } from './gateway.js';
import { named, without, type Names } from './policy.js';
import { PAGED_PROMPTS, PAGED_RESOURCES, PAGED_TEMPLATE, PAGED_TOOLS, range, RESOURCE, ROGUE_TOOLS, type PolicyRig } from './policy-rig.js';

export const OPS_KEY = 'sk-switchyard-ops-3f9a0c7e51b24d68';

// What server-everything 2026.8.31 lists.
export const EVERYTHING_TOOLS = [
  'echo', 'get-annotated-message', 'get-env', 'get-resource-links', 'get-resource-reference', 'get-structured-content', 'get-sum', 'get-tiny-image',
  'gzip-file-as-resource', 'toggle-simulated-logging', 'toggle-subscriber-updates', 'trigger-long-running-operation', 'simulate-research-query',
].map((n) => `everything__${n}`);
export const EVERYTHING_PROMPTS = ['simple-prompt', 'args-prompt', 'completable-prompt', 'resource-prompt'].map((n) => `everything__${n}`);
export const EVERYTHING_RESOURCES = ['architecture', 'extension', 'features', 'how-it-works', 'instructions', 'startup', 'structure'].map((n) => `everything+demo://resource/static/document/${n}.md`);
export const EVERYTHING_TEXT_TEMPLATE = 'everything+demo://resource/dynamic/text/{resourceId}';
export const EVERYTHING_BLOB_TEMPLATE = 'everything+demo://resource/dynamic/blob/{resourceId}';

/** What each team of the two-teams gateway must be shown, spelt out from its rules. */
export const PAYMENTS: Names = {
  // paged__* and upstream:rogue, minus *__tool-0*; paged__echo is shown as its view, pay_echo.
  tools: ['pay_echo', ...without(PAGED_TOOLS, ['paged__echo', ...range(10, (i) => `paged__tool-${i}`)]), ...ROGUE_TOOLS],
  prompts: without(PAGED_PROMPTS, ['paged__prompt-10', 'paged__prompt-11']),
  resources: without(PAGED_RESOURCES, ['paged+fixture://item/10', 'paged+fixture://item/11']),
  templates: [PAGED_TEMPLATE],
};
export const SUPPORT: Names = {
  tools: without(EVERYTHING_TOOLS, ['everything__get-env']),
  prompts: without(EVERYTHING_PROMPTS, ['everything__args-prompt']),
  resources: without(EVERYTHING_RESOURCES, named('everything+demo://resource/static/document/s', EVERYTHING_RESOURCES)),
  templates: [EVERYTHING_TEXT_TEMPLATE],
};
export const OPS: Names = { tools: ROGUE_TOOLS, prompts: [], resources: [], templates: [] };
export const ALL_ITEMS: Names = {
  tools: [...EVERYTHING_TOOLS, ...PAGED_TOOLS, ...ROGUE_TOOLS],
  prompts: [...EVERYTHING_PROMPTS, ...PAGED_PROMPTS],
  resources: [...EVERYTHING_RESOURCES, ...PAGED_RESOURCES],
  templates: [EVERYTHING_TEXT_TEMPLATE, EVERYTHING_BLOB_TEMPLATE, PAGED_TEMPLATE],
};
export const NOTHING: Names = { tools: [], prompts: [], resources: [], templates: [] };

export const PAY_ECHO_VIEW = { name: 'pay_echo', title: 'Payments echo', description: 'Echoes a message; payments always send the pinned one.', pin: { message: 'pinned' } };

export interface TwoTeams {
  /** The running gateway (its url, once the hooks have run). */
  gw: { readonly url: URL };
  /** The file rogue records every message it receives in. */
  recordFile(): string;
  payments(): Promise<Record<string, string>>;
  support(): Promise<Record<string, string>>;
  root(): Promise<Record<string, string>>;
  /** A principal that matches no team. */
  nobody(): Promise<Record<string, string>>;
}

/** Registers the gateway's hooks (call it in the describe that uses it) and returns its parts. */
export function useTwoTeams({ dir, tokenFor, oauthConfig, issuer }: PolicyRig): TwoTeams {
  let gw: TestGateway | undefined;
  const recordFile = (): string => join(dir(), 'rogue-main.jsonl');

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
    { name: 'root', match: { principal: `${issuer()}|root` } },
  ];

  beforeAll(async () => {
    gw = await startGateway(
      {
        listen: { port: 0, publicUrl: RESOURCE },
        auth: { oauth: oauthConfig(), apiKeys: [{ id: 'ops', hash: hashApiKey(OPS_KEY), team: 'ops' }] },
        teams: teams(),
        upstreams: { everything: upstream.everything(), paged: upstream.paged(), rogue: upstream.rogue({ RECORD_FILE: recordFile() }) },
      },
      { logLevel: 'warn' },
    );
  });

  afterAll(async () => {
    await gw?.close();
  });

  const running = (): TestGateway => {
    if (gw === undefined) throw new Error('the two-teams gateway is used before its beforeAll');
    return gw;
  };

  return {
    gw: {
      get url() {
        return running().url;
      },
    },
    recordFile,
    payments: () => tokenFor('pat', { groups: ['payments', 'staff'] }),
    support: () => tokenFor('sam', { groups: ['support'] }),
    root: () => tokenFor('root'),
    nobody: () => tokenFor('nina', { groups: ['marketing'], org: { desk: 'sales' } }),
  };
}
