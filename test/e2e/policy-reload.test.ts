// Policy reload in the running CLI: a session already open hears list_changed and sees the new
// rules (granted, narrowed, revoked) in the same session.
import { mkdtemp } from 'node:fs/promises';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterEach, describe, expect, it } from 'vitest';
import { poll, startCli, type CliProcess } from '../helpers/cli.js';
import { textOf } from '../helpers/gateway.js';
import { failureOf, namesOf, sorted, without } from '../helpers/policy.js';
import { fixture, PAGED_TOOLS, PROMPT_MS, range, RESOURCE, ROGUE_TOOLS, usePolicyRig, writeConfig } from '../helpers/policy-rig.js';

const TOOLS_CHANGED = 'notifications/tools/list_changed';

const { dir, tokenFor, oauthConfig, open } = usePolicyRig();

function sessionId(client: Client): string | undefined {
  return (client.transport as StreamableHTTPClientTransport).sessionId;
}

describe('policy reload in the running CLI', () => {
  let cli: CliProcess | undefined;

  afterEach(async () => {
    await cli?.stop();
    cli = undefined;
  });

  it('tells a running session list_changed and shows it the new rules in the same session', async () => {
    const caseDir = await mkdtemp(join(dir(), 'reload-'));
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
