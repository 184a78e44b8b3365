// Per-team policy end to end on the two-teams gateway: calls agree with lists. Every tool a
// team lists can be called and every prompt and resource read; a hidden item, on an upstream
// the team sees or one it cannot, answers exactly like one that does not exist.
import { describe, expect, it } from 'vitest';
import { attempt, failureOf, itemsThatDidNotAnswer, named, namesOf, notAnsweredAsUnknown, sorted, toolsThatDidNotRun, type RpcFailure } from '../helpers/policy.js';
import { apiKey, PAGED_SHORTENED, PAGED_TEMPLATE, range, usePolicyRig } from '../helpers/policy-rig.js';
import { EVERYTHING_RESOURCES, EVERYTHING_TEXT_TEMPLATE, OPS, OPS_KEY, PAYMENTS, SUPPORT, useTwoTeams } from '../helpers/policy-teams.js';

const rig = usePolicyRig();
const { open } = rig;

describe('two teams on one gateway', () => {
  const { gw, payments, support } = useTwoTeams(rig);

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

});
