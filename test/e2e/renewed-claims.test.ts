// A principal's teams are what its current token says: a session opened with a token whose
// groups gave it a team loses that team's tools in the same session when the next request's
// token (same subject, renewed) no longer carries the group, and gains them back when it does;
// the session a 2026-07-28 client never names follows the same rule.
import { describe, expect, it } from 'vitest';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { fixture, RESOURCE, usePolicyRig } from '../helpers/policy-rig.js';
import { initializeRaw, messagesOf, sendIn } from '../helpers/raw-http.js';
import { sendStateless, statelessRequest } from '../helpers/stateless-wire.js';

const { tokenFor, oauthConfig } = usePolicyRig();

async function gateway(): Promise<TestGateway> {
  return startGateway({
    listen: { publicUrl: RESOURCE },
    auth: { oauth: oauthConfig() },
    teams: [
      { name: 'payments', match: { claim: 'groups', value: 'payments' }, allow: ['upstream:rogue'] },
      { name: 'everyone', default: true, allow: ['paged__pid'] },
    ],
    upstreams: { paged: fixture('paged-server.mjs'), rogue: fixture('rogue-server.mjs') },
  });
}

const rpc = (id: number, method: string, params: Record<string, unknown> = {}) => ({ jsonrpc: '2.0', id, method, params });

/** The tool names a tools/list answer carries. */
function toolNames(messages: { result?: { tools?: { name: string }[] } }[]): string[] {
  return (messages.find((m) => m.result?.tools)?.result?.tools ?? []).map((t) => t.name).sort();
}

describe("a renewed token's groups", () => {
  it('decide what an open session sees and calls, in the same session', async () => {
    const gw = await gateway();
    try {
      const member = await tokenFor('carol', { groups: ['payments'] });
      const left = await tokenFor('carol', { groups: ['other'] });
      const session = await initializeRaw(gw.url, { headers: member });
      const list = async (headers: Record<string, string>, id: number) => {
        const reply = await sendIn(session, rpc(id, 'tools/list'), { headers });
        expect(reply.status, reply.text).toBe(200);
        return toolNames(messagesOf(reply));
      };
      expect(await list(member, 1)).toContain('rogue__pid');
      // Out of the group: the team's tools go, the default team's stay, in the same session.
      expect(await list(left, 2)).toEqual(['paged__pid']);
      const call = await sendIn(session, rpc(3, 'tools/call', { name: 'rogue__pid', arguments: {} }), { headers: left });
      expect(messagesOf(call)[0]).toMatchObject({ error: { code: -32602, message: 'Unknown tool: rogue__pid' } });
      // Back in: the team's tools again.
      expect(await list(member, 4)).toContain('rogue__pid');
    } finally {
      await gw.close();
    }
  });

  it('decide for the session the gateway keeps for a 2026-07-28 client', async () => {
    const gw = await gateway();
    try {
      const list = async (headers: Record<string, string>, id: number) => {
        const sent = await sendStateless(gw.url, statelessRequest(id, 'tools/list'), headers);
        expect(sent.status, JSON.stringify(sent.body)).toBe(200);
        return toolNames([sent.body as { result?: { tools?: { name: string }[] } }]);
      };
      const member = await tokenFor('dave', { groups: ['payments'] });
      expect(await list(member, 1)).toContain('rogue__pid');
      expect(await list(await tokenFor('dave', { groups: ['other'] }), 2)).toEqual(['paged__pid']);
    } finally {
      await gw.close();
    }
  });
});
